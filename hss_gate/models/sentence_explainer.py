"""The faithful sentence explainer: sentence-level attribution of the summarizer's teacher-forced
log-likelihood (issue 26), what the gate, the monitor and the baseline's attribution stage
explain with (hss_gate.decision.attribution).

Target, as at word level (hss_gate.research.attribution): f(x) = log p(y0 | x), the summarizer's
log-likelihood of its base summary y0 given a masked document x. Here the features are the
source's sentences (hss_gate.text.masked_text.sentence_features): a masked sentence is removed
together with the whitespace before each of its words, so f(every sentence kept) is
f(document) exactly. With a scorer that has `loglik_segments`, the target is a vector, one
log-likelihood per base-summary sentence (they sum to f): one set of evaluations then explains
every summary sentence, which is what localization (hss_gate.research.sentence_attribution)
needs.

The estimators (kernel, permutation, lime; each with an explicit budget of distinct model
evaluations) are hss_gate.scoring.shapley's, run with numpy's Generator seeded with the settings'
seed:
deterministic given the seed. The model is the caller's scorer (hss_gate.models.likelihood); the
game
memoizes its evaluations and batches them.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
from pydantic import BaseModel, Field

from hss_gate.scoring.instability_metrics import instability
from hss_gate.scoring.shapley import Estimate, Game, kernel_shap, lime, permutation_shap
from hss_gate.text.masked_text import SentenceFeatures, sentence_features
from hss_gate.text.sentences import split_sentences

if TYPE_CHECKING:
    from hss_gate.models.likelihood import LikelihoodModel

SENTENCE_METHODS = ("kernel", "permutation", "lime")
Method = Literal["kernel", "permutation", "lime"]


class SentenceAttributionSettings(BaseModel):
    """Budget and choices of one sentence-level explanation."""

    method: Method = Field(
        "permutation",
        description="permutation: the best Spearman per evaluation at 2 x M evaluations "
        "(docs/ATTRIBUTION.md section 7)",
    )
    budget: int = Field(64, ge=2, description="distinct model evaluations (incl. empty, full)")
    seed: int = 0
    batch_size: int = Field(32, ge=1, description="masked documents per scorer call")
    max_words: int = Field(1500, ge=1, description="words the summarizer sees (max_input_words)")
    segments: bool = Field(True, description="one target per summary sentence, if the scorer can")
    top_k: int = Field(3, ge=1, description="k of the top-k instability (sentences)")
    lime_kernel_width: float = Field(25.0, gt=0)
    lime_alpha: float = Field(1.0, ge=0)


ESTIMATORS = {"kernel": kernel_shap, "permutation": permutation_shap}


# --------------------------------------------------------------------------- the model game


class SentenceGame:
    """f(sentence masks) on one document: the scorer's log-likelihood of the summary (one
    column), or of each summary sentence (`loglik_segments`), memoized per mask; batched."""

    def __init__(
        self,
        scorer: LikelihoodModel,
        features: SentenceFeatures,
        summary: str,
        segments: Sequence[str] | None = None,
        batch_size: int = 32,
    ) -> None:
        self.scorer = scorer
        self.features = features
        self.summary = summary
        self.segments = list(segments) if segments else None
        self.batch_size = batch_size
        self.memo: dict[bytes, np.ndarray] = {}
        self.full = self(np.ones((1, features.n), dtype=bool))[0]  # fixes a gguf token path

    def _score(self, texts: list[str]) -> np.ndarray:
        if self.segments is not None:
            segment = self.scorer.loglik_segments  # type: ignore[attr-defined]
            return np.asarray(segment(texts, self.summary, self.segments), dtype=np.float64)
        return np.asarray(self.scorer.loglik(texts, self.summary), dtype=np.float64)[:, None]

    def __call__(self, masks: np.ndarray) -> np.ndarray:
        masks = np.atleast_2d(np.asarray(masks, dtype=bool))
        keys = [m.tobytes() for m in masks]
        todo = {k: m for k, m in zip(keys, masks, strict=True) if k not in self.memo}
        items = list(todo.items())
        for start in range(0, len(items), self.batch_size):
            chunk = items[start : start + self.batch_size]
            scored = self._score([self.features.render(m) for _, m in chunk])
            self.memo.update((k, row) for (k, _), row in zip(chunk, scored, strict=True))
        return np.array([self.memo[k] for k in keys]).reshape(len(masks), -1)

    @property
    def evaluations(self) -> int:
        return len(self.memo)


@dataclass
class SentenceAttribution:
    """One explanation: a value per source sentence (and per summary sentence if segmented)."""

    method: str
    sentences: list[str]
    values: np.ndarray  # (n_sentences,): attribution of log p(summary | x)
    full_value: float  # f(document)
    empty_value: float  # f(every explained sentence removed)
    evaluations: int  # distinct model evaluations
    budget: int
    seed: int
    seconds: float
    summary_sentences: list[str] = field(default_factory=list)
    segment_values: np.ndarray | None = None  # (n_sentences, summary sentences)
    fit_r2: float | None = None

    def to_dict(self) -> dict[str, Any]:
        seg = self.segment_values
        return {
            "method": self.method,
            "sentences": self.sentences,
            "values": [float(v) for v in self.values],
            "full_value": self.full_value,
            "empty_value": self.empty_value,
            "evaluations": self.evaluations,
            "budget": self.budget,
            "seed": self.seed,
            "seconds": self.seconds,
            "summary_sentences": self.summary_sentences,
            "segment_values": None if seg is None else seg.tolist(),
            "fit_r2": self.fit_r2,
        }


def estimate(
    method: str,
    game: Game,
    m: int,
    budget: int,
    seed: int,
    settings: SentenceAttributionSettings | None = None,
) -> Estimate:
    """Run one estimator on a game of m features with a fresh Generator(seed)."""
    rng = np.random.default_rng(seed)
    if method == "lime":
        s = settings or SentenceAttributionSettings()
        return lime(game, m, budget, rng, s.lime_kernel_width, s.lime_alpha)
    if method not in ESTIMATORS:
        raise ValueError(f"unknown method '{method}' (use one of {', '.join(SENTENCE_METHODS)})")
    return ESTIMATORS[method](game, m, budget, rng)


def explain_sentences(
    scorer: LikelihoodModel,
    document: str,
    summary: str,
    settings: SentenceAttributionSettings,
    word_counts: Sequence[int] | None = None,
) -> SentenceAttribution:
    """Attribute log p(summary | x) to the sentences of `document` (word_counts: see
    sentence_features). Segmented per summary sentence when asked and the scorer can."""
    started = time.perf_counter()
    features = sentence_features(document, settings.max_words, word_counts)
    summary_sentences = split_sentences(summary)
    segmented = (
        settings.segments and hasattr(scorer, "loglik_segments") and len(summary_sentences) > 1
    )
    game = SentenceGame(
        scorer,
        features,
        summary,
        summary_sentences if segmented else None,
        settings.batch_size,
    )
    result = estimate(settings.method, game, features.n, settings.budget, settings.seed, settings)
    explained = np.asarray(result.values, dtype=np.float64).reshape(features.n, -1)
    per_segment = np.zeros((len(features.sentences), explained.shape[1]))
    per_segment[: features.n] = explained
    return SentenceAttribution(
        settings.method,
        features.sentences,
        per_segment.sum(axis=1),
        float(np.sum(game.full)),
        float(np.sum(result.empty)),
        game.evaluations,
        settings.budget,
        settings.seed,
        round(time.perf_counter() - started, 4),
        summary_sentences,
        per_segment if segmented else None,
        result.fit_r2,
    )


# --------------------------------------------------------------------------- instability


def sentence_instability(
    original: SentenceAttribution, perturbed: SentenceAttribution, k: int = 3
) -> dict[str, float]:
    """Rank, top-k and mass-Wasserstein instability (instability_metrics.instability) between the
    sentence attributions of a document and of its perturbation (the same sentence slots)."""
    if len(original.values) != len(perturbed.values):
        raise ValueError(
            f"sentences must align: {len(original.values)} vs {len(perturbed.values)} "
            "(explain the perturbation with the original's word_counts)"
        )
    return instability(original.values, perturbed.values, k)
