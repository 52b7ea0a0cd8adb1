"""How well a consistency score separates labelled pairs, and the thresholds chosen on labels:
ROC AUC, balanced accuracy, the best threshold and cross-fitted balanced accuracy."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np


def roc_auc(labels: Sequence[int], scores: Sequence[float]) -> float:
    """Area under the ROC curve (Mann-Whitney U with average ranks for ties); labels 1/0."""
    from scipy.stats import rankdata

    y = np.asarray(labels, dtype=int)
    s = np.asarray(scores, dtype=float)
    n_pos, n_neg = int((y == 1).sum()), int((y == 0).sum())
    if n_pos == 0 or n_neg == 0:
        return math.nan
    ranks = rankdata(s)
    return float((ranks[y == 1].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))


def balanced_accuracy(labels: Sequence[int], predicted: Sequence[int]) -> float:
    """Mean of the true-positive and true-negative rates."""
    y = np.asarray(labels, dtype=int)
    p = np.asarray(predicted, dtype=int)
    rates = [float((p[y == c] == c).mean()) for c in (0, 1) if (y == c).any()]
    return float(np.mean(rates)) if rates else math.nan


def best_threshold(labels: Sequence[int], scores: Sequence[float]) -> float:
    """The threshold (predict consistent when score >= t) with the best balanced accuracy on
    these labels; ties go to the middle candidate. Fit it on data you do not evaluate on."""
    s = np.asarray(scores, dtype=float)
    values = np.unique(s)
    candidates = np.concatenate(
        [[values[0] - 1e-9], (values[1:] + values[:-1]) / 2, [values[-1] + 1e-9]]
    )
    accs = np.array([balanced_accuracy(labels, (s >= c).astype(int)) for c in candidates])
    best = np.flatnonzero(accs == accs.max())
    return float(candidates[best[len(best) // 2]])


def cross_fit_balanced_accuracy(
    labels: Sequence[int],
    scores: Sequence[float],
    folds: int = 5,
    repeats: int = 10,
    seed: int = 0,
) -> float:
    """Balanced accuracy where each item's threshold was chosen on the other folds only
    (stratified folds, averaged over ``repeats`` random splits)."""
    y = np.asarray(labels, dtype=int)
    s = np.asarray(scores, dtype=float)
    rng = np.random.default_rng(seed)
    results = []
    for _ in range(repeats):
        fold = np.empty(len(y), dtype=int)
        for c in (0, 1):
            idx = rng.permutation(np.flatnonzero(y == c))
            fold[idx] = np.arange(len(idx)) % folds
        predicted = np.empty(len(y), dtype=int)
        for f in range(folds):
            test = fold == f
            if not test.any():
                continue
            t = best_threshold(y[~test], s[~test])
            predicted[test] = (s[test] >= t).astype(int)
        results.append(balanced_accuracy(y, predicted))
    return float(np.mean(results))
