"""Word-level attribution's cost with the scorer one forward pass at a time on torch's own
threads (workers 1, as before issue 47) and N one-thread passes at a time, side by side.

    python scripts/attribution_cost.py [--documents 1] [--rounds 2] [--workers 0] [--busy 0]

The first DOCUMENTS reference documents are summarized by SmolLM2 (llama.cpp, as the experiment's
summaries) and explained as `hss experiment` explains them: SHAP and LIME at the experiment's
budgets on the original and its explained perturbations, the transformers scorer in the
experiment's dtype (hss_gate.research.attribution_bench.explain_documents). Each round explains
them once per setting, in turn, on one loaded model with an empty evaluation cache each time, so
both settings compute exactly the same evaluations under the same load. `--busy N` runs N
busy-looping processes beside it for the whole run (a stand-in for another job on the cores).
Progress: rich bars in a terminal, plain `progress:` lines in a pipe. BENCHMARKS.md, "Word-level
attribution under load", has a run's figures.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

MODEL = "gguf:smollm2-135m-instruct"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--documents", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--workers", type=int, default=0, help="N (0: one per core)")
    parser.add_argument("--busy", type=int, default=0, help="busy processes beside the run")
    args = parser.parse_args()

    from rich.console import Console

    from hss_gate.common.cache import Cache
    from hss_gate.common.inputs import load_corpus
    from hss_gate.common.progress import progress_reporter
    from hss_gate.models.likelihood import usable_cores
    from hss_gate.models.summarizers import load_summarizer
    from hss_gate.research.attribution_bench import cost_record, explain_documents
    from hss_gate.research.likelihood import CachedLikelihood, load_scorer
    from hss_gate.scoring.pipeline import make_perturbations
    from hss_gate.scoring.toolkit import real_toolkit
    from hss_gate.settings import load_settings

    settings = load_settings("params.yaml")
    exp = settings.experiment
    docs = load_corpus(settings.run.corpus)[: args.documents]
    perturbed = make_perturbations(docs, settings, real_toolkit(settings), Cache(None))
    summaries = load_summarizer(MODEL, settings).summarize([d.text for d in docs])
    model = load_scorer(MODEL, settings, exp.attribution_backend, exp.attribution_dtype, 1)
    model.loglik([docs[0].text[:200]], summaries[0])  # the load, outside the timings
    workers = args.workers or usable_cores()
    busy = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(args.busy)]
    console = Console(stderr=True)
    results = []
    try:
        for round_ in range(1, args.rounds + 1):
            for setting in (1, workers):
                model.workers, model._anchors = setting, []
                scorer = CachedLikelihood(model, Cache(None))  # nothing carried over
                started, load = time.perf_counter(), os.getloadavg()[0]
                with progress_reporter(console) as progress:
                    rows = explain_documents(
                        scorer, model, docs, summaries, perturbed, settings, progress
                    )
                record = cost_record(rows) | {
                    "round": round_,
                    "workers": setting,
                    "wall_s": round(time.perf_counter() - started, 1),
                    "load_before": round(load, 2),
                    "busy_processes": args.busy,
                }
                results.append(record)
                print(json.dumps(record), flush=True)
    finally:
        for process in busy:
            process.kill()
            process.wait()


if __name__ == "__main__":
    main()
