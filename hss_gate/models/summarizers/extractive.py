"""Extractive baselines: lead-n and the SBERT-centroid method."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from hss_gate.models.embedding import Embedder
from hss_gate.models.summarizers.base import each_with_progress
from hss_gate.text.sentences import SPLITTER_VERSION, split_sentences


class LeadSummarizer:
    """The first n sentences of the document."""

    def __init__(self, n: int = 3) -> None:
        self.n = n
        self.fingerprint = f"extractive:lead-{n}:{SPLITTER_VERSION}"

    def summarize(
        self,
        texts: Sequence[str],
        progress: Callable[[int], None] | None = None,
    ) -> list[str]:
        return each_with_progress(
            lambda text: " ".join(split_sentences(text)[: self.n]), texts, progress
        )


class CentroidSummarizer:
    """The n sentences closest to the document's mean SBERT embedding, in document order."""

    def __init__(self, embedder: Embedder, n: int = 3) -> None:
        self.n = n
        self.embedder = embedder
        self.fingerprint = f"extractive:centroid-{n}:{SPLITTER_VERSION}:{embedder.fingerprint}"

    def summarize(
        self,
        texts: Sequence[str],
        progress: Callable[[int], None] | None = None,
    ) -> list[str]:
        return each_with_progress(self._one, texts, progress)

    def _one(self, text: str) -> str:
        sentences = split_sentences(text)
        if len(sentences) <= self.n:
            return " ".join(sentences)
        vecs = self.embedder.encode(sentences)
        centroid = vecs.mean(axis=0)
        scores = vecs @ (centroid / (np.linalg.norm(centroid) or 1.0))
        top = sorted(np.argsort(-scores, kind="stable")[: self.n])
        return " ".join(sentences[i] for i in top)
