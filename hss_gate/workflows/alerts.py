"""Alerting on a monitor verdict beyond the exit code: the step after the monitor's reports.

The step runs after the monitor has written its reports, so the notification can point at a
report that exists: it builds one payload (the verdict, the numbers that decided it, the
reports' absolute paths), hands it to each configured sender (hss_gate.monitoring.alerts: a
webhook POST, a Prefect event), and records what happened in monitor.json under "alerts"
(rewritten atomically). It never raises and never changes the verdict: a notification that
fails is a warning line and `{"sent": false, "error": ...}`; the exit code stays the verdict's.
The webhook URL can carry a token, so it is never printed or written: outcomes and errors show
only its scheme and host.

Settings: the `alert` section of params.yaml (docs/ALERTING.md).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hss_gate.common.errors import error_message
from hss_gate.common.io import write_json_atomic
from hss_gate.common.redact import redacted_uri
from hss_gate.monitoring.alerts import AlertError, Sender, senders_for
from hss_gate.settings import HssSettings

WINDOW_FIELDS = (
    "signal",
    "label",
    "reference_mean",
    "current_mean",
    "difference",
    "p_value",
    "alpha",
    "n_reference",
    "n_current",
)
_RISE_FIELDS = ("live_mean", "reference_mean", "difference", "ci_low", "ci_high", "margin")
"""What a rise over the production reference records (a served signal's, the severity's)."""
FLOOR_FIELDS = ("signal", "label", *_RISE_FIELDS)
SEVERITY_FIELDS = (*_RISE_FIELDS, "n_live", "n_reference")


# ------------------------------------------------------------------------------ the payload


def event_name(decision: str) -> str:
    """The Prefect event (and the payload's `event`): hss.monitor.<decision>."""
    return f"hss.monitor.{decision}"


def deciding_numbers(result: Mapping[str, Any], floor_blocking: bool) -> dict[str, Any]:
    """The numbers that made the verdict: each blocking window test that was significantly
    worse (reported tests never decide), the absolute floor's rises, severity rise and drifted
    columns where they block (no windows, or monitor.floor_blocking), and the failed checks.
    Empty when nothing decided."""
    windows = result.get("windows") or {}
    floor_decides = not windows or floor_blocking
    severity = result.get("severity") or {}
    drift = result.get("drift") or {}
    return {
        "windows": [
            {k: t.get(k) for k in WINDOW_FIELDS}
            for t in windows.get("tests") or []
            if t["worse"] and t.get("blocking", True)
        ],
        "floor": [
            {k: s.get(k) for k in FLOOR_FIELDS}
            for s in result.get("served") or []
            if s.get("rise") and floor_decides
        ],
        "severity": (
            {k: severity.get(k) for k in SEVERITY_FIELDS}
            if severity.get("rise") and floor_decides
            else None
        ),
        "drift": (
            list(drift.get("drifted_columns") or [])
            if drift.get("drifted") and floor_decides
            else []
        ),
        "checks": [
            {k: c.get(k) for k in ("kind", "description", "observed")}
            for c in result.get("checks") or []
            if not c.get("success", True)
        ],
    }


def _window_span(windows: Mapping[str, Any], which: str) -> dict[str, Any] | None:
    span = windows.get(which)
    if not span:
        return None
    keys = ("model_id", "n", "first", "last", "pinned")
    return {k: span[k] for k in keys if k in span}


def monitor_payload(
    result: Mapping[str, Any],
    out_dir: Path,
    *,
    floor_blocking: bool = False,
    now: dt.datetime | None = None,
) -> dict[str, Any]:
    """The notification of one monitor run: who, what verdict, why (the reasons and the
    deciding numbers), where the reports are (absolute paths) and when. Pure."""
    windows = result.get("windows") or {}
    folder = Path(out_dir).resolve()
    return {
        "event": event_name(result["decision"]),
        "run_id": result.get("run_id"),
        "kind": result.get("kind"),
        "model": redacted_uri(str(result.get("model") or "")),
        "model_id": windows.get("model_id"),
        "decision": result["decision"],
        "reasons": list(result.get("reasons") or []),
        "deciding": deciding_numbers(result, floor_blocking),
        "windows": {
            "reference": _window_span(windows, "reference"),
            "current": _window_span(windows, "current"),
        }
        if windows
        else None,
        "n_samples": result.get("n_samples"),
        "report": {
            "html": str(folder / "monitor.html"),
            "json": str(folder / "monitor.json"),
            "markdown": str(folder / "monitor.md"),
        },
        "timestamp": (now or dt.datetime.now(dt.UTC)).isoformat(),
    }


# ------------------------------------------------------------------------------ the step


def notify(
    decision: str, payload: Mapping[str, Any], on: Sequence[str], senders: Sequence[Sender]
) -> list[dict[str, Any]]:
    """Send the payload through each sender when the verdict is one of `on`; one outcome a
    sender ({"channel", "target", "sent", ...details or "error"}). Never raises."""
    if decision not in on:
        return []
    outcomes = []
    for sender in senders:
        outcome: dict[str, Any] = {"channel": sender.channel, "target": sender.target}
        try:
            outcome |= {"sent": True, **sender.send(str(payload["event"]), payload)}
        except AlertError as exc:
            outcome |= {"sent": False, "error": str(exc)}
        except Exception as exc:  # a notifier must never take the verdict down
            scrub = getattr(sender, "scrub", redacted_uri)
            outcome |= {"sent": False, "error": scrub(redacted_uri(error_message(exc)))}
        outcomes.append(outcome)
    return outcomes


@dataclass
class AlertOutcomes:
    """What the alerting step did: one outcome a channel, and warnings (not sent, not
    recorded) to print or log."""

    outcomes: list[dict[str, Any]]
    warnings: list[str]

    def lines(self) -> list[str]:
        """One console line a channel that sent, then the warnings."""
        sent = [f"alert: {o['channel']} ({o['target']}) sent" for o in self.outcomes if o["sent"]]
        return sent + self.warnings


def alert_monitor(
    load_settings: Callable[[], HssSettings],
    result: dict[str, Any],
    out_dir: Path,
    senders: Sequence[Sender] | None = None,
) -> AlertOutcomes:
    """After the monitor wrote its reports: notify as `alert` configures, add the outcomes to
    `result["alerts"]` and rewrite monitor.json (atomically). The verdict is never changed;
    nothing raises. `senders` replaces the configured channels (tests)."""
    try:
        settings = load_settings()
    except Exception:  # invalid settings: the verdict is already "error" and says why
        return AlertOutcomes([], [])
    alert = settings.alert
    chosen = senders_for(alert) if senders is None else list(senders)
    if result.get("decision") not in alert.on or not chosen:
        return AlertOutcomes([], [])
    payload = monitor_payload(result, out_dir, floor_blocking=settings.monitor.floor_blocking)
    outcomes = notify(result["decision"], payload, alert.on, chosen)
    warnings = [
        f"warning: alert not sent ({o['channel']}, {o['target']}): {o['error']}; the verdict stands"
        for o in outcomes
        if not o["sent"]
    ]
    result["alerts"] = outcomes
    try:
        write_json_atomic(Path(out_dir) / "monitor.json", result)
    except Exception as exc:
        warnings.append(f"warning: could not record the alerts in monitor.json: {exc}")
    return AlertOutcomes(outcomes, warnings)
