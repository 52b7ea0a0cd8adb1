"""The gate's decision: the paired comparison, the sequential looks, the checks, the rule, the
suites, the record and the reports people read."""
