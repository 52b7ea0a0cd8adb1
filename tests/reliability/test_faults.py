"""Faults: a killed run resumes from its cache, concurrent runs share one cache, the gate and the
monitor fail closed (exit 2) whichever step breaks, and the sample store survives a failed run.

The subprocess runs summarize through `openai:` against a loopback server in this process, which
can hold one request open (so a run can be killed at a known point) or hold every request until
two runs are both summarizing (so their cache writes overlap). No test hook in the library.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import re
import signal
import sqlite3
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from hss_gate.cli import app
from hss_gate.common.cache import Cache
from hss_gate.common.errors import ModelError
from hss_gate.settings import GenerateSettings
from tests.conftest import CORPUS, REPO

SAFETY_S = 900  # generous upper bound on any wait; never a timing assertion
OUTPUTS = ("documents.csv", "perturbations.csv", "edits.jsonl", "summaries.jsonl")
N_DOCS = 2


def mini_corpus(path: Path, n: int) -> Path:
    """The first n reference documents, cut to their first two paragraphs (cheap to perturb)."""
    lines = (CORPUS / "corpus.jsonl").read_text(encoding="utf-8").splitlines()[:n]
    with path.open("w", encoding="utf-8") as handle:
        for line in lines:
            row = json.loads(line)
            row["text"] = "\n\n".join(row["text"].split("\n\n")[:2])
            handle.write(json.dumps(row) + "\n")
    return path


# --- a deterministic OpenAI-compatible summarizer on 127.0.0.1 ------------------------------


def _lead_two(body: dict[str, Any]) -> str:
    """The first two sentences of the article in the prompt: a summary that follows the input."""
    content = body["messages"][-1]["content"]
    before, after = GenerateSettings().prompt_template.split("{document}")
    article = content.removeprefix(before).removesuffix(after)
    return " ".join(re.split(r"(?<=[.!?])\s+", article.strip())[:2])


class Server:
    """Counts requests per API key; can hold request number `hold_at` open, or answer nothing
    until every key in `pair` has sent a request (both runs are summarizing at once)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.keys: list[str] = []
        self.hold_at: int | None = None
        self.held = threading.Event()
        self.release = threading.Event()
        self.pair: set[str] = set()
        self.paired = threading.Event()
        self.url = ""

    def answer(self, key: str, body: dict[str, Any]) -> str | None:
        with self.lock:
            self.keys.append(key)
            number = len(self.keys)
            seen = set(self.keys)
        if self.pair:
            if self.pair <= seen:
                self.paired.set()
            self.paired.wait(SAFETY_S)
        if number == self.hold_at:
            self.held.set()
            self.release.wait(SAFETY_S)
            return None  # the client was killed meanwhile
        return _lead_two(body)

    def count(self, key: str | None = None) -> int:
        with self.lock:
            return len(self.keys) if key is None else self.keys.count(key)


@pytest.fixture(scope="module")
def server() -> Iterator[Server]:
    state = Server()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
            key = self.headers.get("Authorization", "").removeprefix("Bearer ")
            text = state.answer(key, body)
            if text is None:
                return
            data = json.dumps(
                {"choices": [{"index": 0, "message": {"role": "assistant", "content": text}}]}
            ).encode()
            try:
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
            except OSError:
                pass  # the client was killed

        def log_message(self, format: str, *args: Any) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05})
    thread.daemon = True
    thread.start()
    host, port = httpd.server_address[:2]
    state.url = f"http://{host}:{port}/v1"
    yield state
    state.release.set()
    state.paired.set()
    httpd.shutdown()
    httpd.server_close()
    thread.join(timeout=10)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return mini_corpus(tmp_path_factory.mktemp("corpus") / "mini.jsonl", N_DOCS)


def _score(server: Server, corpus: Path, cache: Path, out: Path, key: str) -> subprocess.Popen:
    """`hss score` in a subprocess, summarizing through the loopback server."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k.lower() not in ("http_proxy", "https_proxy", "all_proxy") and k != "HSS_OPENAI_MODEL"
    }
    env |= {
        "HSS_RUN__CACHE_DIR": str(cache),
        "HSS_OPENAI_API_KEY": key,  # tells the server which run asked
        "HSS_GENERATE__TIMEOUT_S": str(SAFETY_S),  # a held request must not time out and retry
        "NO_PROXY": "127.0.0.1",
        "HF_HUB_OFFLINE": "1",
    }
    command = [
        sys.executable,
        "-m",
        "hss_gate",
        "score",
        "--model",
        f"openai:{server.url}",
        "--corpus",
        str(corpus),
        "-k",
        "1",
        "--seed",
        "13",
        "--out",
        str(out),
    ]
    return subprocess.Popen(
        command, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def _finish(proc: subprocess.Popen) -> None:
    _, stderr = proc.communicate(timeout=SAFETY_S)
    assert proc.returncode == 0, stderr[-3000:]


def _same_outputs(out: Path, reference: Path) -> None:
    for name in OUTPUTS:
        assert (out / name).read_bytes() == (reference / name).read_bytes(), name
    aggregates = [
        json.loads((d / "summary.json").read_text())["aggregates"] for d in (out, reference)
    ]
    assert aggregates[0] == aggregates[1]


def _entries(cache_dir: Path) -> dict[tuple[str, str], bytes]:
    db = sqlite3.connect(cache_dir / "cache.sqlite")
    try:
        assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        return {(ns, k): bytes(v) for ns, k, v in db.execute("SELECT * FROM entries")}
    finally:
        db.close()


@pytest.fixture(scope="module")
def reference(server: Server, corpus: Path, tmp_path_factory: pytest.TempPathFactory):
    """One uninterrupted run on a fresh cache: (out dir, cache dir, distinct summaries)."""
    base = tmp_path_factory.mktemp("reference")
    before = server.count()
    _finish(_score(server, corpus, base / "cache", base / "out", "reference"))
    cache = Cache(base / "cache")
    try:  # one request per distinct text (a perturbation may repeat another one's text)
        assert server.count() - before == cache.count("summaries") > 4
        return base / "out", base / "cache", cache.count("summaries")
    finally:
        cache.close()


# --- 1: SIGKILL midway, then resume ----------------------------------------------------------


@pytest.mark.integration
def test_killed_run_resumes_from_cache_to_identical_result(server, corpus, reference, tmp_path):
    cache, out = tmp_path / "cache", tmp_path / "out"
    server.held.clear()
    server.release.clear()
    # openai: generates one summary at a time in the background (generate.openai_concurrency 1),
    # each stored as it finishes: at the sixth request five summaries are committed
    server.hold_at = server.count() + 6
    proc = _score(server, corpus, cache, out, "killed")
    try:
        assert server.held.wait(SAFETY_S), "the run never reached its sixth summary"
        os.kill(proc.pid, signal.SIGKILL)
        proc.communicate(timeout=SAFETY_S)
    finally:
        server.hold_at = None
        server.release.set()
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == -signal.SIGKILL
    assert not (out / "documents.csv").exists()
    kept = Cache(cache)
    try:  # only whole, committed entries: the documents' perturbations and five summaries
        assert kept.count("perturbations") == N_DOCS
        assert kept.count("summaries") == 5
    finally:
        kept.close()

    before = server.count("resumed")
    _finish(_score(server, corpus, cache, out, "resumed"))

    assert server.count("resumed") - before == reference[2] - 5  # only the missing summaries
    _same_outputs(out, reference[0])


# --- 2: two runs on one cache at the same time -----------------------------------------------


@pytest.mark.integration
def test_concurrent_runs_share_one_cache_without_corrupting_it(server, corpus, reference, tmp_path):
    cache = tmp_path / "cache"
    server.paired.clear()
    server.pair = {"run-a", "run-b"}
    procs: list[subprocess.Popen] = []
    try:
        procs += [_score(server, corpus, cache, tmp_path / key, key) for key in sorted(server.pair)]
        for proc in procs:
            _finish(proc)
    finally:
        server.pair = set()
        server.paired.set()
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
    assert server.count("run-a") and server.count("run-b")  # both summarized, at the same time
    for key in ("run-a", "run-b"):
        _same_outputs(tmp_path / key, reference[0])

    shared, single = _entries(cache), _entries(reference[1])
    assert shared.keys() == single.keys()  # no entry lost or extra
    for (namespace, key), value in shared.items():
        if namespace == "summaries":
            assert value.decode("utf-8") == single[namespace, key].decode("utf-8")
        elif namespace in ("perturbations", "mentions", "verdicts"):
            assert json.loads(value) == json.loads(single[namespace, key])
        else:  # embeddings: float32 vectors of the embedder's width
            assert len(value) == len(single[namespace, key]) and len(value) % 4 == 0


def _hammer(directory: str, worker: int, start: Any, errors: Any) -> None:
    try:
        start.wait()
        cache = Cache(directory)  # every process opens (and may create) the file at once
        for r in range(30):
            cache.put_many("shared", {f"k{r}-{j}": f"v{r}-{j}".encode() * 40 for j in range(20)})
            cache.put_many("own", {f"w{worker}-{r}": bytes([worker]) * 1000})
            if len(cache.get_many("shared", [f"k{r}-{j}" for j in range(20)])) != 20:
                raise AssertionError("a committed entry was not visible")
        cache.close()
    except BaseException as exc:  # reported to the parent
        errors.put(f"{type(exc).__name__}: {exc}")
        raise


@pytest.mark.unit
def test_cache_survives_many_concurrent_writer_processes(tmp_path):
    context = multiprocessing.get_context("spawn")
    n = 4
    start, errors = context.Barrier(n), context.Queue()
    workers = [
        context.Process(target=_hammer, args=(str(tmp_path), i, start, errors)) for i in range(n)
    ]
    for w in workers:
        w.start()
    for w in workers:
        w.join(SAFETY_S)
    reported = [errors.get() for _ in range(errors.qsize())] if not errors.empty() else []
    assert reported == [] and all(w.exitcode == 0 for w in workers)
    entries = _entries(tmp_path)
    assert sum(ns == "shared" for ns, _ in entries) == 30 * 20
    assert sum(ns == "own" for ns, _ in entries) == n * 30
    for (ns, key), value in entries.items():
        if ns == "shared":
            assert value == f"v{key[1:]}".encode() * 40
        else:
            assert value == bytes([int(key[1 : key.index("-")])]) * 1000


# --- 3: the gate fails closed ----------------------------------------------------------------


@pytest.fixture(scope="module")
def gate_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("gate-cache")


@pytest.fixture()
def runner(monkeypatch, gate_cache, real_toolkit) -> CliRunner:
    """In-process CLI on a shared cache; the embedded models are loaded once per session."""
    monkeypatch.chdir(REPO)
    monkeypatch.setenv("HSS_RUN__CACHE_DIR", str(gate_cache))
    monkeypatch.delenv("HSS_DEBUG", raising=False)
    monkeypatch.setattr("hss_gate.scoring.toolkit.real_toolkit", lambda settings: real_toolkit)
    return CliRunner()


def _raise(exc: BaseException) -> Callable[..., Any]:
    def fail(*args: Any, **kwargs: Any) -> Any:
        raise exc

    return fail


def _fail_call(number: int, exc: BaseException) -> Callable[[pytest.MonkeyPatch], None]:
    """Scoring fails on its `number`-th call (1: the candidate, 2: production)."""

    def inject(monkeypatch: pytest.MonkeyPatch) -> None:
        import hss_gate.scoring.runner

        original, calls = hss_gate.scoring.runner.score_model, []

        def score_model(*args: Any, **kwargs: Any) -> Any:
            calls.append(1)
            if len(calls) == number:
                raise exc
            return original(*args, **kwargs)

        monkeypatch.setattr(hss_gate.scoring.runner, "score_model", score_model)

    return inject


def _patch(target: str, exc: BaseException) -> Callable[[pytest.MonkeyPatch], None]:
    return lambda monkeypatch: monkeypatch.setattr(target, _raise(exc))


GATE_FAULTS = {
    "score candidate": (_fail_call(1, ModelError("injected: candidate down")), "candidate down"),
    "score production": (_fail_call(2, RuntimeError("injected: segfault-ish")), "segfault-ish"),
    "interrupted": (_fail_call(2, KeyboardInterrupt()), "interrupted"),
    "gx checks": (
        _patch(
            "hss_gate.workflows.gate_looks.run_gate_checks", RuntimeError("injected: gx crashed")
        ),
        "gx crashed",
    ),
    "drift": (
        _patch("hss_gate.workflows.gate.score_drift", ValueError("injected: no drift")),
        "injected: no drift",
    ),
    "decide": (_patch("hss_gate.workflows.gate.gate_decision", KeyError("injected")), "KeyError"),
    "write score tables": (
        _patch("hss_gate.scoring.run_files.write_outputs", OSError(28, "No space left on device")),
        "No space left",
    ),
    "render decision.md": (
        _patch("hss_gate.decision.reports.decision_markdown", ValueError("injected: md")),
        "injected: md",
    ),
    "render decision.html": (
        _patch("hss_gate.decision.reports.decision_html", TypeError("injected: html")),
        "injected: html",
    ),
}


def _gate(runner: CliRunner, corpus: Path, out: Path):
    result = runner.invoke(
        app,
        [
            "gate",
            "--candidate",
            "extractive:lead-3",
            "--production",
            "extractive:lead-3",
            "--corpus",
            str(corpus),
            "-k",
            "1",
            "--out",
            str(out),
        ],
    )
    return result, json.loads((out / "decision.json").read_text())


@pytest.mark.integration
def test_gate_without_faults_decides(runner, corpus, tmp_path):
    """The control: the same gate decides (exit 0 or 1) when nothing breaks."""
    result, decision = _gate(runner, corpus, tmp_path)
    assert result.exit_code == 0, result.output
    assert decision["decision"] == "promote"


@pytest.mark.integration
@pytest.mark.parametrize("fault", list(GATE_FAULTS))
def test_gate_fails_closed_on_any_failing_step(runner, corpus, tmp_path, monkeypatch, fault):
    inject, message = GATE_FAULTS[fault]
    inject(monkeypatch)

    result, decision = _gate(runner, corpus, tmp_path)

    assert result.exit_code == 2, result.output
    assert decision["decision"] == "error"
    assert decision["reasons"][0].startswith("could not decide")
    assert message in decision["reasons"][0]
    assert decision["candidate"] == "extractive:lead-3"
    assert "Traceback" not in result.output
    if (tmp_path / "decision.md").exists():  # never a stale verdict beside the error
        assert "PROMOTE" not in (tmp_path / "decision.md").read_text()


# --- 4: the monitor keeps its samples and records the failed run -----------------------------


def _samples_file(path: Path, corpus: Path) -> Path:
    rows = []
    for i, line in enumerate(corpus.read_text(encoding="utf-8").splitlines()):
        doc = json.loads(line)
        rows.append(
            {
                "sample_id": f"s{i}",
                "document": doc["text"],
                "summary": " ".join(doc["text"].split(". ")[:2]) + ".",
                "model_id": "lead",
                "timestamp": f"2026-11-{i + 1:02d}T10:00:00Z",
                "category": doc["category"],
            }
        )
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _stored_samples(database: Path) -> list[tuple[Any, ...]]:
    db = sqlite3.connect(database)
    try:
        return db.execute("SELECT * FROM samples ORDER BY seq").fetchall()
    finally:
        db.close()


def _stored_runs(database: Path) -> list[dict[str, Any]]:
    db = sqlite3.connect(database)
    db.row_factory = sqlite3.Row
    try:
        return [dict(r) for r in db.execute("SELECT * FROM monitor_runs ORDER BY seq")]
    finally:
        db.close()


MONITOR_FAULTS = {
    "score": (_fail_call(1, ModelError("injected: model down")), "model down", True),
    "crash in scoring": (_fail_call(1, RuntimeError("injected: crash")), "crash", True),
    "drift": (
        _patch("hss_gate.workflows.monitor.score_drift", ValueError("injected: drift")),
        "injected: drift",
        True,
    ),
    "checks": (
        _patch("hss_gate.workflows.monitor.run_monitor_checks", RuntimeError("injected: gx")),
        "gx",
        True,
    ),
    "record the run": (
        _patch("hss_gate.monitoring.store.SampleStore.record_run", RuntimeError("injected: store")),
        "store",
        False,
    ),
    "render monitor.html": (
        _patch("hss_gate.decision.reports.monitor_html", TypeError("injected: html")),
        "html",
        True,  # recorded with its verdict, then marked failed
    ),
}


@pytest.fixture()
def store(runner, corpus, tmp_path) -> Path:
    database = tmp_path / "store.sqlite"
    ingest = runner.invoke(
        app,
        [
            "samples",
            "ingest",
            str(_samples_file(tmp_path / "s.jsonl", corpus)),
            "--samples",
            f"sqlite:///{database}",
        ],
    )
    assert ingest.exit_code == 0, ingest.output
    assert len(_stored_samples(database)) == N_DOCS
    return database


def _monitor(runner: CliRunner, database: Path, out: Path):
    result = runner.invoke(
        app,
        [
            "monitor",
            "--samples",
            f"sqlite:///{database}",
            "--model",
            "extractive:lead-3",
            "--out",
            str(out),
        ],
    )
    return result, json.loads((out / "monitor.json").read_text())


@pytest.mark.integration
def test_monitor_without_faults_records_a_verdict(runner, store, tmp_path):
    before = _stored_samples(store)
    result, report = _monitor(runner, store, tmp_path / "monitor")
    assert result.exit_code in (0, 1, 3), result.output  # 3: too few samples for two windows
    assert report["decision"] in ("healthy", "unhealthy", "insufficient_data")
    assert _stored_samples(store) == before
    assert [r["decision"] for r in _stored_runs(store)] == [report["decision"]]


@pytest.mark.integration
@pytest.mark.parametrize("fault", list(MONITOR_FAULTS))
def test_monitor_keeps_samples_and_records_failed_run(runner, store, tmp_path, monkeypatch, fault):
    inject, message, recorded_as_error = MONITOR_FAULTS[fault]
    before = _stored_samples(store)
    inject(monkeypatch)

    result, report = _monitor(runner, store, tmp_path / "monitor")

    assert result.exit_code == 2, result.output
    assert report["decision"] == "error"
    assert any(message in reason for reason in report["reasons"])
    assert "Traceback" not in result.output
    assert _stored_samples(store) == before  # every ingested sample kept, unchanged
    runs = _stored_runs(store)
    if recorded_as_error:
        assert [r["decision"] for r in runs] == ["error"]
        assert any(message in reason for reason in json.loads(runs[0]["details"])["reasons"])
    else:
        assert runs == []
