"""Attribution instability in the monitor (issue 26 item 5, the monitor half): the gate's
explainer on served samples of both windows, reported beside the window signals, never
blocking. A SQLite store of served samples, the fake checker and tagger, and the additive fake
likelihood (research.likelihood.OverlapLikelihood: exact sentence Shapley values, so the
instability of a sample is known, tests/unit/test_gate_attribution.py)."""

from __future__ import annotations

import json
import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import mannwhitneyu
from typer.testing import CliRunner

from hss_gate.common.inputs import load_corpus
from hss_gate.monitoring.rules import EXIT_CODES, attribution_window_test
from hss_gate.monitoring.store import Sample, SampleStore
from hss_gate.scoring.runner import LocalRunner
from hss_gate.settings import HssSettings
from hss_gate.text.sentences import split_sentences
from hss_gate.workflows.monitor import MonitorRequest, run_monitor
from tests.conftest import CORPUS, REPO
from tests.reliability.test_bad_input import _fake_toolkit
from tests.unit.test_gate_attribution import PERTURBED, SUMMARIES, TEXTS, Scorers, expected_rank

pytestmark = pytest.mark.unit

T0 = datetime(2026, 6, 1, tzinfo=UTC)
# the reference window (the model id's first 6 samples; the newest two unchanged by their
# perturbation: instability 0) and the current window (the newest 3; the newest two are d1, d2)
REFERENCE = ["d1", "d2", "d1", "d2", "d3", "d3"]
CURRENT = ["d3", "d1", "d2"]


def perturbed(role, docs):
    """The gate's perturbations of a sample's document: the fixed one-for-one swaps."""
    by_text = {TEXTS[d]: PERTURBED[d] for d in TEXTS}
    return {d.doc_id: by_text[d.text] for d in docs}


@pytest.fixture()
def store_url(tmp_path: Path) -> str:
    url = f"sqlite:///{tmp_path / 'store.sqlite'}"
    samples = [
        Sample(
            sample_id=f"s{i}",
            document=TEXTS[d],
            summary=SUMMARIES[d],
            model_id="m1",
            timestamp=T0 + timedelta(minutes=i),
        )
        for i, d in enumerate(REFERENCE + CURRENT)
    ]
    with SampleStore(url) as store:
        store.ingest(samples)
    return url


class FakeRunner(LocalRunner):
    """The fake toolkit; rescoring (full runs) with the fake summarizers."""

    def toolkit(self, settings):
        return _fake_toolkit(settings)


def _settings(tmp_path: Path, n: int, **monitor) -> HssSettings:
    settings = HssSettings()
    reference = tmp_path / "baseline" / "production_scores.csv"  # no metrics.json: any checker
    if not reference.exists():
        reference.parent.mkdir()
        shutil.copy(REPO / "data" / "baseline" / "production_scores.csv", reference)
    update = {
        "attribution_documents": n,
        "reference": str(reference),
        "reference_window": len(REFERENCE),
        "sample_size": len(CURRENT),
        **monitor,
    }
    return settings.model_copy(
        update={
            "monitor": settings.monitor.model_copy(update=update),
            "run": settings.run.model_copy(update={"cache_dir": str(tmp_path / "cache")}),
            "score": settings.score.model_copy(update={"bootstrap_resamples": 100}),
            "perturb": settings.perturb.model_copy(update={"gamma": 0.0}),
        }
    )


def _monitor(
    tmp_path, url, settings, model="fake:overlap", scorers=None, served_only=True, swaps=perturbed
):
    out = tmp_path / "out"
    outcome = run_monitor(
        lambda: settings,
        MonitorRequest(samples=url, model=model, out=str(out), served_only=served_only),
        runner=FakeRunner(),
        scorers=scorers,
        perturbed=swaps,
    )
    assert outcome.error is None, outcome.verdict.get("reasons")
    written = json.loads((out / "monitor.json").read_text())
    return written, (out / "monitor.md").read_text(), (out / "monitor.html").read_text()


def test_off_by_default_no_entry_and_no_cost(tmp_path, store_url):
    assert HssSettings().monitor.attribution_documents == 0
    scorers = Scorers()
    result, markdown, _ = _monitor(tmp_path, store_url, _settings(tmp_path, 0), scorers=scorers)
    assert result["windows"]["status"] == "compared"
    assert scorers.built == []  # no model built
    assert "attribution" not in result
    assert all(t["signal"] != "attribution_instability" for t in result["windows"]["tests"])
    assert "ttribution instability" not in markdown


def test_both_windows_explained_on_the_newest_samples(tmp_path, store_url):
    scorers = Scorers()
    result, markdown, page = _monitor(tmp_path, store_url, _settings(tmp_path, 2), scorers=scorers)
    record = result["attribution"]
    assert scorers.built == ["fake:overlap"]  # one model for both windows
    assert record["measured"] and record["not_measured"] is None and not record["blocking"]
    ref, cur = record["reference"], record["current"]
    # the newest two of each window: s4, s5 (d3, unchanged) and s8, s7 (d2, d1)
    assert [d["doc_id"] for d in ref["per_document"]] == ["s5", "s4"]
    assert [d["doc_id"] for d in cur["per_document"]] == ["s8", "s7"]
    assert ref["n"] == cur["n"] == 2
    assert ref["mean"] == pytest.approx(0.0) and ref["median"] == pytest.approx(0.0)
    wanted = [expected_rank("d2"), expected_rank("d1")]
    assert cur["mean"] == pytest.approx(np.mean(wanted))
    assert cur["median"] == pytest.approx(np.median(wanted))
    for window in (ref, cur):
        assert all(0.0 <= d["rank"] <= 2.0 for d in window["per_document"])
        assert window["seconds_per_sample"] is not None
    diff = record["difference"]
    assert diff["difference"] == pytest.approx(cur["mean"] - ref["mean"])
    assert diff["ci_low"] <= diff["difference"] <= diff["ci_high"]
    test = record["test"]
    assert test["test"] == "mann_whitney" and test["alternative"] == "greater"
    ranks = [d["rank"] for d in ref["per_document"]], [d["rank"] for d in cur["per_document"]]
    wanted_p = mannwhitneyu(ranks[1], ranks[0], alternative="greater").pvalue
    assert test["p_value"] == pytest.approx(wanted_p)
    assert test["alpha"] == 0.01 and not test["blocking"] and not test["worse"]
    tests = {t["signal"]: t for t in result["windows"]["tests"]}
    assert tests["attribution_instability"] == test  # beside the other window tests
    assert "attribution instability (rank, sentence SHAP" in markdown
    row = next(line for line in markdown.splitlines() if line.startswith("| attribution"))
    assert "| reported |" in row
    assert f"current mean {cur['mean']:.3f}" in markdown
    assert "Attribution instability" in page
    # a second run reads every sample's result from the cache
    again, _, _ = _monitor(tmp_path, store_url, _settings(tmp_path, 2), scorers=Scorers())
    assert again["attribution"]["current"]["from_cache"] == 2
    assert again["attribution"]["current"]["mean"] == pytest.approx(cur["mean"])


def test_the_gates_own_perturbations_of_the_served_documents(tmp_path):
    """Without a replacement, the samples' documents are perturbed by the gate's machinery
    (pipeline.make_perturbations, the same settings; here with the fake toolkit)."""
    docs = load_corpus(CORPUS)[:9]
    url = f"sqlite:///{tmp_path / 'corpus.sqlite'}"
    with SampleStore(url) as store:
        store.ingest(
            Sample(
                sample_id=f"c{i}",
                document=doc.text,
                summary=" ".join(split_sentences(doc.text)[:2]),
                model_id="m1",
                timestamp=T0 + timedelta(minutes=i),
            )
            for i, doc in enumerate(docs)
        )
    settings = _settings(tmp_path, 2)
    result, _, _ = _monitor(tmp_path, url, settings, scorers=Scorers(), swaps=None)
    record = result["attribution"]
    assert record["measured"], record
    for name in ("reference", "current"):
        window = record[name]
        assert window["documents"] == 2 and window["n"] >= 1
        explained = [d for d in window["per_document"] if d["perturbations"] > 0]
        assert explained and all(0.0 <= d["rank"] <= 2.0 for d in explained)
        assert all(d["perturbations"] <= settings.gate.attribution.perturbations for d in explained)


def test_a_model_without_a_likelihood_is_not_measured(tmp_path, store_url):
    settings = _settings(tmp_path, 2)
    result, markdown, _ = _monitor(tmp_path, store_url, settings, model="openai:http://x/v1")
    record = result["attribution"]
    assert record["measured"] is False
    assert "no teacher-forced likelihood for 'openai:'" in record["not_measured"]
    assert record["reference"]["measured"] is False and "mean" not in record["reference"]
    assert record["difference"] is None and record["test"] is None
    assert all(t["signal"] != "attribution_instability" for t in result["windows"]["tests"])
    assert "not measured (no teacher-forced likelihood" in markdown


class Failing(Scorers):
    def __call__(self, uri, settings):
        raise RuntimeError("the GPU fell over")


def test_a_failing_explainer_is_reported_and_changes_nothing(tmp_path, store_url):
    off, _, _ = _monitor(tmp_path, store_url, _settings(tmp_path, 0))
    on, markdown, _ = _monitor(tmp_path, store_url, _settings(tmp_path, 2), scorers=Failing())
    assert on["attribution"]["measured"] is False
    assert "could not explain: " in on["attribution"]["not_measured"]
    assert "the GPU fell over" in on["attribution"]["not_measured"]
    assert (on["decision"], on["reasons"]) == (off["decision"], off["reasons"])
    assert "not measured (could not explain" in markdown


def test_windows_not_compared_are_not_measured(tmp_path, store_url):
    settings = _settings(tmp_path, 2, reference_window=50)  # no complete reference window
    scorers = Scorers()
    result, _, _ = _monitor(tmp_path, store_url, settings, scorers=scorers)
    assert result["windows"]["status"] == "insufficient_data"
    assert result["attribution"]["measured"] is False
    assert "not compared" in result["attribution"]["not_measured"]
    assert scorers.built == []


@pytest.mark.parametrize("served_only", [True, False])
def test_the_verdict_is_the_same_with_and_without_attribution(tmp_path, store_url, served_only):
    """Even a significant attribution test (alpha 0.5 here) is reported, never blocking."""
    model = "fake:overlap" if served_only else "fake:lead"
    found = {}
    for n in (0, 2):
        settings = _settings(tmp_path, n, reported_alpha=0.5)
        result, _, _ = _monitor(tmp_path, store_url, settings, model, Scorers(), served_only)
        found[n] = result
    off, on = found[0], found[2]
    test = on["attribution"]["test"]
    assert test["worse"] and not test["blocking"]
    assert on["decision"] == off["decision"] and on["decision"] in EXIT_CODES
    assert on["reasons"] == off["reasons"]
    assert [n for n in on["notes"] if "attribution" not in n] == off["notes"]
    assert any("reported (not blocking): attribution instability" in n for n in on["notes"])


def test_the_window_test_is_one_sided_and_reported():
    row = attribution_window_test([0.0, 0.1, 0.2], [0.5, 0.6, 0.7], 0.2)
    assert row["p_value"] == pytest.approx(0.05)  # exact: 1 / C(6, 3)
    assert row["worse"] and row["blocking"] is False
    assert attribution_window_test([0.5, 0.6, 0.7], [0.0, 0.1, 0.2], 0.2)["worse"] is False
    assert attribution_window_test([], [0.5], 0.2) is None


def test_the_cli_option_reaches_the_setting(monkeypatch, tmp_path):
    from hss_gate.cli import app

    seen = {}

    def fake_run_monitor(load_settings, request, **kwargs):
        seen["n"] = load_settings().monitor.attribution_documents
        raise SystemExit(0)

    monkeypatch.chdir(REPO)
    monkeypatch.setattr("hss_gate.workflows.monitor.run_monitor", fake_run_monitor)
    runner = CliRunner()
    runner.invoke(app, ["monitor", "--served-only", "--attribution", "3", "--out", str(tmp_path)])
    assert seen == {"n": 3}
    runner.invoke(app, ["monitor", "--served-only", "--out", str(tmp_path)])
    assert seen == {"n": HssSettings().monitor.attribution_documents} == {"n": 0}
