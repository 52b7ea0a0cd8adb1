"""The Prefect flows (baseline, gate, monitor) under Prefect's test harness, on real models.

Two short reference documents from two categories and the extractive lead-3 model keep this
cheap; one cache directory is shared by the module, except where a test needs a cold one.
"""

from __future__ import annotations

import json
import logging
import shutil
from datetime import UTC, datetime, timedelta

import pandas as pd
import pytest

from hss_gate.common.inputs import load_corpus
from tests.conftest import CORPUS, REPO

pytestmark = pytest.mark.integration

MODEL = "extractive:lead-3"
DOC_IDS = ("business-simple-01", "finance-simple-01")
PARAMS = str(REPO / "params.yaml")


@pytest.fixture(scope="session")
def prefect_harness():
    """An isolated temporary Prefect API (SQLite) for the whole session."""
    patch = pytest.MonkeyPatch()
    patch.setenv("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    patch.setenv("DO_NOT_TRACK", "1")
    from prefect.testing.utilities import prefect_test_harness

    with prefect_test_harness(server_startup_timeout=90):
        yield
    patch.undo()


@pytest.fixture(scope="module")
def workspace(tmp_path_factory, prefect_harness, real_toolkit):
    """A two-document corpus, settings overrides into a temp dir, and baseline flow runs.

    `baseline/` is the flow's full run with lead-3 as production. lead-3 copies sentences, so its
    own perturbation-aware constants are 0 and any float noise would score 1: the gate and
    monitor tests use the committed production constants (data/baseline/normalization.json)
    instead, with production scores recomputed under them by the flow's `metrics` stage.
    """
    from flows.baseline import baseline_flow

    root = tmp_path_factory.mktemp("flows")
    docs = {d.doc_id: d for d in load_corpus(CORPUS)}
    corpus = root / "corpus.jsonl"
    corpus.write_text("".join(docs[i].model_dump_json() + "\n" for i in DOC_IDS), encoding="utf-8")
    baseline = root / "baseline"
    common = {
        "run__corpus": str(corpus),
        "run__cache_dir": str(root / "cache"),
        "score__bootstrap_resamples": 200,
    }
    written = baseline_flow(
        params=PARAMS,
        model=MODEL,
        out=str(baseline),
        overrides=common | {"score__normalization": str(baseline / "normalization.json")},
    )
    production = root / "production"
    shutil.copytree(baseline / "reference", production / "reference")
    overrides = common | {
        "score__normalization": str(REPO / "data" / "baseline" / "normalization.json"),
        "monitor__reference": str(production / "production_scores.csv"),
    }
    baseline_flow(params=PARAMS, out=str(production), stage="metrics", overrides=overrides)
    return {
        "root": root,
        "corpus": corpus,
        "baseline": baseline,
        "production": production,
        "overrides": overrides,
        "written": written,
        "docs": [docs[i] for i in DOC_IDS],
    }


def test_baseline_flow_writes_scores_constants_and_metrics(workspace):
    baseline = workspace["baseline"]
    reference = baseline / "reference"
    for name in ("documents.csv", "perturbations.csv", "summary.json", "report.md"):
        assert (reference / name).is_file(), name
    documents = pd.read_csv(reference / "documents.csv")
    assert list(documents["doc_id"]) == list(DOC_IDS)
    assert "hss" not in documents  # the reference run is scored without constants

    norm = json.loads((baseline / "normalization.json").read_text())
    assert set(norm["counts"]) == {"business", "finance"}
    assert norm["counts"]["business"] == 3  # one perturbation per strength band
    summary = json.loads((reference / "summary.json").read_text())
    assert norm["model"] == summary["fingerprint"]

    metrics = json.loads((baseline / "metrics.json").read_text())
    assert metrics == workspace["written"]["metrics"]
    assert metrics["documents"] == 2
    assert set(metrics["by_category"]) == {"business", "finance"}
    scores = pd.read_csv(baseline / "production_scores.csv")
    assert list(scores["doc_id"]) == list(DOC_IDS)
    assert scores["hss"].between(0, 1).all()
    assert metrics["hss_mean"] == pytest.approx(scores["hss"].mean(), abs=1e-6)


def test_fan_out_over_two_dask_workers_matches_one_chunk(workspace, tmp_path):
    from flows.baseline import baseline_flow

    overrides = workspace["overrides"] | {"run__cache_dir": str(tmp_path / "cold-cache")}
    baseline_flow(
        params=PARAMS,
        model=MODEL,
        out=str(tmp_path),
        stage="scores",
        overrides=overrides,
        workers=2,
    )
    fanned = tmp_path / "reference"
    assert json.loads((fanned / "summary.json").read_text())["chunks"] == 2
    one = workspace["baseline"] / "reference"
    for table in ("documents.csv", "perturbations.csv"):
        pd.testing.assert_frame_equal(
            pd.read_csv(fanned / table), pd.read_csv(one / table), check_exact=False, rtol=1e-5
        )


def test_split_documents_keeps_order_and_covers_everything(workspace):
    from flows.scoring import n_chunks, split_documents, task_runner

    docs = load_corpus(CORPUS, limit=7)
    parts = split_documents(docs, 3)
    assert [len(p) for p in parts] == [3, 2, 2]
    assert [d.doc_id for p in parts for d in p] == [d.doc_id for d in docs]
    assert len(split_documents(docs[:2], 5)) == 2
    assert n_chunks(7, workers=3) == 3
    assert n_chunks(7, chunk_size=2) == 4
    assert n_chunks(9, dask_address="tcp://x:8786") == 3
    assert task_runner(1, None) is None
    assert task_runner(2, None).cluster_kwargs["processes"] is False
    assert task_runner(1, "tcp://127.0.0.1:8786").address == "tcp://127.0.0.1:8786"


def test_gate_flow_promotes_an_identical_candidate(workspace, tmp_path):
    from flows.gate import gate_flow

    decision = gate_flow(
        candidate=MODEL,
        production=MODEL,
        params=PARAMS,
        out=str(tmp_path),
        overrides=workspace["overrides"],
    )
    assert decision.decision == "promote", decision.reasons
    assert decision.metrics["documents"] == 2
    assert decision.metrics["hss_difference"] == pytest.approx(0.0, abs=1e-9)
    assert decision.checks and all(c["success"] for c in decision.checks)
    assert decision.drift is not None
    written = json.loads((tmp_path / "decision.json").read_text())
    assert written["decision"] == "promote"
    assert written["candidate"] == written["production"] == MODEL
    assert (tmp_path / "decision.md").read_text().startswith("## hss-gate: PROMOTE")
    assert "PROMOTE" in (tmp_path / "decision.html").read_text()
    for role in ("candidate", "production"):
        docs = pd.read_csv(tmp_path / role / "documents.csv")
        assert list(docs["doc_id"]) == list(DOC_IDS)


def test_gate_flow_blocks_an_unstable_candidate(workspace, tmp_path):
    from flows.gate import gate_flow

    decision = gate_flow(
        candidate="fake:unstable",  # picks sentences and invents a number from a hash of the input
        production=MODEL,
        params=PARAMS,
        out=str(tmp_path),
        overrides=workspace["overrides"],
    )
    assert decision.decision == "block", decision.reasons
    assert decision.exit_code == 1
    assert decision.metrics["hss_difference"] > decision.metrics["margin"]
    assert any("HSS rose" in r or "check failed" in r for r in decision.reasons)
    assert json.loads((tmp_path / "decision.json").read_text())["decision"] == "block"
    assert (tmp_path / "decision.md").read_text().startswith("## hss-gate: BLOCKED")


def test_gate_fails_closed_on_a_model_that_does_not_exist(workspace, tmp_path):
    from flows.gate import gate_flow

    state = gate_flow(
        candidate="gguf:does-not-exist",
        production=MODEL,
        params=PARAMS,
        out=str(tmp_path),
        overrides=workspace["overrides"],
        return_state=True,
    )
    assert state.is_completed()  # failing closed is a result, not a crashed run
    decision = state.result()
    assert decision.decision == "error"
    assert decision.exit_code == 2
    assert "does-not-exist" in decision.reasons[0]
    written = json.loads((tmp_path / "decision.json").read_text())
    assert written["decision"] == "error"
    assert written["candidate"] == "gguf:does-not-exist"
    assert not (tmp_path / "candidate").exists()  # failed before any scoring


def test_gate_command_line_fails_closed_without_baseline(workspace, tmp_path):
    from flows.gate import main

    params = tmp_path / "params.yaml"
    params.write_text(
        f"run:\n  corpus: {workspace['corpus']}\n  cache_dir: {tmp_path / 'cache'}\n"
        f"score:\n  normalization: {tmp_path / 'missing.json'}\n",
        encoding="utf-8",
    )
    out = tmp_path / "gate"
    code = main(
        ["--candidate", MODEL, "--production", MODEL, "--params", str(params), "--out", str(out)]
    )
    assert code == 2
    written = json.loads((out / "decision.json").read_text())
    assert written["decision"] == "error"
    assert "normalization" in written["reasons"][0]


def _ingest(url: str, docs) -> None:
    from hss_gate.monitoring.store import Sample, SampleStore
    from hss_gate.text.sentences import split_sentences

    now = datetime.now(UTC)
    with SampleStore(url) as store:
        store.ingest(
            Sample(
                sample_id=f"live-{i}",
                document=d.text,
                summary=" ".join(split_sentences(d.text)[:3]),
                model_id="prod-v1",
                timestamp=now - timedelta(minutes=i),
                category=d.category,
            )
            for i, d in enumerate(docs)
        )


def test_monitor_flow_scores_samples_and_records_the_run(workspace, tmp_path):
    from flows.monitor import monitor_flow
    from hss_gate.monitoring.store import SampleStore

    url = f"sqlite:///{tmp_path / 'samples.sqlite'}"
    _ingest(url, workspace["docs"])
    out = tmp_path / "monitor"
    result = monitor_flow(
        samples=url,
        model=MODEL,
        params=PARAMS,
        out=str(out),
        overrides=workspace["overrides"],
    )
    # the live traffic is the reference documents summarized by the production model itself;
    # two samples are too few for windows of the model's own traffic: insufficient data, with
    # the rescoring (the absolute floor) measured and no rise
    assert result["decision"] == "insufficient_data", result["reasons"]
    assert result["windows"]["status"] == "insufficient_data"
    assert result["n_samples"] == 2
    assert {s["doc_id"] for s in result["samples"]} == {"live-0", "live-1"}
    assert result["severity"]["rise"] is False
    assert result["severity"]["n_reference"] == 2
    assert result["drift"]["drifted"] is False
    with SampleStore(url) as store:
        runs = store.runs()
    assert [r.run_id for r in runs] == [result["run_id"]]
    assert runs[0].decision == "insufficient_data" and runs[0].n_samples == 2
    assert runs[0].mean_hss == pytest.approx(result["severity"]["live_mean"])
    assert result["trend"][0]["run_id"] == result["run_id"]
    written = json.loads((out / "monitor.json").read_text())
    assert written["decision"] == "insufficient_data"
    assert (out / "monitor.md").read_text().startswith("## hss-gate monitor: INSUFFICIENT DATA")
    assert (out / "scores" / "documents.csv").is_file()


def test_monitor_flow_with_an_empty_store_is_an_error_and_is_recorded(workspace, tmp_path):
    from flows.monitor import monitor_flow
    from hss_gate.monitoring.store import SampleStore

    url = f"sqlite:///{tmp_path / 'empty.sqlite'}"
    result = monitor_flow(
        samples=url,
        model=MODEL,
        params=PARAMS,
        out=str(tmp_path / "monitor"),
        overrides=workspace["overrides"],
    )
    assert result["decision"] == "error"
    assert "no samples" in result["reasons"][0]
    with SampleStore(url) as store:
        assert [r.decision for r in store.runs()] == ["error"]
    assert json.loads((tmp_path / "monitor" / "monitor.json").read_text())["decision"] == "error"


def test_monitor_flow_whose_report_fails_marks_the_stored_run_failed(
    workspace, tmp_path, monkeypatch
):
    from flows.monitor import monitor_flow
    from hss_gate.monitoring.store import SampleStore

    def broken_html(result):
        raise TypeError("injected: html")

    monkeypatch.setattr("hss_gate.decision.reports.monitor_html", broken_html)
    url = f"sqlite:///{tmp_path / 'empty.sqlite'}"
    result = monitor_flow(
        samples=url,
        model=MODEL,
        params=PARAMS,
        out=str(tmp_path / "monitor"),
        overrides=workspace["overrides"],
    )
    assert result["decision"] == "error"  # as `hss monitor`: a verdict without its report fails
    written = json.loads((tmp_path / "monitor" / "monitor.json").read_text())
    assert written["decision"] == "error"
    assert any("could not write the report" in r for r in written["reasons"])
    with SampleStore(url) as store:
        runs = store.runs()
    assert [r.decision for r in runs] == ["error"]
    assert runs[0].details["reasons"] == written["reasons"]


@pytest.mark.parametrize("module", ["flows.gate", "flows.monitor"])
def test_flow_command_line_exits_2_when_the_flow_raises(module, monkeypatch, capsys):
    import importlib

    flow_module = importlib.import_module(module)
    flow_name = module.split(".")[1] + "_flow"

    def broken_flow(**kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(flow_module, flow_name, broken_flow)
    argv = ["--candidate", MODEL] if module == "flows.gate" else []
    assert flow_module.main(argv) == 2
    assert "No space left on device" in capsys.readouterr().err


def test_metrics_stage_rescores_the_reference_under_other_constants(workspace):
    own = pd.read_csv(workspace["baseline"] / "production_scores.csv")
    committed = pd.read_csv(workspace["production"] / "production_scores.csv")
    assert list(committed["doc_id"]) == list(own["doc_id"])
    # the raw distances are far from 0, so their HSS shows which constants were used
    assert (committed["hss_raw"] < own["hss_raw"] - 0.3).all()
    assert not (workspace["production"] / "normalization.json").exists()


def test_gate_command_line_has_the_cli_options(monkeypatch, capsys, tmp_path):
    """`python -m flows.gate` takes what `hss gate` takes and hands it to the flow, which
    builds the same GateRequest (by field name)."""
    import flows.gate
    from hss_gate.decision.record import Decision
    from hss_gate.workflows import gate as gate_workflow

    calls: dict = {}
    real_flow = flows.gate.gate_flow

    def fake_flow(**kwargs):
        calls.update(kwargs)
        return Decision(decision="promote", reasons=["overridden"])

    monkeypatch.setattr(flows.gate, "gate_flow", fake_flow)
    config = tmp_path / "candidate.yaml"
    argv = [
        *("--candidate-config", str(config), "--candidate-prompt", "Summarize: {document}"),
        *("--junit", str(tmp_path / "gate.xml")),
        *("--override-by", "alice", "--override-reason", "checked by hand"),
        *("--summary-words", "40"),
    ]
    assert flows.gate.main(argv) == 0
    assert calls["candidate"] is None and calls["candidate_config"] == str(config)
    assert calls["candidate_prompt"] == "Summarize: {document}"
    assert calls["junit"] == str(tmp_path / "gate.xml")
    assert (calls["override_by"], calls["override_reason"]) == ("alice", "checked by hand")

    class Stop(Exception):
        pass

    requests = []

    def fake_run_gate(load_settings, request, **kwargs):
        requests.append(request)
        raise Stop

    monkeypatch.setattr(gate_workflow, "run_gate", fake_run_gate)
    monkeypatch.setattr(flows.gate, "get_run_logger", lambda: logging.getLogger("test"))
    with pytest.raises(Stop):
        real_flow.fn(**calls)
    request = requests[0]
    assert request.candidate_file == str(config) and request.candidate is None
    assert request.candidate_generate == {"prompt": "Summarize: {document}"}
    assert request.junit == str(tmp_path / "gate.xml")
    assert request.override == ("alice", "checked by hand")
    assert request.summary_words == 40
