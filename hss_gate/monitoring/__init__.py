"""Monitoring live traffic: the sample store, sample files, windows' rules, drift, alerts and the
trend."""
