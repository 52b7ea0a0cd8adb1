"""The gate's attribution step, on request (gate.attribution_documents = N > 0): `attribute`.

The deciding look's first N documents are explained on both sides with sentence-level SHAP
(hss_gate.decision.attribution); each side's attribution instability becomes a column of its
documents table and, with gate.max_attribution_instability set, the candidate's mean is checked
(the checks declared in hss_gate.decision.checks, run beside the look's own); `add_attribution` puts
metrics.attribution and its note into the decision. The monitor's windows explain their samples
with the same side (`attribute_side`) and the gate's perturbations (`gate_perturbations`).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from hss_gate.common.errors import ModelError, error_message
from hss_gate.common.redact import redacted_uri
from hss_gate.decision.record import Decision
from hss_gate.scoring.pipeline import ScoreResult
from hss_gate.settings import GateSettings, HssSettings
from hss_gate.text.corpus import Document
from hss_gate.workflows.gate_looks import Look
from hss_gate.workflows.gate_preparation import GateRun, Role
from hss_gate.workflows.shared import validate_tables
from hss_gate.workflows.steps import ModelRunner, Say, Steps, silent

LikelihoodLoader = Callable[[str, HssSettings], Any]
"""Builds the teacher-forced likelihood scorer of a model URI with a role's settings; raises
ModelError for a model without one (stored summaries, openai:, extractive)."""


PerturbedTexts = Callable[[Role, Sequence[Document]], dict[str, list[str]]]
"""A role's perturbed versions of each document: the texts HSS scored."""


def gate_perturbations(runner: ModelRunner) -> PerturbedTexts:
    """The perturbed texts HSS scored (hss_gate.scoring.pipeline.make_perturbations, from the
    cache)."""

    def texts(role: Role, docs: Sequence[Document]) -> dict[str, list[str]]:
        from hss_gate.common.cache import Cache
        from hss_gate.decision.attribution import in_explained_order
        from hss_gate.scoring.pipeline import make_perturbations

        cache = Cache(role.settings.run.cache_dir)
        try:
            made = make_perturbations(docs, role.settings, runner.toolkit(role.settings), cache)
        finally:
            cache.close()
        return {
            doc_id: in_explained_order([(p.index, p.text) for p in ps])
            for doc_id, ps in made.items()
        }

    return texts


def attribute_side(
    role: Role,
    docs: Sequence[Document],
    base: Mapping[str, str],
    perturbed: PerturbedTexts,
    scorers: LikelihoodLoader,
    say: Say = silent,
    restore: Mapping[str, bytes] | None = None,
) -> Any:
    """One side's attribution instability on `docs` (hss_gate.decision.attribution.Side); a model
    without a likelihood is not measured, with the reason. `restore`: stored results (the
    baseline's, hss_gate.decision.attribution.read_baseline_results) put into the run cache first;
    the side counts the documents whose result was one of them."""
    from hss_gate.common.cache import Cache
    from hss_gate.decision.attribution import NAMESPACE, Side, explain_documents

    side = Side(redacted_uri(role.uri))
    started = dt.datetime.now(dt.UTC)
    try:
        scorer = scorers(role.uri, role.settings)
    except ModelError as exc:
        side.not_measured = error_message(exc)
        say(f"attribution {role.name}: not measured ({side.not_measured})")
        return side
    side.load_seconds = (dt.datetime.now(dt.UTC) - started).total_seconds()
    texts = perturbed(role, docs)

    def said(explained: Any) -> None:
        say(
            f"attribution {role.name} {explained.doc_id}: rank instability {explained.rank:.3f} "
            f"({explained.sentences} sentences, {explained.evaluations} evaluations, "
            f"{'cached' if explained.cached else f'{explained.seconds:.1f} s'})"
        )

    cache = Cache(role.settings.run.cache_dir)
    try:
        if restore:
            cache.put_many(NAMESPACE, dict(restore))
        found = explain_documents(scorer, cache, docs, base, texts, role.settings, said)
    finally:
        cache.close()
    side.documents = [explained for _, explained in found]
    if restore is not None:
        side.restored = sum(key in restore for key, _ in found)
        say(
            f"attribution {role.name}: {side.restored} of {len(docs)} documents restored from "
            "the baseline"
        )
    return side


def base_summaries(result: ScoreResult) -> dict[str, str]:
    """doc_id -> the base summary (summaries table, strength "base")."""
    return {r["doc_id"]: r["summary"] for r in result.summaries if r["strength"] == "base"}


def add_attribution_column(result: ScoreResult, side: Any) -> None:
    """The `attribution_instability` column in a side's documents rows: the explained
    documents' values, NaN for the others (a side not measured gets no column)."""
    from hss_gate.decision.attribution import COLUMN

    if side.not_measured is not None:
        return
    values = {d.doc_id: d.rank for d in side.documents}
    for row in result.documents:
        row[COLUMN] = float(values.get(row["doc_id"], float("nan")))


def attribution_checks(
    candidate: ScoreResult, gate: GateSettings, docs_dir: Path | None
) -> list[dict[str, Any]]:
    """Run the attribution checks (declared in hss_gate.decision.checks.attribution_checks) on the
    candidate's explained documents only: the column is there, not null and in range, and its
    mean at most gate.max_attribution_instability."""
    from hss_gate.decision.attribution import COLUMN
    from hss_gate.decision.checks import DOCUMENTS
    from hss_gate.decision.suites import attribution_expectations

    rows = [r for r in candidate.documents if np.isfinite(r.get(COLUMN, np.nan))]
    frame = pd.DataFrame({"doc_id": [r["doc_id"] for r in rows], COLUMN: [r[COLUMN] for r in rows]})
    return validate_tables({DOCUMENTS: frame}, attribution_expectations(gate), docs_dir)


def attribute(
    run: GateRun,
    look: Look,
    perturbed: PerturbedTexts,
    scorers: LikelihoodLoader,
    steps: Steps,
    say: Say = silent,
) -> dict[str, Any] | None:
    """On request (gate.attribution_documents = N > 0): explain the deciding look's first N
    documents on both sides, add each side's `attribution_instability` column, and check the
    candidate's mean against gate.max_attribution_instability when it is set (the check joins
    the look's checks, so it blocks like them). Production's results stored with the baseline
    (BASELINE/attribution.jsonl, `hss baseline --stage attribution`) are restored first: a
    document whose model, text, summary, perturbations and settings are the stored ones is not
    explained again. Returns decision.json's metrics.attribution."""
    from hss_gate.decision.attribution import (
        BASELINE_FILE,
        attribution_record,
        read_baseline_results,
    )

    gate = run.settings.gate
    n = gate.attribution_documents
    if n <= 0:
        return None
    by_id = {d.doc_id: d for d in run.docs}
    docs = [by_id[r["doc_id"]] for r in look.candidate.documents[:n]]
    say(f"attribution: {len(docs)} document(s) per side, sentence-level SHAP")
    stored = Path(run.settings.run.baseline_dir) / BASELINE_FILE
    restore = steps.io(read_baseline_results, stored)
    if restore is None:
        say(f"attribution production: no {stored}, nothing to restore")
    sides = {}
    for role, result in ((run.candidate, look.candidate), (run.production, look.production)):
        kept = restore if role is run.production else None
        side = attribute_side(role, docs, base_summaries(result), perturbed, scorers, say, kept)
        add_attribution_column(result, side)  # in place: not a task that may copy its inputs
        sides[role.name] = side
    score = run.settings.score
    record = steps.compute(
        attribution_record,
        sides["candidate"],
        sides["production"],
        gate.attribution,
        n,
        resamples=score.bootstrap_resamples,
        confidence=score.confidence,
        seed=run.settings.perturb.seed,
    )
    if gate.max_attribution_instability is not None:
        if sides["candidate"].not_measured is None and sides["candidate"].values():
            look.checks += steps.compute(attribution_checks, look.candidate, gate, None)
            record["checked"] = True
        else:
            record["checked"] = False
    return record


def add_attribution(decision: Decision, record: Mapping[str, Any]) -> None:
    """metrics.attribution and a note beside HSS; a threshold set but not checkable (the
    candidate not measured) is said."""
    from hss_gate.decision.attribution import attribution_text

    decision.metrics["attribution"] = dict(record)
    decision.add_note("attribution.instability", attribution_text(record))
    if record.get("checked") is False:
        decision.add_note(
            "attribution.not_checked",
            "gate.max_attribution_instability is set but the candidate's attribution "
            "instability was not measured: not checked",
        )
