"""From a sentence matrix (summary sentences x document sentences) to one score: SummaC-ZS
and the SummaC-Conv head (pure numpy)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np


def sigmoid(z: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-np.clip(z, -40, 40)))


def summac_zs(matrix: np.ndarray, reduce: str = "mean") -> float:
    """SummaC-ZS: ``matrix[i, j]`` = consistency of summary sentence i with document sentence j;
    the best document sentence supports each summary sentence, then ``reduce`` (mean | min) over
    summary sentences. An empty matrix gives NaN."""
    m = np.asarray(matrix, dtype=float)
    if m.ndim != 2:
        raise ValueError(f"expected a 2-D matrix, got shape {m.shape}")
    if m.size == 0:
        return math.nan
    best = m.max(axis=1)
    if reduce == "mean":
        return float(best.mean())
    if reduce == "min":
        return float(best.min())
    raise ValueError(f"reduce must be 'mean' or 'min', not {reduce!r}")


def row_histograms(
    matrix: np.ndarray, bins: int, low: float = 0.0, high: float = 1.0
) -> np.ndarray:
    """SummaC-Conv's input: per summary sentence (row), the histogram of its scores against all
    document sentences over ``bins`` equal bins on [low, high] (values clipped), as shares."""
    m = np.clip(np.asarray(matrix, dtype=float), low, high)
    if m.ndim != 2 or len(m) == 0:
        return np.zeros((0, bins))
    edges = np.linspace(low, high, bins + 1)
    hist = np.stack([np.histogram(row, bins=edges)[0] for row in m]).astype(float)
    return hist / max(m.shape[1], 1)


@dataclass(frozen=True)
class ConvAggregator:
    """SummaC-Conv head. As in SummaC's code, a linear layer maps each summary sentence's
    histogram to a logit (the "convolution": its kernel spans the whole histogram), the logits
    are averaged over the summary's sentences and a sigmoid gives P(consistent). Differences from
    SummaC: histograms are shares (not counts), equal-width bins, no 10-sentence cap."""

    weights: tuple[float, ...]
    bias: float
    low: float = 0.0
    high: float = 1.0

    @property
    def bins(self) -> int:
        return len(self.weights)

    def sentence_logits(self, matrix: np.ndarray) -> np.ndarray:
        """w . histogram(row) + b for each summary sentence (row)."""
        h = row_histograms(matrix, self.bins, self.low, self.high)
        return h @ np.asarray(self.weights) + self.bias

    def score(self, matrix: np.ndarray) -> float:
        """sigmoid(mean of the sentence logits); NaN for an empty matrix."""
        z = self.sentence_logits(matrix)
        return float(sigmoid(z.mean())) if len(z) else math.nan


def fit_conv(
    matrices: Sequence[np.ndarray],
    labels: Sequence[int],
    bins: int = 20,
    l2: float = 1e-4,
    low: float = 0.0,
    high: float = 1.0,
) -> ConvAggregator:
    """Fit the Conv head on summary-level labels (1 = consistent) by L2-regularized cross-entropy.
    The mean of linear logits is linear in the mean histogram, so this is a logistic regression
    on each summary's mean row histogram. Fit it on data you do not evaluate on."""
    from scipy.optimize import minimize

    x = np.stack([row_histograms(m, bins, low, high).mean(axis=0) for m in matrices])
    y = np.asarray(labels, dtype=float)

    def loss(theta: np.ndarray) -> tuple[float, np.ndarray]:
        w, b = theta[:-1], theta[-1]
        p = np.clip(sigmoid(x @ w + b), 1e-9, 1 - 1e-9)
        nll = -np.mean(y * np.log(p) + (1 - y) * np.log(1 - p)) + l2 * float(w @ w)
        r = (p - y) / len(y)
        return nll, np.append(x.T @ r + 2 * l2 * w, r.sum())

    result = minimize(loss, np.zeros(bins + 1), jac=True, method="L-BFGS-B")
    return ConvAggregator(tuple(float(v) for v in result.x[:-1]), float(result.x[-1]), low, high)
