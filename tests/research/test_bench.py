"""The bench's arithmetic and report (the timings themselves are never asserted)."""

import json
import sys

import numpy as np
import pytest

from hss_gate.research.bench import linear_fit, ratios, run_timed
from hss_gate.research.bench_run import markdown

pytestmark = pytest.mark.unit


def test_linear_fit_recovers_a_line_and_flags_a_curve():
    exact = linear_fit([1, 2, 4, 8], [3.0 + 2 * x for x in (1, 2, 4, 8)])
    assert np.isclose(exact["slope_s"], 2.0) and np.isclose(exact["intercept_s"], 3.0)
    assert np.isclose(exact["r2"], 1.0)
    curved = linear_fit([1, 2, 4, 8], [x**3 for x in (1, 2, 4, 8)])
    assert curved["r2"] < 0.95
    assert linear_fit([4, 4], [1.0, 2.0]) is None


def test_ratios_divide_the_right_times():
    times = {
        "cold_s": 120.0,
        "floor_s": 100.0,
        "naive_s": 90.0,
        "cold_sample_s": 30.0,
        "warm_s": 3.0,
    }
    shap = {
        "ours": {"evaluations": 32},
        "default": {"evaluations": 400},
        "spearman": 0.7,
        "seconds_per_document": 41.5,
    }
    got = ratios(times, shap)
    assert got == {
        "floor_ratio": 1.2,
        "speedup_vs_naive": 3.0,
        "warm_over_cold": 0.025,
        "shap_eval_fraction": 0.08,
        "shap_spearman_vs_default": 0.7,
        "attribution_s_per_document": 41.5,
    }
    skipped = ratios(times, {"skipped": "extractive"})
    assert skipped["shap_eval_fraction"] is None and skipped["shap_spearman_vs_default"] is None


def test_run_timed_reports_the_childs_peak_memory_and_result(tmp_path):
    result = tmp_path / "r.json"
    code = (
        "import json, sys; block = bytearray(200 * 2**20); "
        f"json.dump({{'n': len(block)}}, open({str(result)!r}, 'w'))"
    )
    measured = run_timed([sys.executable, "-c", code], {}, result)
    assert measured.result == {"n": 200 * 2**20}
    assert measured.peak_rss_mb >= 200  # the 200 MiB block, not the parent's memory
    with pytest.raises(Exception, match="bench step failed"):
        run_timed([sys.executable, "-c", "raise SystemExit('boom')"], {})


def test_markdown_marks_met_and_missed_targets():
    bench = {
        "plan": {"model": "gguf:x"},
        "documents": 2,
        "created": "now",
        "machine": {"cpu": "cpu", "cores": 2},
        "floor_ratio": 1.1,
        "speedup_vs_naive": 2.0,
        "warm_over_cold": 0.01,
        "shap_eval_fraction": None,
        "shap_spearman_vs_default": None,
        "attribution_s_per_document": 41.5,
        "gate_estimate": {
            "other_models_floor_s": {"gguf:y": 10.0},
            "documents": 2,
            "estimated_s": 1000.0,
            "target_s": 900,
        },
        "steps_s": {"cold": 1.0},
        "peak_rss_mb": {"cold": 10.0},
    }
    text = markdown(bench)
    assert "| floor_ratio | 1.100 | <= 1.15 | yes |" in text
    assert "| speedup_vs_naive | 2.000 | >= 4.0 | no |" in text
    assert "| shap_eval_fraction | not measured |" in text
    assert "| attribution_s_per_document | 41.500 | <= 30.0 | no |" in text
    assert "| 1000 s | <= 900 s | no |" in text
    json.dumps(bench)
