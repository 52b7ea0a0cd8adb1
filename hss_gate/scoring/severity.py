"""The Hallucination Severity Score and its aggregates (pure functions)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

# distances this small are float noise (re-embedding the same text), not movement
ZERO_DISTANCE = 1e-6


def severity(distances: Sequence[float], constant: float) -> float:
    """HSS = mean_k min(D_k / M_c, 1). With M_c ~ 0 (a reference model that never moves) a
    distance ~ 0 scores 0 and any other 1; 'about zero' is at most ZERO_DISTANCE."""
    d = np.asarray(distances, dtype=np.float64)
    if d.size == 0:
        raise ValueError("severity needs at least one distance")
    if np.any(d < 0) or not np.all(np.isfinite(d)):
        raise ValueError("distances must be finite and non-negative")
    if constant < 0 or not np.isfinite(constant):
        raise ValueError("the normalization constant must be finite and non-negative")
    if constant <= ZERO_DISTANCE:
        return float(np.mean(d > ZERO_DISTANCE))
    return float(np.mean(np.minimum(d / constant, 1.0)))


def percentile_constant(distances: Sequence[float], quantile: float = 0.95) -> float:
    """M_c: the given quantile of reference distances (linear interpolation)."""
    d = np.asarray(distances, dtype=np.float64)
    if d.size == 0:
        raise ValueError("no reference distances")
    return float(np.quantile(d, quantile))


def bootstrap_ci(
    values: Sequence[float], *, resamples: int = 1000, level: float = 0.95, seed: int = 0
) -> tuple[float, float]:
    """Percentile bootstrap confidence interval of the mean."""
    v = np.asarray(values, dtype=np.float64)
    if v.size == 0:
        return (float("nan"), float("nan"))
    if v.size == 1:
        return (float(v[0]), float(v[0]))
    rng = np.random.default_rng(seed)
    means = v[rng.integers(0, v.size, size=(resamples, v.size))].mean(axis=1)
    return _percentile_interval(means, level)


def _percentile_interval(means: np.ndarray, level: float) -> tuple[float, float]:
    """The central `level` interval of bootstrap means (percentile method)."""
    alpha = (1.0 - level) / 2.0
    low, high = np.quantile(means, [alpha, 1.0 - alpha])
    return (float(low), float(high))


def _paired_difference(first: Sequence[float], second: Sequence[float]) -> np.ndarray:
    """first - second item by item; ValueError when the samples are not paired."""
    a = np.asarray(first, dtype=np.float64)
    b = np.asarray(second, dtype=np.float64)
    if a.shape != b.shape:
        raise ValueError("paired samples must have the same length")
    return a - b


def paired_bootstrap_ci(
    first: Sequence[float],
    second: Sequence[float],
    *,
    resamples: int = 1000,
    level: float = 0.95,
    seed: int = 0,
) -> tuple[float, float, float]:
    """Mean of first - second over paired items, with a percentile bootstrap CI."""
    diff = _paired_difference(first, second)
    low, high = bootstrap_ci(diff, resamples=resamples, level=level, seed=seed)
    return (float(diff.mean()), low, high)


def paired_t_ci(
    first: Sequence[float], second: Sequence[float], *, level: float = 0.95
) -> tuple[float, float, float]:
    """Mean of first - second over paired items, with a Student-t CI: better calibrated than
    the percentile bootstrap for the small samples a sequential gate looks at (its coverage
    is checked by simulation in tests/unit/test_sequential.py)."""
    from scipy import stats

    diff = _paired_difference(first, second)
    mean = float(diff.mean())
    if diff.size < 2 or float(diff.std(ddof=1)) == 0.0:
        return (mean, mean, mean)
    half = float(
        stats.t.ppf(0.5 + level / 2, diff.size - 1) * diff.std(ddof=1) / np.sqrt(diff.size)
    )
    return (mean, mean - half, mean + half)


def difference_bootstrap_ci(
    first: Sequence[float],
    second: Sequence[float],
    *,
    resamples: int = 1000,
    level: float = 0.95,
    seed: int = 0,
) -> tuple[float, float, float]:
    """mean(first) - mean(second) for independent samples, with a percentile bootstrap CI."""
    a = np.asarray(first, dtype=np.float64)
    b = np.asarray(second, dtype=np.float64)
    if a.size == 0 or b.size == 0:
        raise ValueError("both samples need at least one value")
    rng = np.random.default_rng(seed)
    diffs = a[rng.integers(0, a.size, size=(resamples, a.size))].mean(axis=1) - b[
        rng.integers(0, b.size, size=(resamples, b.size))
    ].mean(axis=1)
    low, high = _percentile_interval(diffs, level)
    return (float(a.mean() - b.mean()), low, high)
