"""Wasserstein distance between two sentence-embedding clouds (uniform weights)."""

from __future__ import annotations

import numpy as np
import ot


def wasserstein(base: np.ndarray, other: np.ndarray) -> float:
    """Exact 1-Wasserstein distance with Euclidean ground cost between two point clouds.

    Each row is one sentence embedding; every sentence weighs the same.
    """
    base = np.atleast_2d(np.asarray(base, dtype=np.float64))
    other = np.atleast_2d(np.asarray(other, dtype=np.float64))
    if base.shape[0] == 0 or other.shape[0] == 0:
        raise ValueError("both clouds need at least one point")
    if base.shape[1] != other.shape[1]:
        raise ValueError(f"dimension mismatch: {base.shape[1]} vs {other.shape[1]}")
    cost = ot.dist(base, other, metric="euclidean")
    a = np.full(base.shape[0], 1.0 / base.shape[0])
    b = np.full(other.shape[0], 1.0 / other.shape[0])
    return float(max(ot.emd2(a, b, cost), 0.0))


def transport_shares(base: np.ndarray, other: np.ndarray) -> np.ndarray:
    """Share of the transport cost carried by each sentence of `other` (sums to 1, or 0s)."""
    base = np.atleast_2d(np.asarray(base, dtype=np.float64))
    other = np.atleast_2d(np.asarray(other, dtype=np.float64))
    cost = ot.dist(base, other, metric="euclidean")
    a = np.full(base.shape[0], 1.0 / base.shape[0])
    b = np.full(other.shape[0], 1.0 / other.shape[0])
    plan = ot.emd(a, b, cost)
    per_sentence = (plan * cost).sum(axis=0)
    total = per_sentence.sum()
    return per_sentence / total if total > 0 else np.zeros_like(per_sentence)
