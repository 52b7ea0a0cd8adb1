"""experiments/paired_statistic.py: the per-summary statistics of the claim checker's sentence
scores that the FRANK replay compares."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

from tests.conftest import REPO

pytestmark = pytest.mark.unit

SCORES = {"a": [0.9, 0.1, 0.8], "b": [0.2], "c": []}


def _script():
    spec = importlib.util.spec_from_file_location(
        "paired_statistic", REPO / "experiments" / "paired_statistic.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_min_mean_and_supported_share_of_each_summary():
    script = _script()
    assert script.statistic("min", SCORES, 0.5) == {"a": 0.1, "b": 0.2, "c": 0.0}
    mean = script.statistic("mean", SCORES, 0.5)
    assert mean["a"] == pytest.approx(0.6) and mean["b"] == 0.2 and mean["c"] == 0.0
    share = script.statistic("supported_share", SCORES, 0.5)
    assert share["a"] == pytest.approx(2 / 3) and share["b"] == 0.0


def test_per_claim_values_average_to_the_mean_over_all_sentences():
    """The linearised per-document values: their mean is the ratio estimator (every sentence a
    unit: 2.0 / 4 = 0.5, not the mean of the summaries' means), each moved by its own sentences'
    surplus over the ratio."""
    values = _script().statistic("per_claim", SCORES, 0.5)
    assert np.mean(list(values.values())) == pytest.approx(0.5)
    assert values["a"] == pytest.approx(0.5 + (1.8 - 0.5 * 3) / (4 / 3))  # 0.725
    assert values["b"] == pytest.approx(0.5 + (0.2 - 0.5) / (4 / 3))  # 0.275
    assert values["c"] == pytest.approx(0.5)  # no sentence: the system's ratio
