"""Sentence-level attribution of the summarizer's teacher-forced log-likelihood (issue 26).

Target, as at word level (hss_gate.research.attribution): f(x) = log p(y0 | x), the summarizer's
log-likelihood of its base summary y0 given a masked document x. Here the features are the
source's sentences (hss_gate.sentences.split_sentences, located in the exact text): a masked
sentence is removed together with the whitespace before each of its words (attribution.render),
so f(every sentence kept) is f(document) exactly. With a scorer that has `loglik_segments`, the
target is a vector, one log-likelihood per base-summary sentence (they sum to f): one set of
evaluations then explains every summary sentence, which is what localization needs.

Estimators, each with an explicit budget of distinct model evaluations (empty and full
coalitions included; docs/ATTRIBUTION.md, "Sentence-level attribution"):
- kernel:      Kernel SHAP (Lundberg & Lee 2017) written here: Shapley-kernel weights, sizes
               enumerated completely while the budget covers them (shap's KernelExplainer rule),
               the rest sampled in complementary (antithetic) pairs, and a weighted least squares
               constrained to sum to f(full) - f(empty). Exact Shapley values when 2^M <= budget.
- permutation: permutation sampling with antithetic (reversed) permutations; the default (the
               best measured agreement per evaluation at ~2 x M evaluations).
- lime:        LIME over sentences with the lime library's text conventions (row 0 keeps all;
               each other row removes a uniform number 1..M of uniformly chosen sentences; cosine
               distance x 100, kernel sqrt(exp(-d^2 / 25^2)), weighted ridge alpha = 1 with an
               unpenalized intercept), written here so that the samples are batched.
Every sample is drawn from numpy's Generator seeded with `seed`: deterministic given the seed.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from math import comb, factorial
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, Field

from hss_gate.research.attribution import render, word_spans
from hss_gate.research.instability import instability, spearman
from hss_gate.research.likelihood import LikelihoodScorer
from hss_gate.sentences import split_sentences

SENTENCE_METHODS = ("kernel", "permutation", "lime")
Method = Literal["kernel", "permutation", "lime"]
Game = Callable[[np.ndarray], np.ndarray]  # masks (n, M) bool -> values (n, S), always 2-D


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


# --------------------------------------------------------------------------- features


@dataclass(frozen=True)
class SentenceFeatures:
    """The sentences of one text as slices of it, and how a sentence mask renders."""

    text: str
    sentences: list[str]  # exact source text of each sentence
    word_counts: list[int]
    n: int  # explained sentences: those starting within the words the summarizer sees

    def render(self, keep: np.ndarray) -> str:
        """The text with the sentences where keep is False removed (sentences past n kept)."""
        keep = np.asarray(keep, dtype=bool).ravel()
        counts = np.asarray(self.word_counts[: len(keep)], dtype=int)
        return render(self.text, word_spans(self.text), np.repeat(keep, counts))


def sentence_features(
    text: str, max_words: int | None = None, word_counts: Sequence[int] | None = None
) -> SentenceFeatures:
    """Split `text` into sentences (split_sentences), keeping their exact text.

    `word_counts` imposes another text's sentence split by word counts: a perturbation (one-for-
    one word swaps) then has the same sentences as its original even where a swap would move a
    boundary, so sentence i of both is the same slot.
    """
    spans = word_spans(text)
    if word_counts is None:
        word_counts = [len(s.split()) for s in split_sentences(text)]
    counts = [int(c) for c in word_counts if c > 0]
    if sum(counts) != len(spans):
        raise ValueError(f"sentences cover {sum(counts)} words but the text has {len(spans)}")
    sentences, start = [], 0
    for c in counts:
        sentences.append(text[spans[start][0] : spans[start + c - 1][1]])
        start += c
    limit = len(spans) if max_words is None else max_words
    starts = np.cumsum([0, *counts])[:-1]
    n = int(np.sum(starts < limit))
    return SentenceFeatures(text, sentences, counts, n)


# --------------------------------------------------------------------------- Shapley values


def all_coalitions(m: int) -> np.ndarray:
    """Every subset of m features as a boolean mask, shape (2^m, m); row r is the binary r."""
    rows = np.arange(2**m)[:, None]
    return ((rows >> np.arange(m)) & 1).astype(bool)


def exact_shapley(values: np.ndarray) -> np.ndarray:
    """Shapley values from a game's value on all 2^m coalitions in `all_coalitions` order.

    values: (2^m,) or (2^m, S); returns (m,) or (m, S).
    phi_i = sum over S not containing i of |S|! (m-|S|-1)! / m! * (v(S + i) - v(S)).
    """
    v = np.asarray(values, dtype=np.float64)
    m = len(v).bit_length() - 1
    if 2**m != len(v):
        raise ValueError("need the value of all 2^m coalitions")
    index = np.arange(2**m)
    sizes = np.array([bin(i).count("1") for i in index])
    weight = np.array([factorial(s) * factorial(m - s - 1) / factorial(m) for s in range(m)])
    out = []
    for i in range(m):
        without = index[(index >> i) & 1 == 0]
        w = weight[sizes[without]]
        gain = v[without | (1 << i)] - v[without]
        out.append(np.tensordot(w, gain, axes=(0, 0)))
    return np.array(out)


def shapley_kernel(m: int, size: int) -> float:
    """The Shapley kernel's weight of one coalition of `size` of m features (0 < size < m)."""
    return (m - 1) / (comb(m, size) * size * (m - size))


def kernel_coalitions(
    m: int, n_samples: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """Up to n_samples distinct coalitions (neither empty nor full) and their kernel weights.

    Size pairs (k, m - k) are enumerated completely, smallest k first, while the remaining
    budget's expected draws under the kernel cover every coalition of the pair (shap's
    KernelExplainer rule); each then weighs its exact kernel weight. The other sizes are drawn
    with probability proportional to their kernel mass, a uniform coalition of the drawn size
    and its complement together (antithetic pairs); a drawn coalition weighs the remaining mass
    times its share of the draws.
    """
    if m < 2 or n_samples <= 0:
        return np.zeros((0, m), dtype=bool), np.zeros(0)
    mass = {k: (m - 1) / (k * (m - k)) for k in range(1, m)}  # kernel mass of each size
    left, remaining = n_samples, sum(mass.values())
    masks: list[np.ndarray] = []
    weights: list[float] = []
    done: set[int] = set()
    for k in range(1, m // 2 + 1):
        pair = sorted({k, m - k})
        count = sum(comb(m, s) for s in pair)
        pair_mass = sum(mass[s] for s in pair)
        if count > left or left * pair_mass / remaining < count - 1e-9:
            break
        for s in pair:
            for chosen in itertools.combinations(range(m), s):
                mask = np.zeros(m, dtype=bool)
                mask[list(chosen)] = True
                masks.append(mask)
                weights.append(shapley_kernel(m, s))
        left -= count
        remaining -= pair_mass
        done.update(pair)
    rest = np.array([s for s in range(1, m) if s not in done])
    if len(rest) and left > 0:
        p = np.array([mass[s] for s in rest])
        p /= p.sum()
        drawn: dict[bytes, list[Any]] = {}  # key -> [mask, count]
        draws = 0
        for _ in range(100 * left + 1000):
            if len(drawn) >= left:
                break
            size = int(rng.choice(rest, p=p))
            mask = np.zeros(m, dtype=bool)
            mask[rng.choice(m, size=size, replace=False)] = True
            for member in (mask, ~mask):
                key = member.tobytes()
                if key in drawn:
                    drawn[key][1] += 1
                elif len(drawn) < left:
                    drawn[key] = [member, 1]
                else:
                    continue
                draws += 1
        for member, count in drawn.values():
            masks.append(member)
            weights.append(remaining * count / draws)
    return np.array(masks, dtype=bool).reshape(-1, m), np.array(weights, dtype=np.float64)


def constrained_wls(
    masks: np.ndarray, values: np.ndarray, weights: np.ndarray, empty: Any, full: Any
) -> np.ndarray:
    """argmin_phi sum_s w_s (v_s - empty - z_s . phi)^2 subject to sum(phi) = full - empty.

    Solved through its KKT system (least squares, so a budget below the feature count gives
    the minimum-norm solution). values: (n,) or (n, S); returns (m,) or (m, S).
    """
    z = np.asarray(masks, dtype=np.float64)
    y = np.asarray(values, dtype=np.float64)
    vector = y.ndim == 1
    y = y.reshape(len(z), -1)
    f0 = np.asarray(empty, dtype=np.float64).reshape(1, -1)
    gap = (np.asarray(full, dtype=np.float64) - np.asarray(empty, dtype=np.float64)).reshape(-1)
    m = z.shape[1]
    zw = z.T * np.asarray(weights, dtype=np.float64)
    kkt = np.zeros((m + 1, m + 1))
    kkt[:m, :m] = zw @ z
    kkt[:m, m] = kkt[m, :m] = 1.0
    rhs = np.vstack([zw @ (y - f0), gap[None, :]])
    scale = max(float(np.abs(kkt[:m, :m]).max(initial=0.0)), 1.0)  # condition the system
    kkt[:m, :m] /= scale
    rhs[:m] /= scale
    solution = np.linalg.lstsq(kkt, rhs, rcond=None)[0][:m]
    return solution[:, 0] if vector else solution


@dataclass
class Estimate:
    """One estimator's attributions (m,) or (m, S), and the values it knows."""

    values: np.ndarray
    empty: np.ndarray
    full: np.ndarray
    fit_r2: float | None = None


def kernel_shap(game: Game, m: int, budget: int, rng: np.random.Generator) -> Estimate:
    """Kernel SHAP with at most `budget` distinct evaluations of `game` (see the module doc)."""
    if m == 0:
        full = game(np.ones((1, 0), dtype=bool))[0]
        return Estimate(np.zeros((0, *full.shape)), full, full)
    if 2**m <= budget:
        masks = all_coalitions(m)
        values = game(masks)
        return Estimate(exact_shapley(values), values[0], values[-1])
    ends = np.array([np.zeros(m, dtype=bool), np.ones(m, dtype=bool)])
    coalitions, weights = kernel_coalitions(m, budget - 2, rng)
    values = game(np.vstack([ends, coalitions]))
    empty, full = values[0], values[1]
    phi = constrained_wls(coalitions, values[2:], weights, empty, full)
    return Estimate(phi, empty, full)


def permutation_shap(game: Game, m: int, budget: int, rng: np.random.Generator) -> Estimate:
    """Permutation sampling: marginal contributions along random orders and their reverses
    (antithetic); each order costs m - 1 evaluations beyond the shared empty and full ones."""
    orders = max(2, 2 * ((budget - 2) // max(m - 1, 1) // 2))
    chains = []
    for _ in range(orders // 2):
        order = rng.permutation(m)
        chains += [order, order[::-1]]
    masks = []
    for order in chains:
        for size in range(m + 1):
            mask = np.zeros(m, dtype=bool)
            mask[order[:size]] = True
            masks.append(mask)
    values = game(np.array(masks).reshape(-1, m))
    values = values.reshape(len(chains), m + 1, -1)
    phi = np.zeros((m, values.shape[2]))
    for c, order in enumerate(chains):
        phi[order] += np.diff(values[c], axis=0)
    phi /= len(chains)
    return Estimate(phi, values[0, 0], values[0, -1])


def lime_masks(m: int, n_samples: int, rng: np.random.Generator) -> np.ndarray:
    """lime's text neighbourhood: row 0 keeps everything; each other row removes a uniformly
    drawn number 1..m of uniformly chosen features (lime_text.LimeTextExplainer)."""
    masks = np.ones((n_samples, m), dtype=bool)
    for row in range(1, n_samples):
        removed = rng.choice(m, size=int(rng.integers(1, m + 1)), replace=False)
        masks[row, removed] = False
    return masks


def weighted_ridge(
    x: np.ndarray, y: np.ndarray, w: np.ndarray, alpha: float
) -> tuple[np.ndarray, float]:
    """Weighted ridge with an unpenalized intercept (sklearn Ridge's fit with sample_weight);
    the coefficients (m,) or (m, S) and the weighted R^2 of the first (or only) column."""
    x = np.asarray(x, dtype=np.float64)
    y2 = np.asarray(y, dtype=np.float64).reshape(len(x), -1)
    w = np.asarray(w, dtype=np.float64)
    xm = (w @ x) / w.sum()
    ym = (w @ y2) / w.sum()
    xc, yc = x - xm, y2 - ym
    gram = (xc.T * w) @ xc + alpha * np.eye(x.shape[1])
    coef = np.linalg.lstsq(gram, (xc.T * w) @ yc, rcond=None)[0]
    residual = yc - xc @ coef
    total = float(w @ (yc[:, 0] ** 2))
    r2 = 1.0 - float(w @ (residual[:, 0] ** 2)) / total if total > 0 else 1.0
    return (coef[:, 0] if np.ndim(y) == 1 else coef), r2


def lime(
    game: Game,
    m: int,
    budget: int,
    rng: np.random.Generator,
    kernel_width: float = 25.0,
    alpha: float = 1.0,
) -> Estimate:
    """LIME over m binary features with lime's text conventions (module doc)."""
    masks = lime_masks(m, budget, rng)
    values = game(masks)
    kept = masks.sum(axis=1)
    distance = 100.0 * (1.0 - np.sqrt(kept / m))  # cosine distance to the all-kept row
    weights = np.sqrt(np.exp(-(distance**2) / kernel_width**2))
    coef, r2 = weighted_ridge(masks, values, weights, alpha)
    empty = np.full(values.shape[1:], np.nan)  # not evaluated unless drawn
    return Estimate(coef, empty, values[0], fit_r2=r2)


ESTIMATORS = {"kernel": kernel_shap, "permutation": permutation_shap}


# --------------------------------------------------------------------------- the model game


class SentenceGame:
    """f(sentence masks) on one document: the scorer's log-likelihood of the summary (one
    column), or of each summary sentence (`loglik_segments`), memoized per mask; batched."""

    def __init__(
        self,
        scorer: LikelihoodScorer,
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
    scorer: LikelihoodScorer,
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
    """Rank, top-k and mass-Wasserstein instability (instability.instability) between the
    sentence attributions of a document and of its perturbation (the same sentence slots)."""
    if len(original.values) != len(perturbed.values):
        raise ValueError(
            f"sentences must align: {len(original.values)} vs {len(perturbed.values)} "
            "(explain the perturbation with the original's word_counts)"
        )
    return instability(original.values, perturbed.values, k)


def agreement(a: np.ndarray, b: np.ndarray) -> float:
    """Spearman of two attributions of the same sentences (the fidelity measure)."""
    return spearman(np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64))


# --------------------------------------------------------------------------- localization


def changed_summary_sentences(base_summary: str, other_summary: str) -> list[int]:
    """Indices of the base summary's sentences that the other summary does not contain
    verbatim (whitespace-normalized): the sentences the perturbation changed."""
    other = {" ".join(s.split()) for s in split_sentences(other_summary)}
    return [i for i, s in enumerate(split_sentences(base_summary)) if s not in other]


@dataclass
class MovedSentence:
    """One source sentence whose attribution to a summary sentence moved."""

    index: int
    sentence: str
    before: float  # attribution in the original document
    after: float  # in the perturbed document
    moved: float  # after - before


@dataclass
class Localization:
    """For one changed summary sentence: the source sentences whose attribution moved most."""

    summary_index: int
    summary_sentence: str
    target: str  # "summary sentence" (segmented) or "whole summary" (scorer without segments)
    moved: list[MovedSentence]


def localize(
    original: SentenceAttribution,
    perturbed: SentenceAttribution,
    changed: Sequence[int],
    top: int = 3,
) -> list[Localization]:
    """Per changed summary sentence, the `top` source sentences with the largest |moved|
    attribution to it (to the whole summary when the explanations are not segmented)."""
    if len(original.values) != len(perturbed.values):
        raise ValueError("sentences must align (explain with the original's word_counts)")
    segmented = original.segment_values is not None and perturbed.segment_values is not None
    out = []
    for j in changed:
        if segmented:
            assert original.segment_values is not None and perturbed.segment_values is not None
            before, after = original.segment_values[:, j], perturbed.segment_values[:, j]
        else:
            before, after = original.values, perturbed.values
        moved = after - before
        order = np.lexsort((np.arange(len(moved)), -np.abs(moved)))[:top]
        rows = [
            MovedSentence(
                int(i),
                original.sentences[i],
                float(before[i]),
                float(after[i]),
                float(moved[i]),
            )
            for i in order
        ]
        sentence = original.summary_sentences[j] if j < len(original.summary_sentences) else ""
        target = "summary sentence" if segmented else "whole summary"
        out.append(Localization(int(j), sentence, target, rows))
    return out


def localization_report(items: Sequence[Localization], width: int = 90) -> str:
    """Plain text: each changed summary sentence, then the source sentences that moved most."""

    def cut(text: str) -> str:
        text = " ".join(text.split())
        return text if len(text) <= width else text[: width - 3] + "..."

    lines = []
    for item in items:
        lines.append(f'summary sentence {item.summary_index + 1}: "{cut(item.summary_sentence)}"')
        lines.append(f"  (attribution to the {item.target})")
        for row in item.moved:
            lines.append(
                f"  source {row.index + 1:>2}  moved {row.moved:+8.3f}  "
                f"({row.before:+.3f} -> {row.after:+.3f})  {cut(row.sentence)}"
            )
    return "\n".join(lines) + ("\n" if lines else "")


@dataclass
class SentenceChange:
    """A document and one perturbation of it, explained at sentence level with the same seed:
    the instability between the two explanations and, per changed summary sentence, the source
    sentences whose attribution moved most."""

    original: SentenceAttribution
    perturbed: SentenceAttribution
    instability: dict[str, float]
    changed: list[int]  # base-summary sentences the perturbed summary does not contain
    localizations: list[Localization]
    swapped_sentences: list[int]  # source sentences where the perturbation swapped a word

    def report(self) -> str:
        swapped = ", ".join(str(i + 1) for i in self.swapped_sentences) or "none"
        head = (
            f"instability: rank {self.instability['rank']:.3f}, top-k "
            f"{self.instability['topk']:.3f}, mass {self.instability['mass']:.4f}; "
            f"swaps in source sentences {swapped}; "
            f"{len(self.changed)} of {len(self.original.summary_sentences)} summary sentences "
            "changed\n"
        )
        return head + localization_report(self.localizations)


def explain_change(
    scorer: LikelihoodScorer,
    document: str,
    perturbed: str,
    base_summary: str,
    other_summary: str,
    settings: SentenceAttributionSettings,
    top: int = 3,
) -> SentenceChange:
    """Explain log p(base summary | x) for the document and its perturbation (one-for-one word
    swaps: the perturbation keeps the document's sentence slots) with the same settings and
    seed; `other_summary` is the perturbation's summary (swaps restored, so that only what the
    model changed counts as changed)."""
    features = sentence_features(document, settings.max_words)
    original = explain_sentences(scorer, document, base_summary, settings)
    moved = explain_sentences(
        scorer, perturbed, base_summary, settings, word_counts=features.word_counts
    )
    changed = changed_summary_sentences(base_summary, other_summary)
    ends = np.cumsum(features.word_counts)
    differs = [
        i
        for i, (a, b) in enumerate(zip(document.split(), perturbed.split(), strict=True))
        if a != b
    ]
    swapped = sorted({int(np.searchsorted(ends, i, side="right")) for i in differs})
    return SentenceChange(
        original,
        moved,
        sentence_instability(original, moved, settings.top_k),
        changed,
        localize(original, moved, changed, top),
        swapped,
    )
