"""Correlations and their bootstrap CIs against scipy."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from hss_gate.research.correlation import correlation_ci

pytestmark = pytest.mark.unit


@pytest.fixture()
def pairs():
    rng = np.random.default_rng(4)
    x = rng.normal(size=60)
    return x, 0.6 * x + rng.normal(scale=0.8, size=60)


def test_point_estimates_match_scipy(pairs):
    x, y = pairs
    assert correlation_ci(x, y)["r"] == pytest.approx(stats.pearsonr(x, y)[0])
    spearman = correlation_ci(x, y, method="spearman")["r"]
    assert spearman == pytest.approx(stats.spearmanr(x, y)[0])


def test_bootstrap_ci_matches_scipy_percentile_bootstrap(pairs):
    x, y = pairs
    ours = correlation_ci(x, y, resamples=2000, seed=1)
    theirs = stats.bootstrap(
        (x, y),
        lambda a, b: stats.pearsonr(a, b)[0],
        paired=True,
        vectorized=False,
        n_resamples=2000,
        method="percentile",
        random_state=1,
    ).confidence_interval
    assert ours["ci_low"] < ours["r"] < ours["ci_high"]
    # different random draws: the two percentile intervals agree to Monte Carlo error
    assert ours["ci_low"] == pytest.approx(theirs.low, abs=0.05)
    assert ours["ci_high"] == pytest.approx(theirs.high, abs=0.05)


def test_nan_pairs_are_dropped_and_tiny_or_constant_inputs_give_nan():
    x = [0.1, 0.2, np.nan, 0.4, 0.5]
    y = [1.0, 2.0, 3.0, 4.0, 5.5]
    result = correlation_ci(x, y, method="spearman")
    assert result["n"] == 4 and result["r"] == pytest.approx(1.0)
    assert np.isnan(correlation_ci([1, 2], [3, 4])["r"])
    assert np.isnan(correlation_ci([1, 1, 1, 1], [1, 2, 3, 4])["r"])
    with pytest.raises(ValueError):
        correlation_ci([1, 2, 3], [1, 2, 3], method="kendall")
