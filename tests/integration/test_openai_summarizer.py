"""OpenAISummarizer against a fake OpenAI-compatible server on 127.0.0.1 (ephemeral port)."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from hss_gate.common.errors import ModelError
from hss_gate.models.summarizers import load_summarizer
from hss_gate.models.summarizers import openai as openai_module
from hss_gate.models.summarizers.base import chat_messages
from hss_gate.settings import GenerateSettings, HssSettings

pytestmark = pytest.mark.integration

DOCS = [
    "The council approved the new budget on Monday after a long debate.",
    "Rain fell across the northern valley for a whole week.",
]

# (status, body): a dict is sent as JSON, bytes as they are
Reply = tuple[int, Any]


def ok(content: str | None) -> Reply:
    return 200, {
        "id": "cmpl-1",
        "object": "chat.completion",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content},
                "finish_reason": "stop",
            }
        ],
    }


@dataclass
class FakeServer:
    """Records every request and answers with `respond(attempt_number, request)`."""

    respond: Callable[[int, dict[str, Any]], Reply]
    requests: list[dict[str, Any]] = field(default_factory=list)
    release: threading.Event = field(default_factory=threading.Event)
    url: str = ""
    lock: threading.Lock = field(default_factory=threading.Lock)


@pytest.fixture
def serve() -> Iterator[Callable[[Callable[[int, dict[str, Any]], Reply]], FakeServer]]:
    servers: list[tuple[ThreadingHTTPServer, threading.Thread, FakeServer]] = []

    def start(respond: Callable[[int, dict[str, Any]], Reply]) -> FakeServer:
        fake = FakeServer(respond)

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                request = {
                    "method": "POST",
                    "path": self.path,
                    "headers": {k.lower(): v for k, v in self.headers.items()},
                    "body": raw,
                }
                with fake.lock:
                    fake.requests.append(request)
                    number = len(fake.requests)
                status, body = fake.respond(number, request)
                data = body if isinstance(body, bytes) else json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        server.daemon_threads = True
        thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        thread.start()
        host, port = server.server_address[:2]
        fake.url = f"http://{host}:{port}/v1"
        servers.append((server, thread, fake))
        return fake

    yield start
    for server, thread, fake in servers:
        fake.release.set()
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """No key, no model override and no proxy: requests go straight to the loopback server."""
    for name in ("HSS_OPENAI_API_KEY", "HSS_OPENAI_MODEL"):
        monkeypatch.delenv(name, raising=False)
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)


@pytest.fixture
def sleeps(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """Back-off waits, recorded instead of slept."""
    waits: list[float] = []
    monkeypatch.setattr(openai_module.time, "sleep", waits.append)
    return waits


def _settings(**generate: Any) -> HssSettings:
    values = {"max_new_tokens": 8, "retries": 2, "timeout_s": 5.0, **generate}
    return HssSettings(generate=GenerateSettings(**values))


def _body(request: dict[str, Any]) -> dict[str, Any]:
    return json.loads(request["body"])


def test_request_carries_messages_temperature_and_max_tokens(serve, sleeps) -> None:
    fake = serve(lambda n, req: ok(f"  summary {n}\n"))
    settings = _settings(max_new_tokens=12)
    summarizer = load_summarizer(f"openai:{fake.url}", settings)
    seen: list[int] = []

    out = summarizer.summarize(DOCS, progress=seen.append)

    assert out == ["summary 1", "summary 2"]  # one string per input, in order, stripped
    assert seen == [1, 1]
    assert len(fake.requests) == 2 and sleeps == []
    for request, doc in zip(fake.requests, DOCS, strict=True):
        assert request["method"] == "POST"
        assert request["path"] == "/v1/chat/completions"
        assert request["headers"]["content-type"].startswith("application/json")
        body = _body(request)
        assert body["messages"] == chat_messages(doc, settings.generate)
        assert body["messages"][0] == {"role": "system", "content": settings.generate.system_prompt}
        assert body["messages"][-1]["role"] == "user"
        assert doc in body["messages"][-1]["content"]
        assert body["temperature"] == 0
        assert body["max_tokens"] == 12
        assert body["model"] == "default"


def test_model_name_trailing_slash_and_fingerprint(serve, sleeps, monkeypatch) -> None:
    fake = serve(lambda n, req: ok("fine"))
    monkeypatch.setenv("HSS_OPENAI_MODEL", "tiny-llm")
    summarizer = load_summarizer(f"openai:{fake.url}/", _settings())

    assert summarizer.summarize(DOCS[:1]) == ["fine"]
    assert fake.requests[0]["path"] == "/v1/chat/completions"
    assert _body(fake.requests[0])["model"] == "tiny-llm"
    fingerprint = summarizer.fingerprint
    assert fake.url in fingerprint and "tiny-llm" in fingerprint
    assert load_summarizer(f"openai:{fake.url}", _settings()).fingerprint == fingerprint
    assert load_summarizer(f"openai:{fake.url}", _settings(max_new_tokens=9)).fingerprint != (
        fingerprint
    )
    monkeypatch.setenv("HSS_OPENAI_MODEL", "other-llm")
    assert load_summarizer(f"openai:{fake.url}", _settings()).fingerprint != fingerprint


def test_null_content_is_an_empty_summary(serve, sleeps) -> None:
    fake = serve(lambda n, req: ok(None))
    assert load_summarizer(f"openai:{fake.url}", _settings()).summarize(DOCS[:1]) == [""]


@pytest.mark.parametrize("key", [None, "", "sk-test-123"])
def test_authorization_only_with_a_key(serve, sleeps, monkeypatch, key: str | None) -> None:
    if key is not None:
        monkeypatch.setenv("HSS_OPENAI_API_KEY", key)
    fake = serve(lambda n, req: ok("fine"))

    load_summarizer(f"openai:{fake.url}", _settings()).summarize(DOCS)

    assert len(fake.requests) == 2
    for request in fake.requests:
        if key:
            assert request["headers"]["authorization"] == f"Bearer {key}"
        else:
            assert "authorization" not in request["headers"]


@pytest.mark.parametrize("status", [500, 502, 429])
def test_transient_errors_are_retried(serve, sleeps, status: int) -> None:
    fake = serve(lambda n, req: ok("recovered") if n > 2 else (status, {"error": "busy"}))

    out = load_summarizer(f"openai:{fake.url}", _settings(retries=2)).summarize(DOCS[:1])

    assert out == ["recovered"]
    assert len(fake.requests) == 3
    assert sleeps == [0.5, 1.0]  # exponential back-off between the attempts
    bodies = [_body(r) for r in fake.requests]
    assert bodies[0] == bodies[1] == bodies[2]  # the same request each time


def test_server_always_503_gives_up_after_retries_plus_one(serve, sleeps) -> None:
    fake = serve(lambda n, req: (503, {"error": "overloaded"}))
    summarizer = load_summarizer(f"openai:{fake.url}", _settings(retries=2))

    with pytest.raises(ModelError, match=r"3 tries.*HTTP 503"):
        summarizer.summarize(DOCS)

    assert len(fake.requests) == 3  # the first document fails; the second is never sent
    assert sleeps == [0.5, 1.0]


def test_zero_retries_means_one_attempt(serve, sleeps) -> None:
    fake = serve(lambda n, req: (500, {"error": "boom"}))
    with pytest.raises(ModelError, match="1 tries"):
        load_summarizer(f"openai:{fake.url}", _settings(retries=0)).summarize(DOCS[:1])
    assert len(fake.requests) == 1 and sleeps == []


@pytest.mark.parametrize("status", [400, 401, 404, 422])
def test_client_errors_fail_at_once(serve, sleeps, status: int) -> None:
    fake = serve(lambda n, req: (status, {"error": {"message": "model 'default' not found"}}))
    summarizer = load_summarizer(f"openai:{fake.url}", _settings(retries=3))

    with pytest.raises(ModelError, match=f"HTTP {status}") as info:
        summarizer.summarize(DOCS)

    assert len(fake.requests) == 1
    assert sleeps == []
    assert "not found" in str(info.value)  # the server's reason reaches the user


def _closed_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_closed_port_raises_model_error(sleeps) -> None:
    port = _closed_port()
    summarizer = load_summarizer(f"openai:http://127.0.0.1:{port}/v1", _settings(retries=2))

    started = time.monotonic()
    with pytest.raises(ModelError, match=r"3 tries.*ConnectError"):
        summarizer.summarize(DOCS)

    assert time.monotonic() - started < 10
    assert sleeps == [0.5, 1.0]


def test_timeout_is_retried_then_raises(serve, sleeps) -> None:
    holder: dict[str, FakeServer] = {}

    def hang(n: int, req: dict[str, Any]) -> Reply:
        holder["fake"].release.wait(timeout=10)
        return ok("too late")

    fake = serve(hang)
    holder["fake"] = fake
    summarizer = load_summarizer(f"openai:{fake.url}", _settings(retries=1, timeout_s=0.3))

    started = time.monotonic()
    with pytest.raises(ModelError, match=r"2 tries.*Timeout"):
        summarizer.summarize(DOCS[:1])

    assert time.monotonic() - started < 5
    assert len(fake.requests) == 2
    assert sleeps == [0.5]


@pytest.mark.parametrize(
    "body",
    [
        b"<html>gateway</html>",  # not JSON
        {"choices": []},  # no choice
        {"object": "error"},  # no choices key
        {"choices": [{"index": 0}]},  # no message
        {"choices": [{"message": None}]},
        [1, 2, 3],  # JSON, but not an object
    ],
)
def test_malformed_answers_raise_model_error(serve, sleeps, body: Any) -> None:
    fake = serve(lambda n, req: (200, body))
    summarizer = load_summarizer(f"openai:{fake.url}", _settings(retries=1))

    with pytest.raises(ModelError, match=r"2 tries.*malformed"):
        summarizer.summarize(DOCS[:1])

    assert len(fake.requests) == 2
    assert sleeps == [0.5]


def test_malformed_answer_then_good_answer(serve, sleeps) -> None:
    fake = serve(lambda n, req: (200, {"choices": []}) if n == 1 else ok("second time"))
    out = load_summarizer(f"openai:{fake.url}", _settings(retries=1)).summarize(DOCS[:1])
    assert out == ["second time"]
    assert len(fake.requests) == 2
