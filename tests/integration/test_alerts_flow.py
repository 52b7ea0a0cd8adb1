"""The monitor flow with alerting on, under Prefect's test harness (a real temporary Prefect
API): an unhealthy served-only run posts to a local webhook and emits the Prefect event
hss.monitor.unhealthy, which the Prefect API stores with its payload (what an automation
matches). The fake checker keeps it cheap; the store, windows, verdict and flow are real."""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import pytest

from hss_gate.monitoring import alerts as alert_channels
from tests.conftest import REPO
from tests.integration.test_alerts_cli import _ingest
from tests.integration.test_flows import prefect_harness  # noqa: F401 (the session fixture)
from tests.reliability.test_bad_input import _fake_toolkit
from tests.unit.test_alerts import TOKEN, Hook

pytestmark = pytest.mark.integration


def _stored_events(name: str, run_id: str, timeout_s: float = 60.0) -> list:
    """The API's stored events of this name and run (the events worker and the server's
    event persister work in the background: poll)."""
    from prefect.client.orchestration import get_client
    from prefect.events.filters import EventFilter, EventNameFilter

    deadline = time.monotonic() + timeout_s
    while True:
        with get_client(sync_client=True) as client:
            page = client.read_events(  # the server takes at most 50 (the client asks 100)
                EventFilter(event=EventNameFilter(name=[name])), limit=50
            )
        found = [e for e in page.events if e.payload.get("run_id") == run_id]
        if found or time.monotonic() > deadline:
            return found
        time.sleep(1.0)


def test_the_monitor_flow_posts_and_emits_the_prefect_event(
    prefect_harness,  # noqa: F811
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
):
    from flows import scoring
    from flows.monitor import monitor_flow
    from hss_gate.scoring.runner import LocalRunner

    monkeypatch.setenv("HSS_RUN__CACHE_DIR", str(tmp_path / "cache"))
    reference = tmp_path / "production_scores.csv"
    shutil.copy(REPO / "data" / "baseline" / "production_scores.csv", reference)
    monkeypatch.setenv("HSS_MONITOR__REFERENCE", str(reference))
    monkeypatch.setenv("HSS_MONITOR__REFERENCE_WINDOW", "100")
    monkeypatch.setenv("HSS_MONITOR__SAMPLE_SIZE", "20")
    monkeypatch.setenv("HSS_ALERT__PREFECT_EVENT", "true")
    monkeypatch.setattr("hss_gate.scoring.toolkit.real_toolkit", _fake_toolkit)
    monkeypatch.setattr(scoring, "_PROCESS_RUNNER", LocalRunner())  # no real toolkit cached
    monkeypatch.setattr(alert_channels, "BACKOFF_S", 0.01)
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)
    url, out = f"sqlite:///{tmp_path / 'store.sqlite'}", tmp_path / "monitor"
    _ingest(url, 0, 100, inventing=False)
    _ingest(url, 100, 20, inventing=True)
    with Hook() as hook:
        monkeypatch.setenv("HSS_ALERT__WEBHOOK_URL", hook.url)  # the worker's env, never a param
        result = monitor_flow(
            samples=url, params=str(REPO / "params.yaml"), out=str(out), served_only=True
        )
    assert result["decision"] == "unhealthy", result["reasons"]
    assert [a["channel"] for a in result["alerts"]] == ["webhook", "prefect_event"]
    assert all(a["sent"] for a in result["alerts"]), result["alerts"]
    [request] = hook.requests
    assert request["json"]["report"]["html"] == str((out / "monitor.html").resolve())
    written = (out / "monitor.json").read_text()
    assert json.loads(written)["alerts"] == result["alerts"] and TOKEN not in written
    [event] = _stored_events("hss.monitor.unhealthy", result["run_id"])
    assert str(event.id) == result["alerts"][1]["event_id"]
    assert event.resource.id == "hss-gate.monitor.served"
    assert event.resource["hss-gate.model-id"] == "m1"
    low = next(
        t for t in event.payload["deciding"]["windows"] if t["signal"] == "live_low_consistency"
    )
    assert low["current_mean"] == pytest.approx(0.8) and low["p_value"] < low["alpha"]
    assert event.payload["report"]["json"] == str((out / "monitor.json").resolve())
    assert any(r.id.startswith("prefect.flow-run.") for r in event.related)  # the run, attached
