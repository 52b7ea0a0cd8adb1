"""`hss gate`, `hss samples ingest` and `hss monitor` end to end on cheap summarizers."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from hss_gate.cli import app
from hss_gate.common.inputs import load_corpus
from hss_gate.monitoring.rules import EXIT_CODES
from hss_gate.monitoring.store import SampleStore
from hss_gate.text.sentences import split_sentences
from tests.conftest import CORPUS, REPO

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("cache")


@pytest.fixture()
def runner(monkeypatch: pytest.MonkeyPatch, cache_dir: Path) -> CliRunner:
    monkeypatch.chdir(REPO)
    monkeypatch.setenv("HSS_RUN__CACHE_DIR", str(cache_dir))
    return CliRunner()


def _gate(runner: CliRunner, out: Path, candidate: str, production: str = "extractive:lead-3"):
    result = runner.invoke(
        app,
        [
            "gate",
            "--candidate",
            candidate,
            "--production",
            production,
            "--limit",
            "4",
            "-k",
            "1",
            "--out",
            str(out),
        ],
    )
    decision = json.loads((out / "decision.json").read_text())
    return result, decision


def test_identical_candidate_is_promoted(runner, tmp_path):
    result, decision = _gate(runner, tmp_path, "extractive:lead-3")
    assert result.exit_code == 0, result.output
    assert decision["decision"] == "promote"
    assert decision["metrics"]["hss_difference"] == 0.0
    assert decision["metrics"]["checks_failed"] == 0 and decision["metrics"]["checks_passed"] > 50
    for name in ("decision.md", "decision.html", "drift.html", "data_docs/index.html"):
        assert (tmp_path / name).stat().st_size > 0, name
    candidate = pd.read_csv(tmp_path / "candidate" / "documents.csv")
    production = pd.read_csv(tmp_path / "production" / "documents.csv")
    pd.testing.assert_frame_equal(candidate, production)


def test_worse_candidate_is_blocked(runner, tmp_path):
    result, decision = _gate(runner, tmp_path, "fake:unstable")
    assert result.exit_code == 1, result.output
    assert decision["decision"] == "block"
    # it invents a number in every summary: the facts decide, HSS is reported beside them
    assert "unsupported_entities" in decision["decided_by"]
    assert any("unsupported by the source rose" in r for r in decision["reasons"])
    assert any("HSS rose significantly" in n for n in decision["notes"])
    assert decision["metrics"]["hss_candidate"] > 0.5 > decision["metrics"]["hss_production"]
    failed = {c["name"] for c in decision["checks"] if not c["success"]}
    assert "mean_hss" in failed and "mean_unsupported_share" in failed
    assert decision["checker"]
    assert "BLOCKED" in (tmp_path / "decision.md").read_text()


def test_an_override_and_junit_from_the_command_line(runner, tmp_path):
    """A block overridden by a person exits 0; decision.json keeps the coded findings and the
    JUnit XML shows no failure."""
    import xml.etree.ElementTree as ET

    junit = tmp_path / "gate.xml"
    result = runner.invoke(
        app,
        [
            "gate",
            *("--candidate", "fake:unstable", "--production", "extractive:lead-3"),
            *("--limit", "4", "-k", "1", "--out", str(tmp_path), "--junit", str(junit)),
            *("--override-by", "alice", "--override-reason", "reviewed by hand"),
        ],
    )
    assert result.exit_code == 0, result.output
    decision = json.loads((tmp_path / "decision.json").read_text())
    assert decision["schema_version"] == "3"
    assert decision["decision"] == "promote" and decision["decided_by"] == ["override"]
    assert "unsupported_entities" in decision["override"]["blocked_by"]
    codes = {f["code"]: f["effect"] for f in decision["findings"]}
    assert codes["override"] == "override" and codes["unsupported_entities"] == "overridden"
    assert [f["text"] for f in decision["findings"] if f["effect"] in ("override", "overridden")]
    assert all(c["code"] and "blocking" in c for c in decision["checks"])
    suite = ET.parse(junit).getroot()
    assert suite.get("failures") == "0" and any("override by alice" in c.get("name") for c in suite)


@pytest.mark.parametrize(
    "candidate,flag",
    [("fake:empty", "near_empty_share"), ("fake:copy", "copies_source_share")],
)
def test_a_candidate_that_does_not_summarize_is_blocked(runner, tmp_path, candidate, flag):
    """Empty output is perfectly stable and a copy of the source is perfectly supported: both
    would pass on HSS and consistency alone; the gate says they do not summarize."""
    result, decision = _gate(runner, tmp_path, candidate)
    assert result.exit_code == 1, result.output
    assert decision["decided_by"][0] == "not_summarizing"
    assert decision["reasons"][0].startswith("the candidate does not summarize")
    assert flag in {c["name"] for c in decision["checks"] if not c["success"]}


def test_a_candidate_carries_its_own_generation_settings(runner, tmp_path):
    config = tmp_path / "candidate.yaml"
    config.write_text("uri: extractive:lead-3\ngenerate:\n  max_new_tokens: 99\n")
    out = tmp_path / "out"
    result = runner.invoke(
        app,
        [
            "gate",
            *("--candidate-config", str(config), "--production", "extractive:lead-3"),
            *("--limit", "2", "-k", "1", "--out", str(out)),
        ],
    )
    assert result.exit_code == 0, result.output
    settings = {
        role: json.loads((out / role / "summary.json").read_text())["settings"]["generate"]
        for role in ("candidate", "production")
    }
    assert settings["candidate"]["max_new_tokens"] == 99
    assert settings["production"]["max_new_tokens"] is None  # derived from summary_words
    bad = tmp_path / "bad.yaml"
    bad.write_text("uri: extractive:lead-3\ngenerate:\n  summary_words: 5\n")
    result = runner.invoke(app, ["gate", "--candidate-config", str(bad), "--out", str(out)])
    assert result.exit_code == 2 and "summary_words" in result.output


def test_unknown_candidate_fails_closed_with_one_line(runner, tmp_path):
    result = runner.invoke(
        app, ["gate", "--candidate", "gguf:does-not-exist", "--limit", "2", "--out", str(tmp_path)]
    )
    assert result.exit_code == 2
    assert "Traceback" not in result.output
    assert "does-not-exist" in result.output
    decision = json.loads((tmp_path / "decision.json").read_text())
    assert decision["decision"] == "error" and "does-not-exist" in decision["reasons"][0]


def _samples_file(path: Path, n: int = 4) -> Path:
    rows = []
    for i, doc in enumerate(load_corpus(CORPUS, limit=n)):
        summary = " ".join(doc.text.split(". ")[:2]) + "."
        rows.append(
            {
                "sample_id": f"s{i}",
                "document": doc.text,
                "summary": summary,
                "model_id": "lead",
                "timestamp": f"2026-11-{i + 1:02d}T10:00:00Z",
                "category": doc.category,
            }
        )
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_ingest_reports_bad_rows_with_line_numbers(runner, tmp_path):
    good = _samples_file(tmp_path / "good.jsonl", 2)
    bad = tmp_path / "bad.jsonl"
    lines = good.read_text().splitlines()
    bad.write_text(lines[0] + "\n{not json\n" + lines[1].replace('"s1"', '""') + "\n")
    url = f"sqlite:///{tmp_path / 'store.sqlite'}"
    result = runner.invoke(app, ["samples", "ingest", str(bad), "--samples", url])
    assert result.exit_code == 2
    assert ":2:" in result.output and ":3:" in result.output
    assert SampleStore(url).count() == 0  # nothing ingested from a file with bad rows
    result = runner.invoke(app, ["samples", "ingest", str(bad), "--samples", url, "--skip-bad"])
    assert result.exit_code == 1 and SampleStore(url).count() == 1


def test_monitor_scores_recent_samples_and_records_the_run(runner, tmp_path):
    url = f"sqlite:///{tmp_path / 'store.sqlite'}"
    ingest = runner.invoke(
        app, ["samples", "ingest", str(_samples_file(tmp_path / "s.jsonl")), "--samples", url]
    )
    assert ingest.exit_code == 0, ingest.output
    out = tmp_path / "monitor"
    result = runner.invoke(
        app, ["monitor", "--samples", url, "--model", "extractive:lead-3", "--out", str(out)]
    )
    report = json.loads((out / "monitor.json").read_text())
    # 4 samples are too few for a reference and a current window of the model's own traffic:
    # insufficient data (exit 3) unless a suite check made the run unhealthy (exit 1)
    assert report["windows"]["status"] == "insufficient_data"
    assert report["decision"] in ("insufficient_data", "unhealthy")
    assert result.exit_code == EXIT_CODES[report["decision"]], result.output
    assert report["n_samples"] == 4 and len(report["samples"]) == 4
    assert report["schema_version"] == "3"
    assert all(c["code"] and c["blocking"] for c in report["checks"])
    facts = [c for c in report["checks"] if c["kind"] == "facts"]  # one-sample, on the 4 samples
    assert {c["name"] for c in facts} == {"mean_unsupported_share", "low_consistency_share"}
    for check in facts:
        interval = check["interval"]
        assert (interval["test"], interval["documents"]) == ("one-sample", 4)
        assert check["observed"] == interval["ci_low"] <= interval["estimate"]
    # lead-3 copies: its live HSS is far below the production reference, never a rise
    assert report["severity"]["live_mean"] < report["severity"]["reference_mean"]
    assert not report["severity"]["rise"]
    store = SampleStore(url)
    assert [r.decision for r in store.runs()] == [report["decision"]]
    assert (out / "monitor.html").stat().st_size > 0

    failing = runner.invoke(
        app, ["monitor", "--samples", url, "--model", "gguf:does-not-exist", "--out", str(out)]
    )
    assert failing.exit_code == 2
    assert store.count() == 4  # every ingested sample is kept when scoring fails
    assert store.runs()[0].decision == "error"


def test_monitor_refuses_a_reference_scored_by_another_checker(runner, tmp_path, monkeypatch):
    url = f"sqlite:///{tmp_path / 'store.sqlite'}"
    ingest = runner.invoke(
        app, ["samples", "ingest", str(_samples_file(tmp_path / "s.jsonl")), "--samples", url]
    )
    assert ingest.exit_code == 0, ingest.output
    reference = tmp_path / "baseline" / "production_scores.csv"
    reference.parent.mkdir()
    shutil.copy(REPO / "data" / "baseline" / "production_scores.csv", reference)
    (reference.parent / "metrics.json").write_text(json.dumps({"checker": "sbert-zs:old:t0.818"}))
    monkeypatch.setenv("HSS_MONITOR__REFERENCE", str(reference))
    args = ["monitor", "--samples", url, "--served-only", "--out", str(tmp_path / "m")]
    result = runner.invoke(app, args)
    assert result.exit_code == 2, result.output
    report = json.loads((tmp_path / "m" / "monitor.json").read_text())
    assert report["decision"] == "error"
    error = json.dumps(report)
    assert f"{reference}: scored by the checker 'sbert-zs:old:t0.818', this run uses" in error
    assert "'entail:" in error and "consistency in different units" in error
    assert "Traceback" not in result.output


def _served_file(path: Path, swapped: bool, n: int = 8) -> Path:
    """Samples whose served summary is the document's own lead (faithful) or, swapped, another
    document's lead (nothing in it is supported by the document it was served for)."""
    docs = load_corpus(CORPUS, limit=n)
    rows = []
    for i, doc in enumerate(docs):
        source = docs[(i + n // 2) % n] if swapped else doc
        rows.append(
            {
                "sample_id": f"s{i}",
                "document": doc.text,
                "summary": " ".join(split_sentences(source.text)[:2]),
                "model_id": "prod",
                "timestamp": f"2026-11-{i + 1:02d}T10:00:00Z",
                "category": doc.category,
            }
        )
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


@pytest.mark.parametrize(
    "swapped,blocking,code", [(False, False, 3), (True, False, 3), (True, True, 1)]
)
def test_served_only_checks_what_was_served_without_scoring(
    runner, tmp_path, monkeypatch, swapped, blocking, code
):
    """8 samples are no reference window and no current window: insufficient data (exit 3);
    the production reference corpus is reported as the floor, blocking only when configured."""
    monkeypatch.setenv("HSS_MONITOR__FLOOR_BLOCKING", str(blocking).lower())
    url = f"sqlite:///{tmp_path / 'store.sqlite'}"
    samples = _served_file(tmp_path / "s.jsonl", swapped)
    assert runner.invoke(app, ["samples", "ingest", str(samples), "--samples", url]).exit_code == 0
    out = tmp_path / "monitor"
    result = runner.invoke(app, ["monitor", "--served-only", "--samples", url, "--out", str(out)])
    assert result.exit_code == code, result.output
    report = json.loads((out / "monitor.json").read_text())
    assert report["kind"] == "served" and report["severity"] is None
    assert not (out / "scores").exists()  # nothing was rescored
    assert any("no reference window yet for 'prod'" in r for r in report["reasons"])
    assert "INSUFFICIENT DATA" in result.output or blocking
    low = next(s for s in report["served"] if s["signal"] == "live_low_consistency")
    assert low["rise"] is swapped
    # copied sentences are all supported; of the 8 summaries of another document the claim
    # checker flags 6 at its threshold (the chunked checker before it flagged all 8)
    assert low["live_mean"] >= 0.75 if swapped else low["live_mean"] == 0.0
    floor = any("served summaries" in r for r in report["reasons"])
    assert floor is blocking
    assert bool(report["notes"]) is (swapped and not blocking)
    runs = runner.invoke(app, ["samples", "runs", "--samples", url])
    assert "served" in runs.output
