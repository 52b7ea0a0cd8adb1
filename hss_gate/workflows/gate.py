"""The promotion gate (`hss gate`, the `gate` flow): promote or block a candidate. Fails closed.

`run_gate` runs these steps (`gate_steps`), in order, and writes the decision:

1. `prepare` (gate_preparation.py): load the settings, the candidate's own generation settings,
   the documents and the production constants; build both summarizers (a bad URI fails before
   any scoring);
2. `restore_production` (gate_preparation.py): production's stored summaries back into the
   cache when its fingerprint matches the baseline's;
3. `score_looks` (gate_looks.py): score both models look by look on the same perturbed
   documents, compare them paired over documents and run the Great Expectations suites on the
   candidate's tables (Data Docs to OUT/data_docs/), until a look settles
   (hss_gate.decision.sequential);
4. `attribute` (gate_explanation.py; on request: gate.attribution_documents > 0): the
   attribution instability of the deciding look's first N documents, both sides
   (hss_gate.decision.attribution), as a column of each side's documents table and, with
   gate.max_attribution_instability, a check;
5. `write_runs`, `measure_drift`: each run's tables to OUT/candidate/ and OUT/production/, score
   drift to OUT/drift.html and drift.json;
6. `decide_gate`: the decision (hss_gate.decision.rule.decide) with the looks and how
   production was obtained, and the attribution (`add_attribution`); a person's override; what
   decision.html shows beside it (`Shown`: the documents that moved most, each paired
   document's values for its pictures);
7. `write_or_fail_closed`: decision.json, decision.md, decision.html (and JUnit XML).

Any error on the way becomes the decision "error", written like any other. The request
(`GateRequest`, `gate_request`) is gate_preparation.py's; `Role` and `attribute_side` stay
importable from here, where the monitor's windows import them.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hss_gate.common.errors import ReportError, error_message
from hss_gate.common.io import write_json_atomic, write_text_atomic
from hss_gate.common.progress import Progress, no_progress
from hss_gate.decision import reports
from hss_gate.decision.attribution import load_attribution_scorer
from hss_gate.decision.paired_comparison import difference_text
from hss_gate.decision.record import Decision, apply_override, error_decision
from hss_gate.decision.rule import decide, facts_bounds_relative_to
from hss_gate.scoring import run_files
from hss_gate.scoring.pipeline import ScoreResult
from hss_gate.settings import GateSettings, HssSettings
from hss_gate.workflows.gate_explanation import (
    LikelihoodLoader,
    PerturbedTexts,
    add_attribution,
    attribute,
    gate_perturbations,
)
from hss_gate.workflows.gate_looks import Look, Looks, score_looks
from hss_gate.workflows.gate_preparation import (
    GateRequest,
    GateRun,
    Where,
    decision_context,
    prepare,
    restore_production,
)
from hss_gate.workflows.shared import score_drift, score_frame
from hss_gate.workflows.steps import DIRECT, ModelRunner, Outcome, Say, Steps, silent


def gate_decision(
    comparison: Mapping[str, Any],
    checks: list[dict[str, Any]],
    drift: Mapping[str, Any] | None,
    gate: GateSettings,
    context: Mapping[str, str],
) -> Decision:
    """Promote or block (hss_gate.decision.rule.decide); `context`: who, when, which version."""
    return decide(comparison, checks, gate, drift=drift, **context)


def moved_most(candidate: ScoreResult, production: ScoreResult) -> list[dict[str, Any]]:
    """The documents whose HSS rose most, with both base summaries."""
    return reports.moved_most(
        candidate.documents,
        production.documents,
        (candidate.summaries, production.summaries),
    )


def paired_documents(candidate: ScoreResult, production: ScoreResult) -> list[dict[str, Any]]:
    """Each document's values on both sides, for decision.html's pictures."""
    return reports.paired_documents(candidate.documents, production.documents)


@dataclass
class Shown:
    """What decision.html shows beside the decision: the documents that moved most and each
    paired document's values (its pictures)."""

    examples: list[dict[str, Any]] = field(default_factory=list)
    documents: list[dict[str, Any]] = field(default_factory=list)


def write_decision(
    out: Path,
    decision: Decision,
    examples: Sequence[Mapping[str, Any]] = (),
    junit: str | Path | None = None,
    documents: Sequence[Mapping[str, Any]] = (),
) -> None:
    """decision.json, decision.md and decision.html (each written atomically), and the JUnit
    XML when asked for."""
    write_json_atomic(out / "decision.json", decision.model_dump(mode="json"))
    if junit is not None:
        write_text_atomic(junit, reports.decision_junit(decision))
    write_text_atomic(out / "decision.md", reports.decision_markdown(decision))
    page = reports.decision_html(decision, examples, documents)
    write_text_atomic(out / "decision.html", page)


def write_runs(run: GateRun, looks: Looks, steps: Steps) -> None:
    """Each model's score tables and report over the documents used, to OUT/<role>/."""
    last = looks.last
    for role, result in (("candidate", last.candidate), ("production", last.production)):
        meta = looks.scored.metas[role] | {"documents": last.documents}
        steps.io(run_files.write_outputs, run.out_dir / role, result, meta)


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
    add_sequential(decision, run, looks)
    return decision


def add_sequential(decision: Decision, run: GateRun, looks: Looks) -> None:
    """The looks (metrics.sequential) and what they rested on, as notes: the documents and
    looks that decided, the plan when gate.looks did not fit the corpus, the documents HSS was
    measured on (facts first)."""
    last, gate = looks.last, run.settings.gate
    spending = gate.alpha_spending
    design = "group-sequential, Bonferroni alpha spending over the planned looks"
    if spending != "bonferroni" or gate.looks:
        design = (
            f"group-sequential, {spending} alpha spending over the planned looks "
            f"{looks.plan.sizes}" + (" (Lan-DeMets increments)" if spending != "bonferroni" else "")
        )
    decision.metrics["sequential"] = {
        "design": design,
        "documents_used": last.documents,
        "documents_available": looks.available,
        "looks": looks.records,
        "stopped_early": last.documents < looks.available,
    }
    levels = looks.levels[: len(looks.taken)]
    at = (
        f"each at {levels[0]:.2%} confidence"
        if len(set(looks.levels)) == 1
        else "at " + ", ".join(f"{level:.2%}" for level in levels) + f" confidence ({spending})"
    )
    decision.add_note(
        "sequential.documents",
        f"decided on {last.documents} of {looks.available} documents after {len(looks.taken)} "
        f"of {looks.planned} look(s) ({at}, overall {run.settings.score.confidence:.0%})",
    )
    if looks.plan.note:
        decision.add_note("sequential.plan", looks.plan.note)
    if looks.hss.text:
        decision.add_note("hss.subset", hss_subset_text(looks), signal="hss")


def hss_subset_text(looks: Looks) -> str:
    """What HSS rests on (facts first): the plan's text, the documents of the deciding look it
    was measured on, and its paired difference with its CI there."""
    comparison = looks.last.comparison
    if looks.hss.every:  # a stated fallback: every document after all
        return looks.hss.text
    n = comparison.get("hss_documents", 0)
    hss = comparison["signals"].get("hss")
    measured = (
        f"HSS {difference_text(hss)} "
        f"({hss['candidate']:.3f} vs {hss['production']:.3f}) rests on {n} of the "
        f"{looks.last.documents} documents of the deciding look"
        if hss
        else f"HSS not measured on the {n} documents of the deciding look it was planned for"
    )
    return f"{looks.hss.text}: {measured}; reported, not blocking (gate.hss_blocks false)"


def gate_steps(
    load_settings: Callable[[], HssSettings],
    request: GateRequest,
    where: Where,
    *,
    runner: ModelRunner,
    steps: Steps,
    progress: Progress,
    say: Say,
    scorers: LikelihoodLoader | None = None,
    perturbed: PerturbedTexts | None = None,
) -> tuple[Decision, Shown]:
    """The gate's steps in order: the decision and what its page shows beside it (the
    documents that moved most, each paired document's values). `scorers` and `perturbed`
    replace the attribution step's model and perturbations (tests)."""
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
    last = looks.last
    return decision, Shown(
        steps.compute(moved_most, last.candidate, last.production),
        steps.compute(paired_documents, last.candidate, last.production),
    )


def run_gate(
    load_settings: Callable[[], HssSettings],
    request: GateRequest,
    *,
    runner: ModelRunner,
    steps: Steps = DIRECT,
    progress: Progress = no_progress,
    say: Say = silent,
    scorers: LikelihoodLoader | None = None,
    perturbed: PerturbedTexts | None = None,
) -> Outcome[Decision]:
    """Run the gate's steps in order and write the decision; every error fails closed.

    Raises ReportError only when not even decision.json can be written."""
    out_dir = Path(request.out or GateSettings().out)
    where = Where(request.candidate or "", request.production, out_dir)
    shown = Shown()
    error: BaseException | None = None
    try:
        decision, shown = gate_steps(
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
    return write_or_fail_closed(where, decision, shown, request.junit, steps, error)


def write_or_fail_closed(
    where: Where,
    decision: Decision,
    shown: Shown,
    junit: str | Path | None,
    steps: Steps,
    error: BaseException | None,
) -> Outcome[Decision]:
    """Write the decision; a verdict without its report fails closed too (decision.json says
    "error", and the reports are replaced when they render)."""
    out_dir = where.out_dir
    try:
        steps.io(write_decision, out_dir, decision, shown.examples, junit, shown.documents)
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
