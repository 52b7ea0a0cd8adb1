import numpy as np
import pytest

from hss_gate.scoring.severity import (
    bootstrap_ci,
    paired_bootstrap_ci,
    percentile_constant,
    severity,
)

pytestmark = pytest.mark.unit


def test_severity_is_mean_of_clipped_ratios():
    assert severity([0.1, 0.2, 0.4], 0.4) == pytest.approx((0.25 + 0.5 + 1.0) / 3)


def test_severity_clips_at_one():
    assert severity([5.0, 10.0], 1.0) == 1.0


def test_zero_constant_scores_zero_distances_zero_and_others_one():
    assert severity([0.0, 0.0], 0.0) == 0.0
    assert severity([0.0, 0.3], 0.0) == 0.5
    # float noise from re-embedding the same text is not movement
    assert severity([3e-8, 0.3], 4e-7) == 0.5


@pytest.mark.parametrize("bad", [[-0.1], [float("nan")], []])
def test_invalid_distances_raise(bad):
    with pytest.raises(ValueError):
        severity(bad, 1.0)


def test_invalid_constant_raises():
    with pytest.raises(ValueError):
        severity([0.1], -1.0)


def test_percentile_constant_matches_numpy():
    values = np.arange(101, dtype=float)
    assert percentile_constant(values, 0.95) == pytest.approx(95.0)


def test_bootstrap_ci_brackets_the_mean_and_is_deterministic():
    values = np.random.default_rng(1).normal(loc=0.4, scale=0.1, size=40)
    low, high = bootstrap_ci(values, resamples=2000, seed=3)
    assert low < values.mean() < high
    assert (low, high) == bootstrap_ci(values, resamples=2000, seed=3)
    assert high - low < 0.1


def test_paired_bootstrap_detects_a_shift():
    a = np.linspace(0.2, 0.6, 30)
    mean, low, high = paired_bootstrap_ci(a + 0.1, a)
    assert mean == pytest.approx(0.1)
    assert low == pytest.approx(0.1) and high == pytest.approx(0.1)
