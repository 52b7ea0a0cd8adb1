"""What the monitor's window test can see (hss_gate/monitoring/detectable.py): the exact power
against the real test's own Monte Carlo, the smallest detectable share, and a window at that
share turning the comparison worse."""

from __future__ import annotations

import math
import random

import pytest

from hss_gate.monitoring.detectable import detectable_share, detection_power, rejections
from hss_gate.monitoring.rules import compare_blocking_windows, one_sided_fisher

pytestmark = pytest.mark.unit


def test_the_exact_power_is_what_the_fisher_test_itself_does_on_drawn_windows():
    rng, runs, hits = random.Random(0), 2000, 0
    for _ in range(runs):
        reference = [float(rng.random() < 0.3) for _ in range(60)]
        current = [float(rng.random() < 0.75) for _ in range(20)]
        hits += one_sided_fisher(reference, current) < 0.001
    exact = detection_power(0.3, 0.75, rejections(60, 20, 0.001))
    assert 0.2 < exact < 0.9  # a power the check can tell apart from 0 and 1
    assert abs(hits / runs - exact) < 3 * math.sqrt(exact * (1 - exact) / runs)


def test_the_smallest_detectable_share_follows_the_windows():
    # the defaults (reference 100, current 20, alpha 0.001) on bart-like traffic (44% flagged):
    # docs/MONITORING.md's resampling of real traffic found 0.89 at 80% power
    assert detectable_share(0.44, 100, 20, 0.001) == 0.91
    assert detectable_share(0.44, 100, 50, 0.001) < 0.91  # a larger current window sees more
    assert detectable_share(0.44, 100, 20, 0.01) < 0.91  # and so does a looser alpha
    assert detectable_share(0.0, 100, 20, 0.001) < 0.44
    assert detectable_share(1.0, 100, 20, 0.001) is None  # nothing can rise above all flagged
    assert detectable_share(0.9, 100, 3, 0.001) is None  # three samples can never reach p < 0.001


def test_a_current_window_at_the_detectable_share_is_worse_and_one_at_the_reference_is_not():
    reference = {
        "live_low_consistency": [1.0] * 20 + [0.0] * 80,
        "live_any_unsupported": [0.0] * 100,
    }
    seen = detectable_share(0.2, 100, 20, 0.001)
    flagged = math.ceil(seen * 20)
    current = {
        "live_low_consistency": [1.0] * flagged + [0.0] * (20 - flagged),
        "live_any_unsupported": [0.0] * 20,
    }
    row = compare_blocking_windows(reference, current, 0.001)[0]
    assert row["detectable_share"] == seen and row["worse"]
    same = {"live_low_consistency": [1.0] * 4 + [0.0] * 16, "live_any_unsupported": [0.0] * 20}
    assert not compare_blocking_windows(reference, same, 0.001)[0]["worse"]
