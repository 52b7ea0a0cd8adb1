"""How faithful budgeted sentence-level attribution is (issue 26, items 1-2).

Per document: a reference explanation at `reference_factor` times the largest budget (Kernel
SHAP, its own seed, its own evaluation memo: no evaluation is shared with the budgeted runs),
a second reference with another seed on the first `self_documents` documents (the reference's
own seed-to-seed agreement), each budgeted estimator at each budget with its own seed (Spearman
against the reference, distinct evaluations, seconds), and the noise floor of instability: the
main budget's explanation repeated with an independent seed, and the instability between the two
(what instability measures when nothing but the sampling changed). Used by
scripts/sentence_shap_fidelity.py and by `hss bench`'s sentence_shap step.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from hss_gate.models.sentence_explainer import (
    SentenceAttributionSettings,
    explain_sentences,
    sentence_instability,
)
from hss_gate.research.likelihood import LikelihoodModel
from hss_gate.research.sentence_attribution import agreement
from hss_gate.text.masked_text import sentence_features

REFERENCE_SEED = 10_007  # seeds of the reference runs, far from the budgeted runs' seeds
SELF_SEED = 20_011


def budget_for(n_sentences: int, per_sentence: float, minimum: int = 8) -> int:
    """An evaluation budget proportional to the sentence count (per_sentence x M, at least
    `minimum`): the same resolution per feature on documents of every length."""
    return max(minimum, round(per_sentence * n_sentences))


def fidelity_document(
    scorer: LikelihoodModel,
    document: str,
    summary: str,
    per_sentence: Sequence[float],
    reference_factor: float = 10.0,
    methods: Sequence[str] = ("kernel",),
    self_check: bool = True,
    seed: int = 0,
    max_words: int = 1500,
    say: Callable[[str], None] = lambda line: None,
    stored_reference: dict[str, Any] | None = None,
    noise_floor: bool = True,
) -> dict[str, Any]:
    """The fidelity measurements of one document (module doc). The main budget is the first
    of `per_sentence`; the first method runs at every budget, the others at the main one. The
    reference is exact Shapley values when 2^M fits its budget (its self-agreement is then 1
    by construction and not rerun), or `stored_reference` (an earlier run's row["reference"]
    of the same document and summary: more budgets against the same reference, not rerun)."""
    m = sentence_features(document, max_words).n
    budgets = [budget_for(m, c) for c in per_sentence]
    reference_budget = round(reference_factor * max(budgets))

    def run(method: str, budget: int, run_seed: int) -> Any:
        settings = SentenceAttributionSettings(
            method=method, budget=budget, seed=run_seed, max_words=max_words, segments=False
        )
        out = explain_sentences(scorer, document, summary, settings)
        say(f"  {method} budget {budget}: {out.evaluations} evaluations, {out.seconds:.1f} s")
        return out

    if stored_reference is not None:
        if len(stored_reference["values"]) != m:
            raise ValueError(
                f"the stored reference has {len(stored_reference['values'])} "
                f"sentences, the document {m}"
            )
        reference_values, reference_evaluations = (
            np.asarray(stored_reference["values"]),
            stored_reference["evaluations"],
        )
        row: dict[str, Any] = {"sentences": m, "reference": dict(stored_reference), "runs": []}
        self_check = False
    else:
        reference = run("kernel", reference_budget, REFERENCE_SEED + seed)
        reference_values, reference_evaluations = reference.values, reference.evaluations
        row = {
            "sentences": m,
            "reference": {
                "budget": reference_budget,
                "evaluations": reference.evaluations,
                "seconds": reference.seconds,
                "values": [float(v) for v in reference.values],
            },
            "runs": [],
        }
        row["reference"]["exact"] = 2**m <= reference_budget
    exact = row["reference"]["exact"]
    if self_check and exact:  # exact Shapley values: the same with every seed, not rerun
        row["reference"]["self_spearman"] = 1.0
    elif self_check:
        again = run("kernel", reference_budget, SELF_SEED + seed)
        row["reference"]["self_spearman"] = agreement(reference_values, again.values)
        row["reference"]["self_evaluations"] = again.evaluations
    for method in methods:
        # the first method runs at every budget (the cost-fidelity curve), the others at the main
        pairs = list(zip(per_sentence, budgets, strict=True))
        for c, budget in pairs if method == methods[0] else pairs[:1]:
            first = run(method, budget, seed + budget)
            record = {
                "method": method,
                "per_sentence": c,
                "budget": budget,
                "evaluations": first.evaluations,
                "eval_fraction": first.evaluations / reference_evaluations,
                "seconds": first.seconds,
                "spearman": agreement(first.values, reference_values),
                "fit_r2": first.fit_r2,
            }
            # the noise floor at the main budget: an independent seed
            if noise_floor and c == per_sentence[0]:
                second = run(method, budget, seed + budget + 1)
                record["noise_floor"] = sentence_instability(first, second) | {
                    "spearman": agreement(first.values, second.values)
                }
            row["runs"].append(record)
    return row


def summarize_fidelity(rows: Sequence[dict[str, Any]], method: str = "kernel") -> dict[str, Any]:
    """Median and worst Spearman against the reference per (method, budget), the evaluation
    fraction, seconds per document, the reference's self-agreement and the noise floor; the
    headline fields are the first budget's of `method`."""
    curve: dict[str, dict[str, Any]] = {}
    for row in rows:
        for run in row["runs"]:
            key = f"{run['method']}@{run['per_sentence']:g}xM"
            curve.setdefault(key, {"method": run["method"], "per_sentence": run["per_sentence"]})
            curve[key].setdefault("runs", []).append(run)
    table = {}
    for key, entry in curve.items():
        runs = entry.pop("runs")
        rho = [r["spearman"] for r in runs]
        floors = [r["noise_floor"] for r in runs if "noise_floor" in r]
        table[key] = entry | {
            "documents": len(runs),
            "spearman_median": float(np.median(rho)),
            "spearman_worst": float(np.min(rho)),
            "eval_fraction": float(np.mean([r["eval_fraction"] for r in runs])),
            "evaluations_mean": float(np.mean([r["evaluations"] for r in runs])),
            "seconds_per_document": float(np.mean([r["seconds"] for r in runs])),
            "noise_floor": {
                name: float(np.median([f[name] for f in floors]))
                for name in ("rank", "topk", "mass", "spearman")
            }
            if floors
            else None,
        }
    self_rho = [r["reference"]["self_spearman"] for r in rows if "self_spearman" in r["reference"]]
    main = next((v for v in table.values() if v["method"] == method), None)
    return {
        "documents": len(rows),
        "sentences_median": float(np.median([r["sentences"] for r in rows])) if rows else None,
        "spearman_median": main["spearman_median"] if main else None,
        "spearman_worst": main["spearman_worst"] if main else None,
        "reference_self_spearman": float(np.median(self_rho)) if self_rho else None,
        "reference_self_spearman_worst": float(np.min(self_rho)) if self_rho else None,
        "reference_self_documents": len(self_rho),
        "eval_fraction": main["eval_fraction"] if main else None,
        "seconds_per_document": main["seconds_per_document"] if main else None,
        "reference_seconds_per_document": float(np.mean([r["reference"]["seconds"] for r in rows]))
        if rows
        else None,
        "noise_floor": main["noise_floor"] if main else None,
        "curve": table,
    }


def measure_fidelity(
    scorer: LikelihoodModel,
    documents: Sequence[tuple[str, str, str]],
    per_sentence: Sequence[float],
    reference_factor: float = 10.0,
    methods: Sequence[str] = ("kernel",),
    self_documents: int = 10,
    seed: int = 0,
    max_words: int = 1500,
    say: Callable[[str], None] = lambda line: None,
    stored_references: dict[str, dict[str, Any]] | None = None,
    noise_floor: bool = True,
) -> dict[str, Any]:
    """fidelity_document over (doc_id, document, summary) triples, then summarize_fidelity;
    `stored_references` (doc_id -> an earlier run's reference) are reused, not rerun."""
    rows = []
    started = time.perf_counter()
    for i, (doc_id, document, summary) in enumerate(documents):
        say(f"{doc_id} ({i + 1}/{len(documents)}), {time.perf_counter() - started:.0f} s")
        row = fidelity_document(
            scorer,
            document,
            summary,
            per_sentence,
            reference_factor,
            methods,
            i < self_documents,
            seed,
            max_words,
            say,
            (stored_references or {}).get(doc_id),
            noise_floor,
        )
        rows.append({"doc_id": doc_id} | row)
    return summarize_fidelity(rows, methods[0]) | {
        "settings": {
            "per_sentence": list(per_sentence),
            "reference_factor": reference_factor,
            "methods": list(methods),
            "self_documents": self_documents,
            "seed": seed,
        },
        "per_document": rows,
    }
