"""The promotion gate (`hss gate`, the `gate` flow): promote or block a candidate. Fails closed.

`run_gate` runs these steps, in order, and writes the decision:

1. `prepare`: load the settings, the candidate's own generation settings, the documents and the
   production constants; build both summarizers (a bad URI fails before any scoring);
2. `restore_production`: production's stored summaries back into the cache when its
   fingerprint matches the baseline's;
3. `score_looks`: score both models look by look on the same perturbed documents, compare them
   paired over documents and run the Great Expectations suites on the candidate's tables (Data
   Docs to OUT/data_docs/), until a look settles (hss_gate.sequential);
4. `write_runs`, `measure_drift`: each run's tables to OUT/candidate/ and OUT/production/, score
   drift to OUT/drift.html and drift.json;
   (`attribute`, on request: gate.attribution_documents > 0) the attribution instability of
   the deciding look's first N documents, both sides (hss_gate.gate_attribution), as a column
   of each side's documents table and, with gate.max_attribution_instability, a check;
5. `decide_gate`: the decision (hss_gate.decision_rule.decide) with the looks and how production was
   obtained; a person's override; the documents that moved most;
6. `write_or_fail_closed`: decision.json, decision.md, decision.html (and JUnit XML).

Any error on the way becomes the decision "error", written like any other.
"""

from __future__ import annotations

import contextlib
import datetime as dt
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from hss_gate import decision_report, report
from hss_gate.corpus import Document
from hss_gate.decision_rule import decide, facts_bounds_relative_to
from hss_gate.errors import ModelError, ReportError, error_message
from hss_gate.gate import Decision, apply_override, error_decision
from hss_gate.gate_attribution import load_attribution_scorer
from hss_gate.io import write_json_atomic, write_text_atomic
from hss_gate.pipeline import ScoreResult
from hss_gate.progress import Progress, no_progress
from hss_gate.redact import redacted_uri
from hss_gate.settings import GateSettings, HssSettings
from hss_gate.workflows.gate_looks import Look, Looks, score_looks
from hss_gate.workflows.gate_preparation import (
    GateRequest,
    GateRun,
    Role,
    Where,
    decision_context,
    prepare,
    restore_production,
)
from hss_gate.workflows.shared import score_drift, score_frame, validate_tables
from hss_gate.workflows.steps import DIRECT, ModelRunner, Outcome, Say, Steps, silent


def gate_decision(
    comparison: Mapping[str, Any],
    checks: list[dict[str, Any]],
    drift: Mapping[str, Any] | None,
    gate: GateSettings,
    context: Mapping[str, str],
) -> Decision:
    """Promote or block (hss_gate.decision_rule.decide); `context`: who, when, which version."""
    return decide(comparison, checks, gate, drift=drift, **context)


def moved_most(candidate: ScoreResult, production: ScoreResult) -> list[dict[str, Any]]:
    """The documents whose HSS rose most, with both base summaries."""
    return decision_report.moved_most(
        candidate.documents,
        production.documents,
        (candidate.summaries, production.summaries),
    )


def write_decision(
    out: Path,
    decision: Decision,
    examples: Sequence[Mapping[str, Any]] = (),
    junit: str | Path | None = None,
) -> None:
    """decision.json, decision.md and decision.html (each written atomically), and the JUnit
    XML when asked for."""
    write_json_atomic(out / "decision.json", decision.model_dump(mode="json"))
    if junit is not None:
        write_text_atomic(junit, decision_report.decision_junit(decision))
    write_text_atomic(out / "decision.md", decision_report.decision_markdown(decision))
    write_text_atomic(out / "decision.html", decision_report.decision_html(decision, examples))


def write_runs(run: GateRun, looks: Looks, steps: Steps) -> None:
    """Each model's score tables and report over the documents used, to OUT/<role>/."""
    last = looks.last
    for role, result in (("candidate", last.candidate), ("production", last.production)):
        meta = looks.scored.metas[role] | {"documents": last.documents}
        steps.io(report.write_outputs, run.out_dir / role, result, meta)


def measure_drift(run: GateRun, look: Look, steps: Steps) -> dict[str, Any]:
    """The candidate's score distributions against production's (Evidently), to OUT/."""
    variant = run.settings.score.variant
    return steps.compute(
        score_drift,
        steps.compute(score_frame, look.production, variant),
        steps.compute(score_frame, look.candidate, variant),
        run.settings.monitor,
        run.out_dir,
        f"{run.candidate.uri} against production {run.production.uri}",
    )


ScorerLoader = Callable[[str, HssSettings], Any]
"""Builds the teacher-forced likelihood scorer of a model URI with a role's settings; raises
ModelError for a model without one (stored summaries, openai:, extractive)."""
PerturbedTexts = Callable[[Role, Sequence[Document]], dict[str, list[str]]]
"""A role's perturbed versions of each document: the texts HSS scored."""


def gate_perturbations(runner: ModelRunner) -> PerturbedTexts:
    """The perturbed texts HSS scored (hss_gate.pipeline.make_perturbations, from the cache)."""

    def texts(role: Role, docs: Sequence[Document]) -> dict[str, list[str]]:
        from hss_gate.cache import Cache
        from hss_gate.gate_attribution import in_explained_order
        from hss_gate.pipeline import make_perturbations

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
    scorers: ScorerLoader,
    say: Say = silent,
    restore: Mapping[str, bytes] | None = None,
) -> Any:
    """One side's attribution instability on `docs` (hss_gate.gate_attribution.Side); a model
    without a likelihood is not measured, with the reason. `restore`: stored results (the
    baseline's, hss_gate.gate_attribution.read_baseline_results) put into the run cache first;
    the side counts the documents whose result was one of them."""
    from hss_gate.cache import Cache
    from hss_gate.gate_attribution import NAMESPACE, Side, explain_documents

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
    from hss_gate.gate_attribution import COLUMN

    if side.not_measured is not None:
        return
    values = {d.doc_id: d.rank for d in side.documents}
    for row in result.documents:
        row[COLUMN] = float(values.get(row["doc_id"], float("nan")))


def attribution_checks(
    candidate: ScoreResult, gate: GateSettings, docs_dir: Path | None
) -> list[dict[str, Any]]:
    """Run the attribution checks (declared in hss_gate.gate_checks.attribution_checks) on the
    candidate's explained documents only: the column is there, not null and in range, and its
    mean at most gate.max_attribution_instability."""
    from hss_gate.expectations import attribution_expectations
    from hss_gate.gate_attribution import COLUMN
    from hss_gate.gate_checks import DOCUMENTS

    rows = [r for r in candidate.documents if np.isfinite(r.get(COLUMN, np.nan))]
    frame = pd.DataFrame({"doc_id": [r["doc_id"] for r in rows], COLUMN: [r[COLUMN] for r in rows]})
    return validate_tables({DOCUMENTS: frame}, attribution_expectations(gate), docs_dir)


def attribute(
    run: GateRun,
    look: Look,
    perturbed: PerturbedTexts,
    scorers: ScorerLoader,
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
    from hss_gate.gate_attribution import BASELINE_FILE, attribution_record, read_baseline_results

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


def decide_gate(
    run: GateRun, looks: Looks, drift: Mapping[str, Any] | None, restored: str, steps: Steps
) -> Decision:
    """The decision on the last look, with how production's summaries were obtained and
    which documents and looks decided."""
    last, scored = looks.last, looks.scored
    context = decision_context(run.candidate.uri, run.production.uri)
    context["checker"] = scored.metas["candidate"].get("checker", "")
    decision = steps.compute(
        gate_decision, last.comparison, last.checks, drift, run.settings.gate, context
    )
    decision.add_note("production.restored", f"production summaries: {restored}")
    if run.length_target is not None:
        words, source = run.length_target
        decision.metrics["length_target"] = {"words": words, "from": source}
        decision.add_note("length.target", f"summary length target: {words} words, from {source}")
    if run.pairing is not None:
        decision.metrics["pairing"] = run.pairing.record()
        if run.pairing.text():
            decision.add_note("documents.dropped", run.pairing.text())
    decision.add_note(
        "facts.relative",
        facts_bounds_relative_to(run.settings.gate, last.production.documents)[1],
    )
    decision.metrics["production"] = {
        "restored": restored,
        "summaries_generated": scored.generated["production"],
        "candidate_summaries_generated": scored.generated["candidate"],
    }
    decision.metrics["sequential"] = {
        "design": "group-sequential, Bonferroni alpha spending over the planned looks",
        "documents_used": last.documents,
        "documents_available": looks.available,
        "looks": looks.records,
        "stopped_early": last.documents < looks.available,
    }
    decision.add_note(
        "sequential.documents",
        f"decided on {last.documents} of {looks.available} documents after {len(looks.taken)} "
        f"of {looks.planned} look(s) (each at {looks.level:.2%} confidence, overall "
        f"{run.settings.score.confidence:.0%})",
    )
    return decision


def add_attribution(decision: Decision, record: Mapping[str, Any]) -> None:
    """metrics.attribution and a note beside HSS; a threshold set but not checkable (the
    candidate not measured) is said."""
    from hss_gate.gate_attribution import attribution_text

    decision.metrics["attribution"] = dict(record)
    decision.add_note("attribution.instability", attribution_text(record))
    if record.get("checked") is False:
        decision.add_note(
            "attribution.not_checked",
            "gate.max_attribution_instability is set but the candidate's attribution "
            "instability was not measured: not checked",
        )


def gate_steps(
    load_settings: Callable[[], HssSettings],
    request: GateRequest,
    where: Where,
    *,
    runner: ModelRunner,
    steps: Steps,
    progress: Progress,
    say: Say,
    scorers: ScorerLoader | None = None,
    perturbed: PerturbedTexts | None = None,
) -> tuple[Decision, list[dict[str, Any]]]:
    """The gate's steps in order: the decision and the documents that moved most. `scorers`
    and `perturbed` replace the attribution step's model and perturbations (tests)."""
    run = prepare(load_settings, request, where, runner, steps)
    restored = restore_production(run, runner, steps, say)
    looks = score_looks(run, request.full, runner, steps, progress, say)
    attribution = attribute(
        run,
        looks.last,
        perturbed or gate_perturbations(runner),
        scorers or load_attribution_scorer,
        steps,
        say,
    )
    write_runs(run, looks, steps)
    drift = measure_drift(run, looks.last, steps)
    decision = decide_gate(run, looks, drift, restored, steps)
    if attribution is not None:
        add_attribution(decision, attribution)
    if request.override:
        decision = apply_override(decision, *request.override)
    return decision, steps.compute(moved_most, looks.last.candidate, looks.last.production)


def run_gate(
    load_settings: Callable[[], HssSettings],
    request: GateRequest,
    *,
    runner: ModelRunner,
    steps: Steps = DIRECT,
    progress: Progress = no_progress,
    say: Say = silent,
    scorers: ScorerLoader | None = None,
    perturbed: PerturbedTexts | None = None,
) -> Outcome[Decision]:
    """Run the gate's steps in order and write the decision; every error fails closed.

    Raises ReportError only when not even decision.json can be written."""
    out_dir = Path(request.out or GateSettings().out)
    where = Where(request.candidate or "", request.production, out_dir)
    examples: list[dict[str, Any]] = []
    error: BaseException | None = None
    try:
        decision, examples = gate_steps(
            load_settings,
            request,
            where,
            runner=runner,
            steps=steps,
            progress=progress,
            say=say,
            scorers=scorers,
            perturbed=perturbed,
        )
    except KeyboardInterrupt as exc:
        error, decision = exc, error_decision("interrupted", **where.context())
    except Exception as exc:  # the gate fails closed on any error
        error, decision = exc, error_decision(error_message(exc), **where.context())
    return write_or_fail_closed(where, decision, examples, request.junit, steps, error)


def write_or_fail_closed(
    where: Where,
    decision: Decision,
    examples: Sequence[Mapping[str, Any]],
    junit: str | Path | None,
    steps: Steps,
    error: BaseException | None,
) -> Outcome[Decision]:
    """Write the decision; a verdict without its report fails closed too (decision.json says
    "error", and the reports are replaced when they render)."""
    out_dir = where.out_dir
    try:
        steps.io(write_decision, out_dir, decision, examples, junit)
    except Exception as exc:
        error = exc
        decision = error_decision(
            f"could not write the report: {type(exc).__name__}: {exc}", **where.context()
        )
        try:
            write_json_atomic(out_dir / "decision.json", decision.model_dump(mode="json"))
        except Exception as again:
            raise ReportError(f"could not write the decision to {out_dir}: {again}") from again
        with contextlib.suppress(Exception):  # replace a stale verdict if the reports render
            write_decision(out_dir, decision, (), junit)
    return Outcome(decision, out_dir, error)
