"""The `gate` flow: what `hss gate` does, as Prefect tasks. Fails closed.

Score the candidate and the production model on the same reference documents, compare them
(paired bootstrap), run the Great Expectations suites, measure score drift (Evidently), decide,
and write decision.json / decision.md / decision.html. Any error before the decision (a bad URI,
a model that does not load, missing baseline files, a failed suite run) becomes the decision
"error", written like any other: the flow returns it and does not raise.

    python -m flows.gate --candidate hf:./my-checkpoint --limit 8 --out outputs/gate
    (exit code 0 = promote, 1 = block, 2 = error, as `hss gate`)
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from prefect import flow, get_run_logger

from flows.scoring import (
    add_common_arguments,
    compute_task,
    error_message,
    io_task,
    load_corpus_task,
    load_normalization_task,
    load_settings_task,
    markdown_artifact_task,
    process_toolkit,
    score_drift_task,
    score_frame_task,
    score_subflow,
    write_outputs_task,
)
from hss_gate.gate import Decision


@compute_task
def check_model_task(uri: str, settings: Any) -> str:
    """Build (without loading) the summarizer a URI names: a bad URI fails before any scoring."""
    from hss_gate.summarizers import load_summarizer

    return load_summarizer(uri, settings, process_toolkit(settings).embedder).fingerprint


@compute_task
def compare_runs_task(candidate: Any, production: Any, settings: Any) -> dict[str, Any]:
    """Paired comparison of the candidate with production."""
    from hss_gate.promotion import compare_runs

    return compare_runs(candidate, production, settings)


@compute_task
def gate_tables_task(candidate: Any, comparison: dict[str, Any]) -> dict[str, Any]:
    """The tables the suites validate."""
    from hss_gate.promotion import gate_tables

    return gate_tables(candidate, comparison)


@compute_task
def gate_checks_task(
    tables: dict[str, Any], settings: Any, docs: list[Any], docs_dir: str
) -> list[dict[str, Any]]:
    """The Great Expectations suites from the params.yaml thresholds (Data Docs into docs_dir)."""
    from hss_gate.promotion import run_gate_checks

    return run_gate_checks(tables, settings, docs, Path(docs_dir))


@compute_task
def gate_decision_task(
    comparison: dict[str, Any],
    checks: list[dict[str, Any]],
    drift: dict[str, Any] | None,
    settings: Any,
    context: dict[str, str],
) -> Decision:
    """Promote or block."""
    from hss_gate.promotion import gate_decision

    return gate_decision(comparison, checks, drift, settings, **context)


@compute_task
def moved_most_task(candidate: Any, production: Any) -> list[dict[str, Any]]:
    """The documents whose HSS rose most, with both base summaries."""
    from hss_gate.decision_report import moved_most

    return moved_most(
        candidate.documents, production.documents, (candidate.summaries, production.summaries)
    )


@io_task
def write_decision_task(out_dir: str, decision: Decision, examples: list[dict[str, Any]]) -> str:
    """decision.json, decision.md and decision.html."""
    from hss_gate.decision_report import write_decision

    write_decision(Path(out_dir), decision, examples)
    return str(Path(out_dir) / "decision.json")


@flow(name="gate", log_prints=True)
def gate_flow(
    candidate: str,
    production: str | None = None,
    params: str = "params.yaml",
    corpus: str | None = None,
    out: str | None = None,
    limit: int | None = None,
    k: int | None = None,
    overrides: dict[str, Any] | None = None,
    workers: int = 1,
    dask_address: str | None = None,
    chunk_size: int | None = None,
) -> Decision:
    """Promote or block a candidate against production (the steps and order of `hss gate`).

    Returns the Decision ("promote", "block" or "error") after writing it to `out`
    (default gate.out). `overrides` are extra settings as `section__key`; `workers` > 1 or
    `dask_address` fans the scoring out over Dask.
    """
    from hss_gate.decision_report import decision_markdown
    from hss_gate.errors import InputError
    from hss_gate.gate import error_decision
    from hss_gate.promotion import decision_context

    logger = get_run_logger()
    out_dir = out or "outputs/gate"
    decision: Decision | None = None
    examples: list[dict[str, Any]] = []
    try:
        settings = load_settings_task(params, {"perturb__k": k, **(overrides or {})})
        out_dir = out or settings.gate.out
        production = production or settings.run.production_model
        if limit is not None and limit < 1:
            raise InputError("limit must be at least 1")
        docs = load_corpus_task(corpus or settings.run.corpus, limit)
        norm = load_normalization_task(settings.score.normalization)
        for uri in (candidate, production):  # fail fast on a bad URI before any scoring
            check_model_task(uri, settings)
        results = {}
        for role, uri in (("candidate", candidate), ("production", production)):
            logger.info("scoring the %s %s on %d documents", role, uri, len(docs))
            result, meta = score_subflow(
                uri,
                docs,
                settings,
                norm,
                workers=workers,
                dask_address=dask_address,
                chunk_size=chunk_size,
            )
            write_outputs_task(str(Path(out_dir) / role), result, meta)
            results[role] = result
        cand, prod = results["candidate"], results["production"]
        comparison = compare_runs_task(cand, prod, settings)
        checks = gate_checks_task(
            gate_tables_task(cand, comparison), settings, docs, str(Path(out_dir) / "data_docs")
        )
        variant = "aware" if settings.score.perturbation_aware else "raw"
        drift = score_drift_task(
            score_frame_task(prod, variant),
            score_frame_task(cand, variant),
            settings,
            out_dir,
            f"{candidate} against production {production}",
        )
        decision = gate_decision_task(
            comparison, checks, drift, settings, decision_context(candidate, production)
        )
        examples = moved_most_task(cand, prod)
    except Exception as exc:  # the gate fails closed on any error
        logger.error("the gate could not decide: %s", error_message(exc))
        decision = error_decision(error_message(exc), **decision_context(candidate, production))
    write_decision_task(out_dir, decision, examples)
    try:
        markdown_artifact_task(
            decision_markdown(decision), "hss-gate-decision", f"hss-gate: {decision.decision}"
        )
    except Exception as exc:  # the decision files are the contract; the artifact is a courtesy
        logger.warning("could not create the decision artifact: %s", exc)
    logger.info(
        "%s (exit %d); wrote %s/decision.json, decision.md, decision.html",
        decision.decision.upper(),
        decision.exit_code,
        out_dir,
    )
    return decision


def main(argv: list[str] | None = None) -> int:
    """Command line: python -m flows.gate --candidate URI [...]; returns the gate's exit code."""
    parser = argparse.ArgumentParser(prog="python -m flows.gate", description=__doc__)
    parser.add_argument("--candidate", "-c", required=True, help="model URI to promote")
    parser.add_argument("--production", "-p", default=None, help="default: run.production_model")
    parser.add_argument("--corpus", default=None, help="default: run.corpus")
    parser.add_argument("--out", default=None, help="default: gate.out")
    parser.add_argument("--limit", type=int, default=None, help="gate on the first N documents")
    parser.add_argument("-k", type=int, default=None, help="perturbations per strength")
    add_common_arguments(parser)
    args = parser.parse_args(argv)
    try:
        decision = gate_flow(
            candidate=args.candidate,
            production=args.production,
            params=args.params,
            corpus=args.corpus,
            out=args.out,
            limit=args.limit,
            k=args.k,
            workers=args.workers,
            dask_address=args.dask_address,
            chunk_size=args.chunk_size,
        )
    except Exception as exc:  # e.g. decision.json could not be written: never exit 0 or 1
        print(f"ERROR (exit 2): {error_message(exc)}", file=sys.stderr)
        return 2
    for reason in decision.reasons:
        print(f"- {reason}")
    print(f"{decision.decision.upper()} (exit {decision.exit_code})")
    return decision.exit_code


if __name__ == "__main__":
    sys.exit(main())
