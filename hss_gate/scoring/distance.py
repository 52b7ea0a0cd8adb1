"""Wasserstein distance between two sentence-embedding clouds (uniform weights)."""

from __future__ import annotations

import math

import numpy as np

# Above this many replicated points the transport LP goes to POT's network simplex instead.
MAX_ASSIGNMENT = 400


def wasserstein(base: np.ndarray, other: np.ndarray) -> float:
    """Exact 1-Wasserstein distance with Euclidean ground cost between two point clouds.

    Each row is one sentence embedding; every sentence weighs the same. With uniform weights
    the optimum is an assignment between the clouds each repeated up to L = lcm(n, m) points
    (Birkhoff), solved exactly by scipy's linear_sum_assignment; POT (which imports torch,
    ~2.5 s) is only loaded for larger clouds.
    """
    base = np.atleast_2d(np.asarray(base, dtype=np.float64))
    other = np.atleast_2d(np.asarray(other, dtype=np.float64))
    if base.shape[0] == 0 or other.shape[0] == 0:
        raise ValueError("both clouds need at least one point")
    if base.shape[1] != other.shape[1]:
        raise ValueError(f"dimension mismatch: {base.shape[1]} vs {other.shape[1]}")
    n, m = base.shape[0], other.shape[0]
    common = math.lcm(n, m)
    if common > MAX_ASSIGNMENT:
        import ot

        cost = ot.dist(base, other, metric="euclidean")
        return float(max(ot.emd2(np.full(n, 1.0 / n), np.full(m, 1.0 / m), cost), 0.0))
    from scipy.optimize import linear_sum_assignment

    cost = np.linalg.norm(base[:, None, :] - other[None, :, :], axis=2)
    expanded = np.repeat(np.repeat(cost, common // n, axis=0), common // m, axis=1)
    rows, cols = linear_sum_assignment(expanded)
    return float(max(expanded[rows, cols].sum() / common, 0.0))


def transport_shares(base: np.ndarray, other: np.ndarray) -> np.ndarray:
    """Share of the transport cost carried by each sentence of `other` (sums to 1, or 0s)."""
    base = np.atleast_2d(np.asarray(base, dtype=np.float64))
    other = np.atleast_2d(np.asarray(other, dtype=np.float64))
    import ot

    cost = ot.dist(base, other, metric="euclidean")
    a = np.full(base.shape[0], 1.0 / base.shape[0])
    b = np.full(other.shape[0], 1.0 / other.shape[0])
    plan = ot.emd(a, b, cost)
    per_sentence = (plan * cost).sum(axis=0)
    total = per_sentence.sum()
    return per_sentence / total if total > 0 else np.zeros_like(per_sentence)
