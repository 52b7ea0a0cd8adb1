"""The baseline flow's scoring on a real Dask cluster with 1 and with 2 workers, side by side.

    PYTHONPATH=$PWD .venv/bin/python scripts/dask_speedup.py --limit 6 --model extractive:lead-3
    PYTHONPATH=$PWD .venv/bin/python scripts/dask_speedup.py --limit 4 \
        --model gguf:smollm2-135m-instruct

One Prefect API server for the whole script; then, for each configuration, a fresh
`dask scheduler` and N fresh `dask worker --nthreads 1` processes (so every configuration pays
its model loads), and `python -m flows.baseline --stage scores --dask-address ... --chunk-size 1`
on the first --limit reference documents with a cold cache of its own. Also the same command
without Dask (the flow in one process, GGUF with `generate.workers` copies = cores) as the
reference. Wall time is measured from outside the flow's process; the load average before and
after each run says whether the machine was idle. Prints one JSON line per run and a table.
The processes are those of tests/integration/test_dask_cluster.py, stopped (process groups)
at exit. BENCHMARKS.md, "Dask", has the figures.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tests.integration.test_dask_cluster import REPO, Cluster, Processes, start_prefect_server


def run(argv: list[str], env: dict[str, str], log: Path) -> tuple[float, int]:
    started = time.perf_counter()
    with open(log, "wb") as sink:
        code = subprocess.run(argv, cwd=REPO, env=env, stdout=sink, stderr=subprocess.STDOUT)
    return time.perf_counter() - started, code.returncode


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=6, help="reference documents")
    parser.add_argument("--model", default="extractive:lead-3")
    parser.add_argument("--workers", default="local,1,2", help="configurations, in order")
    parser.add_argument("--keep", action="store_true", help="keep the temp directory")
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="hss-dask-speedup-"))
    server = Processes(root)
    rows = []
    try:
        url = start_prefect_server(server, root)
        for config in args.workers.split(","):
            out = root / f"run-{config}"
            out.mkdir()
            cluster = Cluster(out, url)
            argv = [sys.executable, "-m", "flows.baseline", "--stage", "scores"]
            argv += ["--limit", str(args.limit), "--model", args.model, "--out", str(out / "o")]
            env = dict(cluster.env, HSS_RUN__CACHE_DIR=str(out / "cache"))
            start_s = 0.0
            try:
                if config != "local":
                    started = time.perf_counter()
                    cluster.start(int(config))
                    start_s = time.perf_counter() - started
                    argv += ["--dask-address", cluster.address, "--chunk-size", "1"]
                else:
                    env.pop("HSS_GENERATE__WORKERS")  # one process: the configured copies
                load_before = os.getloadavg()[0]
                wall, code = run(argv, env, out / "flow.log")
                load_after = os.getloadavg()[0]
            finally:
                cluster.stop()
            summary = json.loads((out / "o" / "reference" / "summary.json").read_text())
            row = {
                "workers": config,
                "documents": args.limit,
                "model": args.model,
                "exit": code,
                "flow_wall_s": round(wall, 1),
                "scoring_wall_s": summary.get("wall_time_s"),
                "cluster_start_s": round(start_s, 1),
                "chunks": summary.get("chunks"),
                "load_1min_before": round(load_before, 2),
                "load_1min_after": round(load_after, 2),
            }
            rows.append(row)
            print(json.dumps(row), flush=True)
    finally:
        server.stop()
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)
    print(f"\n{'workers':>8} {'flow s':>8} {'scoring s':>10} {'load before/after':>18}")
    for r in rows:
        loads = f"{r['load_1min_before']}/{r['load_1min_after']}"
        print(f"{r['workers']:>8} {r['flow_wall_s']:>8} {r['scoring_wall_s']!s:>10} {loads:>18}")
    one = next((r for r in rows if r["workers"] == "1"), None)
    two = next((r for r in rows if r["workers"] == "2"), None)
    if one and two:
        print(f"speed-up of 2 workers over 1: {one['flow_wall_s'] / two['flow_wall_s']:.2f}x")


if __name__ == "__main__":
    main()
