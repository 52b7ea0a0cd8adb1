"""Fidelity of budgeted sentence-level attribution against a 10x-budget reference (issue 26).

    python scripts/sentence_shap_fidelity.py [--documents 10] [--per-sentence 2,1,4]
        [--reference-factor 10] [--methods permutation,kernel,lime] [--self-documents 10]
        [--max-sentences 0] [--skip 0] [--model gguf:smollm2-135m-instruct] [--out fidelity.json]
        [--references bench.json] [--no-noise-floor]

The first N reference documents (with at most --max-sentences sentences if given) are
summarized by MODEL (its base summary, as `hss experiment` explains it); each summary's
log-likelihood is explained over the source's sentences with the experiment's scorer (backend
and dtype from params.yaml). Budgets are per sentence (4 = 4 x M evaluations; the first is the
main one); the reference is Kernel SHAP at reference_factor x the largest budget, with its own
seed and no shared evaluation (or, with --references, the references of an earlier run's
bench.json or fidelity JSON, for more budgets against the same reference). Prints the median
and worst Spearman, the evaluation fraction, seconds per document, the reference's seed-to-seed
Spearman, the noise floor of instability and the cost-fidelity curve, and writes them as JSON
(hss_gate.research.sentence_fidelity.measure_fidelity).
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

from hss_gate.common.inputs import load_corpus
from hss_gate.models.summarizers import load_summarizer
from hss_gate.research.likelihood import load_scorer
from hss_gate.research.sentence_fidelity import measure_fidelity
from hss_gate.settings import load_settings
from hss_gate.text.masked_text import sentence_features


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--documents", type=int, default=10)
    parser.add_argument("--per-sentence", default="2,1,4")
    parser.add_argument("--reference-factor", type=float, default=10.0)
    parser.add_argument("--methods", default="permutation,kernel", help="the first: headline")
    parser.add_argument("--self-documents", type=int, default=10)
    parser.add_argument("--max-sentences", type=int, default=0, help="0 = any length")
    parser.add_argument("--skip", type=int, default=0, help="documents skipped (after the filter)")
    parser.add_argument("--model", default="gguf:smollm2-135m-instruct")
    parser.add_argument("--params", default="params.yaml")
    parser.add_argument("--out", default="outputs/sentence_shap_fidelity.json")
    parser.add_argument(
        "--references", help="reuse this bench.json's or fidelity JSON's references"
    )
    parser.add_argument("--no-noise-floor", action="store_true", help="no second seed per document")
    args = parser.parse_args()

    settings = load_settings(args.params)
    exp = settings.experiment
    max_words = settings.generate.max_input_words
    docs = [
        d
        for d in load_corpus(settings.run.corpus)
        if not args.max_sentences or sentence_features(d.text).n <= args.max_sentences
    ][args.skip : args.skip + args.documents]
    started = time.perf_counter()
    summaries = load_summarizer(args.model, settings).summarize([d.text for d in docs])
    print(f"{len(docs)} base summaries: {time.perf_counter() - started:.0f} s", flush=True)
    stored = None
    if args.references:
        earlier = json.loads(Path(args.references).read_text())
        earlier = earlier.get("sentence_shap", earlier)
        stored = {row["doc_id"]: row["reference"] for row in earlier["per_document"]}
    scorer = load_scorer(args.model, settings, exp.attribution_backend, exp.attribution_dtype)
    result = measure_fidelity(
        scorer,
        [(d.doc_id, d.text, s) for d, s in zip(docs, summaries, strict=True)],
        [float(x) for x in args.per_sentence.split(",")],
        args.reference_factor,
        args.methods.split(","),
        args.self_documents,
        settings.perturb.seed,
        max_words,
        say=lambda line: print(line, flush=True),
        stored_references=stored,
        noise_floor=not args.no_noise_floor,
    )
    load = os.getloadavg()
    result |= {
        "model": args.model,
        "backend": exp.attribution_backend,
        "dtype": exp.attribution_dtype,
        "cores": os.cpu_count(),
        "load_average_at_end": [round(x, 2) for x in load],
        "wall_seconds": round(time.perf_counter() - started, 1),
    }
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2, default=float) + "\n")

    print(
        f"\n{result['documents']} documents (median {result['sentences_median']:.0f} sentences), "
        f"{args.model} ({exp.attribution_backend}, {exp.attribution_dtype}); "
        f"load average {load[0]:.1f} on {os.cpu_count()} cores"
    )
    self_rho = result["reference_self_spearman"]
    print(
        "reference self-Spearman (median over "
        f"{result['reference_self_documents']} documents): "
        + ("-" if self_rho is None else f"{self_rho:.3f}")
    )
    print("method budget docs spearman_median spearman_worst eval_fraction s/doc noise_floor")
    for key, row in result["curve"].items():
        floor = row["noise_floor"]
        noise = (
            "-"
            if floor is None
            else f"rank {floor['rank']:.3f} topk {floor['topk']:.3f} mass {floor['mass']:.4f}"
        )
        print(
            f"{key:<18} {row['documents']:>3} {row['spearman_median']:.3f} "
            f"{row['spearman_worst']:.3f} {row['eval_fraction']:.3f} "
            f"{row['seconds_per_document']:.1f} {noise}"
        )
    print(f"written: {out}")


if __name__ == "__main__":
    main()
