"""The flows on a real Dask cluster: a `dask scheduler` and two `dask worker` processes.

flows/README.md tells a team that outgrows one machine to start `dask scheduler`, `dask worker`
and `python -m flows.baseline --dask-address ...`. These tests do exactly that on localhost,
each process in its own process group (killed, group and children, at teardown, also when a
test fails), on free ports:

- a Prefect API server (`prefect server start`, SQLite in a temp PREFECT_HOME): the workers'
  tasks report to it, as the README requires (without it each worker process would start its
  own temporary server);
- a `dask scheduler` whose address is read from its `--scheduler-file`;
- two `dask worker --nthreads 1` processes with this checkout on PYTHONPATH.

The flows run as the README's commands (`python -m flows.baseline|gate`), once locally and
once against `--dask-address` with `--chunk-size 1` (2 documents: a chunk per worker), each
with its own cold cache so that the Dask run really scores on the workers. Their output tables
are compared **byte for byte** (documents.csv, perturbations.csv, summaries.jsonl,
edits.jsonl, production_scores.csv, 6 decimals), and where the bytes differ, cell for cell with
floats within one 6th-decimal unit (a checker value computed from a chunk's SBERT batch can
round the other way: 0.164017 vs 0.164016 in consistency_drop_mean on 2026-12-02). The JSON outputs
are compared value for value, without the fields that describe the run rather than its
results (RUN_FIELDS; the run's directories replaced), and with floats equal within FLOAT_RTOL
and FLOAT_ATOL (why: there).

A killed worker: the third test SIGKILLs one worker's whole process group (nanny and worker,
so nothing restarts it) while it holds a chunk, and checks that the run completes on the other
worker with tables equal to the local run's and each document exactly once.

When the processes cannot start (no `dask` or `prefect` command, a start that fails or times out):
the tests are skipped with the reason, except under CI=true, where that fails them (.ci/run).
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest

from tests.conftest import REPO, component_unavailable, free_port

pytestmark = pytest.mark.integration

BIN = Path(sys.executable).parent
MODEL = "extractive:lead-3"
LIMIT = 2
START_TIMEOUT_S = 120
RUN_TIMEOUT_S = 600

TABLES = ("documents.csv", "perturbations.csv", "summaries.jsonl", "edits.jsonl")
"""Score tables of a scoring run's directory, compared byte for byte (else cell for cell)."""

RUN_FIELDS = {
    *("created", "wall_time_s", "chunks", "settings_digest"),
    *("summaries_generated", "candidate_summaries_generated"),
}
"""JSON fields that describe the run (when, how long, how split), not its result.
`summaries_generated` is unknown (None) with several chunks (flows/scoring.py).
`settings_digest` hashes the settings with their paths (cache, outputs), which differ by
construction; the settings themselves are compared, paths replaced, in summary.json."""

FLOAT_RTOL = 1e-6
"""JSON floats are compared to the precision the tables store (6 decimals): a SBERT batch of
one chunk's summaries is padded differently from a batch of all documents' summaries, so the
float32 embeddings (and the unrounded statistics over them, e.g. decision.json's
signals.hss_raw) differ around the 8th digit, while every table is byte-identical."""
FLOAT_ATOL = 1.5e-6
"""A JSON float already rounded to 6 decimals (e.g. a CI bound, 0.1640165 +- 1e-8) may land one
unit of the 6th decimal apart on the two routes: 1e-6 plus the float's own representation error
failed once in a fresh-clone CI (0.164017 vs 0.164016), so one unit and a half is allowed."""


def base_env() -> dict[str, str]:
    env = dict(os.environ)
    pythonpath = [str(REPO), *filter(None, env.get("PYTHONPATH", "").split(os.pathsep))]
    env.update(
        PYTHONPATH=os.pathsep.join(dict.fromkeys(pythonpath)),
        DO_NOT_TRACK="1",
        PREFECT_SERVER_ANALYTICS_ENABLED="false",
        HF_HUB_OFFLINE="1",
        TRANSFORMERS_OFFLINE="1",
        TOKENIZERS_PARALLELISM="false",
        HSS_GENERATE__WORKERS="1",  # a chunk per worker, one llama.cpp copy each (GGUF models)
    )
    env.pop("PREFECT_API_URL", None)
    return env


class Processes:
    """Long-running processes, each the leader of its own process group; `stop` ends the groups
    (SIGTERM, then SIGKILL) and waits until no member is left."""

    def __init__(self, logs: Path) -> None:
        self.logs = logs
        self.procs: dict[str, subprocess.Popen] = {}

    def start(self, name: str, argv: list[str], env: dict[str, str]) -> subprocess.Popen:
        log = open(self.logs / f"{name}.log", "wb")  # noqa: SIM115 (closed with the process)
        try:
            proc = subprocess.Popen(
                argv,
                cwd=REPO,
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        finally:
            log.close()
        self.procs[name] = proc
        return proc

    def log(self, name: str) -> str:
        path = self.logs / f"{name}.log"
        return path.read_text(errors="replace")[-3000:] if path.exists() else ""

    @staticmethod
    def _group_alive(pgid: int) -> bool:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True

    @staticmethod
    def _signal(pgid: int, sig: int) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pgid, sig)

    def kill(self, name: str) -> None:
        """SIGKILL the whole group at once: the process and every child, no clean-up."""
        self._signal(self.procs[name].pid, signal.SIGKILL)
        self.procs[name].wait(timeout=30)

    def stop(self) -> list[str]:
        """End every group; returns the names of groups that survived SIGKILL (should be none)."""
        for proc in self.procs.values():
            self._signal(proc.pid, signal.SIGTERM)
        deadline = time.monotonic() + 5
        alive = list(self.procs.values())
        while alive and time.monotonic() < deadline:
            time.sleep(0.2)
            alive = [p for p in alive if self._group_alive(p.pid)]
        for proc in alive:
            self._signal(proc.pid, signal.SIGKILL)
        for proc in self.procs.values():
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=10)
        time.sleep(0.5)
        return [name for name, p in self.procs.items() if self._group_alive(p.pid)]


def wait_for(what: str, ready, proc: subprocess.Popen, procs: Processes, name: str):
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        value = ready()
        if value:
            return value
        if proc.poll() is not None:
            component_unavailable(
                f"{what} exited with {proc.returncode} on start:\n{procs.log(name)}"
            )
        time.sleep(0.3)
    component_unavailable(f"{what} did not start within {START_TIMEOUT_S} s:\n{procs.log(name)}")


def start_prefect_server(procs: Processes, root: Path) -> str:
    """`prefect server start` on a free port, SQLite in root/home, no UI; its API URL."""
    prefect = BIN / "prefect"
    if not os.access(prefect, os.X_OK):
        component_unavailable(f"{prefect} not found: prefect is not installed in this environment")
    port = free_port()
    env = base_env() | {"PREFECT_HOME": str(root / "home"), "PREFECT_UI_ENABLED": "false"}
    argv = [str(prefect), "server", "start", "--host", "127.0.0.1", "--port", str(port)]
    proc = procs.start("prefect-server", argv, env)
    url = f"http://127.0.0.1:{port}/api"

    def healthy() -> bool:
        try:
            with urllib.request.urlopen(f"{url}/health", timeout=2) as response:
                return response.status == 200
        except OSError:
            return False

    wait_for("prefect server", healthy, proc, procs, "prefect-server")
    return url


@pytest.fixture(scope="module")
def prefect_api(tmp_path_factory) -> Iterator[str]:
    """A Prefect API server for the module; its URL."""
    root = tmp_path_factory.mktemp("prefect")
    procs = Processes(root)
    try:
        yield start_prefect_server(procs, root)
    finally:
        assert procs.stop() == [], "a Prefect server process outlived SIGKILL"


class Cluster:
    """A `dask scheduler` and `dask worker` processes (w1, w2, ...) on localhost."""

    def __init__(self, root: Path, prefect_url: str) -> None:
        self.root = root
        self.procs = Processes(root)
        self.env = base_env() | {
            "PREFECT_API_URL": prefect_url,
            "PREFECT_HOME": str(root / "prefect-home"),
        }
        self.scheduler_file = root / "scheduler.json"
        self.address = ""

    def start(self, workers: int = 2) -> None:
        if not os.access(BIN / "dask", os.X_OK):
            component_unavailable(f"{BIN / 'dask'} not found: distributed is not installed here")
        argv = [
            *(str(BIN / "dask"), "scheduler", "--host", "127.0.0.1", "--port", "0"),
            *("--no-dashboard", "--scheduler-file", str(self.scheduler_file)),
        ]
        proc = self.procs.start("scheduler", argv, self.env)

        def address() -> str:
            try:
                return json.loads(self.scheduler_file.read_text())["address"]
            except (OSError, ValueError, KeyError):
                return ""

        self.address = wait_for("dask scheduler", address, proc, self.procs, "scheduler")
        for i in range(1, workers + 1):
            self.add_worker(f"w{i}")
        self.wait_for_workers(workers)

    def add_worker(self, name: str) -> None:
        """`dask worker` as the README starts it: one thread, this checkout on PYTHONPATH."""
        argv = [
            *(str(BIN / "dask"), "worker", "--scheduler-file", str(self.scheduler_file)),
            *("--nworkers", "1", "--nthreads", "1", "--name", name, "--no-dashboard"),
            *("--local-directory", str(self.root / name)),
        ]
        self.procs.start(name, argv, self.env)

    def wait_for_workers(self, n: int) -> None:
        from distributed import Client

        with Client(self.address, timeout=30) as client:
            try:
                client.wait_for_workers(n, timeout=START_TIMEOUT_S)
            except TimeoutError:
                logs = "\n".join(self.procs.log(name) for name in self.procs.procs)
                component_unavailable(
                    f"{n} dask workers did not join in {START_TIMEOUT_S} s:\n{logs}"
                )

    def stop(self) -> list[str]:
        return self.procs.stop()


def flow_env(cluster: Cluster, cache: Path, normalization: Path | None = None) -> dict[str, str]:
    """A flow's environment: the cluster's Prefect API, a cold cache of its own, cheap
    statistics, and (baseline) the normalization constants written beside the outputs."""
    env = dict(cluster.env)
    env.update(HSS_RUN__CACHE_DIR=str(cache), HSS_SCORE__BOOTSTRAP_RESAMPLES="200")
    if normalization is not None:
        env["HSS_SCORE__NORMALIZATION"] = str(normalization / "normalization.json")
    return env


def run_flow(argv: list[str], env: dict[str, str], ok=(0,)) -> subprocess.CompletedProcess:
    done = subprocess.run(
        argv, cwd=REPO, env=env, capture_output=True, text=True, timeout=RUN_TIMEOUT_S
    )
    assert done.returncode in ok, f"{argv} exited {done.returncode}:\n{done.stderr[-4000:]}"
    return done


def baseline(cluster: Cluster, out: Path, *extra: str, dask: bool) -> list[str]:
    argv = [sys.executable, "-m", "flows.baseline", "--limit", str(LIMIT), "--model", MODEL]
    argv += ["--out", str(out), *extra]
    if dask:
        argv += ["--dask-address", cluster.address, "--chunk-size", "1"]
    return argv


@pytest.fixture(scope="module")
def cluster(tmp_path_factory, prefect_api, real_toolkit) -> Iterator[Cluster]:
    """A scheduler and two workers for the module; the killed-worker test, last, leaves one.
    `real_toolkit` skips the module without the embedded models (as other integration tests)."""
    cluster = Cluster(tmp_path_factory.mktemp("cluster"), prefect_api)
    try:
        cluster.start()
        yield cluster
    finally:
        assert cluster.stop() == [], "a Dask process outlived SIGKILL"


@pytest.fixture(scope="module")
def local_baseline(cluster, tmp_path_factory) -> Path:
    """The baseline flow run locally (no Dask): what the cluster's runs must equal."""
    out = tmp_path_factory.mktemp("local-baseline")
    run_flow(baseline(cluster, out, dask=False), flow_env(cluster, out / "cache", out))
    return out


def comparable(path: Path, run: Path, cache: str):
    """A JSON output without the fields that describe the run, its directories made equal."""
    text = path.read_text()
    for directory, placeholder in ((cache, "<cache>"), (str(run), "<run>")):
        if directory:
            text = text.replace(json.dumps(directory)[1:-1], placeholder)

    def strip(value):
        if isinstance(value, dict):
            return {k: strip(v) for k, v in value.items() if k not in RUN_FIELDS}
        if isinstance(value, list):
            return [strip(v) for v in value]
        return value

    return strip(json.loads(text))


def assert_same_outputs(local: Path, dask: Path, tables, jsons, caches=("", "")) -> None:
    """Tables byte for byte; JSON value for value (see the module's docstring)."""
    for name in tables:
        ours, theirs = (dask / name).read_bytes(), (local / name).read_bytes()
        if ours != theirs:  # only a 6th-decimal rounding of the same value may differ
            assert table_differences(dask / name, local / name) == [], f"{name} differs"
    local_root, dask_root = local, dask
    while local_root.name == dask_root.name:  # the run directories: where the paths diverge
        local_root, dask_root = local_root.parent, dask_root.parent
    for name in jsons:
        ours = comparable(dask / name, dask_root, caches[1])
        theirs = comparable(local / name, local_root, caches[0])
        assert differences(ours, theirs) == [], f"{name} differs"


def table_differences(ours: Path, theirs: Path) -> list[str]:
    """Where two tables differ: cell for cell, floats within FLOAT_RTOL / FLOAT_ATOL (a value
    the checker computes from a chunk's SBERT batch can round to the neighbouring 6th decimal)."""
    if ours.suffix == ".jsonl":
        a, b = (p.read_text().splitlines() for p in (ours, theirs))
        if len(a) != len(b):
            return [f"{len(a)} lines (Dask) != {len(b)} (local)"]
        return [
            d
            for i, (x, y) in enumerate(zip(a, b, strict=True))
            for d in differences(json.loads(x), json.loads(y), f"[{i}]")
        ]
    a, b = (pd.read_csv(p, keep_default_na=False) for p in (ours, theirs))
    if list(a.columns) != list(b.columns) or a.shape != b.shape:
        return [f"columns or shape differ: {a.shape} (Dask) != {b.shape} (local)"]
    return differences(a.to_dict("records"), b.to_dict("records"))


def differences(ours, theirs, where: str = "") -> list[str]:
    """Where two JSON values differ: exactly, except floats within FLOAT_RTOL / FLOAT_ATOL."""
    if isinstance(ours, dict) and isinstance(theirs, dict):
        keys = dict.fromkeys([*theirs, *ours])
        return [d for k in keys for d in differences(ours.get(k), theirs.get(k), f"{where}.{k}")]
    if isinstance(ours, list) and isinstance(theirs, list) and len(ours) == len(theirs):
        return [
            d
            for i, (a, b) in enumerate(zip(ours, theirs, strict=True))
            for d in differences(a, b, f"{where}[{i}]")
        ]
    if isinstance(ours, float) and isinstance(theirs, float):
        same = math.isclose(ours, theirs, rel_tol=FLOAT_RTOL, abs_tol=FLOAT_ATOL)
    else:
        same = ours == theirs and type(ours) is type(theirs)
    return [] if same else [f"{where}: {ours!r} (Dask) != {theirs!r} (local)"]


def assert_each_document_once(run: Path) -> None:
    documents = pd.read_csv(run / "documents.csv")
    assert documents["doc_id"].is_unique and len(documents) == LIMIT
    perturbations = pd.read_csv(run / "perturbations.csv")
    assert not perturbations.duplicated().any()
    assert set(perturbations["doc_id"]) == set(documents["doc_id"])
    lines = (run / "summaries.jsonl").read_text().splitlines()
    assert len(lines) == len(set(lines))


def test_baseline_flow_on_the_cluster_equals_the_local_run(cluster, local_baseline, tmp_path):
    out = tmp_path / "dask"
    run_flow(baseline(cluster, out, dask=True), flow_env(cluster, out / "cache", out))
    summary = json.loads((out / "reference" / "summary.json").read_text())
    assert summary["chunks"] == LIMIT  # really fanned out: one chunk per document
    local = local_baseline
    assert_same_outputs(local / "reference", out / "reference", TABLES, ["summary.json"])
    assert_same_outputs(
        local, out, ["production_scores.csv"], ["normalization.json", "metrics.json"]
    )
    assert_each_document_once(out / "reference")


def test_gate_flow_on_the_cluster_equals_the_local_run(cluster, tmp_path):
    outputs = {}
    for mode in ("local", "dask"):
        out = tmp_path / mode
        argv = [sys.executable, "-m", "flows.gate", "--limit", str(LIMIT), "--out", str(out)]
        argv += ["--candidate", "fake:unstable", "--production", MODEL]
        if mode == "dask":
            argv += ["--dask-address", cluster.address, "--chunk-size", "1"]
        # fake:unstable invents numbers, so the gate blocks it (exit 1): a decision either way
        run_flow(argv, flow_env(cluster, tmp_path / f"cache-{mode}"), ok=(1,))
        outputs[mode] = out
    local, dask = outputs["local"], outputs["dask"]
    assert json.loads((dask / "decision.json").read_text())["decision"] == "block"
    caches = (str(tmp_path / "cache-local"), str(tmp_path / "cache-dask"))
    assert_same_outputs(local, dask, [], ["decision.json", "drift.json"], caches)
    for role in ("candidate", "production"):
        assert json.loads((dask / role / "summary.json").read_text())["chunks"] == LIMIT
        assert_same_outputs(local / role, dask / role, TABLES, ["summary.json"], caches)
        assert_each_document_once(dask / role)


def test_a_worker_killed_mid_run_is_survived(cluster, local_baseline, tmp_path):
    """SIGKILL a worker's process group (nanny and worker: nothing restarts it) while it holds
    a chunk: Dask gives the chunk to the other worker; the run completes with the local run's
    tables, each document once."""
    from distributed import Client

    cluster.wait_for_workers(2)
    out = tmp_path / "dask"
    argv = baseline(cluster, out, "--stage", "scores", dask=True)
    log = tmp_path / "dask-flow.log"
    with open(log, "wb") as sink:
        flow = subprocess.Popen(
            argv,
            cwd=REPO,
            env=flow_env(cluster, out / "cache", out),
            stdout=sink,
            stderr=subprocess.STDOUT,
        )
    killed = None
    try:
        with Client(cluster.address, timeout=30) as client:
            names = {a: w["name"] for a, w in client.scheduler_info()["workers"].items()}
            deadline = time.monotonic() + RUN_TIMEOUT_S
            while killed is None and time.monotonic() < deadline and flow.poll() is None:
                for address, keys in client.processing().items():
                    if any("score_chunk" in str(key) for key in keys):
                        killed = names[address]
                        break
                else:
                    time.sleep(0.05)
            assert killed is not None, "no worker ever held a score_chunk task"
            cluster.procs.kill(killed)
            code = flow.wait(timeout=RUN_TIMEOUT_S)
            survivors = [w["name"] for w in client.scheduler_info()["workers"].values()]
    finally:
        if flow.poll() is None:
            flow.kill()
            flow.wait()
    assert code == 0, log.read_text(errors="replace")[-4000:]
    assert killed not in survivors and len(survivors) == 1
    summary = json.loads((out / "reference" / "summary.json").read_text())
    assert summary["chunks"] == LIMIT
    local = local_baseline / "reference"
    assert_same_outputs(local, out / "reference", TABLES, ["summary.json"])
    assert_each_document_once(out / "reference")
