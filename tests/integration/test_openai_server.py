"""The openai: backend against a real OpenAI-compatible server: llama.cpp's HTTP server (the one
built into the xllamacpp wheel, started by scripts/serve_gguf.py in its own process) serving
the embedded SmolLM2 on 127.0.0.1, gated against production.

Marked slow (a real GGUF model; `make test` and CI run it). Outside CI a server that cannot
start (SmolLM2 or the production model not installed, no xllamacpp, no free port) skips these
tests with the reason; under CI=true it fails them, like PostgreSQL and Chromium in .ci/run.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import yaml
from typer.testing import CliRunner

from hss_gate.cli import app
from hss_gate.common.inputs import load_corpus
from hss_gate.models import model_store
from hss_gate.scoring.stored_run import load_stored_run
from hss_gate.settings import GenerateSettings, load_settings
from tests.conftest import REPO, component_unavailable

pytestmark = pytest.mark.slow

# the candidate's own token budget: shorter summaries keep the test cheap (prefill dominates);
# production keeps its own settings, so its summaries are restored from the baseline
MAX_NEW_TOKENS = 48
START_TIMEOUT_S = 120.0


def first_line(proc: subprocess.Popen[str], timeout: float) -> str:
    """The process's first stdout line, or '' when it exits or the timeout passes first."""
    line: list[str] = []
    reader = threading.Thread(target=lambda: line.append(proc.stdout.readline()), daemon=True)
    reader.start()
    reader.join(timeout)
    return line[0] if line else ""


@pytest.fixture(scope="module")
def llama_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A llama.cpp server with one parallel slot serving SmolLM2: its /v1 base URL. Stopped
    at the end of the module, whatever the tests did."""
    for name in ("smollm2-135m-instruct", "qwen2.5-coder-0.5b-instruct"):
        if not model_store.is_installed(model_store.resolve_name(name)):
            component_unavailable(f"{name} is not installed (hss models install)")
    log = tmp_path_factory.mktemp("llama-server") / "server.log"
    command = [sys.executable, "scripts/serve_gguf.py", "smollm2", "--parallel", "1"]
    with log.open("w") as err:
        proc = subprocess.Popen(
            command, cwd=REPO, stdout=subprocess.PIPE, stderr=err, text=True, env=_env()
        )
    try:
        line = first_line(proc, START_TIMEOUT_S)
        try:
            url = json.loads(line)["url"]
        except (ValueError, KeyError):
            lines = [x for x in log.read_text(errors="replace").splitlines() if x.strip()]
            component_unavailable(
                f"llama.cpp server did not start: {' | '.join(lines[-2:]) or line}"
            )
        _wait_healthy(url, proc)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=15)


def _env() -> dict[str, str]:
    """The environment of the server and the gate: offline, no proxy for the loopback."""
    env = {k: v for k, v in os.environ.items() if k.lower() not in ("http_proxy", "all_proxy")}
    env.update({"HF_HUB_OFFLINE": "1", "NO_PROXY": "127.0.0.1,localhost"})
    env.pop("HSS_OPENAI_API_KEY", None)
    return env


def _wait_healthy(url: str, proc: subprocess.Popen[str]) -> None:
    """Until GET /health answers 200 (the model is loaded)."""
    health = url.removesuffix("/v1") + "/health"
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            if httpx.get(health, timeout=5).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.2)
    component_unavailable(
        f"llama.cpp server at {url} never became healthy (exit code {proc.poll()})"
    )


@pytest.fixture(scope="module")
def gate_run(llama_server: str, tmp_path_factory: pytest.TempPathFactory) -> tuple[int, Path]:
    """`hss gate --candidate-config` (uri openai:<server>, its own token budget) on 2
    documents against the production model, with an empty cache: the exit code and the out
    folder."""
    root = tmp_path_factory.mktemp("gate-openai")
    config = root / "candidate.yaml"
    config.write_text(
        yaml.safe_dump(
            {"uri": f"openai:{llama_server}", "generate": {"max_new_tokens": MAX_NEW_TOKENS}}
        )
    )
    out = root / "gate"
    env = {**_env(), "HSS_RUN__CACHE_DIR": str(root / "cache")}
    previous = os.getcwd()
    os.chdir(REPO)
    try:
        result = CliRunner().invoke(
            app,
            ["gate", "--candidate-config", str(config), "--limit", "2", "--out", str(out)],
            env=env,
        )
    finally:
        os.chdir(previous)
    assert result.exit_code in (0, 1), result.output
    return result.exit_code, out


def test_gate_decides_an_openai_candidate_served_by_llama_cpp(gate_run, llama_server) -> None:
    code, out = gate_run
    decision = json.loads((out / "decision.json").read_text())
    assert decision["decision"] == ("promote" if code == 0 else "block")
    assert decision["candidate"] == f"openai:{llama_server}"
    metrics = decision["metrics"]
    assert metrics["sequential"]["documents_used"] == 2
    # every candidate summary came from the server (2 documents x (original + 3 bands x k=1));
    # production's were restored from the versioned baseline, none generated
    assert metrics["production"]["candidate_summaries_generated"] == 8
    assert metrics["production"]["summaries_generated"] == 0
    run = load_stored_run(out / "candidate")
    assert run.fingerprint.startswith(f"openai:{llama_server}:default:")
    assert len(run.summaries) == 8 and all(s.strip() for s in run.summaries.values())


def test_one_slot_serves_the_summaries_of_the_gguf_backend(gate_run) -> None:
    """At one slot, greedy, with the same engine build, threads, context and no prompt cache,
    the server's summaries are byte for byte the in-process gguf: backend's. Checked on both
    originals and one perturbed text (each in-process summary costs a prefill)."""
    from hss_gate.models.summarizers.gguf import GgufSummarizer

    _, out = gate_run
    run = load_stored_run(out / "candidate")
    generate = GenerateSettings(**run.meta["settings"]["generate"])
    assert generate.max_new_tokens == MAX_NEW_TOKENS and generate.parallel == 1
    settings = load_settings(REPO / "params.yaml")
    docs = load_corpus(REPO / settings.run.corpus, 2)
    texts = {key: text for doc in docs for key, text in run.texts(doc).items()}
    keys = [(docs[0].doc_id, "base", 0), (docs[1].doc_id, "base", 0), (docs[0].doc_id, "high", 0)]
    local = GgufSummarizer("smollm2-135m-instruct", generate, settings.run.models_dir)
    assert local.threads == 1  # as the server was started (params.yaml generate.threads)
    assert local.summarize([texts[k] for k in keys]) == [run.summaries[k] for k in keys]
