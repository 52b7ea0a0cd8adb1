"""Serve an embedded (or local) GGUF model over the OpenAI API with llama.cpp's HTTP server.

    .venv/bin/python scripts/serve_gguf.py smollm2 --port 8080 --parallel 4
    hss gate --candidate openai:http://127.0.0.1:8080/v1

The server is the one llama.cpp ships (`llama-server`'s code, built into the xllamacpp wheel
the `gguf:` backend already uses), so no other package is needed: /v1/chat/completions,
/v1/models and /health. It is started with the settings of `gguf:` (params.yaml generate:
threads, n_ctx per slot) and without the prompt cache, so at one slot (`--parallel 1`) its
greedy summaries are the `gguf:` backend's. With several slots it is faster but its outputs are
not bit-stable (llama.cpp batches the slots together). Prints one JSON line
{"url": ..., "model": ..., "parallel": ...} once it is listening, then serves until SIGTERM or
SIGINT.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading

from hss_gate.models.summarizers.gguf import resolve_gguf
from hss_gate.settings import load_settings


def start(
    path: str, host: str, port: int, parallel: int, threads: int, n_ctx: int, api_key: str = ""
):
    """A listening llama.cpp server (xllamacpp.Server) for the GGUF file at `path`."""
    import xllamacpp

    params = xllamacpp.CommonParams()
    params.model.path = path
    params.hostnames = [host]
    params.port = port  # 0: any free port
    params.n_parallel = parallel
    params.n_ctx = n_ctx * parallel  # as gguf: does, n_ctx tokens per slot
    params.cpuparams.n_threads = threads
    params.cpuparams_batch.n_threads = threads
    # the gguf: backend sends cache_prompt=false with every request (a reused KV prefix changes
    # the floating point, hence greedy ties); an OpenAI client cannot, so the server defaults to it
    params.cache_prompt = False
    params.warmup = False
    params.verbosity = -1
    if api_key:
        params.api_keys = [api_key]
    return xllamacpp.Server(params)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model", help="embedded name or alias (smollm2, qwen) or a .gguf path")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0: a free port (printed)")
    parser.add_argument("--parallel", type=int, default=1, help="slots decoding at once")
    parser.add_argument("--threads", type=int, help="default: params.yaml generate.threads")
    parser.add_argument("--n-ctx", type=int, help="per slot; default: generate.n_ctx")
    parser.add_argument("--params", default="params.yaml")
    args = parser.parse_args()
    settings = load_settings(args.params)
    path, _ = resolve_gguf(args.model, settings.run.models_dir)
    threads = args.threads if args.threads is not None else settings.generate.threads
    server = start(
        str(path),
        args.host,
        args.port,
        args.parallel,
        threads or (os.cpu_count() or 1),
        args.n_ctx or settings.generate.n_ctx,
        os.environ.get("HSS_OPENAI_API_KEY", ""),
    )
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    line = {"url": f"{server.listening_address}/v1", "model": str(path), "parallel": args.parallel}
    print(json.dumps(line), flush=True)
    stop.wait()
    del server
    sys.exit(0)


if __name__ == "__main__":
    main()
