"""`hss monitor` (--served-only and full) on windows of the model's own traffic (issue 24): a
SQLite store filled hour by hour with time-stamped traffic, faithful and then inventing; two
model ids; an empty current window; too little data; windows since the last run; the reported
tests and Evidently's drift of the windows. The checker and tagger are the deterministic fakes
(tests/conftest.py), the store, windows, tests, verdict, CLI and exit codes are real."""

from __future__ import annotations

import json
import math
import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from typer.testing import CliRunner

from hss_gate.cli import app
from hss_gate.common.inputs import load_corpus
from hss_gate.monitoring.rules import CONTINUOUS_COLUMNS
from hss_gate.monitoring.store import Sample, SampleStore
from hss_gate.text.sentences import split_sentences
from tests.conftest import CORPUS, REPO
from tests.reliability.test_bad_input import _fake_toolkit

pytestmark = pytest.mark.integration

T0 = datetime(2026, 6, 1, tzinfo=UTC)
DOCS = load_corpus(CORPUS)
PER_HOUR = 20  # = monitor.sample_size: one run's current window per hour of traffic


@pytest.fixture()
def store_url(request: pytest.FixtureRequest, tmp_path: Path):
    """An empty store: SQLite, or (parametrized "postgresql") PostgreSQL when
    HSS_TEST_POSTGRES_URL names a server."""
    if getattr(request, "param", "sqlite") == "sqlite":
        yield f"sqlite:///{tmp_path / 'store.sqlite'}"
        return
    from tests.integration import test_samples_postgres as postgres

    if not postgres.POSTGRES_URL:
        pytest.skip("HSS_TEST_POSTGRES_URL is not set")
    yield from postgres.store_url.__wrapped__()


@pytest.fixture()
def hss(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, store_url: str):
    """Run `hss monitor --served-only` (or, with full=True, `hss monitor --model fake:lead`) on
    a fresh store with the fake checker; returns (invoke, store url); invoke(*args) ->
    (exit code, monitor.json)."""
    monkeypatch.chdir(REPO)
    monkeypatch.setenv("HSS_RUN__CACHE_DIR", str(tmp_path / "cache"))
    reference = tmp_path / "baseline" / "production_scores.csv"  # the floor; no metrics.json:
    reference.parent.mkdir()  # its checker is not stated, so the fake checker may be compared
    shutil.copy(REPO / "data" / "baseline" / "production_scores.csv", reference)
    monkeypatch.setenv("HSS_MONITOR__REFERENCE", str(reference))
    monkeypatch.setenv("HSS_MONITOR__REFERENCE_WINDOW", "100")
    monkeypatch.setenv("HSS_MONITOR__SAMPLE_SIZE", str(PER_HOUR))
    monkeypatch.setenv("HSS_PERTURB__GAMMA", "0")  # full runs: the hashing embedder
    monkeypatch.setenv("HSS_SCORE__BOOTSTRAP_RESAMPLES", "100")
    monkeypatch.setattr("hss_gate.scoring.toolkit.real_toolkit", _fake_toolkit)
    url = store_url
    runner = CliRunner()
    out = tmp_path / "monitor"

    def invoke(*args: str, full: bool = False) -> tuple[int, dict]:
        kind = ["--model", "fake:lead"] if full else ["--served-only"]
        result = runner.invoke(app, ["monitor", *kind, "--samples", url, "--out", str(out), *args])
        assert "Traceback" not in result.output
        return result.exit_code, json.loads((out / "monitor.json").read_text())

    return invoke, url


def _summary(i: int, inventing: bool, sentences: int = 2) -> tuple[str, str]:
    """Sample i's document and served summary: its own lead (faithful), or another document's
    lead (unsupported); 2 in 10 are unsupported before the switch, 8 in 10 after it."""
    doc = DOCS[i % len(DOCS)]
    bad = (i % 10) in ((0, 1, 2, 3, 4, 5, 6, 7) if inventing else (0, 5))
    source = DOCS[(i + len(DOCS) // 2) % len(DOCS)] if bad else doc
    return doc.text, " ".join(split_sentences(source.text)[:sentences])


def _traffic(
    url: str,
    start: int,
    n: int,
    model: str,
    inventing: bool,
    sentences: int = 2,
    flagged: int | None = None,
) -> None:
    """n samples, one every 3 minutes (20 an hour), numbered from `start`; `flagged`: exactly
    the first that many summarize another document (the rest their own), not the 2-in-10 or
    8-in-10 pattern."""
    samples = []
    for i in range(start, start + n):
        document, summary = _summary(i, inventing, sentences)
        if flagged is not None:
            doc = DOCS[i % len(DOCS)]
            other = DOCS[(i + len(DOCS) // 2) % len(DOCS)] if i - start < flagged else doc
            document, summary = doc.text, " ".join(split_sentences(other.text)[:sentences])
        samples.append(
            Sample(
                sample_id=f"{model}-{i}",
                document=document,
                summary=summary,
                model_id=model,
                timestamp=T0 + timedelta(minutes=3 * i),
            )
        )
    with SampleStore(url) as store:
        store.ingest(samples)


@pytest.mark.parametrize("store_url", ["sqlite", "postgresql"], indirect=True)
def test_hourly_runs_stay_healthy_then_turn_unhealthy_after_a_switch(hss):
    invoke, url = hss
    _traffic(url, 0, 100, "m1", inventing=False)  # hours 0-4: the reference window
    code, report = invoke()
    assert code == 3 and report["decision"] == "insufficient_data"  # no disjoint current yet
    assert any("do not overlap" in r for r in report["reasons"])
    for hour in range(5, 10):  # unchanged traffic: hourly runs stay healthy
        _traffic(url, PER_HOUR * hour, PER_HOUR, "m1", inventing=False)
        code, report = invoke()
        assert (code, report["decision"]) == (0, "healthy"), report["reasons"]
        assert report["windows"]["reference"]["n"] == 100
        assert report["windows"]["current"]["n"] == PER_HOUR
    # the same model id starts inventing (e.g. a provider swapped the model behind it)
    switch = PER_HOUR * 10
    decisions = []
    for step in range(1, 5):  # runs every 15 minutes: 5, 10, 15, 20 post-switch samples
        _traffic(url, switch + 5 * (step - 1), 5, "m1", inventing=True)
        code, report = invoke()
        decisions.append((5 * step, report["decision"], code))
    mostly = [(n, d, c) for n, d, c in decisions if n > PER_HOUR // 2]
    assert all(d == "unhealthy" and c == 1 for _, d, c in mostly), decisions
    low = next(t for t in report["windows"]["tests"] if t["signal"] == "live_low_consistency")
    assert low["reference_mean"] == pytest.approx(0.2)
    assert low["current_mean"] == pytest.approx(0.8) and low["worse"]
    assert any("model's reference window" in r for r in report["reasons"])
    # the recorded runs show the trend, the reference was scored once and stored
    with SampleStore(url) as store:
        runs = store.runs(50)
        stored = store.reference("m1")
    assert [r.decision for r in runs[::-1]] == ["insufficient_data"] + ["healthy"] * 5 + [
        d for _, d, _ in decisions
    ]
    assert runs[0].details["p_values"]["live_low_consistency"] < 0.005
    assert stored["checker"] == "fake-checker" and len(stored["sample_ids"]) == 100
    assert stored["sample_ids"][0] == "m1-0" and stored["sample_ids"][-1] == "m1-99"


def test_a_rise_to_the_share_the_report_says_it_detects_turns_the_monitor_unhealthy(hss):
    """The smallest flagged share a healthy run says its current window detects (80% power) is
    a rise it acts on: the next hour of the same model id's traffic at that share is
    unhealthy (issue 55, item 4)."""
    invoke, url = hss
    _traffic(url, 0, 100, "m1", inventing=False)  # the reference: 2 in 10 flagged
    _traffic(url, 100, PER_HOUR, "m1", inventing=False)
    code, report = invoke()
    assert (code, report["decision"]) == (0, "healthy"), report["reasons"]
    low = next(t for t in report["windows"]["tests"] if t["signal"] == "live_low_consistency")
    assert low["reference_mean"] == pytest.approx(0.2)
    detectable = low["detectable_share"]
    assert 0.2 < detectable < 1.0
    flagged = math.ceil(detectable * PER_HOUR)
    _traffic(url, 100 + PER_HOUR, PER_HOUR, "m1", inventing=False, flagged=flagged)
    code, report = invoke()
    assert (code, report["decision"]) == (1, "unhealthy"), (flagged, report["reasons"])
    low = next(t for t in report["windows"]["tests"] if t["signal"] == "live_low_consistency")
    assert low["current_mean"] == pytest.approx(flagged / PER_HOUR) and low["worse"]


def test_a_new_model_id_is_compared_with_the_previous_models_reference(hss, tmp_path):
    invoke, url = hss
    _traffic(url, 0, 120, "m1", inventing=False)
    _traffic(url, 120, 20, "m2", inventing=True)  # a worse deploy, its own reference incomplete
    code, report = invoke()
    assert (code, report["decision"]) == (1, "unhealthy"), report["reasons"]
    windows = report["windows"]
    assert windows["model_id"] == "m2" and windows["current"]["n"] == 20
    assert windows["reference"]["model_id"] == "m1"
    assert windows["reference"]["instead_of"] == "m2"
    markdown = (tmp_path / "monitor" / "monitor.md").read_text()
    assert "**Windows of the model's own traffic**" in markdown
    assert "| reference | m1 | 100 | 2026-06-01T00:00:00+00:00 | 2026-06-01T04:57:00+00:00 |" in (
        markdown
    )
    assert "| current | m2 | 20 | 2026-06-01T06:00:00+00:00 |" in markdown
    page = (tmp_path / "monitor" / "monitor.html").read_text()
    assert "Absolute floor: the production reference corpus" in page and "one-sided p" in page


def test_a_faithful_new_model_id_is_healthy_against_its_predecessor(hss):
    invoke, url = hss
    _traffic(url, 0, 120, "m1", inventing=True)
    _traffic(url, 120, 20, "m2", inventing=False)  # better than m1: one-sided, no alarm
    code, report = invoke()
    assert (code, report["decision"]) == (0, "healthy"), report["reasons"]
    assert report["windows"]["reference"]["model_id"] == "m1"


def test_too_little_data_is_insufficient_never_a_silent_corpus_comparison(hss, monkeypatch):
    invoke, url = hss
    _traffic(url, 0, 30, "m1", inventing=True)  # one window; its summaries are unsupported
    code, report = invoke()
    assert code == 3 and report["decision"] == "insufficient_data"
    assert any("no reference window yet for 'm1'" in r for r in report["reasons"])
    assert report["windows"]["reference"]["n"] == 30
    # the floor is measured and reported apart, not deciding
    assert report["served"] and any(s["rise"] for s in report["served"])
    assert report["notes"] and report["notes"][0].startswith("absolute floor (not blocking")
    # unless configured to block
    monkeypatch.setenv("HSS_MONITOR__FLOOR_BLOCKING", "true")
    code, report = invoke()
    assert (code, report["decision"]) == (1, "unhealthy")


def test_an_empty_current_window_is_insufficient_data(hss, monkeypatch):
    invoke, url = hss
    _traffic(url, 0, 120, "m1", inventing=False)
    monkeypatch.setenv("HSS_MONITOR__MODEL_ID", "m3")  # nothing served by it
    code, report = invoke()
    assert code == 3 and report["decision"] == "insufficient_data"
    assert report["reasons"] == ["insufficient data: no samples of 'm3' in the current window"]
    with SampleStore(url) as store:
        assert store.runs()[0].decision == "insufficient_data"


def test_a_pinned_reference_window_is_used(hss):
    invoke, url = hss
    _traffic(url, 0, 60, "m1", inventing=False)  # too few for the default reference (100)
    pin = CliRunner().invoke(
        app,
        [
            "monitor",
            "--set-reference",
            "--since",
            "2026-06-01T00:00:00",
            "--until",
            "2026-06-01T02:00:00Z",
            "--samples",
            url,
        ],
    )
    assert pin.exit_code == 0, pin.output
    assert "40 samples" in pin.output  # 20 an hour
    code, report = invoke()
    assert (code, report["decision"]) == (0, "healthy"), report["reasons"]
    reference = report["windows"]["reference"]
    assert reference["pinned"] and reference["n"] == 40
    assert reference["last"] == "2026-06-01T01:57:00+00:00"
    _traffic(url, 60, 20, "m1", inventing=True)
    code, report = invoke()
    assert (code, report["decision"]) == (1, "unhealthy")
    bad = CliRunner().invoke(
        app,
        [
            "monitor",
            "--set-reference",
            "--since",
            "2027-01-01",
            "--until",
            "2027-01-02",
            "--samples",
            url,
        ],
    )
    assert bad.exit_code == 2 and "no samples of 'm1'" in bad.output


def test_the_full_monitor_compares_the_windows_and_keeps_the_corpus_as_a_floor(hss, tmp_path):
    invoke, url = hss
    _traffic(url, 0, 120, "m1", inventing=False)
    code, report = invoke(full=True)
    windows = report["windows"]
    assert report["kind"] == "full" and windows["status"] == "compared"
    assert (windows["reference"]["n"], windows["current"]["n"]) == (100, 20)
    assert report["severity"] is not None and report["drift"] is not None  # still measured
    assert not any(t["worse"] for t in windows["tests"] if t["blocking"])
    # the corpus comparisons are the floor: notes, never reasons (monitor.floor_blocking false)
    assert not any("production reference" in r for r in report["reasons"])
    assert code == {"healthy": 0, "unhealthy": 1}[report["decision"]], report["reasons"]
    _traffic(url, 120, 20, "m1", inventing=True)
    code, report = invoke(full=True)
    assert (code, report["decision"]) == (1, "unhealthy"), report["reasons"]
    assert any("model's reference window" in r for r in report["reasons"])
    assert report["n_samples"] == 20 and (tmp_path / "monitor" / "scores").is_dir()
    with SampleStore(url) as store:
        runs = store.runs()
    assert [r.kind for r in runs] == ["full", "full"]
    assert runs[0].details["window_status"] == "compared"
    assert runs[0].details["current_last"] == "2026-06-01T06:57:00+00:00"


def test_the_full_monitor_on_a_single_window_is_insufficient_data(hss, monkeypatch):
    invoke, url = hss
    _traffic(url, 0, 30, "m1", inventing=True)  # one window; its summaries are unsupported
    code, report = invoke(full=True)
    assert (code, report["decision"]) == (3, "insufficient_data"), report["reasons"]
    assert any("no reference window yet for 'm1'" in r for r in report["reasons"])
    assert report["severity"]["n_live"] == 20  # the rescoring still ran and is reported
    # the corpus comparisons are the floor: measured, noted, not deciding ...
    assert any(s["rise"] for s in report["served"])
    floor = [n for n in report["notes"] if n.startswith("absolute floor (not blocking")]
    assert len(floor) == sum(s["rise"] for s in report["served"]) + bool(
        report["severity"]["rise"]
    ) + bool(report["drift"]["drifted"])
    # ... unless configured to block
    monkeypatch.setenv("HSS_MONITOR__FLOOR_BLOCKING", "true")
    code, report = invoke(full=True)
    assert (code, report["decision"]) == (1, "unhealthy")
    assert any("served summaries:" in r and "beyond the margin" in r for r in report["reasons"])
    assert not any(n.startswith("absolute floor") for n in report["notes"])


def test_since_last_run_takes_exactly_the_samples_after_the_previous_run(hss, monkeypatch):
    invoke, url = hss
    monkeypatch.setenv("HSS_MONITOR__CURRENT_WINDOW", "since_last_run")
    _traffic(url, 0, 120, "m1", inventing=False)
    code, report = invoke()  # no previous run: the newest monitor.sample_size
    assert (code, report["windows"]["current"]["selection"]) == (0, "newest"), report["reasons"]
    assert report["windows"]["current"]["n"] == PER_HOUR
    _traffic(url, 120, 7, "m1", inventing=False)
    code, report = invoke()
    current = report["windows"]["current"]
    assert current["selection"] == "since_last_run" and current["n"] == 7
    assert current["after"] == "2026-06-01T05:57:00+00:00"  # sample 119, the previous run's last
    assert (current["first"], current["last"]) == (
        "2026-06-01T06:00:00+00:00",  # sample 120
        "2026-06-01T06:18:00+00:00",  # sample 126
    )
    assert {s["doc_id"] for s in report["samples"]} == {f"m1-{i}" for i in range(120, 127)}
    code, report = invoke()  # nothing new since: an empty current window
    assert (code, report["decision"]) == (3, "insufficient_data")
    assert report["reasons"] == [
        "insufficient data: no samples of 'm1' in the current window (none after the "
        "previous run's, 2026-06-01T06:18:00+00:00)"
    ]
    monkeypatch.setenv("HSS_MONITOR__MAX_CURRENT_WINDOW", "5")
    _traffic(url, 127, 8, "m1", inventing=True)  # 8 new: the newest 5 of them
    code, report = invoke()
    assert report["windows"]["current"]["n"] == 5
    assert report["windows"]["current"]["first"] == "2026-06-01T06:30:00+00:00"  # sample 130


def test_a_longer_current_window_is_reported_not_blocking(hss, tmp_path):
    invoke, url = hss
    _traffic(url, 0, 100, "m1", inventing=False)
    _traffic(url, 100, 20, "m1", inventing=False, sentences=4)  # the same leads, longer
    code, report = invoke()
    assert (code, report["decision"]) == (0, "healthy"), report["reasons"]
    tests = {t["signal"]: t for t in report["windows"]["tests"]}
    assert tests["live_n_words"]["worse"] and not tests["live_n_words"]["blocking"]
    assert tests["live_n_words"]["current_mean"] > 1.5 * tests["live_n_words"]["reference_mean"]
    assert any(
        n.startswith("reported (not blocking): length (words) changed") for n in (report["notes"])
    )
    # Evidently's drift of the two windows, reported
    drift = report["windows"]["drift"]
    assert (drift["n_reference"], drift["n_current"]) == (100, 20)
    # the continuous served signals, in the registry's order (a new signal's column follows)
    assert drift["columns"][:4] == [
        "live_consistency",
        "live_unsupported_share",
        "live_novel_ngram_share",
        "live_n_words",
    ]
    assert drift["columns"] == list(CONTINUOUS_COLUMNS)
    assert "live_n_words" in drift["drifted_columns"] and drift["report"] == "drift_windows.html"
    assert (tmp_path / "monitor" / "drift_windows.html").stat().st_size > 10_000
    distributions = {d["signal"]: d for d in report["windows"]["distributions"]}
    words = distributions["live_n_words"]
    assert (words["reference"]["n"], words["current"]["n"]) == (100, 20)
    assert words["current"]["median"] > words["reference"]["median"]
    assert words["current"]["mean"] == pytest.approx(tests["live_n_words"]["current_mean"])
    assert words["reference"]["p10"] <= words["reference"]["median"] <= words["reference"]["p90"]


def test_an_old_stored_reference_without_the_new_columns_is_rescored(hss):
    invoke, url = hss
    _traffic(url, 0, 120, "m1", inventing=False)
    code, report = invoke()
    assert code == 0, report["reasons"]
    with SampleStore(url) as store:
        stored = store.reference("m1")
        old = {k: stored["values"][k] for k in ("live_low_consistency", "live_any_unsupported")}
        store.save_reference(  # as the first windowed release stored it: two columns
            "m1",
            pinned=False,
            sample_ids=stored["sample_ids"],
            checker=stored["checker"],
            values=old,
        )
    code, report = invoke()
    assert (code, report["decision"]) == (0, "healthy"), report["reasons"]
    assert {t["signal"] for t in report["windows"]["tests"]} >= {"live_n_words", "live_truncated"}
    with SampleStore(url) as store:
        again = store.reference("m1")["values"]
    assert set(again) == set(stored["values"]) and len(again["live_n_words"]) == 100
    assert again["live_low_consistency"] == old["live_low_consistency"]
