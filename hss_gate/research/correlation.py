"""Correlations with bootstrap confidence intervals (the paper's statistics; pure)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from scipy import stats


def _pearson(x: np.ndarray, y: np.ndarray) -> float:
    if np.std(x) == 0 or np.std(y) == 0:
        return float("nan")
    return float(np.corrcoef(x, y)[0, 1])


def _spearman(x: np.ndarray, y: np.ndarray) -> float:
    return _pearson(stats.rankdata(x), stats.rankdata(y))


METHODS = {"pearson": _pearson, "spearman": _spearman}


def correlation_ci(
    x: Sequence[float],
    y: Sequence[float],
    *,
    method: str = "pearson",
    resamples: int = 1000,
    level: float = 0.95,
    seed: int = 0,
) -> dict[str, float]:
    """r, its percentile bootstrap CI over paired items, and n (pairs with a NaN are dropped)."""
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}; choose from {sorted(METHODS)}")
    a = np.asarray(x, dtype=np.float64)
    b = np.asarray(y, dtype=np.float64)
    if a.shape != b.shape:
        raise ValueError("x and y must have the same length")
    keep = np.isfinite(a) & np.isfinite(b)
    a, b = a[keep], b[keep]
    func = METHODS[method]
    if a.size < 3:
        return {"r": float("nan"), "ci_low": float("nan"), "ci_high": float("nan"), "n": a.size}
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, a.size, size=(resamples, a.size))
    boot = np.array([func(a[i], b[i]) for i in draws])
    boot = boot[np.isfinite(boot)]
    alpha = (1.0 - level) / 2.0
    low, high = np.quantile(boot, [alpha, 1.0 - alpha]) if boot.size else (np.nan, np.nan)
    return {"r": func(a, b), "ci_low": float(low), "ci_high": float(high), "n": int(a.size)}
