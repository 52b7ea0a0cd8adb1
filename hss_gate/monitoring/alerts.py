"""Where a monitor alert goes: a webhook POST and a Prefect event, one `Sender` each.

A sender delivers one payload (built by hss_gate.workflows.alerts) or raises AlertError; the
message never holds the webhook URL, which can carry a token: errors and targets show only its
scheme and host. The webhook retries network errors, 408/425/429 and 5xx with a doubling backoff.
The Prefect event is a notification channel, not orchestration: `prefect.events` is imported
only when one is emitted (params.yaml alert.prefect_event), from the command line or a flow.

Settings: the `alert` section of params.yaml (docs/ALERTING.md).
"""

from __future__ import annotations

import http.client
import json
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from hss_gate.settings import AlertSettings

BACKOFF_S = 0.5  # the webhook's wait before its first retry; doubled before each further one
RETRY_STATUS = frozenset({408, 425, 429, 500, 502, 503, 504})


class AlertError(Exception):
    """A notification that was not delivered (the message never holds the webhook URL)."""


class Sender(Protocol):
    """One notification channel: `send` delivers the payload or raises AlertError."""

    channel: str
    target: str  # where it goes, safe to print

    def send(self, event: str, payload: Mapping[str, Any]) -> dict[str, Any]:
        """Deliver; return details of the delivery (e.g. the HTTP status)."""
        ...


def webhook_target(url: str) -> str:
    """The webhook URL as it may be shown: scheme and host only (path and query can hold a
    token, e.g. Slack's hooks.slack.com/services/T.../B.../<token>)."""
    parts = urllib.parse.urlsplit(url)
    host = parts.hostname or "?"
    port = f":{parts.port}" if parts.port else ""
    return f"{parts.scheme}://{host}{port}/***"


@dataclass
class WebhookSender:
    """POST the payload as JSON; retry network errors, 408/425/429 and 5xx with a doubling
    backoff; any other status is a failure at once."""

    url: str
    timeout_s: float = 10.0
    retries: int = 2
    sleep: Callable[[float], None] = field(default=time.sleep, repr=False)
    channel: str = "webhook"

    def __repr__(self) -> str:  # never the URL
        return f"WebhookSender({self.target})"

    @property
    def target(self) -> str:
        return webhook_target(self.url)

    def send(self, event: str, payload: Mapping[str, Any]) -> dict[str, Any]:
        body = json.dumps(payload).encode("utf-8")
        headers = {
            "Content-Type": "application/json",
            "User-Agent": "hss-gate-alert",
            "X-HSS-Event": event,
        }
        problem = ""
        for attempt in range(1, self.retries + 2):
            if attempt > 1:
                self.sleep(BACKOFF_S * 2 ** (attempt - 2))
            request = urllib.request.Request(self.url, data=body, headers=headers, method="POST")
            try:
                with urllib.request.urlopen(request, timeout=self.timeout_s) as response:
                    return {"status": response.status, "attempts": attempt}
            except urllib.error.HTTPError as exc:
                problem = f"HTTP {exc.code}"
                if exc.code not in RETRY_STATUS:
                    raise AlertError(f"{problem} (not retried)") from None
            except (OSError, http.client.HTTPException) as exc:  # URLError, timeouts, resets
                reason = getattr(exc, "reason", exc)
                problem = f"{type(reason).__name__}: {reason}"
            except ValueError as exc:  # a URL urllib cannot use
                raise AlertError(self.scrub(f"invalid webhook URL ({exc})")) from None
        raise AlertError(f"{self.scrub(problem)} after {self.retries + 1} attempts")

    def scrub(self, text: str) -> str:
        """An error message with the URL (or its path and query) taken out."""
        parts = urllib.parse.urlsplit(self.url)
        for secret in (self.url, parts.path + (f"?{parts.query}" if parts.query else "")):
            if secret and secret != "/":
                text = text.replace(secret, "/***")
        return text


def prefect_emit(event: str, resource: dict[str, str], payload: dict[str, Any]) -> str:
    """Emit a Prefect event (prefect.events.emit_event) and return its id. Needs a Prefect API
    to receive it: PREFECT_API_URL, or the server of the flow run it is called in (outside
    both, Prefect would start a throwaway local server that no automation watches)."""
    from prefect.context import FlowRunContext
    from prefect.events import emit_event
    from prefect.settings import PREFECT_API_URL

    if not PREFECT_API_URL.value() and FlowRunContext.get() is None:
        raise AlertError(
            "no Prefect API to receive the event: set PREFECT_API_URL (or run the monitor flow)"
        )
    emitted = emit_event(event=event, resource=resource, payload=payload)
    if emitted is None:
        raise AlertError("Prefect did not emit the event (events are off; see Prefect's log)")
    return str(emitted.id)


@dataclass
class PrefectEventSender:
    """Emit hss.monitor.<decision> with the payload; the resource is the monitor of one kind
    (hss-gate.monitor.served or .full), so an automation can match the cheap hourly run."""

    emit: Callable[[str, dict[str, str], dict[str, Any]], str] = prefect_emit
    channel: str = "prefect_event"
    target: str = "Prefect events"

    def send(self, event: str, payload: Mapping[str, Any]) -> dict[str, Any]:
        resource = {
            "prefect.resource.id": f"hss-gate.monitor.{payload.get('kind') or 'full'}",
            "prefect.resource.name": "hss-gate monitor",
            "hss-gate.model-id": str(payload.get("model_id") or ""),
            "hss-gate.run-id": str(payload.get("run_id") or ""),
        }
        event_id = self.emit(event, resource, dict(payload))
        # queued: Prefect's events worker delivers it in the background (flushed at exit)
        return {"event": event, "event_id": event_id, "delivery": "queued"}


def senders_for(settings: AlertSettings) -> list[Sender]:
    """The channels the alert settings configure (none by default)."""
    senders: list[Sender] = []
    if settings.webhook_url is not None:
        senders.append(
            WebhookSender(
                settings.webhook_url.get_secret_value(), settings.timeout_s, settings.retries
            )
        )
    if settings.prefect_event:
        senders.append(PrefectEventSender())
    return senders
