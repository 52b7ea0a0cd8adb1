"""Stress the cache's creation: N processes open one fresh cache at the same moment, R rounds.

Prints how many opens failed (e.g. "database is locked"). Usage:
    python scripts/cache_open_stress.py [--processes 8] [--rounds 40]
"""

from __future__ import annotations

import argparse
import multiprocessing
import tempfile
from typing import Any

from hss_gate.common.cache import Cache


def _open_and_write(directory: str, start: Any, errors: Any) -> None:
    try:
        start.wait()
        cache = Cache(directory)
        cache.put_many("stress", {"key": b"value"})
        cache.close()
    except Exception as exc:  # counted by the parent
        errors.put(f"{type(exc).__name__}: {exc}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--processes", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=40)
    args = parser.parse_args()
    context = multiprocessing.get_context("fork")
    failures: list[str] = []
    for _ in range(args.rounds):
        with tempfile.TemporaryDirectory() as directory:
            start, errors = context.Barrier(args.processes), context.Queue()
            workers = [
                context.Process(target=_open_and_write, args=(directory, start, errors))
                for _ in range(args.processes)
            ]
            for worker in workers:
                worker.start()
            for worker in workers:
                worker.join()
            while not errors.empty():
                failures.append(errors.get())
    total = args.processes * args.rounds
    print(f"{len(failures)} of {total} concurrent opens failed")
    for message in sorted(set(failures)):
        print(f"  {message}")


if __name__ == "__main__":
    main()
