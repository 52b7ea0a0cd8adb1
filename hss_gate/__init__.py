"""hss-gate: a quality gate for text summarizers based on the Hallucination Severity Score."""

__version__ = "0.1.0"
