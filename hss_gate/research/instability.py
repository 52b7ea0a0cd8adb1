"""Attribution instability and localization (METHOD.md section 5): pure functions.

Inputs are word attributions (one value per whitespace word of a document) for the original
document and for perturbed versions of it. Perturbations swap one word for one word, so word i
of the original and word i of a perturbation are the same slot; `align` checks that and falls
back to a difflib alignment if a caller ever passes a text with a different word count.

The three views of "how much did the explanation move" (rank, top-k, mass; docs/ATTRIBUTION.md)
are hss_gate.scoring.instability_metrics, which the gate's attribution step measures with too; here
they are applied to aligned words, averaged over a document's perturbations (`aggregate`) and
localized to the words and summary sentences that moved.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field

import numpy as np

from hss_gate.scoring.instability_metrics import METRICS, attribution_mass, instability

# --------------------------------------------------------------------------- alignment


@dataclass(frozen=True)
class Alignment:
    """Which word positions of the original and the perturbed text are the same slot."""

    original: np.ndarray  # positions in the original, one per aligned slot
    perturbed: np.ndarray  # the matching positions in the perturbed text
    swapped: tuple[int, ...]  # original positions whose word differs (the swaps)
    one_to_one: bool  # same word count: the identity alignment


def align(original: Sequence[str], perturbed: Sequence[str]) -> Alignment:
    """Align two word lists: identity for one-for-one swaps, difflib otherwise."""
    if len(original) == len(perturbed):
        idx = np.arange(len(original))
        swapped = tuple(
            i for i, (a, b) in enumerate(zip(original, perturbed, strict=True)) if a != b
        )
        return Alignment(idx, idx.copy(), swapped, True)
    left: list[int] = []
    right: list[int] = []
    swapped_list: list[int] = []
    matcher = difflib.SequenceMatcher(a=list(original), b=list(perturbed), autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal" or (tag == "replace" and i2 - i1 == j2 - j1):
            left.extend(range(i1, i2))
            right.extend(range(j1, j2))
            if tag == "replace":
                swapped_list.extend(range(i1, i2))
    return Alignment(
        np.array(left, dtype=int), np.array(right, dtype=int), tuple(swapped_list), False
    )


def aligned_instability(
    original_words: Sequence[str],
    original: np.ndarray,
    perturbed_words: Sequence[str],
    perturbed: np.ndarray,
    k: int = 10,
) -> dict[str, float]:
    """Instability after aligning the two documents' words (see `align`)."""
    al = align(original_words, perturbed_words)
    a = np.asarray(original, dtype=np.float64)[al.original]
    b = np.asarray(perturbed, dtype=np.float64)[al.perturbed]
    return instability(a, b, k) | {"aligned": float(len(al.original)), "swaps": len(al.swapped)}


def aggregate(per_perturbation: Sequence[dict[str, float]]) -> dict[str, float]:
    """Per-document instability: the mean of each metric over the perturbations."""
    out: dict[str, float] = {"n": float(len(per_perturbation))}
    for name in METRICS:
        values = [p[name] for p in per_perturbation if name in p]
        out[name] = float(np.mean(values)) if values else float("nan")
    return out


# --------------------------------------------------------------------------- localization


@dataclass
class WordChange:
    """How much one source word's share of the attribution moved under perturbation."""

    position: int
    word: str
    attribution: float  # in the original document
    share: float  # |attribution| / total |attribution| in the original
    mean_abs_change: float  # mean over perturbations of |share change|
    max_abs_change: float
    times_swapped: int  # in how many perturbations this word itself was replaced


@dataclass
class SentenceShare:
    """A base-summary sentence's share of the transport cost, over the perturbations."""

    index: int
    sentence: str
    mean_share: float
    max_share: float
    shares: list[float] = field(default_factory=list)


def word_changes(
    words: Sequence[str],
    original: np.ndarray,
    perturbed: Sequence[np.ndarray],
    swapped: Sequence[Sequence[int]] = (),
) -> list[WordChange]:
    """Per source word: change of its normalized |attribution| share, mean/max over perturbations.

    Shares (not raw values) are compared so that a perturbation that only rescales the whole
    explanation moves no word. `perturbed` vectors must already be aligned with `words`.
    """
    base = attribution_mass(original)
    if perturbed:
        deltas = np.abs(np.stack([attribution_mass(p) for p in perturbed]) - base)
        mean, peak = deltas.mean(axis=0), deltas.max(axis=0)
    else:
        mean = peak = np.zeros(len(words))
    counts = np.zeros(len(words), dtype=int)
    for positions in swapped:
        for pos in positions:
            if 0 <= pos < len(words):
                counts[pos] += 1
    values = np.asarray(original, dtype=np.float64)
    return [
        WordChange(
            i, w, float(values[i]), float(base[i]), float(mean[i]), float(peak[i]), int(counts[i])
        )
        for i, w in enumerate(words)
    ]


def sentence_shares(
    sentences: Sequence[str],
    base_embeddings: np.ndarray,
    perturbed_embeddings: Sequence[np.ndarray],
) -> list[SentenceShare]:
    """Per base-summary sentence, its share of each perturbation's transport cost.

    distance.transport_shares(perturbed, base) gives the cost carried by each base sentence in
    the optimal plan to that perturbation's summary; shares sum to 1 per perturbation (0s when
    the summaries are identical).
    """
    from hss_gate.scoring.distance import transport_shares

    base = np.atleast_2d(np.asarray(base_embeddings, dtype=np.float64))
    if base.shape[0] != len(sentences):
        raise ValueError(f"{len(sentences)} sentences but {base.shape[0]} embeddings")
    table = np.array([transport_shares(p, base) for p in perturbed_embeddings]).reshape(
        len(perturbed_embeddings), len(sentences)
    )
    out = []
    for i, sentence in enumerate(sentences):
        col = table[:, i] if len(table) else np.zeros(0)
        out.append(
            SentenceShare(
                i,
                sentence,
                float(col.mean()) if len(col) else 0.0,
                float(col.max()) if len(col) else 0.0,
                [float(x) for x in col],
            )
        )
    return out


def records(items: Sequence[WordChange | SentenceShare]) -> list[dict]:
    """Plain dicts for CSV/HTML rendering."""
    return [asdict(item) for item in items]
