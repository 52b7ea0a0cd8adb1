"""The gate's looks: both models scored look by look until a look settles (`score_looks`).

Each look scores the next documents of a fixed stratified order on both sides, compares the
runs paired over every document seen so far at the look's Bonferroni-spent confidence level
(hss_gate.sequential), runs the Great Expectations suites on the candidate's tables (Data Docs to
OUT/data_docs/) and gives the look's verdict (hss_gate.decision_rule.judge_look); the last look
taken decides (hss_gate.workflows.gate).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from hss_gate.corpus import Document
from hss_gate.decision_rule import judge_look
from hss_gate.paired_comparison import compare
from hss_gate.pipeline import ScoreResult, merge_results
from hss_gate.progress import Progress
from hss_gate.redact import redacted_uri
from hss_gate.sequential import look_confidence, look_record, look_sizes, stratified_order
from hss_gate.settings import GateSettings, HssSettings, ScoreSettings
from hss_gate.tables import OPTIONAL_COLUMNS
from hss_gate.workflows.gate_preparation import GateRun
from hss_gate.workflows.shared import as_floats, validate_tables
from hss_gate.workflows.steps import ModelRunner, Say, Steps


def compare_runs(
    candidate: ScoreResult, production: ScoreResult, score_settings: ScoreSettings, seed: int
) -> dict[str, Any]:
    """Paired comparison of the candidate with production on the same documents."""
    return compare(
        candidate.documents,
        production.documents,
        resamples=score_settings.bootstrap_resamples,
        confidence=score_settings.confidence,
        seed=seed,
    )


def gate_tables(candidate: ScoreResult, comparison: Mapping[str, Any]) -> dict[str, pd.DataFrame]:
    """The tables the suites validate: candidate documents, perturbations, category deltas."""
    documents = as_floats(pd.DataFrame(candidate.documents))
    return {
        "documents": documents,
        "perturbations": pd.DataFrame(candidate.perturbations),
        "categories": pd.DataFrame(comparison["categories"]),
    }


def run_gate_checks(
    tables: Mapping[str, pd.DataFrame],
    gate: GateSettings,
    docs: Sequence[Document],
    perturbations_per_document: int,
    docs_dir: Path | None,
    hss_measured: bool = True,
) -> list[dict[str, Any]]:
    """The gate's checks (hss_gate.gate_checks) as Great Expectations suites on the documents
    of this look (a category is checked on its own only with enough documents); Data Docs
    into docs_dir. HSS not measured (stored summaries without perturbed ones): its checks are
    skipped, not run on NaN."""
    from hss_gate.expectations import gate_expectations

    specs = gate_expectations(
        gate,
        categories=sorted({d.category for d in docs}),
        n_documents=len(docs),
        n_perturbations=len(docs) * perturbations_per_document,
        optional_columns=[c for c in OPTIONAL_COLUMNS if c in tables["documents"]],
        category_sizes=Counter(d.category for d in docs),
        hss_measured=hss_measured,
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
    """The looks that were taken (the last one decides) and what they scored."""

    planned: int
    level: float
    available: int
    scored: Scored = field(default_factory=Scored)
    taken: list[Look] = field(default_factory=list)
    records: list[dict[str, Any]] = field(default_factory=list)  # as decision.json keeps them

    @property
    def last(self) -> Look:
        """The look that settled the decision."""
        return self.taken[-1]


def score_looks(
    run: GateRun, full: bool, runner: ModelRunner, steps: Steps, progress: Progress, say: Say
) -> Looks:
    """Score both models look by look in a fixed stratified order (hss_gate.sequential: each
    look at its Bonferroni-spent confidence level) until a look settles; `full`: one look."""
    order = stratified_order(run.docs, lambda d: d.category)
    plan = look_sizes(len(order), len({d.category for d in order}), full)
    looks = Looks(len(plan), look_confidence(run.settings.score.confidence, len(plan)), len(order))
    start = 0
    for i, n in enumerate(plan):
        say(f"look {i + 1} of {len(plan)}: {n} of {len(order)} documents")
        for role in run.roles:
            say(f"{role.name} {redacted_uri(role.uri)}")
            result, meta = runner(role.uri, order[start:n], role.settings, run.norm, progress)
            looks.scored.add(role.name, result, meta)
        look = check_look(run, looks, order[:n], i == len(plan) - 1, steps)
        looks.taken.append(look)
        looks.records.append(look_record(n, looks.level, look.comparison["signals"], look.verdict))
        if look.verdict != "continue":
            break
        start = n
    return looks


def check_look(
    run: GateRun, looks: Looks, seen: Sequence[Document], last: bool, steps: Steps
) -> Look:
    """Compare both runs over the documents seen at the look's confidence level, run the
    suites on the candidate's tables and give the look's verdict
    (hss_gate.decision_rule.judge_look)."""
    settings = run.settings
    candidate, production = looks.scored.merged(settings)
    at_level = settings.score.model_copy(update={"confidence": looks.level})
    comparison = steps.compute(compare_runs, candidate, production, at_level, settings.perturb.seed)
    tables = steps.compute(gate_tables, candidate, comparison)
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
        ),
        last=last,
    )
    checks, verdict = judged.checks, judged.verdict
    return Look(len(seen), candidate, production, comparison, checks, verdict)
