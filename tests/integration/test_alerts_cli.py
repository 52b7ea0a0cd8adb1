"""`hss monitor --served-only` with alerting on (issue 24, item 6): a real SQLite store, the
real windows, verdict, CLI and exit codes, the fake checker (tests/conftest.py) and a real
local HTTP server as the webhook. The notification carries the deciding numbers and the
report's path; a healthy run sends nothing; a failing webhook leaves the verdict and the exit
code as they were; the webhook's token is never printed or written."""

from __future__ import annotations

import json
import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from typer.testing import CliRunner

from hss_gate.cli import app
from hss_gate.common.inputs import load_corpus
from hss_gate.monitoring import alerts as alert_channels
from hss_gate.monitoring.store import Sample, SampleStore
from hss_gate.text.sentences import split_sentences
from tests.conftest import CORPUS, REPO
from tests.reliability.test_bad_input import _fake_toolkit
from tests.unit.test_alerts import TOKEN, Hook

pytestmark = pytest.mark.integration

T0 = datetime(2026, 6, 1, tzinfo=UTC)
DOCS = load_corpus(CORPUS)


def _ingest(url: str, start: int, n: int, inventing: bool) -> None:
    """n samples of model m1, one every 3 minutes: each summary its own document's lead
    (faithful) or another document's (unsupported); 2 in 10 unsupported, 8 in 10 inventing."""
    samples = []
    for i in range(start, start + n):
        doc = DOCS[i % len(DOCS)]
        bad = (i % 10) in ((0, 1, 2, 3, 4, 5, 6, 7) if inventing else (0, 5))
        source = DOCS[(i + len(DOCS) // 2) % len(DOCS)] if bad else doc
        summary = " ".join(split_sentences(source.text)[:2])
        samples.append(
            Sample(
                sample_id=f"m1-{i}",
                document=doc.text,
                summary=summary,
                model_id="m1",
                timestamp=T0 + timedelta(minutes=3 * i),
            )
        )
    with SampleStore(url) as store:
        store.ingest(samples)


@pytest.fixture()
def monitor(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """invoke(inventing) -> (exit code, stdout, monitor.json, out dir): 100 faithful samples
    (the reference window), then 20 faithful or inventing ones (the current window)."""
    monkeypatch.chdir(REPO)
    monkeypatch.setenv("HSS_RUN__CACHE_DIR", str(tmp_path / "cache"))
    reference = tmp_path / "baseline" / "production_scores.csv"
    reference.parent.mkdir()
    shutil.copy(REPO / "data" / "baseline" / "production_scores.csv", reference)
    monkeypatch.setenv("HSS_MONITOR__REFERENCE", str(reference))
    monkeypatch.setenv("HSS_MONITOR__REFERENCE_WINDOW", "100")
    monkeypatch.setenv("HSS_MONITOR__SAMPLE_SIZE", "20")
    monkeypatch.setattr("hss_gate.scoring.toolkit.real_toolkit", _fake_toolkit)
    monkeypatch.setattr(alert_channels, "BACKOFF_S", 0.01)
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "HSS_DEBUG"):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)
    url, out = f"sqlite:///{tmp_path / 'store.sqlite'}", tmp_path / "monitor"
    _ingest(url, 0, 100, inventing=False)

    def invoke(inventing: bool) -> tuple[int, str, dict, Path]:
        _ingest(url, 100, 20, inventing)
        result = CliRunner().invoke(
            app, ["monitor", "--served-only", "--samples", url, "--out", str(out)]
        )
        assert "Traceback" not in result.output
        return result.exit_code, result.output, json.loads((out / "monitor.json").read_text()), out

    return invoke


def _no_token_written(out: Path) -> list[str]:
    return [
        p.name for p in out.rglob("*") if p.is_file() and TOKEN in p.read_text("utf-8", "ignore")
    ]


def test_an_unhealthy_run_posts_the_deciding_numbers_and_the_report_path(monitor, monkeypatch):
    with Hook() as hook:
        monkeypatch.setenv("HSS_ALERT__WEBHOOK_URL", hook.url)
        code, stdout, report, out = monitor(inventing=True)
    assert code == 1 and report["decision"] == "unhealthy"
    [request] = hook.requests
    body = request["json"]
    assert body["decision"] == "unhealthy" and body["run_id"] == report["run_id"]
    assert body["model_id"] == "m1" and body["kind"] == "served"
    low = next(t for t in body["deciding"]["windows"] if t["signal"] == "live_low_consistency")
    stored = next(t for t in report["windows"]["tests"] if t["signal"] == "live_low_consistency")
    assert low["reference_mean"] == pytest.approx(0.2) and low["current_mean"] == pytest.approx(0.8)
    assert low["p_value"] == stored["p_value"] < low["alpha"]
    assert (low["n_reference"], low["n_current"]) == (100, 20)
    assert body["report"]["html"] == str((out / "monitor.html").resolve())
    assert Path(body["report"]["html"]).is_file()  # sent after the reports were written
    assert report["alerts"][0]["sent"] is True and report["alerts"][0]["status"] == 200
    assert "alert: webhook (http://127.0.0.1:" in stdout
    assert TOKEN not in stdout and _no_token_written(out) == []


def test_a_healthy_run_sends_nothing(monitor, monkeypatch):
    with Hook() as hook:
        monkeypatch.setenv("HSS_ALERT__WEBHOOK_URL", hook.url)
        code, stdout, report, _ = monitor(inventing=False)
    assert code == 0 and report["decision"] == "healthy"
    assert hook.requests == [] and "alerts" not in report and "alert:" not in stdout


def test_a_failing_webhook_changes_neither_the_verdict_nor_the_exit_code(monitor, monkeypatch):
    with Hook(status=500) as hook:
        monkeypatch.setenv("HSS_ALERT__WEBHOOK_URL", hook.url)
        monkeypatch.setenv("HSS_ALERT__RETRIES", "1")
        code, stdout, report, out = monitor(inventing=True)
    assert len(hook.requests) == 2  # tried, retried
    assert code == 1 and report["decision"] == "unhealthy"
    assert report["alerts"] == [
        {
            "channel": "webhook",
            "target": f"http://127.0.0.1:{hook.server.server_port}/***",
            "sent": False,
            "error": "HTTP 500 after 2 attempts",
        }
    ]
    assert "warning: alert not sent (webhook" in stdout and "UNHEALTHY (exit 1)" in stdout
    assert TOKEN not in stdout and _no_token_written(out) == []
