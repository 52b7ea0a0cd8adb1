"""Word-level attributions of the summarizer's teacher-forced log-likelihood (METHOD.md §5).

Target: f(x) = log p(y0 | x), the summarizer's log-likelihood of its base summary y0 given a
(masked) document x (hss_gate.research.likelihood). Features are whitespace words, so the
attributions of a document and of a perturbation of it (one-for-one swaps) align by position.
A masked word is removed together with the whitespace before it (or replaced by `mask_token`);
unmasked text keeps its original formatting, so f(all words kept) is exactly f(document).

Methods, each with an explicit budget of model evaluations (docs/ATTRIBUTION.md):
- shap:      shap's Partition explainer (Owen values) over a fixed, sentence-aware balanced
             binary hierarchy of the words; `shap_max_evals` evaluations.
- lime:      lime's LimeTextExplainer, word split on whitespace, positional (bow=False);
             `lime_num_samples` evaluations.
- smile:     LIME's sampler and ridge fit, but samples weighted by a Wasserstein distance
             (SMILE): between the ECDFs of the embeddings of the original and masked text when
             an encoder is given, else between their word-position mass.
- attention: mean attention from the summary tokens to each word (hf backend only; 1 forward).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, Field

from hss_gate.research.instability import aggregate, align, word_changes
from hss_gate.research.likelihood import LikelihoodModel
from hss_gate.research.words import split_words, word_hierarchy
from hss_gate.scoring.instability_metrics import instability, mass_wasserstein
from hss_gate.text.masked_text import render, word_spans

METHODS = ("shap", "lime", "smile", "attention")

Encode = Callable[[Sequence[str]], np.ndarray]


class AttributionSettings(BaseModel):
    """Budgets and choices of the attribution step (a section of params.yaml)."""

    methods: list[Literal["shap", "lime", "smile", "attention"]] = ["shap", "lime", "attention"]
    shap_max_evals: int = Field(
        128, ge=8, description="model evaluations per SHAP explanation (incl. empty + full)"
    )
    shap_batch_size: int = Field(16, ge=1, description="masked documents per scorer call")
    shap_fixed_context: Literal[0, 1] | None = Field(
        1,
        description="1 = split each group with the rest of the document present (2 evaluations "
        "per split: word level after 2(M-1)); None = full Owen values (O(M^2) evaluations)",
    )
    lime_num_samples: int = Field(128, ge=8, description="model evaluations per LIME explanation")
    lime_kernel_width: float = Field(25.0, gt=0, description="lime's default for text")
    smile_num_samples: int = Field(128, ge=8, description="model evaluations per SMILE run")
    smile_kernel_width: float | None = Field(
        None, gt=0, description="None = median of the sample distances"
    )
    mask_token: str | None = Field(None, description="None removes masked words")
    max_words: int = Field(1500, ge=1, description="words the summarizer sees (max_input_words)")
    top_k: int = Field(10, ge=1, description="k of the top-k instability")
    seed: int = 0


class _Target:
    """f(masks) = scorer.loglik(rendered documents, summary), memoized, counting evaluations."""

    def __init__(
        self,
        scorer: LikelihoodModel,
        document: str,
        summary: str,
        n_features: int,
        mask_token: str | None,
    ) -> None:
        self.scorer = scorer
        self.document = document
        self.summary = summary
        self.spans = word_spans(document)
        self.n = n_features
        self.mask_token = mask_token
        self.memo: dict[str, float] = {}
        self.calls = 0
        self.full = float(self.texts([document])[0])  # first call: fixes a gguf token path

    def render(self, keep: np.ndarray) -> str:
        return render(self.document, self.spans, keep, self.mask_token)

    def texts(self, documents: Sequence[str]) -> np.ndarray:
        todo = [d for d in dict.fromkeys(documents) if d not in self.memo]
        if todo:
            values = self.scorer.loglik(todo, self.summary)
            self.memo.update(zip(todo, (float(v) for v in values), strict=True))
        self.calls += len(documents)
        return np.array([self.memo[d] for d in documents], dtype=np.float64)

    def masks(self, masks: np.ndarray) -> np.ndarray:
        return self.texts([self.render(k) for k in np.atleast_2d(masks)])

    @property
    def evaluations(self) -> int:
        return len(self.memo)


@dataclass
class WordAttribution:
    """One explanation: a value per word of the document."""

    method: str
    words: list[str]
    values: np.ndarray
    full_value: float  # f(document)
    base_value: float | None  # f(every explained word masked), shap only
    evaluations: int  # distinct model evaluations (the budget actually spent)
    budget: int
    seconds: float
    fit_r2: float | None = None  # lime / smile: weighted R^2 of the local linear model

    def to_dict(self) -> dict[str, Any]:
        return asdict(self) | {"values": [float(v) for v in self.values]}


def _finish(
    method: str,
    target: _Target,
    words: list[str],
    explained: np.ndarray,
    budget: int,
    started: float,
    base_value: float | None = None,
    fit_r2: float | None = None,
) -> WordAttribution:
    values = np.zeros(len(words), dtype=np.float64)
    values[: len(explained)] = explained
    return WordAttribution(
        method,
        words,
        values,
        target.full,
        base_value,
        target.evaluations,
        budget,
        round(time.perf_counter() - started, 4),
        fit_r2,
    )


# --------------------------------------------------------------------------- SHAP


class WordMasker:
    """A shap masker over the first n words of one document (see `render`)."""

    def __init__(self, target: _Target, words: Sequence[str]) -> None:
        self.target = target
        self.n = target.n
        self.clustering = word_hierarchy(list(words)[: self.n]) if self.n > 1 else None
        self.immutable_outputs = True
        self.fixed_background = False
        self.default_batch_size = 16
        self._words = list(words)[: self.n]

    def __call__(self, mask: np.ndarray, x: Any) -> tuple[np.ndarray]:
        return (np.array([self.target.render(np.asarray(mask, dtype=bool))], dtype=object),)

    def shape(self, x: Any) -> tuple[int, int]:
        return (1, self.n)

    def mask_shapes(self, x: Any) -> list[tuple[int]]:
        return [(self.n,)]

    def feature_names(self, x: Any) -> list[list[str]]:
        return [self._words]


def _start(
    scorer: LikelihoodModel, document: str, summary: str, settings: AttributionSettings
) -> tuple[float, list[str], _Target]:
    """Start time, the document's words and the target over its first max_words words (the
    explanation's seconds include its first evaluation, f(document))."""
    started = time.perf_counter()
    words = split_words(document)
    n = min(len(words), settings.max_words)
    target = _Target(scorer, document, summary, n, settings.mask_token)
    return started, words, target


def shap_attribution(
    scorer: LikelihoodModel,
    document: str,
    summary: str,
    settings: AttributionSettings,
) -> WordAttribution:
    """Owen values of f over the words (shap Partition explainer, fixed word hierarchy)."""
    import shap

    started, words, target = _start(scorer, document, summary, settings)
    n = target.n
    if n == 0:
        return _finish("shap", target, words, np.zeros(0), settings.shap_max_evals, started)
    if n == 1:  # one feature: its value is the whole effect
        base = float(target.masks(np.zeros((1, 1), dtype=bool))[0])
        return _finish(
            "shap",
            target,
            words,
            np.array([target.full - base]),
            settings.shap_max_evals,
            started,
            base_value=base,
        )
    masker = WordMasker(target, words)

    def model(texts: Any) -> np.ndarray:
        return target.texts([str(t) for t in np.asarray(texts, dtype=object).ravel()])

    explainer = shap.explainers.Partition(model, masker)
    state = np.random.get_state()  # shap breaks priority ties with np.random: seed, restore
    np.random.seed(settings.seed)
    try:
        explanation = explainer(
            [document],
            max_evals=settings.shap_max_evals,
            batch_size=settings.shap_batch_size,
            fixed_context=settings.shap_fixed_context,
            silent=True,
        )
    finally:
        np.random.set_state(state)
    values = np.asarray(explanation.values[0], dtype=np.float64).reshape(-1)
    base = float(np.asarray(explanation.base_values).reshape(-1)[0])
    return _finish("shap", target, words, values, settings.shap_max_evals, started, base_value=base)


# --------------------------------------------------------------------------- LIME and SMILE

_SENTINEL = "\u2063MASKED\u2063"  # a word lime writes for a hidden word; mapped back to a mask


def lime_attribution(
    scorer: LikelihoodModel,
    document: str,
    summary: str,
    settings: AttributionSettings,
) -> WordAttribution:
    """lime's LimeTextExplainer on f: positional words, ridge fit, cosine kernel."""
    from lime.lime_text import LimeTextExplainer

    started, words, target = _start(scorer, document, summary, settings)
    n = target.n
    if n == 0:
        return _finish("lime", target, words, np.zeros(0), settings.lime_num_samples, started)
    head_end = word_spans(document)[n - 1][1]
    head, tail = document[:head_end], document[head_end:]

    def classifier(texts: list[str]) -> np.ndarray:
        keeps = []
        for t in texts:
            parts = t.split()
            keeps.append(np.array([p != _SENTINEL for p in parts[:n]], dtype=bool))
        return target.masks(np.array(keeps)).reshape(-1, 1)

    explainer = LimeTextExplainer(
        kernel_width=settings.lime_kernel_width,
        split_expression=r"\s+",
        bow=False,
        mask_string=_SENTINEL,
        feature_selection="none",
        random_state=settings.seed,
    )
    exp = explainer.explain_instance(
        head,
        lambda texts: classifier([t + tail for t in texts]),
        labels=(0,),
        num_features=n,
        num_samples=settings.lime_num_samples,
    )
    values = np.zeros(n)
    for index, weight in exp.local_exp[0]:
        values[int(index)] = float(weight)
    return _finish(
        "lime",
        target,
        words,
        values,
        settings.lime_num_samples,
        started,
        fit_r2=float(exp.score),
    )


def lime_masks(n: int, num_samples: int, rng: np.random.Generator) -> np.ndarray:
    """LIME's text neighbourhood: row 0 keeps everything; each other row hides a uniformly
    drawn number (1..n-1) of uniformly chosen words."""
    masks = np.ones((num_samples, n), dtype=bool)
    if n < 2:
        return masks
    for row in range(1, num_samples):
        hidden = rng.choice(n, size=int(rng.integers(1, n)), replace=False)
        masks[row, hidden] = False
    return masks


def smile_distances(
    texts: Sequence[str], masks: np.ndarray, encode: Encode | None = None
) -> np.ndarray:
    """Wasserstein distance of each masked sample from the original (row 0).

    With `encode`: between the ECDFs of the embedding components (SMILE for text). Without:
    between the word-position mass of the kept words and of all words.
    """
    if encode is not None:
        from scipy.stats import wasserstein_distance

        emb = np.asarray(encode(list(texts)), dtype=np.float64)
        return np.array([wasserstein_distance(emb[0], e) for e in emb])
    ones = np.ones(masks.shape[1])
    return np.array([mass_wasserstein(ones, m.astype(np.float64)) for m in masks])


def smile_attribution(
    scorer: LikelihoodModel,
    document: str,
    summary: str,
    settings: AttributionSettings,
    encode: Encode | None = None,
) -> WordAttribution:
    """SMILE: LIME's neighbourhood and weighted ridge fit, Wasserstein-distance sample weights."""
    from lime.lime_base import LimeBase

    started, words, target = _start(scorer, document, summary, settings)
    n = target.n
    if n == 0:
        return _finish("smile", target, words, np.zeros(0), settings.smile_num_samples, started)
    rng = np.random.default_rng(settings.seed)
    masks = lime_masks(n, settings.smile_num_samples, rng)
    texts = [target.render(m) for m in masks]
    labels = target.texts(texts).reshape(-1, 1)
    distances = smile_distances(texts, masks, encode)
    width = settings.smile_kernel_width
    if width is None:
        positive = distances[distances > 0]
        width = float(np.median(positive)) if len(positive) else 1.0

    def kernel(d: np.ndarray) -> np.ndarray:
        return np.sqrt(np.exp(-(d**2) / width**2))

    base = LimeBase(kernel, random_state=settings.seed)
    _, local, score, _ = base.explain_instance_with_data(
        masks.astype(np.float64), labels, distances, 0, n, feature_selection="none"
    )
    values = np.zeros(n)
    for index, weight in local:
        values[int(index)] = float(weight)
    return _finish(
        "smile",
        target,
        words,
        values,
        settings.smile_num_samples,
        started,
        fit_r2=float(score),
    )


# --------------------------------------------------------------------------- attention


def attention_attribution(
    scorer: LikelihoodModel, document: str, summary: str, settings: AttributionSettings
) -> WordAttribution | None:
    """Mean attention from summary tokens to each word; None if the backend has no attention."""
    attend = getattr(scorer, "word_attention", None)
    if attend is None:
        return None
    started = time.perf_counter()
    spans = word_spans(document)
    words = [document[a:b] for a, b in spans]
    scores = attend(document, summary, spans)
    if scores is None:
        return None
    return WordAttribution(
        "attention",
        words,
        np.asarray(scores, dtype=np.float64),
        float("nan"),
        None,
        1,
        1,
        round(time.perf_counter() - started, 4),
    )


def attribute(
    method: str,
    scorer: LikelihoodModel,
    document: str,
    summary: str,
    settings: AttributionSettings,
    encode: Encode | None = None,
) -> WordAttribution | None:
    """One attribution of `document` for the target log p(summary | document)."""
    if method == "shap":
        return shap_attribution(scorer, document, summary, settings)
    if method == "lime":
        return lime_attribution(scorer, document, summary, settings)
    if method == "smile":
        return smile_attribution(scorer, document, summary, settings, encode)
    if method == "attention":
        return attention_attribution(scorer, document, summary, settings)
    raise ValueError(f"unknown attribution method '{method}' (use one of {', '.join(METHODS)})")


# --------------------------------------------------------------------------- per document


@dataclass
class MethodInstability:
    """One method's attributions for a document and its perturbations, and their instability."""

    method: str
    original: WordAttribution
    perturbed: list[WordAttribution]
    per_perturbation: list[dict[str, float]]
    summary: dict[str, float]  # mean of each metric over the perturbations
    evaluations: int
    seconds: float
    words: list[dict[str, Any]] = field(default_factory=list)  # localization records

    def to_dict(self) -> dict[str, Any]:
        return {
            "method": self.method,
            "original": self.original.to_dict(),
            "perturbed": [p.to_dict() for p in self.perturbed],
            "per_perturbation": self.per_perturbation,
            "summary": self.summary,
            "evaluations": self.evaluations,
            "seconds": self.seconds,
            "words": self.words,
        }


BUDGETS = {"shap": "shap_max_evals", "lime": "lime_num_samples", "smile": "smile_num_samples"}
"""The AttributionSettings field that caps each method's evaluations per explanation."""


def planned_evaluations(
    settings: AttributionSettings,
    perturbed: int,
    methods: Sequence[str] | None = None,
    limits: dict[str, int | None] | None = None,
) -> int:
    """The model evaluations explain_document plans for a document with `perturbed` perturbed
    texts: per method its budget for the original and each perturbation it explains (`limits`,
    as explain_document takes them); attention's one forward pass per text included. An
    explanation may spend less (repeated masks are evaluated once)."""
    total = 0
    for method in methods or settings.methods:
        limit = (limits or {}).get(method)
        texts = 1 + (perturbed if limit is None else min(perturbed, limit))
        budget = getattr(settings, BUDGETS[method]) if method in BUDGETS else 1
        total += texts * budget
    return total


def explain_document(
    scorer: LikelihoodModel,
    document: str,
    summary: str,
    perturbed: Sequence[str],
    settings: AttributionSettings,
    methods: Sequence[str] | None = None,
    encode: Encode | None = None,
    limits: dict[str, int | None] | None = None,
    advance: Callable[[int], None] | None = None,
) -> dict[str, MethodInstability]:
    """Attribute log p(base summary | x) for the document and each perturbation, per method,
    and measure how much the explanation moves (aligned by word position). `limits` caps the
    perturbations a method explains (e.g. {"lime": 1}: LIME gains nothing from prefix reuse).
    `advance(n)` is told of every n model evaluations as they return (planned_evaluations is
    their most); at the end the unspent rest of the plan, so the document's count completes."""
    out: dict[str, MethodInstability] = {}
    words = split_words(document)
    counted = None
    if advance is not None:
        from hss_gate.research.likelihood import CountedLikelihood

        counted = CountedLikelihood(scorer, advance)
        scorer = counted
    try:
        for method in methods or settings.methods:
            forward = counted.add if counted is not None and method == "attention" else None
            explained = _explain_method(
                method,
                scorer,
                document,
                words,
                summary,
                perturbed,
                settings,
                encode,
                limits,
                forward,
            )
            if explained is not None:
                out[method] = explained
    finally:
        if counted is not None:
            plan = planned_evaluations(settings, len(perturbed), methods, limits)
            if plan > counted.count:
                counted.add(plan - counted.count)
    return out


def _explain_method(
    method: str,
    scorer: LikelihoodModel,
    document: str,
    words: list[str],
    summary: str,
    perturbed: Sequence[str],
    settings: AttributionSettings,
    encode: Encode | None,
    limits: dict[str, int | None] | None,
    forward: Callable[[int], None] | None = None,
) -> MethodInstability | None:
    """One method's explanations of the document and its perturbations (explain_document);
    None when the method does not apply to the scorer. `forward(1)` is told of each
    explanation that is one forward pass outside loglik (attention)."""
    original = attribute(method, scorer, document, summary, settings, encode)
    if original is None:
        return None
    if forward is not None:
        forward(1)
    texts = list(perturbed)[: (limits or {}).get(method)]
    rows: list[WordAttribution] = []
    metrics: list[dict[str, float]] = []
    aligned: list[np.ndarray] = []
    swapped: list[tuple[int, ...]] = []
    for text in texts:
        other = attribute(method, scorer, text, summary, settings, encode)
        if other is None:
            return None
        if forward is not None:
            forward(1)
        al = align(words, other.words)
        b = np.zeros(len(words))
        b[al.original] = other.values[al.perturbed]
        a = original.values[al.original]
        metrics.append(
            instability(a, other.values[al.perturbed], settings.top_k)
            | {"swaps": float(len(al.swapped))}
        )
        rows.append(other)
        aligned.append(b)
        swapped.append(al.swapped)
    changes = word_changes(words, original.values, aligned, swapped)
    everything = [original, *rows]
    return MethodInstability(
        method,
        original,
        rows,
        metrics,
        aggregate(metrics),
        sum(r.evaluations for r in everything),
        round(sum(r.seconds for r in everything), 4),
        [asdict(c) for c in changes],
    )
