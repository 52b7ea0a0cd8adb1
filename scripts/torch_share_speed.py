"""Cold scoring with and without giving torch only the cores generation leaves (issue 25).

    .venv/bin/python scripts/torch_share_speed.py shared  --docs 4
    .venv/bin/python scripts/torch_share_speed.py default --docs 4

One arm per process (cold: an empty temporary cache, models loaded in it), so run the arms in
pairs, alternating, and compare pair by pair (the machine's speed drifts). `shared` is the
pipeline as shipped: while the in-process GGUF copies generate, SBERT encodes on the cores
they leave (hss_gate.models.embedding.torch_threads); `default` lets torch keep one thread per core
beside them. Prints the wall and CPU seconds of the scoring (CPU time shows spin-waiting even
when other work holds the cores) and a digest of the summaries, equal in both arms.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import resource
import tempfile
import time


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("arm", choices=["shared", "default"])
    parser.add_argument("--docs", type=int, default=4, help="first N reference documents")
    parser.add_argument("--model", default="gguf:smollm2-135m-instruct")
    args = parser.parse_args()

    from hss_gate.common.inputs import load_corpus, load_normalization
    from hss_gate.scoring import pipeline
    from hss_gate.scoring.runner import score_model
    from hss_gate.settings import load_settings

    if args.arm == "default":
        pipeline._cores_left = lambda summarizer: None  # torch keeps its own thread count
    with tempfile.TemporaryDirectory() as cache:
        settings = load_settings("params.yaml", run__cache_dir=cache)
        docs = load_corpus(settings.run.corpus)[: args.docs]
        norm = load_normalization(settings.score.normalization)
        wall, cpu = time.perf_counter(), cpu_seconds()
        result, _ = score_model(args.model, docs, settings, norm)
        wall, cpu = time.perf_counter() - wall, cpu_seconds() - cpu
    summaries = json.dumps(sorted(r["summary"] for r in result.summaries), ensure_ascii=False)
    print(
        json.dumps(
            {
                "arm": args.arm,
                "documents": len(docs),
                "wall_s": round(wall, 1),
                "cpu_s": round(cpu, 1),
                "summaries_sha256": hashlib.sha256(summaries.encode()).hexdigest()[:16],
            }
        )
    )


if __name__ == "__main__":
    main()
