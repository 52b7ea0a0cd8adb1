"""Teacher-forced scorers for attribution: the model backends (hss_gate.models.likelihood), a
deterministic test double and a cache of every evaluation.

The attribution target (METHOD.md section 5): how likely the summarizer finds its own base
summary given a (masked or perturbed) input document. `load_scorer` picks the backend for a
model URI: hf and gguf (transformers or llama.cpp) from hss_gate.models.likelihood, `fake:overlap`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Literal

import numpy as np

from hss_gate.common.errors import ModelError
from hss_gate.models.gguf_likelihood import GgufLikelihood
from hss_gate.models.likelihood import HfLikelihood, LikelihoodModel, likelihood_scorer
from hss_gate.settings import HssSettings


class OverlapLikelihood:
    """Deterministic test double: an additive 'log-likelihood' with known attributions.

    loglik = sum over the document's words of weight(word), where a word weighs `hit` if it
    (lower-cased, punctuation stripped) occurs in the summary and `miss` otherwise. Being
    additive, its exact Shapley value for each word is that word's weight.
    """

    def __init__(self, hit: float = 1.0, miss: float = -0.1) -> None:
        self.hit = hit
        self.miss = miss
        self.fingerprint = f"overlap:{hit}:{miss}"
        self.evaluations = 0

    @staticmethod
    def _norm(word: str) -> str:
        return word.strip(".,;:!?\"'()[]").lower()

    def word_weights(self, words: Sequence[str], summary: str) -> np.ndarray:
        vocab = {self._norm(w) for w in summary.split()}
        return np.array([self.hit if self._norm(w) in vocab else self.miss for w in words])

    def loglik(self, documents: Sequence[str], summary: str) -> np.ndarray:
        self.evaluations += len(documents)
        return np.array(
            [float(self.word_weights(d.split(), summary).sum()) for d in documents],
            dtype=np.float64,
        )


class _Wrapped:
    """A scorer wrapped: its fingerprint kept, its other attributes (word_attention,
    evaluations, ...) passed through."""

    def __init__(self, scorer: LikelihoodModel) -> None:
        self.scorer = scorer
        self.fingerprint = scorer.fingerprint

    def __getattr__(self, name: str) -> Any:
        if name == "scorer":  # not set yet (copy, unpickling): no recursion
            raise AttributeError(name)
        return getattr(self.scorer, name)


class CachedLikelihood(_Wrapped):
    """Any scorer with every evaluation stored in a Cache (namespace "loglik"), keyed by the
    scorer's fingerprint, the summary and the document: an interrupted attribution run
    resumes where it stopped, and a repeated one costs no model evaluation."""

    namespace = "loglik"

    def __init__(self, scorer: LikelihoodModel, cache: Any) -> None:
        super().__init__(scorer)
        self.cache = cache
        self.hits = 0

    def loglik(self, documents: Sequence[str], summary: str) -> np.ndarray:
        from hss_gate.common.cache import content_key

        keys = [content_key(self.fingerprint, summary, d) for d in documents]
        found = self.cache.get_many(self.namespace, keys)
        todo = list(
            dict.fromkeys(d for d, k in zip(documents, keys, strict=True) if k not in found)
        )
        self.hits += len(documents) - len(todo)
        if todo:
            values = self.scorer.loglik(todo, summary)
            fresh = {
                content_key(self.fingerprint, summary, d): float(v).hex()
                for d, v in zip(todo, values, strict=True)
            }
            self.cache.put_many(self.namespace, {k: v.encode() for k, v in fresh.items()})
            found.update({k: v.encode() for k, v in fresh.items()})
        return np.array([float.fromhex(found[k].decode()) for k in keys], dtype=np.float64)


class CountedLikelihood(_Wrapped):
    """Any scorer, every document it is asked to score counted and reported to `advance` as
    it returns (progress that moves during a document: evaluations done of those planned).
    Callers that memoize (attribution's target, the sentence game) ask only for documents not
    scored yet, so the count is their distinct evaluations; a CachedLikelihood inside counts
    its hits too (a resumed run's progress moves as fast as the cache answers)."""

    def __init__(self, scorer: LikelihoodModel, advance: Callable[[int], None]) -> None:
        super().__init__(scorer)
        self.advance = advance
        self.count = 0

    def add(self, n: int) -> None:
        """Count n evaluations made elsewhere (a forward pass outside loglik, a plan's rest)."""
        self.count += n
        self.advance(n)

    def loglik(self, documents: Sequence[str], summary: str) -> np.ndarray:
        values = self.scorer.loglik(documents, summary)
        self.add(len(documents))
        return values


GgufBackend = Literal["transformers", "llama.cpp"]


def load_scorer(
    uri: str,
    settings: HssSettings,
    gguf_backend: GgufBackend = "llama.cpp",
    dtype: str = "float32",
    workers: int = 1,
) -> LikelihoodModel:
    """The teacher-forced scorer for a model URI (gguf:, hf:, fake:overlap).

    GGUF weights are scored by llama.cpp (forced decoding, the engine that wrote the
    summaries) or by transformers on the same weights dequantized to fp32 (one batched
    forward pass per batch: ~4x faster on CPU, log-probabilities within a few tenths of a nat).
    `dtype` is the transformers weights' precision (float32, or bfloat16 at ~2x the speed);
    `workers` its forward passes at once, one torch thread each (0: one per core; HfLikelihood).
    """
    if uri == "fake:overlap":
        return OverlapLikelihood()
    return likelihood_scorer(
        uri, settings.generate, settings.run.models_dir, gguf_backend, dtype=dtype, workers=workers
    )


def scorer_for(summarizer: Any) -> LikelihoodModel:
    """A scorer sharing an already-built summarizer's model and prompt settings."""
    from hss_gate.models.summarizers.gguf import GgufSummarizer
    from hss_gate.models.summarizers.hf import HfSummarizer

    if isinstance(summarizer, HfSummarizer):
        return HfLikelihood.from_summarizer(summarizer)
    if isinstance(summarizer, GgufSummarizer):
        return GgufLikelihood.from_summarizer(summarizer)
    raise ModelError(
        f"summarizer '{summarizer.fingerprint}' exposes no token probabilities: "
        "attribution needs a gguf: or hf: model"
    )
