"""Does the gate agree with humans on real systems? Every ordered pair of systems in a file of
human-judged summaries (one as production, one as candidate), the humans' paired difference with
its CI, and what the gate decided.

The human signal is `factual` (1 when annotators found no factual error in the summary); a
candidate is significantly worse when the paired 95% CI of its difference lies entirely below
zero (the gate must block), significantly better when it lies entirely above (it must promote).

The gate's side runs the gate's own rule on per-document rows built from the checker's verdicts
(`document_rows`): `gate_call` drives hss_gate.decision.paired_comparison.compare and the gate's
rule
(hss_gate.decision.rule.judge_look) look by look
(hss_gate.decision.sequential: the stratified order, the look sizes, the Bonferroni-spent level), as
`hss gate` does, or in one look (`hss gate --full`). The facts bounds follow production's own
values (hss_gate.decision.rule.facts_bounds_relative_to), as in the gate. What is not
there: HSS (no perturbations: every row's `hss` is NaN, "not measured" as in a gate run of
stored summaries without perturbed ones, so compare skips the HSS comparison instead of
comparing zeros) and the form, data and not-summarizing checks; the facts checks' `mean` tests
are evaluated here, not by Great Expectations. `share_call` is the alternative rule: a paired
t-test on the per-document low-consistency indicator (the share of summaries the checker finds
unsupported), with a margin.
The run (checker, cache, files) is in systems_run.py.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from scipy import stats

from hss_gate.common.errors import InputError
from hss_gate.common.jsonl import read_jsonl
from hss_gate.decision.checks import severity_checks
from hss_gate.decision.paired_comparison import bound_intervals, compare
from hss_gate.decision.rule import judge_look
from hss_gate.decision.sequential import look_levels, look_plan, look_record, stratified_order
from hss_gate.scoring.severity import paired_t_ci
from hss_gate.settings import GateSettings

HUMAN_LEVEL = 0.95
CATEGORY = "all"  # a file of system summaries has no categories: one (auto looks: 5 equal ones)
SHARE_MARGINS = (0.0, 0.02, 0.05)
"""The alternative rule's margins: it blocks when the candidate's share of summaries the checker
finds unsupported rises significantly beyond the margin. 0.02 (the unsupported-entity margin) is
the one compared; the others show how much the margin matters."""
SHARE_MARGIN = 0.02
HSS_NOT_MEASURED = float("nan")
"""A document's `hss` when it was not measured (no perturbations), as in the gate's documents
table: NaN, never 0.0."""


@dataclass(frozen=True)
class HumanDifference:
    """Candidate minus production in the share of summaries humans judged fully factual."""

    candidate: str
    production: str
    documents: int
    candidate_share: float
    production_share: float
    difference: float
    ci_low: float
    ci_high: float

    @property
    def verdict(self) -> str:
        """worse / better / neither, by the paired CI."""
        if self.ci_high < 0:
            return "worse"
        if self.ci_low > 0:
            return "better"
        return "neither"

    @property
    def expected(self) -> str:
        """What the gate must decide: block / promote / either."""
        return {"worse": "block", "better": "promote"}.get(self.verdict, "either")


def read_judgements(path: str | Path, label: str = "factual") -> dict[str, dict[str, float]]:
    """system -> doc_id -> human label, from a summaries file with a `system` field."""
    out: dict[str, dict[str, float]] = {}
    for number, record in read_jsonl(path):
        if label not in record or "system" not in record:
            raise InputError(f"{path}:{number}: needs 'system' and '{label}' for human judgements")
        out.setdefault(str(record["system"]), {})[str(record["doc_id"])] = float(record[label])
    return out


def read_documents(path: str | Path) -> dict[str, str]:
    """doc_id -> document text, from a documents file (doc_id, document)."""
    out: dict[str, str] = {}
    for number, record in read_jsonl(path):
        text = record.get("document", record.get("text"))
        if "doc_id" not in record or not isinstance(text, str):
            raise InputError(f"{path}:{number}: needs 'doc_id' and 'document' (a string)")
        out[str(record["doc_id"])] = text
    if not out:
        raise InputError(f"{path}: no documents")
    return out


def read_summaries(path: str | Path) -> dict[str, dict[str, str]]:
    """system -> doc_id -> summary text, from a summaries file with a `system` field."""
    out: dict[str, dict[str, str]] = {}
    for number, record in read_jsonl(path):
        summary = record.get("summary")
        if "system" not in record or "doc_id" not in record or not isinstance(summary, str):
            raise InputError(f"{path}:{number}: needs 'doc_id', 'system' and 'summary' (a string)")
        out.setdefault(str(record["system"]), {})[str(record["doc_id"])] = summary
    if len(out) < 2:
        raise InputError(f"{path}: needs summaries of at least two systems, found {len(out)}")
    return out


def paired_t(a: Sequence[float], b: Sequence[float], level: float) -> tuple[float, float, float]:
    """Mean of a - b with its paired Student-t CI."""
    diff = np.asarray(a, float) - np.asarray(b, float)
    mean = float(diff.mean())
    if len(diff) < 2 or float(diff.std(ddof=1)) == 0.0:
        return mean, mean, mean
    half = float(
        stats.t.ppf(0.5 + level / 2, len(diff) - 1) * diff.std(ddof=1) / np.sqrt(len(diff))
    )
    return mean, mean - half, mean + half


def human_differences(
    judgements: Mapping[str, Mapping[str, float]], level: float = HUMAN_LEVEL
) -> list[HumanDifference]:
    """Every ordered (candidate, production) pair on the documents both systems summarized."""
    out = []
    for candidate, production in itertools.permutations(sorted(judgements), 2):
        shared = sorted(set(judgements[candidate]) & set(judgements[production]))
        a = [judgements[candidate][d] for d in shared]
        b = [judgements[production][d] for d in shared]
        diff, low, high = paired_t(a, b, level)
        out.append(
            HumanDifference(
                candidate,
                production,
                len(shared),
                float(np.mean(a)),
                float(np.mean(b)),
                diff,
                low,
                high,
            )
        )
    return out


def agreement(rows: Sequence[Mapping[str, object]], key: str = "decision") -> dict[str, int]:
    """Counts of the agreement table for the decisions under `key`: must-block pairs blocked,
    must-promote pairs promoted, and what the rule did with the rest; `right` and `wrong` count
    the pairs humans settled (a worse pair promoted or a better pair blocked is wrong)."""
    worse = [r for r in rows if r["human"] == "worse"]
    better = [r for r in rows if r["human"] == "better"]
    neither = [r for r in rows if r["human"] == "neither"]
    counts = {
        "worse": len(worse),
        "worse_blocked": sum(r[key] == "block" for r in worse),
        "better": len(better),
        "better_promoted": sum(r[key] == "promote" for r in better),
        "neither": len(neither),
        "neither_blocked": sum(r[key] == "block" for r in neither),
        "neither_promoted": sum(r[key] == "promote" for r in neither),
    }
    counts["right"] = counts["worse_blocked"] + counts["better_promoted"]
    counts["wrong"] = counts["worse"] + counts["better"] - counts["right"]
    return counts


def document_row(
    doc_id: str,
    consistency: float,
    threshold: float,
    unsupported: float,
    mean_support: float | None = None,
) -> dict:
    """One summary as the gate's documents table has it, for the signals that decide: the
    checker's consistency, whether it is below the threshold, its sentences' mean support (the
    paired statistic; None: the consistency) and the share of unsupported entities/numbers.
    HSS is not measured here (no perturbations): NaN, as the gate's documents
    table has it for a run without perturbed summaries
    (hss_gate.decision.paired_comparison.hss_measured
    is then false and compare leaves the HSS signals out: "not measured", never 0)."""
    return {
        "doc_id": doc_id,
        "category": CATEGORY,
        "hss": HSS_NOT_MEASURED,
        "base_consistency": float(consistency),
        "base_mean_support": float(consistency if mean_support is None else mean_support),
        "base_low_consistency": float(consistency < threshold),
        "base_unsupported_share": float(unsupported),
    }


def facts_checks(comparison: Mapping[str, Any], gate: GateSettings) -> list[dict[str, Any]]:
    """The gate's facts checks (hss_gate.decision.checks.severity_checks, kind `facts`: the
    lower end of each bound's paired interval, hss_gate.decision.paired_comparison
    .bound_intervals, at most the bound) on this look's comparison, as check results the gate
    reads."""
    lower = {row["bound"]: row["ci_low"] for row in bound_intervals(comparison)}
    out = []
    for check in severity_checks(gate):
        if check.kind != "facts" or check.where is None:
            continue
        observed = lower[check.where[1]]
        high = np.inf if check.high is None else check.high
        out.append(
            {
                "table": check.table,
                "kind": check.kind,
                "name": check.name,
                "code": check.code,
                "description": check.description,
                "blocking": check.blocking,
                "success": bool(observed <= high),
                "observed": observed,
            }
        )
    return out


@dataclass(frozen=True)
class GateCall:
    """What the gate decided on one pair: block or promote, on how many documents, and each
    look as decision.json keeps it (with the facts checks that failed)."""

    decision: str
    documents: int
    looks: tuple[dict[str, Any], ...]

    def to_dict(self) -> dict[str, Any]:
        return {"decision": self.decision, "documents": self.documents, "looks": list(self.looks)}


def paired_documents(
    candidate: Sequence[Mapping[str, Any]], production: Sequence[Mapping[str, Any]]
) -> tuple[list[Mapping[str, Any]], list[Mapping[str, Any]]]:
    """Both systems' rows on the documents both summarized, in the gate's fixed stratified
    order (by doc_id within a category)."""
    prod = {str(r["doc_id"]): r for r in production}
    shared = sorted((r for r in candidate if str(r["doc_id"]) in prod), key=lambda r: r["doc_id"])
    if not shared:
        raise InputError("the two systems share no document")
    order = stratified_order(shared, lambda r: r["category"])
    return order, [prod[str(r["doc_id"])] for r in order]


def gate_call(
    candidate: Sequence[Mapping[str, Any]],
    production: Sequence[Mapping[str, Any]],
    gate: GateSettings,
    *,
    confidence: float = HUMAN_LEVEL,
    sequential: bool = True,
    relative: bool = True,
    resamples: int = 200,
    seed: int = 0,
) -> GateCall:
    """The gate's decision on the candidate's rows against production's (paired by doc_id):
    look by look as `hss gate` does (`sequential`: gate.looks and gate.alpha_spending), or in
    one look as `hss gate --full`.
    `relative`: the facts bounds follow production's own values on the same documents (as the
    gate does; False: the absolute bounds alone). The bootstrap (`resamples`) only serves the
    signals that do not decide (the deciding ones get a paired Student-t CI)."""
    cand, prod = paired_documents(candidate, production)
    categories = len({r["category"] for r in cand})
    plan = look_plan(len(cand), categories, gate.looks, full=not sequential).sizes
    levels = look_levels(confidence, plan, gate.alpha_spending)
    looks: list[dict[str, Any]] = []
    verdict, n = "continue", 0
    for i, (n, level) in enumerate(zip(plan, levels, strict=True)):
        comparison = compare(cand[:n], prod[:n], resamples=resamples, confidence=level, seed=seed)
        judged = judge_look(
            comparison,
            prod[:n],
            gate,
            lambda at, looked=comparison: facts_checks(looked, at),
            last=i == len(plan) - 1,
            relative=relative,
        )
        verdict = judged.verdict
        record = look_record(n, level, comparison["signals"], verdict)
        record["failed_checks"] = [c["code"] for c in judged.checks if not c["success"]]
        looks.append(record)
        if verdict != "continue":
            break
    return GateCall(verdict, n, tuple(looks))


def share_call(
    candidate: Sequence[Mapping[str, Any]],
    production: Sequence[Mapping[str, Any]],
    margin: float = SHARE_MARGIN,
    confidence: float = HUMAN_LEVEL,
) -> tuple[str, float, float, float]:
    """The alternative rule in one look: block when the candidate's share of summaries the
    checker finds unsupported rises beyond `margin` with confidence (paired Student-t CI of the
    per-document low-consistency indicator); returns (decision, difference, CI low, CI high)."""
    cand, prod = paired_documents(candidate, production)
    diff, low, high = paired_t_ci(
        [float(r["base_low_consistency"]) for r in cand],
        [float(r["base_low_consistency"]) for r in prod],
        level=confidence,
    )
    return ("block" if low > margin else "promote"), diff, low, high


def evaluate_pairs(
    rows: Mapping[str, Sequence[Mapping[str, Any]]],
    judgements: Mapping[str, Mapping[str, float]],
    gate: GateSettings,
    *,
    confidence: float = 0.95,
    human_level: float = HUMAN_LEVEL,
    relative: bool = True,
    share_margins: Sequence[float] = SHARE_MARGINS,
    advance: Any = None,
) -> list[dict[str, Any]]:
    """Every ordered (candidate, production) pair: the humans' paired difference in `factual`
    with its CI (at `human_level`) and what the decision must be, the checker's paired
    differences, and the decisions of the gate (sequential and single-look, overall
    `confidence`: the gate's score.confidence) and of the alternative share rule."""
    out = []
    known = {s: judgements[s] for s in rows if s in judgements}
    for human in human_differences(known, human_level):
        cand, prod = rows[human.candidate], rows[human.production]
        sequential = gate_call(cand, prod, gate, confidence=confidence, relative=relative)
        single = gate_call(
            cand, prod, gate, confidence=confidence, sequential=False, relative=relative
        )
        last = single.looks[-1]
        row: dict[str, Any] = {
            "candidate": human.candidate,
            "production": human.production,
            "documents": human.documents,
            "human_candidate": human.candidate_share,
            "human_production": human.production_share,
            "human_difference": human.difference,
            "human_ci": [human.ci_low, human.ci_high],
            "human": human.verdict,
            "expected": human.expected,
            "consistency": last.get("consistency"),
            "unsupported": last.get("unsupported"),
            "decision": sequential.decision,
            "documents_used": sequential.documents,
            "single": single.decision,
            "sequential_looks": list(sequential.looks),
            "single_failed_checks": last["failed_checks"],
        }
        for margin in share_margins:
            row[f"share_{margin:g}"] = share_call(cand, prod, margin, confidence)[0]
        _, diff, low, high = share_call(cand, prod, SHARE_MARGIN, confidence)
        row["low_share"] = {"difference": diff, "ci": [low, high]}
        out.append(row)
        if advance is not None:
            advance(1)
    return out
