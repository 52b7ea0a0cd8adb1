"""The models behind small protocols (embedder, spaCy, summarizers, likelihood, sentence explainer)
and the store of their pinned weights."""
