"""Prefill and decode tokens/s of a GGUF model through the xllamacpp wheel, as hss-gate runs it.

    .venv/bin/python scripts/engine_speed.py qwen --threads 1 --docs 0,1,2

Starts the engine exactly as `GgufSummarizer` does (hss_gate.models.summarizers.gguf.start_server),
sends the project's chat prompt for each reference document (greedy, no prompt cache), after one
4-token warm-up, and prints one line per request with llama.cpp's own timings and the CPU share
the process got (cpu seconds / wall seconds: below ~0.9 the machine was busy and the rates are
not the engine's). BENCHMARKS.md, "Generation speed", has the figures and the other engines.
"""

from __future__ import annotations

import argparse
import json
import resource
import time

from hss_gate.common.inputs import load_corpus
from hss_gate.models.summarizers.base import chat_messages
from hss_gate.models.summarizers.gguf import (
    engine_build,
    greedy_request,
    resolve_gguf_model,
    start_server,
)
from hss_gate.settings import load_settings


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model", help="embedded name or alias (qwen, smollm2) or a .gguf path")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--docs", default="0,1,2", help="reference document indices")
    parser.add_argument("--max-tokens", type=int, default=128)
    parser.add_argument("--params", default="params.yaml")
    args = parser.parse_args()

    settings = load_settings(args.params)
    path, _, _ = resolve_gguf_model(args.model, settings.run.models_dir)
    server = start_server(path, args.threads, 1, settings.generate.n_ctx)
    docs = load_corpus(settings.run.corpus)

    def ask(text: str, max_tokens: int) -> tuple[dict, float, float]:
        request = greedy_request(max_tokens, messages=chat_messages(text, settings.generate))
        cpu, wall = cpu_seconds(), time.perf_counter()
        response = server.handle_chat_completions(request)
        return response, time.perf_counter() - wall, cpu_seconds() - cpu

    ask(docs[0].text, 4)  # first touch of the weights, repacking
    print(json.dumps({"engine": engine_build(), "model": str(path), "threads": args.threads}))
    for index in (int(i) for i in args.docs.split(",")):
        response, wall, cpu = ask(docs[index].text, args.max_tokens)
        timings = response.get("timings", {})
        print(
            json.dumps(
                {
                    "doc": docs[index].doc_id,
                    "prompt_tokens": timings.get("prompt_n"),
                    "prefill_tps": round(timings.get("prompt_per_second", 0.0), 1),
                    "new_tokens": timings.get("predicted_n"),
                    "decode_tps": round(timings.get("predicted_per_second", 0.0), 1),
                    "cpu_share": round(cpu / wall, 2),
                }
            )
        )


if __name__ == "__main__":
    main()
