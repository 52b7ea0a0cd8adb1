"""The promotion gate (`hss gate`, the `gate` flow): promote or block a candidate. Fails closed.

Steps, in order: load the settings, the documents and the production constants; build both
summarizers (a bad URI fails before any scoring); score the candidate, then production, on the
same perturbed documents (each run's tables written to OUT/candidate/ and OUT/production/);
compare them paired over documents; run the Great Expectations suites on the candidate's tables
(Data Docs to OUT/data_docs/); measure score drift (OUT/drift.html, drift.json); decide
(hss_gate.gate.decide); pick the documents that moved most; write decision.json, decision.md
and decision.html. Any error on the way becomes the decision "error", written like any other.
"""

from __future__ import annotations

import contextlib
import datetime as dt
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from hss_gate import __version__, decision_report, report
from hss_gate.corpus import Document
from hss_gate.errors import InputError, ReportError, error_message
from hss_gate.gate import Decision, apply_override, compare, decide, error_decision
from hss_gate.inputs import load_normalization
from hss_gate.io import write_json_atomic, write_text_atomic
from hss_gate.pipeline import ScoreResult, merge_results
from hss_gate.progress import Progress, no_progress
from hss_gate.redact import redacted_uri
from hss_gate.sequential import (
    clearly_not_worse,
    look_confidence,
    look_record,
    look_sizes,
    stratified_order,
)
from hss_gate.settings import (
    GateSettings,
    HssSettings,
    ScoreSettings,
    candidate_generate,
    read_candidate_file,
)
from hss_gate.workflows.score import (
    as_floats,
    check_model,
    load_documents,
    restore_summaries,
    score_drift,
    score_frame,
    validate_tables,
)
from hss_gate.workflows.steps import DIRECT, Outcome, Say, Scorer, Steps, silent

OPTIONAL_COLUMNS = ("attribution_instability", "factual_consistency")


@dataclass
class GateRequest:
    """What to gate: the candidate, production (default run.production_model) and where."""

    candidate: str | None
    production: str | None = None
    corpus: str | None = None
    limit: int | None = None
    out: str | None = None
    candidate_generate: dict[str, Any] = field(default_factory=dict)  # its own prompt, budget
    candidate_file: str | Path | None = None  # models/candidate.yaml: uri, generate
    junit: str | Path | None = None  # also write the checks as JUnit XML here
    full: bool = False  # every document, no sequential stopping
    override: tuple[str, str] | None = None  # (who, why): a human's override of a block


def decision_context(candidate: str, production: str | None) -> dict[str, str]:
    """Who was compared, when, by which hss-gate version (a Decision's context fields)."""
    return {
        "candidate": redacted_uri(candidate),
        "production": redacted_uri(production or ""),
        "created": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "hss_gate_version": __version__,
    }


def compare_runs(
    candidate: ScoreResult, production: ScoreResult, score: ScoreSettings, seed: int
) -> dict[str, Any]:
    """Paired comparison of the candidate with production on the same documents."""
    return compare(
        candidate.documents,
        production.documents,
        resamples=score.bootstrap_resamples,
        confidence=score.confidence,
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
) -> list[dict[str, Any]]:
    """Great Expectations suites from the params.yaml thresholds; Data Docs into docs_dir."""
    from hss_gate.expectations import gate_expectations

    specs = gate_expectations(
        gate,
        categories=sorted({d.category for d in docs}),
        n_documents=len(docs),
        n_perturbations=len(docs) * perturbations_per_document,
        optional_columns=[c for c in OPTIONAL_COLUMNS if c in tables["documents"]],
    )
    return validate_tables(tables, specs, docs_dir)


def gate_decision(
    comparison: Mapping[str, Any],
    checks: list[dict[str, Any]],
    drift: Mapping[str, Any] | None,
    gate: GateSettings,
    context: Mapping[str, str],
) -> Decision:
    """Promote or block (see hss_gate.gate.decide); `context` says who, when, which version."""
    return decide(comparison, checks, gate, drift=drift, **context)


def moved_most(candidate: ScoreResult, production: ScoreResult) -> list[dict[str, Any]]:
    """The documents whose HSS rose most, with both base summaries."""
    return decision_report.moved_most(
        candidate.documents,
        production.documents,
        (candidate.summaries, production.summaries),
    )


def look_verdict(
    comparison: Mapping[str, Any],
    checks: Sequence[Mapping[str, Any]],
    gate: GateSettings,
    last: bool,
) -> str:
    """ "block" (significantly worse at this look's level), "promote" (clearly not worse, or the
    corpus ran out unsettled), or "continue". Before the last look only the paired signals, the
    data checks and the candidate not summarizing can block: an absolute share measured on a
    few documents is too noisy to block on (it only holds back an early promotion)."""
    early = [c for c in checks if c["kind"] in ("data", "summarizes")]
    if decide(comparison, checks if last else early, gate).decision == "block":
        return "block"
    margins = (gate.consistency_margin, gate.unsupported_margin)
    advisory = gate.advisory_kinds()
    if last or clearly_not_worse(comparison["signals"], checks, *margins, advisory):
        return "promote"
    return "continue"


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


def run_gate(
    load_settings: Callable[[], HssSettings],
    request: GateRequest,
    *,
    score: Scorer,
    steps: Steps = DIRECT,
    progress: Progress = no_progress,
    say: Say = silent,
) -> Outcome[Decision]:
    """Run the gate's steps in order and write the decision; every error fails closed.

    Raises ReportError only when not even decision.json can be written."""
    candidate, production = request.candidate or "", request.production
    out_dir = Path(request.out or GateSettings().out)
    decision: Decision | None = None
    examples: list[dict[str, Any]] = []
    error: BaseException | None = None
    try:
        settings = steps.io(load_settings)
        out_dir = Path(request.out or settings.gate.out)
        production = production or settings.run.production_model
        uri, own = (
            read_candidate_file(request.candidate_file) if request.candidate_file else (None, {})
        )
        candidate = request.candidate or uri or ""
        if not candidate:
            raise InputError("no candidate: give --candidate URI or a candidate file with a `uri`")
        docs = steps.io(load_documents, request.corpus or settings.run.corpus, request.limit)
        norm = steps.io(load_normalization, settings.score.normalization)
        own = settings.model_copy(
            update={
                "generate": candidate_generate(settings.generate, own | request.candidate_generate)
            }
        )
        roles = (("candidate", candidate, own), ("production", production, settings))
        for _, uri, role_settings in roles:  # fail fast on a bad URI before any scoring
            steps.compute(check_model, uri, role_settings, score.toolkit(settings).embedder)
        metas: dict[str, dict[str, Any]] = {}
        stored = Path(settings.run.baseline_dir) / "reference"
        tools = score.toolkit(settings)
        restored = steps.io(restore_summaries, stored, production, docs, settings, tools)
        say(f"production: {restored}")
        order = stratified_order(docs, lambda d: d.category)
        plan = look_sizes(len(order), len({d.category for d in docs}), request.full)
        level = look_confidence(settings.score.confidence, len(plan))
        at_level = settings.score.model_copy(update={"confidence": level})
        parts: dict[str, list[ScoreResult]] = {"candidate": [], "production": []}
        looks: list[dict[str, Any]] = []
        generated: dict[str, int | None] = {"candidate": 0, "production": 0}
        for i, n in enumerate(plan):
            batch = order[(plan[i - 1] if i else 0) : n]
            say(f"look {i + 1} of {len(plan)}: {n} of {len(order)} documents")
            for role, uri, role_settings in roles:
                say(f"{role} {redacted_uri(uri)}")
                result, meta = score(uri, batch, role_settings, norm, progress)
                parts[role].append(result)
                metas[role] = meta
                made, so_far = meta.get("summaries_generated"), generated[role]
                generated[role] = None if made is None or so_far is None else so_far + made
            cand, prod = (merge_results(parts[r], settings) for r in ("candidate", "production"))
            seen = order[:n]
            comparison = steps.compute(compare_runs, cand, prod, at_level, settings.perturb.seed)
            checks = steps.compute(
                run_gate_checks,
                steps.compute(gate_tables, cand, comparison),
                settings.gate,
                seen,
                len(settings.perturb.strengths) * settings.perturb.k,
                out_dir / "data_docs",
            )
            verdict = look_verdict(comparison, checks, settings.gate, last=i == len(plan) - 1)
            looks.append(look_record(n, level, comparison["signals"], verdict))
            if verdict != "continue":
                break
        for role, result in (("candidate", cand), ("production", prod)):
            steps.io(report.write_outputs, out_dir / role, result, metas[role] | {"documents": n})
        checker = metas["candidate"].get("checker", "")
        drift = steps.compute(
            score_drift,
            steps.compute(score_frame, prod, settings.score.variant),
            steps.compute(score_frame, cand, settings.score.variant),
            settings.monitor,
            out_dir,
            f"{candidate} against production {production}",
        )
        decision = steps.compute(
            gate_decision,
            comparison,
            checks,
            drift,
            settings.gate,
            decision_context(candidate, production) | {"checker": checker},
        )
        decision.notes.append(f"production summaries: {restored}")
        decision.metrics["production"] = {
            "restored": restored,
            "summaries_generated": generated["production"],
            "candidate_summaries_generated": generated["candidate"],
        }
        decision.metrics["sequential"] = {
            "design": "group-sequential, Bonferroni alpha spending over the planned looks",
            "documents_used": n,
            "documents_available": len(order),
            "looks": looks,
            "stopped_early": n < len(order),
        }
        decision.notes.append(
            f"decided on {n} of {len(order)} documents after {len(looks)} of {len(plan)} "
            f"look(s) (each at {level:.2%} confidence, overall {settings.score.confidence:.0%})"
        )
        if request.override:
            decision = apply_override(decision, *request.override)
        examples = steps.compute(moved_most, cand, prod)
    except KeyboardInterrupt as exc:
        error, decision = (
            exc,
            error_decision("interrupted", **decision_context(candidate, production)),
        )
    except Exception as exc:  # the gate fails closed on any error
        error = exc
        decision = error_decision(error_message(exc), **decision_context(candidate, production))
    try:
        steps.io(write_decision, out_dir, decision, examples, request.junit)
    except Exception as exc:  # a verdict without its report fails closed too
        error = exc
        decision = error_decision(
            f"could not write the report: {type(exc).__name__}: {exc}",
            **decision_context(candidate, production),
        )
        try:
            write_json_atomic(out_dir / "decision.json", decision.model_dump(mode="json"))
        except Exception as again:
            raise ReportError(f"could not write the decision to {out_dir}: {again}") from again
        with contextlib.suppress(Exception):  # replace a stale verdict if the reports render
            write_decision(out_dir, decision, (), request.junit)
    return Outcome(decision, out_dir, error)
