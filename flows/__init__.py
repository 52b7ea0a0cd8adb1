"""Prefect flows (baseline, gate, monitor): thin wrappers around hss_gate, no arithmetic."""
