"""The gate's looks: both models scored look by look until a look settles (`score_looks`).

Each look scores the next documents of a fixed stratified order on both sides, compares the
runs paired over every document seen so far at the look's spent confidence level
(hss_gate.decision.sequential: the look plan, gate.looks, and its alpha spending), runs the Great
Expectations suites on the candidate's tables (Data Docs to OUT/data_docs/) and gives the look's
verdict (hss_gate.decision.rule.judge_look); the last look taken decides (hss_gate.workflows.gate).

Facts first (hss_gate.decision.sequential.hss_plan): unless HSS blocks, only the first documents of
the
order (gate.hss_documents) are perturbed and their perturbed versions summarized; the others get
their original's summary alone, which the deciding signals read. HSS is then compared on those
documents and its checks read their table (checks.HSS_DOCUMENTS). Progress: each look's
summaries, per model, under the look's name, and the summaries done of those planned with the
time left at every look (progress.PlanProgress).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from hss_gate.common.errors import InputError
from hss_gate.common.progress import PlanProgress, Progress
from hss_gate.common.redact import redacted_uri
from hss_gate.decision.checks import FACTS_BOUNDS, HSS_DOCUMENTS, HssSubset
from hss_gate.decision.paired_comparison import bound_intervals, compare
from hss_gate.decision.rule import judge_look
from hss_gate.decision.sequential import (
    HssPlan,
    LookPlan,
    hss_plan,
    look_levels,
    look_plan,
    look_record,
    stratified_order,
)
from hss_gate.scoring.pipeline import ScoreResult, merge_results
from hss_gate.settings import GateSettings, HssSettings, ScoreSettings
from hss_gate.signals.tables import OPTIONAL_COLUMNS
from hss_gate.text.corpus import Document
from hss_gate.workflows.gate_preparation import GateRun
from hss_gate.workflows.shared import as_floats, validate_tables
from hss_gate.workflows.steps import ModelRunner, Say, Steps


def compare_runs(
    candidate: ScoreResult,
    production: ScoreResult,
    score_settings: ScoreSettings,
    seed: int,
    hss_documents: Collection[str] | None = None,
) -> dict[str, Any]:
    """Paired comparison of the candidate with production on the same documents (HSS on the
    `hss_documents` alone when given: facts first)."""
    return compare(
        candidate.documents,
        production.documents,
        resamples=score_settings.bootstrap_resamples,
        confidence=score_settings.confidence,
        seed=seed,
        hss_documents=hss_documents,
    )


def gate_tables(
    candidate: ScoreResult,
    comparison: Mapping[str, Any],
    hss_documents: Collection[str] | None = None,
) -> dict[str, pd.DataFrame]:
    """The tables the suites validate: candidate documents, perturbations, category deltas,
    the facts bounds' paired intervals, and (facts first) the documents HSS was measured on."""
    documents = as_floats(pd.DataFrame(candidate.documents))
    tables = {
        "documents": documents,
        "perturbations": pd.DataFrame(candidate.perturbations),
        "categories": pd.DataFrame(comparison["categories"]),
        FACTS_BOUNDS: pd.DataFrame(bound_intervals(comparison)),
    }
    if hss_documents is not None:
        tables[HSS_DOCUMENTS] = documents[documents["doc_id"].isin(list(hss_documents))]
    return tables


def run_gate_checks(
    tables: Mapping[str, pd.DataFrame],
    gate: GateSettings,
    docs: Sequence[Document],
    perturbations_per_document: int,
    docs_dir: Path | None,
    hss_measured: bool = True,
    hss_documents: Collection[str] | None = None,
) -> list[dict[str, Any]]:
    """The gate's checks (hss_gate.decision.checks) as Great Expectations suites on the documents
    of this look (a category is checked on its own only with enough documents); Data Docs
    into docs_dir. HSS not measured (stored summaries without perturbed ones): its checks are
    skipped, not run on NaN. `hss_documents` (facts first): the HSS checks and the per-category
    ones run on those documents alone."""
    from hss_gate.decision.suites import gate_expectations

    measured = docs if hss_documents is None else [d for d in docs if d.doc_id in hss_documents]
    sizes = Counter(d.category for d in measured)
    subset = None
    if hss_documents is not None:
        subset = HssSubset(len(measured), tuple(sorted(sizes)))
    specs = gate_expectations(
        gate,
        categories=sorted({d.category for d in docs}),
        n_documents=len(docs),
        n_perturbations=len(measured) * perturbations_per_document,
        optional_columns=[c for c in OPTIONAL_COLUMNS if c in tables["documents"]],
        category_sizes=sizes,
        hss_measured=hss_measured,
        hss_subset=subset,
    )
    return validate_tables(tables, specs, docs_dir)


@dataclass
class Scored:
    """Each role's runs over the looks so far, its latest run metadata, and how many summaries
    it generated (None once a run did not say)."""

    parts: dict[str, list[ScoreResult]] = field(
        default_factory=lambda: {"candidate": [], "production": []}
    )
    metas: dict[str, dict[str, Any]] = field(default_factory=dict)
    generated: dict[str, int | None] = field(
        default_factory=lambda: {"candidate": 0, "production": 0}
    )

    def add(self, role: str, result: ScoreResult, meta: dict[str, Any]) -> None:
        """One more batch of a role's documents."""
        self.parts[role].append(result)
        self.metas[role] = meta
        made, so_far = meta.get("summaries_generated"), self.generated[role]
        self.generated[role] = None if made is None or so_far is None else so_far + made

    def merged(self, settings: HssSettings) -> tuple[ScoreResult, ScoreResult]:
        """The candidate's and production's runs over every document scored so far."""
        return (
            merge_results(self.parts["candidate"], settings),
            merge_results(self.parts["production"], settings),
        )


@dataclass
class Look:
    """One look: both runs over the documents seen so far, compared and checked."""

    documents: int
    candidate: ScoreResult
    production: ScoreResult
    comparison: dict[str, Any]
    checks: list[dict[str, Any]]
    verdict: str


@dataclass
class Looks:
    """The looks that were planned and taken (the last one decides), their confidence levels,
    the documents HSS was measured on, and what was scored."""

    plan: LookPlan
    levels: list[float]
    available: int
    hss: HssPlan
    order: list[Document] = field(default_factory=list)
    scored: Scored = field(default_factory=Scored)
    taken: list[Look] = field(default_factory=list)
    records: list[dict[str, Any]] = field(default_factory=list)  # as decision.json keeps them

    @property
    def planned(self) -> int:
        """How many looks were planned."""
        return len(self.plan.sizes)

    @property
    def last(self) -> Look:
        """The look that settled the decision."""
        return self.taken[-1]

    def hss_documents(self, start: int, end: int) -> list[str] | None:
        """The doc_ids among the order's documents start to end whose HSS is measured; None
        when HSS is measured on every document."""
        if self.hss.every:
            return None
        return [d.doc_id for d in self.order[start : min(end, self.hss.documents)]]


def plan_looks(run: GateRun, full: bool) -> Looks:
    """The looks (gate.looks or the default plan; `full`: one), each one's confidence level
    (gate.alpha_spending) and the documents HSS is measured on (gate.hss_documents)."""
    gate = run.settings.gate
    order = stratified_order(run.docs, lambda d: d.category)
    n_categories = len({d.category for d in order})
    plan = look_plan(len(order), n_categories, gate.looks, full)
    levels = look_levels(run.settings.score.confidence, plan.sizes, gate.alpha_spending)
    try:
        hss = hss_plan(gate.hss_subset(), gate.hss_blocks, plan.sizes, len(order), n_categories)
    except ValueError as exc:
        raise InputError(str(exc)) from exc
    return Looks(plan, levels, len(order), hss, order)


def planned_summaries(looks: Looks, versions: int) -> list[int]:
    """Each look's summaries on one side: an original's for every new document, and
    `versions` perturbed ones for each whose HSS is measured."""
    out, start = [], 0
    for n in looks.plan.sizes:
        measured = looks.hss_documents(start, n)
        out.append(n - start + versions * (n - start if measured is None else len(measured)))
        start = n
    return out


def score_looks(
    run: GateRun, full: bool, runner: ModelRunner, steps: Steps, progress: Progress, say: Say
) -> Looks:
    """Score both models look by look in a fixed stratified order (hss_gate.decision.sequential:
    each
    look at its spent confidence level, HSS on the planned documents only) until a look
    settles; `full`: one look."""
    looks = steps.compute(plan_looks, run, full)
    perturb = run.settings.perturb
    per_look = planned_summaries(looks, len(perturb.strengths) * perturb.k)
    work = PlanProgress(progress, len(run.roles) * sum(per_look))
    for line in (looks.plan.note, looks.hss.text):
        if line:
            say(line)
    start, sizes = 0, looks.plan.sizes
    for i, n in enumerate(sizes):
        measured = looks.hss_documents(start, n)
        hss_part = "" if measured is None else f", HSS on {len(measured)} of the {n - start} new"
        say(
            f"look {i + 1} of {len(sizes)}: {n} of {len(looks.order)} documents{hss_part}; "
            f"{work.status('if every look runs')}"
        )
        for role in run.roles:
            say(f"{role.name} {redacted_uri(role.uri)}")
            label = f"look {i + 1}/{len(sizes)} {role.name} summaries"
            part = looks.order[start:n]
            extra = {} if measured is None else {"hss_documents": measured}
            result, meta = runner(
                role.uri, part, role.settings, run.norm, work.step(label, per_look[i]), **extra
            )
            looks.scored.add(role.name, result, meta)
        work.end_step()
        look = check_look(run, looks, i, steps)
        looks.taken.append(look)
        looks.records.append(
            look_record(n, looks.levels[i], look.comparison["signals"], look.verdict)
        )
        if look.verdict != "continue":
            break
        start = n
    if len(looks.taken) < len(sizes):
        say(
            f"settled at look {len(looks.taken)} of {len(sizes)}: {work.done} of "
            f"{work.planned} planned summaries were needed"
        )
    return looks


def check_look(run: GateRun, looks: Looks, index: int, steps: Steps) -> Look:
    """Compare both runs over the documents seen at the look's confidence level, run the
    suites on the candidate's tables and give the look's verdict
    (hss_gate.decision.rule.judge_look)."""
    settings = run.settings
    n = looks.plan.sizes[index]
    seen = looks.order[:n]
    measured = looks.hss_documents(0, n)
    candidate, production = looks.scored.merged(settings)
    at_level = settings.score.model_copy(update={"confidence": looks.levels[index]})
    comparison = steps.compute(
        compare_runs, candidate, production, at_level, settings.perturb.seed, measured
    )
    tables = steps.compute(gate_tables, candidate, comparison, measured)
    judged = judge_look(
        comparison,
        production.documents,
        settings.gate,
        lambda gate: steps.compute(
            run_gate_checks,
            tables,
            gate,
            seen,
            len(settings.perturb.strengths) * settings.perturb.k,
            run.out_dir / "data_docs",
            comparison.get("hss_measured", True),
            None if measured is None else set(measured),
        ),
        last=index == len(looks.plan.sizes) - 1,
    )
    checks, verdict = judged.checks, judged.verdict
    return Look(len(seen), candidate, production, comparison, checks, verdict)
