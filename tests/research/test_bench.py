"""The bench's arithmetic and report (the timings themselves are never asserted)."""

import json
import sys
from pathlib import Path

import numpy as np
import pytest

from hss_gate.research.attribution_bench import attribution_lines, cost_record
from hss_gate.research.bench import linear_fit, ratios, run_timed
from hss_gate.research.bench_run import checker_lines, markdown, sentence_shap_lines
from hss_gate.research.checker_bench import checker_pairs, checker_stage, time_checker
from hss_gate.text.corpus import Document

pytestmark = pytest.mark.unit
REPO = Path(__file__).resolve().parents[2]


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
        "attribution_s_per_evaluation": None,  # a bench.json from before issue 47
    }
    assert (
        ratios(times, shap | {"seconds_per_evaluation": 0.43})["attribution_s_per_evaluation"]
        == 0.43
    )
    skipped = ratios(times, {"skipped": "extractive"})
    assert skipped["shap_eval_fraction"] is None and skipped["shap_spearman_vs_default"] is None


def _explained(doc_id, shap, lime, shap_s, lime_s, tokens=None, summary_tokens=None):
    return {
        "doc_id": doc_id,
        "summary_words": 60,
        "summary_tokens": summary_tokens,
        "seconds": shap_s + lime_s + 1.0,
        "evaluations": {"shap": shap, "lime": lime},
        "method_seconds": {"shap": shap_s, "lime": lime_s},
        "tokens_computed": tokens,
    }


def test_cost_record_gives_seconds_per_evaluation_beside_the_work():
    rows = [
        _explained("a", 64, 32, 32.0, 8.0, tokens=38400, summary_tokens=100),
        _explained("b", 64, 30, 16.0, 7.0, tokens=28000, summary_tokens=110),
    ]
    got = cost_record(rows)
    assert got["documents_explained"] == 2
    assert got["evaluations_per_document"] == 95.0  # (96 + 94) / 2
    assert got["seconds_per_evaluation"] == round(63.0 / 190, 4)  # the methods' own seconds
    assert got["seconds_per_evaluation_by_method"] == {"lime": round(15 / 62, 4), "shap": 0.375}
    assert got["seconds_per_document"] == pytest.approx((41.0 + 24.0) / 2)
    assert got["summary_words"] == 60.0 and got["summary_tokens"] == 105.0
    assert got["tokens_per_evaluation"] == round(66400 / 190, 1)
    # a scorer that does not count its tokens (llama.cpp, the fake): None, not 0
    plain = cost_record([_explained("a", 16, 16, 4.0, 4.0)])
    assert plain["tokens_per_evaluation"] is None and plain["summary_tokens"] is None
    assert plain["seconds_per_evaluation"] == 0.25


def test_attribution_lines_show_a_multiplied_cost():
    record = cost_record([_explained("a", 64, 32, 25.6, 9.6, tokens=36000, summary_tokens=104)])
    shap = {"model": "gguf:smollm2-135m-instruct", "dtype": "bfloat16", "workers": 2} | record
    (line,) = attribution_lines(shap)
    assert line.startswith(
        "| attribution seconds per evaluation, gguf:smollm2-135m-instruct (bfloat16, 2 workers):"
        " 60-word (104-token) summaries, 96 evaluations and 36.2 s per document, 375 tokens "
        "computed per evaluation (lime 0.30 s, shap 0.40 s)"
    )
    assert line.endswith("| 0.367 s | <= 1 s | yes |")
    ten_times = cost_record([_explained("a", 64, 32, 256.0, 96.0)])
    (slow,) = attribution_lines(shap | ten_times)
    assert slow.endswith("| 3.667 s | <= 1 s | no |")
    assert attribution_lines({"skipped": "extractive"}) == [
        "| attribution seconds per evaluation | not measured (extractive) | <= 1 s | - |"
    ]
    assert attribution_lines({"ours": {}, "spearman": 0.5}) == []  # an older bench.json
    assert attribution_lines(None) == []


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
        "floor_ratio": 1.05,
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
        "checker": {
            "model": "invented-sbert",
            "pairs": 48,
            "mean_source_words": 423.4,
            "load_s": 9.93,
            "cold_s_per_pair": 1.7546,
            "warm_s_per_pair": 0.0209,
            "amortized_s_per_pair": 1.9248,
            "target_s_per_pair": 1.0,
        },
    }
    text = markdown(bench)
    assert "| floor_ratio | 1.050 | <= 1.05 | yes |" in text
    assert "| speedup_vs_naive | 2.000 | >= 4.0 | no |" in text
    assert "| shap_eval_fraction | not measured |" in text
    assert "| attribution_s_per_document | 41.500 | <= 30.0 | no |" in text
    assert "| attribution_s_per_evaluation | not measured | <= 1.0 | - |" in text
    assert "| 1000 s | <= 900 s | no |" in text
    assert (
        "| checker invented-sbert per (document, summary) pair, amortized over 48 pairs, "
        "423-word sources (load 9.9 s, cold 1.755 s, warm 0.021 s) | 1.925 s | <= 1 s | no |"
    ) in text
    assert "cut mid-sentence" not in text  # no production lengths in this bench.json
    bench["production_lengths"] = {"all": {"cut_mid_sentence_share": 0.12, "mean_over_asked": 1.05}}
    text = markdown(bench)
    assert "| production's reference summaries cut mid-sentence | 0.120 | <= 0.1 | no |" in text
    assert "summaries: mean words / words asked | 1.05 | <= 1.5 | yes |" in text
    json.dumps(bench)


def test_checker_line_is_met_skipped_or_absent():
    fast = {
        "model": "sbert",
        "pairs": 2,
        "mean_source_words": 550.0,
        "load_s": 0.5,
        "cold_s_per_pair": 0.2,
        "cold_cpu_s_per_pair": 0.31,
        "warm_s_per_pair": 0.01,
        "amortized_s_per_pair": 0.25,
    }
    (line,) = checker_lines(fast)
    assert "cold 0.200 s (CPU 0.310 s), warm 0.010 s)" in line
    assert line.endswith("| 0.250 s | <= 0.3 s | yes |")  # issue 33: 0.3 s, not 1 s
    (skipped,) = checker_lines({"model": "sbert", "skipped": "x.jsonl: no stored summaries"})
    assert "| not measured (x.jsonl: no stored summaries) | <= 0.3 s | - |" in skipped
    assert checker_lines(None) == []  # a bench.json from before the checker was timed


def test_checker_pairs_take_one_base_summary_per_document_in_corpus_order(tmp_path):
    rows = [
        {"doc_id": "b", "strength": "low", "index": 0, "summary": "b low"},
        {"doc_id": "b", "strength": "base", "index": 0, "summary": "b base"},
        {"doc_id": "a", "strength": "base", "index": 0, "summary": "a base"},
        {"doc_id": "a", "strength": "base", "index": 1, "summary": "a second"},
        {"doc_id": "c", "strength": "high", "index": 0, "summary": "c high"},
        {"doc_id": "d", "strength": "base", "index": 0, "summary": "d base"},
    ]
    path = tmp_path / "summaries.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    docs = [Document(doc_id=i, text=f"{i} text") for i in ("a", "c", "b", "d")]
    assert checker_pairs(path, docs, 0) == [
        ("a", "a text", "a base"),
        ("b", "b text", "b base"),  # c has no base summary: left out
        ("d", "d text", "d base"),
    ]
    assert [p[0] for p in checker_pairs(path, docs, 2)] == ["a", "b"]


class FakeClock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def test_time_checker_separates_load_cold_and_warm():
    clock, cpu, cache, built = FakeClock(), FakeClock(), set(), []

    class Fake:
        fingerprint = "fake:v1"

        def __init__(self):
            clock.now += 2.0  # building the checker
            self.loaded = False
            built.append(self)

        def check(self, pairs):
            ((source, _),) = pairs
            if not self.loaded:
                clock.now += 3.0 if len(built) == 1 else 0.0  # the model, once per process
                self.loaded = True
            clock.now += 0.1 if source in cache else 0.5  # encoding a new source
            cpu.now += 0.1 if source in cache else 0.8  # on two threads
            cache.add(source)
            return [None]

    pairs = [("one two three", "s"), ("one two", "s s"), ("one", "s s s"), ("", "s s")]
    got = time_checker(Fake, pairs, clock, cpu)
    assert len(built) == 2  # warm runs on a new checker over the filled cache
    assert got["fingerprint"] == "fake:v1" and got["pairs"] == 4 and got["cold_pairs"] == 3
    assert got["load_s"] == pytest.approx(5.5)  # build + model + the first pair
    assert got["cold_s_per_pair"] == pytest.approx(0.5)
    assert got["cold_max_s"] == pytest.approx(0.5)
    assert got["cold_cpu_s_per_pair"] == pytest.approx(0.8)  # the cold pairs' only
    assert got["warm_s_per_pair"] == pytest.approx(0.1)
    assert got["amortized_s_per_pair"] == pytest.approx((5.5 + 3 * 0.5) / 4)
    assert got["mean_source_words"] == 1.5 and got["mean_summary_words"] == 2.0
    with pytest.raises(ValueError):
        time_checker(Fake, [], clock)


def test_checker_stage_is_skipped_without_stored_summaries(tmp_path):
    config = {
        "params": str(REPO / "params.yaml"),
        "cache": str(tmp_path / "cache"),
        "summaries": str(tmp_path / "absent.jsonl"),
    }
    got = checker_stage(config)
    assert got["model"] == "entail"
    assert "absent.jsonl: no stored production summaries" in got["skipped"]
    assert not (tmp_path / "cache").exists()  # nothing was built or cached


def test_sentence_shap_rows_show_fidelity_against_the_reference():
    assert sentence_shap_lines(None) == []
    rows = sentence_shap_lines(
        {
            "documents": 10,
            "spearman_median": 0.93,
            "spearman_worst": 0.81,
            "reference_self_spearman": None,
            "eval_fraction": 0.1,
            "seconds_per_document": 42.0,
        }
    )
    assert rows[0] == (
        "| sentence SHAP vs 10x reference (permutation): Spearman median, 10 documents (reference "
        "self-Spearman not measured) | 0.930 | >= 0.9 | yes |"
    )
    assert rows[1].endswith("| 0.810 | >= 0.9 | no |")
    assert rows[2].endswith("| 0.100 | <= 0.2 | yes |")
    assert rows[3].endswith("| 42.0 | <= 30.0 | no |")


def test_sentence_shap_rows_list_every_other_point_of_the_curve():
    curve = {
        "permutation@2xM": {
            "method": "permutation",
            "spearman_median": 0.9,
            "spearman_worst": 0.8,
            "eval_fraction": 0.1,
            "seconds_per_document": 12.0,
        },
        "lime@2xM": {
            "method": "lime",
            "spearman_median": 0.75,
            "spearman_worst": 0.34,
            "eval_fraction": 0.096,
            "seconds_per_document": 14.0,
        },
    }
    rows = sentence_shap_lines(
        {
            "documents": 10,
            "spearman_median": 0.9,
            "spearman_worst": 0.8,
            "reference_self_spearman": 0.98,
            "eval_fraction": 0.1,
            "seconds_per_document": 12.0,
            "noise_floor": {"rank": 0.155},
            "settings": {"methods": ["permutation", "lime"], "per_sentence": [2.0]},
            "curve": curve,
        }
    )
    assert "instability noise floor 0.155" in rows[0]
    assert len(rows) == 5  # the headline's four rows, then LIME's; the headline is not repeated
    assert rows[4] == (
        "| sentence lime@2xM: Spearman median / worst, evaluation fraction 0.096, 14.0 s "
        "| 0.750 / 0.340 | >= 0.9 | no |"
    )


def test_the_attribution_plan_measures_sentence_fidelity_only():
    from hss_gate.common.errors import InputError
    from hss_gate.research.bench import plan_for

    plan = plan_for(False, attribution=True)
    assert plan.sentence_shap_documents == 10 and plan.sentence_shap_methods[0] == "permutation"
    assert plan.documents == 1 and not plan.gate_candidates and not plan.checker_documents
    assert not plan.quickstart and not plan.dask and plan.shap_documents == 0
    with pytest.raises(InputError, match="choose one"):
        plan_for(True, attribution=True)
    assert checker_lines({"skipped": "not in this plan"})[0].endswith("| - |")
