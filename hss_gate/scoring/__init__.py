"""Scoring: the pure statistics (distance, severity, normalization, Shapley, instability) and the
engine that runs a summarizer through them."""
