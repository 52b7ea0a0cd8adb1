"""Alerting on a monitor verdict (hss_gate/workflows/alerts.py, its channels in
hss_gate/monitoring/alerts.py): the payload's deciding numbers, a real
local HTTP server receiving the webhook POST, retries on a failing server, the secret URL never
written, and the Prefect event (a fake emitter, and one real emit through Prefect's events
worker with its asserting client)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from hss_gate.common.io import write_json_atomic
from hss_gate.monitoring import alerts as alert_channels
from hss_gate.monitoring.alerts import AlertError, PrefectEventSender, WebhookSender
from hss_gate.settings import HssSettings, load_settings
from hss_gate.workflows import alerts
from hss_gate.workflows.alerts import alert_monitor, monitor_payload, notify

pytestmark = pytest.mark.unit

TOKEN = "T0K3N-s3cr3t-9f8e7d"


def _test(signal: str, ref: float, cur: float, p: float, worse: bool) -> dict[str, Any]:
    return {
        "signal": signal,
        "label": f"label of {signal}",
        "reference_mean": ref,
        "current_mean": cur,
        "difference": cur - ref,
        "p_value": p,
        "alpha": 0.001,
        "n_reference": 100,
        "n_current": 20,
        "worse": worse,
    }


def _served(signal: str, rise: bool) -> dict[str, Any]:
    return {
        "signal": signal,
        "label": signal,
        "live_mean": 0.8,
        "reference_mean": 0.4,
        "difference": 0.4,
        "ci_low": 0.2,
        "ci_high": 0.6,
        "margin": 0.1,
        "rise": rise,
    }


def windowed_result(decision: str = "unhealthy") -> dict[str, Any]:
    """A --served-only monitor.json: one window test worse, one not; the floor rises (not
    blocking); one failed check."""
    worse = decision == "unhealthy"
    return {
        "run_id": "abc123def456",
        "kind": "served",
        "model": "openai:http://u:***@host/v1",  # the workflow redacts it
        "decision": decision,
        "reasons": ["served summaries: rose"] if worse else [],
        "windows": {
            "status": "compared",
            "model_id": "m1",
            "reference": {"model_id": "m1", "pinned": False, "n": 100, "first": "a", "last": "b"},
            "current": {"n": 20, "first": "c", "last": "d"},
            "tests": [
                _test("live_low_consistency", 0.2, 0.8, 1e-6 if worse else 0.4, worse),
                _test("live_has_unsupported", 0.1, 0.15, 0.3, False),
            ],
        },
        "served": [_served("live_low_consistency", True), _served("live_unsupported_share", False)],
        "severity": None,
        "drift": None,
        "checks": [
            {"kind": "output", "description": "share empty", "observed": 0.3, "success": False},
            {"kind": "output", "description": "share copied", "observed": 0.0, "success": True},
        ],
        "n_samples": 20,
    }


def test_payload_carries_the_deciding_numbers_and_the_report_paths(tmp_path):
    raw = f"openai:http://u:{TOKEN}@host/v1?api_key={TOKEN}"  # redacted again, to be sure
    payload = monitor_payload(windowed_result() | {"model": raw}, tmp_path / "out")
    assert payload["event"] == "hss.monitor.unhealthy"
    assert (payload["run_id"], payload["kind"], payload["model_id"]) == (
        "abc123def456",
        "served",
        "m1",
    )
    assert TOKEN not in json.dumps(payload) and "***" in payload["model"]
    [window] = payload["deciding"]["windows"]  # only the test that was worse
    assert window == {
        k: v for k, v in windowed_result()["windows"]["tests"][0].items() if k != "worse"
    }
    assert window["p_value"] == 1e-6 and window["n_reference"] == 100 and window["n_current"] == 20
    assert payload["deciding"]["floor"] == []  # the floor rose, but did not block
    assert payload["deciding"]["checks"] == [
        {"kind": "output", "description": "share empty", "observed": 0.3}
    ]
    assert payload["report"]["html"] == str((tmp_path / "out" / "monitor.html").resolve())
    assert payload["report"]["json"] == str((tmp_path / "out" / "monitor.json").resolve())
    assert Path(payload["report"]["html"]).is_absolute()
    assert payload["windows"]["reference"]["n"] == 100 and payload["timestamp"]


def test_the_floor_and_severity_numbers_count_where_they_decided(tmp_path):
    blocking = monitor_payload(windowed_result(), tmp_path, floor_blocking=True)
    assert [f["signal"] for f in blocking["deciding"]["floor"]] == ["live_low_consistency"]
    full = windowed_result() | {"windows": None, "kind": "full"}  # a full run: the floor decides
    full["severity"] = {"live_mean": 0.9, "reference_mean": 0.5, "difference": 0.4, "ci_low": 0.3,
                        "ci_high": 0.5, "margin": 0.05, "n_live": 20, "n_reference": 48,
                        "rise": True}  # fmt: skip
    full["drift"] = {"drifted": True, "drifted_columns": ["hss"]}
    payload = monitor_payload(full, tmp_path)
    assert payload["deciding"]["floor"][0]["ci_low"] == 0.2
    assert payload["deciding"]["severity"]["difference"] == 0.4
    assert payload["deciding"]["drift"] == ["hss"]
    assert payload["model_id"] is None and payload["windows"] is None
    full["severity"]["rise"] = False
    assert monitor_payload(full, tmp_path)["deciding"]["severity"] is None


# ------------------------------------------------------------------------ a real HTTP server


class Hook:
    """A local HTTP server in a thread that records each request and answers `status`."""

    def __init__(self, status: int = 200) -> None:
        self.status = status
        self.requests: list[dict[str, Any]] = []
        hook = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                hook.requests.append(
                    {
                        "path": self.path,
                        "headers": {k.lower(): v for k, v in self.headers.items()},
                        "json": json.loads(body),
                    }
                )
                self.send_response(hook.status)
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_port}/hooks/{TOKEN}?token={TOKEN}"

    def __enter__(self) -> Hook:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture()
def no_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)


@pytest.fixture()
def hook(no_proxy: None) -> Iterator[Hook]:
    with Hook() as server:
        yield server


def _settings(tmp_path: Path, **alert: Any) -> HssSettings:
    return load_settings(tmp_path / "absent.yaml", **{f"alert__{k}": v for k, v in alert.items()})


def _run(tmp_path: Path, result: dict[str, Any], settings: HssSettings) -> alerts.AlertOutcomes:
    """The monitor wrote its reports; then the alerting step runs."""
    out = tmp_path / "out"
    write_json_atomic(out / "monitor.json", result)
    return alert_monitor(lambda: settings, result, out)


def test_an_unhealthy_verdict_posts_the_numbers_and_the_report_path(tmp_path, hook):
    result = windowed_result()
    report = _run(tmp_path, result, _settings(tmp_path, webhook_url=hook.url))
    [request] = hook.requests
    assert request["path"] == f"/hooks/{TOKEN}?token={TOKEN}"
    assert request["headers"]["content-type"] == "application/json"
    assert request["headers"]["x-hss-event"] == "hss.monitor.unhealthy"
    body = request["json"]
    assert body["decision"] == "unhealthy" and body["run_id"] == "abc123def456"
    assert body["deciding"]["windows"][0]["current_mean"] == 0.8
    assert body["deciding"]["windows"][0]["p_value"] == 1e-6
    assert body["report"]["html"] == str((tmp_path / "out" / "monitor.html").resolve())
    [outcome] = report.outcomes
    assert outcome["sent"] and outcome["status"] == 200 and outcome["attempts"] == 1
    written = (tmp_path / "out" / "monitor.json").read_text()
    assert json.loads(written)["alerts"] == report.outcomes
    assert json.loads(written)["decision"] == "unhealthy"
    assert TOKEN not in written and TOKEN not in "\n".join(report.lines())
    assert report.lines() == [
        f"alert: webhook (http://127.0.0.1:{hook.server.server_port}/***) sent"
    ]


def test_a_healthy_run_sends_nothing_by_default(tmp_path, hook):
    result = windowed_result("healthy")
    report = _run(tmp_path, result, _settings(tmp_path, webhook_url=hook.url))
    assert hook.requests == [] and report.outcomes == [] and report.lines() == []
    assert "alerts" not in json.loads((tmp_path / "out" / "monitor.json").read_text())
    report = _run(tmp_path, result, _settings(tmp_path, webhook_url=hook.url, on=["healthy"]))
    assert len(hook.requests) == 1 and hook.requests[0]["json"]["decision"] == "healthy"


def test_a_failing_server_is_retried_then_reported_not_sent(tmp_path, hook, monkeypatch):
    monkeypatch.setattr(alert_channels, "BACKOFF_S", 0.01)
    hook.status = 500
    result = windowed_result()
    report = _run(tmp_path, result, _settings(tmp_path, webhook_url=hook.url, retries=2))
    assert len(hook.requests) == 3  # the first try and two retries
    [outcome] = report.outcomes
    assert outcome["sent"] is False and outcome["error"] == "HTTP 500 after 3 attempts"
    assert result["decision"] == "unhealthy"  # the verdict stands
    written = json.loads((tmp_path / "out" / "monitor.json").read_text())
    assert written["decision"] == "unhealthy" and written["alerts"][0]["sent"] is False
    [line] = report.lines()
    assert line.startswith("warning: alert not sent (webhook") and TOKEN not in line


def test_a_client_error_is_not_retried(tmp_path, hook):
    hook.status = 404
    [outcome] = _run(
        tmp_path, windowed_result(), _settings(tmp_path, webhook_url=hook.url)
    ).outcomes
    assert len(hook.requests) == 1 and outcome["error"] == "HTTP 404 (not retried)"


def test_an_unreachable_webhook_waits_with_backoff_and_never_shows_the_token(no_proxy):
    waits: list[float] = []
    sender = WebhookSender(
        f"http://127.0.0.1:9/x/{TOKEN}", timeout_s=2, retries=2, sleep=waits.append
    )
    with pytest.raises(AlertError) as caught:
        sender.send("hss.monitor.unhealthy", {"a": 1})
    assert waits == [0.5, 1.0] and "after 3 attempts" in str(caught.value)
    assert TOKEN not in str(caught.value) and TOKEN not in repr(sender)


def test_the_webhook_url_is_a_secret_in_settings_dumps(tmp_path, monkeypatch):
    monkeypatch.setenv("HSS_ALERT__WEBHOOK_URL", f"https://hooks.example.com/services/{TOKEN}")
    settings = load_settings(tmp_path / "absent.yaml")
    assert settings.alert.webhook_url.get_secret_value().endswith(TOKEN)  # usable in memory
    assert TOKEN not in settings.model_dump_json() and TOKEN not in repr(settings)
    with pytest.raises(Exception, match="http:// or https://"):
        _settings(tmp_path, webhook_url="file:///etc/passwd")


def test_a_bare_on_key_in_yaml_is_read_as_on(tmp_path):
    params = tmp_path / "params.yaml"
    params.write_text("alert:\n  on: [error, insufficient_data]\n")  # YAML 1.1: on -> true
    assert load_settings(params).alert.on == ["error", "insufficient_data"]
    params.write_text("alert:\n  on: [sometimes]\n")
    with pytest.raises(Exception, match=r"alert\.on"):
        load_settings(params)


def test_a_sender_that_crashes_never_raises(tmp_path):
    class Broken:
        channel, target = "webhook", "x"

        def send(self, event: str, payload: Any) -> dict[str, Any]:
            raise RuntimeError(f"boom at https://h/{TOKEN}?token={TOKEN}")

    [outcome] = notify("unhealthy", {"event": "e"}, ["unhealthy"], [Broken()])
    assert outcome["sent"] is False and outcome["error"].startswith("RuntimeError: boom")
    assert f"token={TOKEN}" not in outcome["error"]


def test_unreadable_settings_send_nothing(tmp_path):
    def broken() -> HssSettings:
        raise ValueError("bad params")

    result = windowed_result()
    assert alert_monitor(broken, result, tmp_path).outcomes == [] and "alerts" not in result


# ------------------------------------------------------------------------ the Prefect event


def test_the_prefect_event_has_the_decision_in_its_name_and_the_payload(tmp_path):
    emitted: list[tuple[str, dict[str, str], dict[str, Any]]] = []

    def fake_emit(event: str, resource: dict[str, str], payload: dict[str, Any]) -> str:
        emitted.append((event, resource, payload))
        return "event-1"

    settings = _settings(tmp_path, prefect_event=True)
    result = windowed_result()
    write_json_atomic(tmp_path / "monitor.json", result)
    report = alert_monitor(lambda: settings, result, tmp_path, [PrefectEventSender(fake_emit)])
    [(event, resource, payload)] = emitted
    assert event == "hss.monitor.unhealthy"
    assert resource["prefect.resource.id"] == "hss-gate.monitor.served"
    assert resource["hss-gate.model-id"] == "m1" and resource["hss-gate.run-id"] == "abc123def456"
    assert payload == monitor_payload(result, tmp_path) | {"timestamp": payload["timestamp"]}
    assert report.outcomes == [
        {
            "channel": "prefect_event",
            "target": "Prefect events",
            "sent": True,
            "event": "hss.monitor.unhealthy",
            "event_id": "event-1",
            "delivery": "queued",
        }
    ]


def test_prefect_events_are_configured_by_the_settings(tmp_path):
    chosen = alert_channels.senders_for(_settings(tmp_path, prefect_event=True).alert)
    assert [s.channel for s in chosen] == ["prefect_event"]
    assert alert_channels.senders_for(_settings(tmp_path).alert) == []


def test_a_real_prefect_emit_reaches_prefects_events_client(tmp_path, monkeypatch):
    """Through prefect.events.emit_event and its events worker, into Prefect's own asserting
    client (prefect.testing's fixture does the same): no server needed."""
    worker_module = pytest.importorskip("prefect.events.worker")
    from prefect.events.clients import AssertingEventsClient
    from prefect.settings import PREFECT_API_URL, temporary_settings

    class NoApi:  # the worker also opens an API client (for run context); none is needed here
        async def __aenter__(self) -> NoApi:
            return self

        async def __aexit__(self, *exc: object) -> None:
            return None

    monkeypatch.setattr("prefect.client.orchestration.get_client", lambda *a, **k: NoApi())
    worker = worker_module.EventsWorker.instance(AssertingEventsClient)
    monkeypatch.setattr(worker_module.EventsWorker, "instance", lambda *_: worker)
    payload = monitor_payload(windowed_result(), tmp_path)
    with temporary_settings({PREFECT_API_URL: "http://127.0.0.1:9/api"}):  # never contacted
        try:
            outcome = PrefectEventSender().send(payload["event"], payload)
        finally:
            worker.drain()  # inside: the worker's lifespan reads the settings too
    [event] = AssertingEventsClient.last.events
    assert event.event == "hss.monitor.unhealthy" and str(event.id) == outcome["event_id"]
    assert event.resource.id == "hss-gate.monitor.served"
    assert event.payload["deciding"]["windows"][0]["p_value"] == 1e-6
    assert event.payload["report"]["html"].endswith("monitor.html")


def test_without_a_prefect_api_the_event_is_reported_not_sent(tmp_path):
    pytest.importorskip("prefect")
    from prefect.settings import PREFECT_API_URL, temporary_settings

    with temporary_settings(restore_defaults={PREFECT_API_URL}):
        [outcome] = notify(
            "unhealthy", {"event": "hss.monitor.unhealthy"}, ["unhealthy"], [PrefectEventSender()]
        )
    assert outcome["sent"] is False and "PREFECT_API_URL" in outcome["error"]


# ------------------------------------------------------------------------ Prefect automations


def _prefect_yaml_trigger() -> dict[str, Any]:
    import yaml

    from tests.conftest import REPO

    deployments = yaml.safe_load((REPO / "prefect.yaml").read_text(encoding="utf-8"))["deployments"]
    [daily] = [d for d in deployments if d["name"] == "monitor-daily"]
    [trigger] = daily["triggers"]
    return trigger


def test_prefect_yaml_triggers_the_full_monitor_on_the_served_event():
    """The trigger `prefect deploy` turns into an automation is valid for the installed Prefect
    and matches the event and resource the served-only monitor emits (not the full one's)."""
    pytest.importorskip("prefect")
    import uuid

    from prefect.events import DeploymentTriggerTypes
    from pydantic import TypeAdapter

    spec = _prefect_yaml_trigger()
    trigger = TypeAdapter(DeploymentTriggerTypes).validate_python(spec)
    trigger.set_deployment_id(uuid.uuid4())
    automation = trigger.as_automation()
    assert automation.actions[0].type == "run-deployment"
    emitted: list[tuple[str, dict[str, str]]] = []
    sender = PrefectEventSender(lambda e, r, p: emitted.append((e, r)) or "id")
    for kind in ("served", "full"):
        sender.send(alerts.event_name("unhealthy"), {"kind": kind})
    (served_event, served), (_, full) = emitted
    assert automation.trigger.expect == {served_event}
    assert automation.trigger.match.model_dump() == {
        "prefect.resource.id": served["prefect.resource.id"]
    }
    assert full["prefect.resource.id"] != served["prefect.resource.id"]  # no loop


def _documented_automation() -> dict[str, Any]:
    import yaml

    from tests.conftest import REPO

    text = (REPO / "docs" / "ALERTING.md").read_text(encoding="utf-8")
    start = text.index("```yaml\n# hss-alert-automation.yaml") + len("```yaml\n")
    return yaml.safe_load(text[start : text.index("```", start)])


def test_the_documented_notification_automation_is_valid_and_renders(tmp_path):
    pytest.importorskip("prefect")
    import jinja2
    from prefect.events.schemas.automations import AutomationCore

    data = _documented_automation()
    automation = AutomationCore.model_validate(data)  # what `prefect automation create` does
    assert "hss.monitor.unhealthy" in automation.trigger.expect
    assert automation.trigger.match.model_dump()["prefect.resource.id"] == "hss-gate.monitor.*"
    action = data["actions"][0]
    event = {"payload": monitor_payload(windowed_result(), tmp_path)}
    subject = jinja2.Template(action["subject"]).render(event=event)
    body = jinja2.Template(action["body"]).render(event=event)
    assert subject == "hss-gate monitor: unhealthy (m1)"
    assert "UNHEALTHY run abc123def456 (served)" in body and "- served summaries: rose" in body
    assert str((tmp_path / "monitor.html").resolve()) in body


def test_an_empty_webhook_url_means_no_webhook(tmp_path, monkeypatch):
    monkeypatch.setenv("HSS_ALERT__WEBHOOK_URL", "")  # an unset GitHub secret exports ""
    assert load_settings(tmp_path / "absent.yaml").alert.webhook_url is None


def test_reported_window_tests_and_a_non_blocking_floor_do_not_decide():
    from hss_gate.workflows.alerts import deciding_numbers

    result = windowed_result()
    reported = _test("live_n_words", 40.0, 90.0, 1e-5, True) | {"blocking": False}
    result["windows"]["tests"].append(reported)
    result["severity"] = {"rise": True, "live_mean": 0.5, "reference_mean": 0.2}
    result["drift"] = {"drifted": True, "drifted_columns": ["hss"]}
    numbers = deciding_numbers(result, floor_blocking=False)
    assert [t["signal"] for t in numbers["windows"]] == ["live_low_consistency"]
    assert numbers["severity"] is None and numbers["drift"] == [] and numbers["floor"] == []
    blocking = deciding_numbers(result, floor_blocking=True)
    assert blocking["severity"] is not None and blocking["drift"] == ["hss"]
    assert [s["signal"] for s in blocking["floor"]] == ["live_low_consistency"]
