"""The flows deployed to a real Prefect server and run by a real process worker.

A `prefect server start` on a free port (its own PREFECT_HOME, SQLite), the `hss-process` work
pool, `prefect deploy --all` from this checkout (prefect.yaml), and a `prefect worker start` that
runs the flow runs in subprocesses, as flows/README.md tells a team to do. Each test creates a
flow run through the server's REST API and checks its final state, its verdict (monitor.json /
decision.json written by the flow run) and the artifact it published. The server's scheduler
service is off, so the hourly and daily schedules are registered (checked) but never fire into
this checkout.

Under CI=true a server or worker that cannot start fails the test; elsewhere it is skipped with
the reason.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from hss_gate.common.inputs import load_corpus
from tests.conftest import CORPUS, REPO, component_unavailable, free_port

pytestmark = pytest.mark.integration

DOC_IDS = ("business-simple-01", "finance-simple-01", "health-simple-01")
STARTUP_S = 180
RUN_TIMEOUT_S = 900
TRANSIENT_STATUS = frozenset({429, 502, 503})
TRANSIENT_RETRY_DELAYS_S = (1, 2, 4, 8, 16, 0)  # the last try is not retried


def _prefect(*args: str, env: dict[str, str], timeout: float = 300) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "prefect", *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    if done.returncode != 0:
        raise AssertionError(
            f"prefect {' '.join(args)} exited {done.returncode}:\n{done.stdout}\n{done.stderr}"
        )
    return done.stdout


def _start(args: list[str], env: dict[str, str], log: Path) -> subprocess.Popen:
    with log.open("w") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "prefect", *args],
            cwd=REPO,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group: teardown kills its children too
        )


def _stop(process: subprocess.Popen) -> None:
    for sig, wait in ((signal.SIGTERM, 20), (signal.SIGKILL, 10)):
        if process.poll() is not None:
            return
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            return
        try:
            process.wait(wait)
        except subprocess.TimeoutExpired:
            continue


def _wait_healthy(api: str, process: subprocess.Popen, log: Path) -> None:
    import httpx

    deadline = time.monotonic() + STARTUP_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            component_unavailable(
                f"prefect server exited {process.returncode}: {log.read_text()[-2000:]}"
            )
        try:
            if httpx.get(f"{api}/health", timeout=5).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(1)
    component_unavailable(
        f"prefect server not healthy after {STARTUP_S} s: {log.read_text()[-2000:]}"
    )


@pytest.fixture(scope="module")
def server(tmp_path_factory) -> Iterator[dict[str, str]]:
    """A Prefect server, the work pool, the deployments of prefect.yaml and a process worker;
    yields the environment that points at them."""
    root = tmp_path_factory.mktemp("prefect-server")
    port = free_port()
    api = f"http://127.0.0.1:{port}/api"
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_")} | {
        "PREFECT_HOME": str(root / "home"),
        "PREFECT_API_URL": api,
        "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
        "PREFECT_SERVER_SERVICES_SCHEDULER_ENABLED": "false",  # schedules registered, not fired
        "PREFECT_WORKER_QUERY_SECONDS": "2",
        "PREFECT_CLI_PROMPT": "false",
        "DO_NOT_TRACK": "1",
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "PYTHONPATH": str(REPO),
    }
    processes = []
    try:
        server_log = root / "server.log"
        srv = _start(
            ["server", "start", "--host", "127.0.0.1", "--port", str(port)], env, server_log
        )
        processes.append(srv)
        _wait_healthy(api, srv, server_log)
        _prefect("work-pool", "create", "hss-process", "--type", "process", env=env)
        _prefect("--no-prompt", "deploy", "--all", env=env)
        worker_log = root / "worker.log"
        processes.append(
            _start(["worker", "start", "--pool", "hss-process", "--limit", "1"], env, worker_log)
        )
        yield env | {"root": str(root), "worker_log": str(worker_log)}
    finally:
        for process in reversed(processes):
            _stop(process)


def _api(env: dict[str, str], method: str, path: str, body: dict | None = None) -> object:
    """One REST call; a transient answer (429, 502, 503: a SQLite server answers 503 while its
    database is locked by a busy flow run) is retried with backoff, as Prefect's own client does."""
    import httpx

    for delay in TRANSIENT_RETRY_DELAYS_S:
        response = httpx.request(method, env["PREFECT_API_URL"] + path, json=body, timeout=30)
        if response.status_code not in TRANSIENT_STATUS:
            break
        time.sleep(delay)
    response.raise_for_status()
    return response.json() if response.content else None


def _deployment(env: dict[str, str], flow: str, name: str) -> dict:
    return _api(env, "GET", f"/deployments/name/{flow}/{name}")  # type: ignore[return-value]


def _run(env: dict[str, str], deployment: dict, parameters: dict) -> dict:
    """Create a flow run of the deployment and wait for a terminal state."""
    run = _api(
        env, "POST", f"/deployments/{deployment['id']}/create_flow_run", {"parameters": parameters}
    )
    deadline = time.monotonic() + RUN_TIMEOUT_S
    while time.monotonic() < deadline:
        state = _api(env, "GET", f"/flow_runs/{run['id']}")  # type: ignore[index]
        if state["state_type"] in {"COMPLETED", "FAILED", "CRASHED", "CANCELLED"}:  # type: ignore[index]
            return state  # type: ignore[return-value]
        time.sleep(2)
    log = Path(env["worker_log"]).read_text()[-3000:]
    raise AssertionError(f"the flow run did not finish in {RUN_TIMEOUT_S} s; worker log:\n{log}")


def _artifact(env: dict[str, str], flow_run_id: str, key: str) -> dict:
    found = _api(
        env,
        "POST",
        "/artifacts/filter",
        {"artifacts": {"flow_run_id": {"any_": [flow_run_id]}, "key": {"any_": [key]}}},
    )
    assert found, f"no {key!r} artifact for flow run {flow_run_id}"
    return found[0]  # type: ignore[index]


def _documents() -> list:
    docs = {d.doc_id: d for d in load_corpus(CORPUS)}
    return [docs[i] for i in DOC_IDS]


def test_deployments_and_their_schedules_are_registered_as_prefect_yaml_says(server):
    declared = {
        d["name"]: d for d in yaml.safe_load((REPO / "prefect.yaml").read_text())["deployments"]
    }
    flows = {"monitor-hourly": "monitor", "monitor-daily": "monitor", "gate-on-demand": "gate"}
    assert set(declared) == set(flows)
    for name, flow in flows.items():
        deployment = _deployment(server, flow, name)
        assert deployment["work_pool_name"] == "hss-process"
        crons = sorted(
            (s["schedule"]["cron"], s["schedule"]["timezone"], s["active"])
            for s in deployment["schedules"]
        )
        expected = sorted(
            (s["cron"], s["timezone"], s["active"]) for s in declared[name].get("schedules", [])
        )
        assert crons == expected, name
        assert deployment["parameters"]["params"] == "params.yaml"
    assert _deployment(server, "monitor", "monitor-hourly")["parameters"]["served_only"] is True
    triggers = [t["name"] for d in declared.values() for t in d.get("triggers", [])]
    automations = [a["name"] for a in _api(server, "POST", "/automations/filter", {})]
    assert triggers and set(triggers) <= set(automations)


def test_hourly_monitor_deployment_runs_on_the_worker_and_gives_its_verdict(server, tmp_path):
    from datetime import UTC, datetime, timedelta

    from hss_gate.monitoring.store import Sample, SampleStore
    from hss_gate.text.sentences import split_sentences

    url = f"sqlite:///{tmp_path / 'samples.sqlite'}"
    start = datetime.now(UTC) - timedelta(hours=1)
    docs = _documents()
    with SampleStore(url) as store:  # the same faithful model id: two windows of its traffic
        store.ingest(
            Sample(
                sample_id=f"live-{i}",
                document=d.text,
                summary=" ".join(split_sentences(d.text)[:2]),
                model_id="prod-v1",
                timestamp=start + timedelta(minutes=i),
                category=d.category,
            )
            for i, d in enumerate(docs)
        )
    out = tmp_path / "monitor"
    parameters = {
        "samples": url,
        "out": str(out),
        "overrides": {
            "run__cache_dir": str(tmp_path / "cache"),
            "monitor__reference_window": 2,
            "monitor__sample_size": 1,
        },
    }
    run = _run(server, _deployment(server, "monitor", "monitor-hourly"), parameters)
    assert run["state_type"] == "COMPLETED", run["state"]
    verdict = json.loads((out / "monitor.json").read_text())
    assert verdict["kind"] == "served"
    assert verdict["decision"] == "healthy", verdict["reasons"]
    assert verdict["windows"]["status"] == "compared"
    assert verdict["windows"]["reference"]["n"] == 2
    assert verdict["windows"]["current"]["n"] == 1
    artifact = _artifact(server, run["id"], "hss-monitor")
    assert "HEALTHY" in artifact["data"]
    with SampleStore(url) as store:
        assert [r.run_id for r in store.runs()] == [verdict["run_id"]]


def test_gate_deployment_runs_on_the_worker_and_promotes_an_identical_candidate(server, tmp_path):
    from hss_gate.text.sentences import split_sentences

    docs = _documents()
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join(d.model_dump_json() + "\n" for d in docs), encoding="utf-8")
    summaries = tmp_path / "summaries.jsonl"
    summaries.write_text(
        "".join(
            json.dumps({"doc_id": d.doc_id, "summary": " ".join(split_sentences(d.text)[:2])})
            + "\n"
            for d in docs
        ),
        encoding="utf-8",
    )
    out = tmp_path / "gate"
    parameters = {
        "candidate": f"summaries:{summaries}",
        "production": f"summaries:{summaries}",
        "corpus": str(corpus),
        "out": str(out),
        "overrides": {"run__cache_dir": str(tmp_path / "cache")},
    }
    run = _run(server, _deployment(server, "gate", "gate-on-demand"), parameters)
    assert run["state_type"] == "COMPLETED", run["state"]
    decision = json.loads((out / "decision.json").read_text())
    assert decision["decision"] == "promote", decision["reasons"]
    assert decision["metrics"]["documents"] == len(docs)
    assert (out / "decision.html").is_file()
    artifact = _artifact(server, run["id"], "hss-gate-decision")
    assert "PROMOTE" in artifact["data"]
