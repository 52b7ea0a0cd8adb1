"""How far an attribution moved: three instability metrics between two aligned attribution
vectors (one value per feature, a word or a sentence, slot i of both the same feature). Pure.

Each in a fixed range (docs/ATTRIBUTION.md):
- rank:        1 - Spearman correlation of the signed attributions           in [0, 2]
- top-k:       1 - Jaccard overlap of the k features with largest |value|    in [0, 1]
- mass:        1-D Wasserstein distance between the normalized |value|
               mass over feature positions scaled to [0, 1]                  in [0, 1]

The gate's attribution instability (hss_gate.decision.attribution) and the research wing's word
level (hss_gate.research.instability: alignment, localization) both measure with these.
"""

from __future__ import annotations

import numpy as np

METRICS = ("rank", "topk", "mass")


def _pair(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    a = np.asarray(a, dtype=np.float64).ravel()
    b = np.asarray(b, dtype=np.float64).ravel()
    if a.shape != b.shape:
        raise ValueError(f"attributions must align: {a.shape} vs {b.shape}")
    if not (np.isfinite(a).all() and np.isfinite(b).all()):
        raise ValueError("attributions must be finite")
    return a, b


def _ranks(x: np.ndarray) -> np.ndarray:
    """Average ranks (ties share their mean rank), as scipy.stats.rankdata."""
    order = np.argsort(x, kind="mergesort")
    ranks = np.empty(len(x), dtype=np.float64)
    sorted_x = x[order]
    start = 0
    for end in range(1, len(x) + 1):
        if end == len(x) or sorted_x[end] != sorted_x[start]:
            ranks[order[start:end]] = (start + end - 1) / 2.0
            start = end
    return ranks


def spearman(a: np.ndarray, b: np.ndarray) -> float:
    """Spearman rank correlation; 1 when both are constant (same ranking), 0 when one is."""
    a, b = _pair(a, b)
    ra, rb = _ranks(a), _ranks(b)
    if np.array_equal(ra, rb):
        return 1.0  # exact, not 1 - rounding error
    ra -= ra.mean()
    rb -= rb.mean()
    na, nb = np.sqrt((ra * ra).sum()), np.sqrt((rb * rb).sum())
    if na == 0 and nb == 0:
        return 1.0
    if na == 0 or nb == 0:
        return 0.0
    return float(np.clip((ra * rb).sum() / (na * nb), -1.0, 1.0))


def rank_instability(a: np.ndarray, b: np.ndarray) -> float:
    """1 - Spearman correlation of aligned signed attributions, in [0, 2]."""
    return 1.0 - spearman(a, b)


def top_k(values: np.ndarray, k: int) -> set[int]:
    """Positions of the k largest |values| (ties broken by position, earlier first)."""
    values = np.abs(np.asarray(values, dtype=np.float64).ravel())
    k = max(0, min(k, len(values)))
    order = np.lexsort((np.arange(len(values)), -values))
    return {int(i) for i in order[:k]}


def topk_instability(a: np.ndarray, b: np.ndarray, k: int = 10) -> float:
    """1 - Jaccard overlap of the top-k |attribution| positions, in [0, 1]."""
    a, b = _pair(a, b)
    if len(a) == 0 or k <= 0:
        return 0.0
    sa, sb = top_k(a, k), top_k(b, k)
    return 1.0 - len(sa & sb) / len(sa | sb)


def attribution_mass(values: np.ndarray) -> np.ndarray:
    """|values| normalized to sum 1 (uniform when all are zero)."""
    mass = np.abs(np.asarray(values, dtype=np.float64).ravel())
    total = mass.sum()
    if total <= 0:
        return np.full(len(mass), 1.0 / len(mass)) if len(mass) else mass
    return mass / total


def word_positions(n: int) -> np.ndarray:
    """Word positions scaled to [0, 1] so that distances compare across document lengths."""
    return np.linspace(0.0, 1.0, n) if n > 1 else np.zeros(n)


def mass_wasserstein(a: np.ndarray, b: np.ndarray) -> float:
    """1-D Wasserstein distance between the |attribution| mass over scaled positions, in [0, 1]."""
    a, b = _pair(a, b)
    if len(a) <= 1:
        return 0.0
    cdf_gap = np.cumsum(attribution_mass(a) - attribution_mass(b))[:-1]
    return float(np.abs(cdf_gap).sum() / (len(a) - 1))


def instability(a: np.ndarray, b: np.ndarray, k: int = 10) -> dict[str, float]:
    """All three instability metrics between two aligned attribution vectors."""
    return {
        "rank": rank_instability(a, b),
        "topk": topk_instability(a, b, k),
        "mass": mass_wasserstein(a, b),
    }
