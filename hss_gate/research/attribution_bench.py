"""`hss bench` word-level attribution step: what explaining whole documents costs as `hss
experiment` explains them, per model evaluation and per document, beside the model, its
summary length and the work per evaluation, so that a change that multiplies any of them
shows in the next benchmark run (issue 47; BENCHMARKS.md keeps the figures).

Per document: the original and one perturbation per band, SHAP and LIME at the experiment's
budgets (seconds and distinct evaluations per method, summary words and tokens, tokens the
transformers scorer computed), after a warm-up that loads the model and compiles shap; then SHAP
of the original at shap's default budget and its agreement (Spearman) with ours. Progress lines
(`progress: shap evaluations 40/96 ...`) go to stdout, which `hss bench` passes on.
The stage is registered in hss_gate.research.bench (STAGES["shap"]).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

SHAP_DEFAULT_MAX_EVALS = 500  # shap.explainers.Partition.__call__ default (shap 0.51)
TARGET_S_PER_EVALUATION = 1.0  # 0.36-0.54 s measured on 2 idle cores (SmolLM2, bf16)


def cost_record(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The cost of the explained documents (`rows`: the stage's per-document records) as
    bench.json keeps it: seconds and evaluations per document, seconds per evaluation (all
    methods, and each), summary words and tokens, tokens computed per evaluation (None where
    the scorer does not count them)."""
    evaluations = sum(sum(r["evaluations"].values()) for r in rows)
    seconds = sum(sum(r["method_seconds"].values()) for r in rows)
    methods = sorted({m for r in rows for m in r["evaluations"]})
    by_method = {}
    for method in methods:
        spent = sum(r["evaluations"].get(method, 0) for r in rows)
        took = sum(r["method_seconds"].get(method, 0.0) for r in rows)
        by_method[method] = round(took / spent, 4) if spent else None
    tokens = [r.get("tokens_computed") for r in rows]
    counted = None not in tokens and evaluations > 0
    summary_tokens = [r.get("summary_tokens") for r in rows]
    return {
        "documents_explained": len(rows),
        "seconds_per_document": float(np.mean([r["seconds"] for r in rows])),
        "evaluations_per_document": evaluations / len(rows),
        "seconds_per_evaluation": round(seconds / evaluations, 4) if evaluations else None,
        "seconds_per_evaluation_by_method": by_method,
        "summary_words": float(np.mean([r["summary_words"] for r in rows])),
        "summary_tokens": None
        if None in summary_tokens
        else float(np.mean([float(t) for t in summary_tokens if t is not None])),
        "tokens_per_evaluation": round(sum(tokens) / evaluations, 1) if counted else None,
    }


def attribution_lines(shap: dict[str, Any] | None) -> list[str]:
    """The attribution cost as rows of bench.md's ratio table: seconds per evaluation against
    its target, with the model, the summary length and the work per evaluation beside it (none
    for a bench.json from before they were recorded; 'not measured' for a skipped step)."""
    name = "attribution seconds per evaluation"
    target = f"<= {TARGET_S_PER_EVALUATION:g} s"
    if shap is None or ("skipped" not in shap and "seconds_per_evaluation" not in shap):
        return []
    if "skipped" in shap:
        return [f"| {name} | not measured ({shap['skipped']}) | {target} | - |"]
    value = shap["seconds_per_evaluation"]
    methods = ", ".join(
        f"{m} {s:.2f} s" for m, s in shap["seconds_per_evaluation_by_method"].items() if s
    )
    tokens = shap.get("summary_tokens")
    length = f"{shap['summary_words']:.0f}-word" + (f" ({tokens:.0f}-token)" if tokens else "")
    work = shap.get("tokens_per_evaluation")
    per_eval = f", {work:.0f} tokens computed per evaluation" if work else ""
    context = (
        f"{name}, {shap['model']} ({shap.get('dtype', '?')}, {shap.get('workers', '?')} "
        f"workers): {length} summaries, {shap['evaluations_per_document']:.0f} evaluations "
        f"and {shap['seconds_per_document']:.1f} s per document{per_eval} ({methods})"
    )
    met = "-" if value is None else "yes" if value <= TARGET_S_PER_EVALUATION else "no"
    shown = "-" if value is None else f"{value:.3f} s"
    return [f"| {context} | {shown} | {target} | {met} |"]


def _say(line: str) -> None:
    print(line, flush=True)


def explain_documents(
    scorer: Any,
    model: Any,
    docs: Sequence[Any],
    summaries: Sequence[str],
    perturbed: dict[str, list[Any]],
    settings: Any,
    progress: Callable[[str, int, int], Callable[[int], None]],
) -> list[dict[str, Any]]:
    """Each document explained as the experiment explains it, with its cost record (`model`:
    the scorer inside the cache, whose tokens_computed is read when it has one)."""
    from hss_gate.research.attribution import explain_document, planned_evaluations
    from hss_gate.research.experiment_run import attribution_budget, explained_perturbations

    exp = settings.experiment
    ours = attribution_budget(settings)
    limits = {"lime": exp.lime_perturbations}
    rows = []
    documents = progress("shap documents", len(docs), 0)
    for doc, summary in zip(docs, summaries, strict=True):
        chosen = explained_perturbations(perturbed[doc.doc_id], exp.attribution_perturbations)
        texts = [p.text for p in chosen]
        step = progress("shap evaluations", planned_evaluations(ours, len(texts), None, limits), 0)
        tokens_before = getattr(model, "tokens_computed", None)
        started = time.perf_counter()
        explained = explain_document(
            scorer, doc.text, summary, texts, ours, limits=limits, advance=step
        )
        seconds = time.perf_counter() - started
        tokens_after = getattr(model, "tokens_computed", None)
        count_tokens = getattr(model, "summary_token_count", None)
        rows.append(
            {
                "doc_id": doc.doc_id,
                "words": len(doc.text.split()),
                "summary_words": len(summary.split()),
                "summary_tokens": count_tokens(summary) if count_tokens else None,
                "texts": 1 + len(chosen),
                "seconds": round(seconds, 2),
                "evaluations": {m: r.evaluations for m, r in explained.items()},
                "method_seconds": {m: r.seconds for m, r in explained.items()},
                "tokens_computed": None
                if tokens_before is None or tokens_after is None
                else tokens_after - tokens_before,
                "shap_evaluations_original": explained["shap"].original.evaluations,
                "shap_values_original": explained["shap"].original.values,
            }
        )
        documents(1)
    return rows


def shap_stage(config: dict[str, Any]) -> dict[str, Any]:
    """The stage (see the module docstring): per document its cost and SHAP's agreement with
    shap's default budget; the cost record over the documents (cost_record)."""
    from hss_gate.common.cache import Cache
    from hss_gate.common.errors import ModelError
    from hss_gate.common.inputs import load_corpus
    from hss_gate.common.progress import plain_progress
    from hss_gate.models.summarizers import load_summarizer
    from hss_gate.research.attribution import shap_attribution
    from hss_gate.research.experiment_run import attribution_budget
    from hss_gate.research.likelihood import CachedLikelihood, CountedLikelihood, load_scorer
    from hss_gate.scoring.instability_metrics import spearman
    from hss_gate.scoring.pipeline import make_perturbations
    from hss_gate.scoring.toolkit import real_toolkit
    from hss_gate.settings import load_settings

    settings = load_settings(config["params"], run__cache_dir=config["cache"])
    exp = settings.experiment
    try:
        model = load_scorer(
            config["model"],
            settings,
            exp.attribution_backend,
            exp.attribution_dtype,
            exp.attribution_workers,
        )
    except ModelError as exc:  # extractive / openai: no token probabilities to explain
        return {"skipped": str(exc)}
    docs = load_corpus(config["corpus"])[: config.get("shap_documents", 1)]
    cache = Cache(config["cache"])
    perturbed = make_perturbations(docs, settings, real_toolkit(settings), cache)
    summaries = load_summarizer(config["model"], settings).summarize([d.text for d in docs])
    scorer = CachedLikelihood(model, Cache(None))  # within this stage only: timings stay cold
    ours = attribution_budget(settings)
    default = ours.model_copy(
        update={"shap_max_evals": SHAP_DEFAULT_MAX_EVALS, "shap_fixed_context": None}
    )
    started = time.perf_counter()  # model load and shap's JIT, kept out of the per-document cost
    head = " ".join(docs[0].text.split()[:12])
    shap_attribution(scorer, head, summaries[0], ours.model_copy(update={"shap_max_evals": 8}))
    warmup = time.perf_counter() - started
    with plain_progress(_say) as progress:
        rows = explain_documents(scorer, model, docs, summaries, perturbed, settings, progress)
        for row, doc, summary in zip(rows, docs, summaries, strict=True):
            step = progress("shap reference evaluations", default.shap_max_evals, 0)
            counted = CountedLikelihood(scorer, step)
            started = time.perf_counter()
            reference = shap_attribution(counted, doc.text, summary, default)
            counted.add(max(0, default.shap_max_evals - counted.count))  # the stage is done
            row["default_seconds"] = round(time.perf_counter() - started, 2)
            row["default_evaluations"] = reference.evaluations
            row["spearman"] = spearman(row.pop("shap_values_original"), reference.values)
    return {
        "model": config["model"],
        "dtype": exp.attribution_dtype,
        "workers": getattr(model, "workers", 1),
        "documents": rows,
        **cost_record(rows),
        "warmup_s": round(warmup, 2),
        "spearman": float(np.mean([r["spearman"] for r in rows])),
        "ours": {
            "max_evals": ours.shap_max_evals,
            "fixed_context": ours.shap_fixed_context,
            "lime_samples": ours.lime_num_samples,
            "methods": list(ours.methods),
            "evaluations": float(np.mean([r["shap_evaluations_original"] for r in rows])),
        },
        "default": {
            "max_evals": default.shap_max_evals,
            "fixed_context": None,
            "evaluations": float(np.mean([r["default_evaluations"] for r in rows])),
        },
    }
