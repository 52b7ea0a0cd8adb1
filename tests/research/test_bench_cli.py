"""`hss bench` end to end on a model that needs no weights (the figures are not asserted)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from hss_gate.research.checker_bench import checker_stage

pytestmark = pytest.mark.integration
REPO = Path(__file__).resolve().parents[2]


def test_bench_writes_the_ratios_the_issue_names(tmp_path):
    out = tmp_path / "bench"
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "DO_NOT_TRACK": "1"}
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "hss_gate",
            "bench",
            "--quick",
            "--documents",
            "1",
            "--model",
            "extractive:lead-3",
            "--no-quickstart",
            "--out",
            str(out),
        ],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    bench = json.loads((out / "bench.json").read_text())
    times = bench["times"]
    assert bench["floor_ratio"] == pytest.approx(times["cold_s"] / times["floor_s"], rel=1e-3)
    assert bench["warm_over_cold"] == pytest.approx(times["warm_s"] / times["cold_s"], rel=1e-3)
    assert bench["speedup_vs_naive"] == pytest.approx(
        times["naive_s"] / times["cold_sample_s"], rel=1e-3
    )
    # lead-3 has no token probabilities: SHAP is reported as not measured, not invented
    assert bench["shap_eval_fraction"] is None and "skipped" in bench["shap"]
    assert "skipped" in bench["sentence_shap"]  # the sentence-level step, likewise
    assert (
        "| sentence SHAP vs 10x reference (permutation) | not measured"
        in (out / "bench.md").read_text()
    )
    # 1 document, K=1, 3 bands: the pipeline generates 4 summaries, the naive one 6
    assert bench["generations"] == {"pipeline": 4, "naive_sample": 6, "pipeline_sample": 4}
    assert bench["floor_same_summaries"]["workers"] == 4
    assert set(bench["scaling"]["k"]) == {"1", "2"}
    assert bench["dask_s"] == {}  # --quick leaves the Dask route to the full run
    assert all(v > 0 for v in bench["peak_rss_mb"].values())
    assert bench["machine"]["cores"] >= 1
    # one document: no cost curve over documents; K = 1 and 2: a line
    assert bench["scaling"]["documents_fit"] is None
    assert not (out / "figures" / "cost_vs_documents.png").exists()
    assert (out / "figures" / "cost_vs_k.png").read_bytes()[:4] == b"\x89PNG"
    assert "| floor_ratio |" in (out / "bench.md").read_text()
    # the cold gate: lead-3 against the restored production on the same document
    gate = bench["gate_cold"]["extractive:lead-3"]["sequential"]
    assert bench["gate_cold_s"] == gate["seconds"] > 0
    assert gate["decision"] in ("promote", "block") and gate["documents_used"] == 1
    assert bench["quickstart_s"] is None and "quickstart" not in bench["steps_s"]
    # the checker on the production model's stored base summaries, one per document
    checker = bench["checker"]
    assert checker["pairs"] == 48 and checker["cold_pairs"] == 47
    assert checker["model"] == "entail" and checker["fingerprint"].startswith("entail:")
    assert "| checker entail per (document, summary) pair" in (out / "bench.md").read_text()


def test_checker_stage_times_the_configured_checker_on_stored_summaries(tmp_path, monkeypatch):
    monkeypatch.chdir(REPO)  # the params' relative corpus and baseline paths
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    config = {"params": "params.yaml", "cache": str(tmp_path / "cache"), "documents": 3}
    got = checker_stage(config)
    assert got["model"] == "entail" and got["pairs"] == 3 and got["cold_pairs"] == 2
    assert got["fingerprint"].startswith("entail:") and ":sbert:" in got["fingerprint"]
    assert got["summaries"].endswith("reference/summaries.jsonl")
    for key in ("load_s", "cold_s_per_pair", "warm_s_per_pair", "amortized_s_per_pair"):
        assert got[key] > 0
    assert got["mean_source_words"] > 100 and got["mean_summary_words"] > 10
