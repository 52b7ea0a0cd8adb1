"""Throughput of `openai:` against llama.cpp's HTTP server at 1 and N parallel slots, side by
side with the in-process `gguf:` engine, in one run on the same documents and settings.

    .venv/bin/python scripts/openai_server_speed.py smollm2 --docs 4 --servers 1x1,2x1,2x2,4x2

Configurations, each summarizing the first --docs reference documents (the project's chat
prompt, greedy, params.yaml generate settings; summarizers called directly, no cache):
- gguf: workers=1 and gguf: workers=W (W in-process model copies, `threads` each: the default
  on this machine is cores / threads);
- openai: against scripts/serve_gguf.py's server (the same xllamacpp build, no prompt cache)
  with S parallel slots, T threads and generate.openai_concurrency=S, for each SxT in
  --servers. The server runs in this process (its own C++ HTTP threads), so the CPU figures
  cover it; the requests go over loopback HTTP as from any client.
One line per configuration: wall seconds, summaries/s, speed-up over gguf: workers=1, how many
summaries equal gguf:'s (bit-identical at one slot with gguf:'s threads; with several slots
llama.cpp batches the slots together and greedy ties may break differently, and another thread
count changes the reductions, so those are not expected to), the CPU seconds, and the CPU share
the process got (cpu seconds / wall seconds / cores it could use: below ~0.9 the machine was busy
and the wall figures are not the engine's; the CPU seconds are then the steadier figure).
BENCHMARKS.md, "OpenAI-compatible server", has them.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import time
from collections.abc import Callable

from serve_gguf import start  # scripts/serve_gguf.py (this folder is on sys.path)

from hss_gate.common.inputs import load_corpus
from hss_gate.models.summarizers.gguf import GgufSummarizer, engine_build
from hss_gate.models.summarizers.openai import OpenAISummarizer
from hss_gate.settings import GenerateSettings, load_settings


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def timed(run: Callable[[], list[str]]) -> tuple[list[str], float, float]:
    """The summaries, the wall seconds and the CPU seconds of one configuration."""
    cpu, wall = cpu_seconds(), time.perf_counter()
    out = run()
    return out, time.perf_counter() - wall, cpu_seconds() - cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model", nargs="?", default="smollm2", help="embedded name or .gguf")
    parser.add_argument("--docs", type=int, default=4, help="the first N reference documents")
    parser.add_argument(
        "--servers", default="1x1,2x1,2x2,4x2", help="server configurations: SLOTSxTHREADS,..."
    )
    parser.add_argument("--workers", type=int, help="in-process copies (default cores/threads)")
    parser.add_argument("--max-tokens", type=int, help="default: generate.max_new_tokens")
    parser.add_argument("--params", default="params.yaml")
    args = parser.parse_args()
    settings = load_settings(args.params)
    update = {"max_new_tokens": args.max_tokens} if args.max_tokens else {}
    generate = settings.generate.model_copy(update=update)
    docs = load_corpus(settings.run.corpus, args.docs)
    texts = [d.text for d in docs]
    models_dir = settings.run.models_dir
    threads = generate.threads or (os.cpu_count() or 1)
    print(
        f"# {args.model}, {len(texts)} documents, max_new_tokens {generate.max_new_tokens}, "
        f"{threads} thread(s) per gguf: copy, {os.cpu_count()} cores, {engine_build()}"
    )

    def gguf(workers: int) -> Callable[[], list[str]]:
        own = generate.model_copy(update={"workers": workers})
        return lambda: GgufSummarizer(args.model, own, models_dir).summarize(texts)

    rows: list[dict] = []

    def record(name: str, cores: int, result: tuple[list[str], float, float]) -> list[str]:
        out, wall, cpu = result
        reference = rows[0]["out"] if rows else out
        rows.append(
            {
                "config": name,
                "wall_s": round(wall, 1),
                "per_s": round(len(out) / wall, 3),
                "speedup": round(rows[0]["wall_s"] / wall, 2) if rows else 1.0,
                "equal_to_gguf": sum(a == b for a, b in zip(out, reference, strict=True)),
                "cpu_s": round(cpu, 1),
                "cpu_share": round(cpu / wall / cores, 2),
                "out": out,
            }
        )
        row = {k: v for k, v in rows[-1].items() if k != "out"}
        print(json.dumps(row), flush=True)
        return out

    record("gguf: workers=1", 1, timed(gguf(1)))
    workers = args.workers or max(1, (os.cpu_count() or 1) // threads)
    if workers > 1:
        cores = min(workers * threads, os.cpu_count() or 1)
        record(f"gguf: workers={workers}", cores, timed(gguf(workers)))
    path = str(GgufSummarizer(args.model, generate, models_dir).path)
    for spec in args.servers.split(","):
        slots, server_threads = (int(n) for n in spec.lower().split("x"))
        server = start(path, "127.0.0.1", 0, slots, server_threads, generate.n_ctx)
        client = OpenAISummarizer(
            f"{server.listening_address}/v1",
            GenerateSettings(**(generate.model_dump() | {"openai_concurrency": slots})),
        )
        try:
            name = f"openai: {slots} slot(s), {server_threads} thread(s), concurrency {slots}"
            cores = min(server_threads, os.cpu_count() or 1)
            record(name, cores, timed(lambda client=client: client.summarize(texts)))
        finally:
            client.close()
            del server


if __name__ == "__main__":
    main()
