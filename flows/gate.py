"""The `gate` flow: `hss gate` as a Prefect flow. Fails closed.

The steps, their order and the fail-closed handling are hss_gate.workflows.gate's; this flow
runs each step as a Prefect task (I/O retried), scores on Dask when asked, and publishes the
decision as an artifact. Any error before the decision becomes the decision "error", written
like any other: the flow returns it and does not raise.

    python -m flows.gate --candidate hf:./my-checkpoint --limit 8 --out outputs/gate
    python -m flows.gate --candidate-config models/candidate.yaml --junit gate.xml
    (exit code 0 = promote, 1 = block, 2 = error, as `hss gate`; the same options)
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from prefect import flow, get_run_logger

from flows.scoring import DaskRunner, add_common_arguments
from flows.tasks import PREFECT_STEPS, publish, settings_loader
from hss_gate.common.errors import error_message
from hss_gate.common.progress import plain_progress
from hss_gate.decision.record import Decision


@flow(name="gate", log_prints=True)
def gate_flow(
    candidate: str | None = None,
    production: str | None = None,
    params: str = "params.yaml",
    corpus: str | None = None,
    out: str | None = None,
    limit: int | None = None,
    k: int | None = None,
    full: bool = False,
    overrides: dict[str, Any] | None = None,
    workers: int = 1,
    dask_address: str | None = None,
    chunk_size: int | None = None,
    candidate_config: str | None = None,
    candidate_prompt: str | None = None,
    junit: str | None = None,
    override_by: str | None = None,
    override_reason: str | None = None,
    summary_words: int | None = None,
    attribution: int | None = None,
) -> Decision:
    """Promote or block a candidate against production (hss_gate.workflows.gate).

    Returns the Decision ("promote", "block" or "error") after writing it to `out`
    (default gate.out). `overrides` are extra settings as `section__key`; `workers` > 1 or
    `dask_address` fans the scoring out over Dask. The candidate comes from `candidate` or
    `candidate_config` (YAML: uri, generate), with its own prompt (`candidate_prompt`);
    `junit` also writes the checks as JUnit XML; `override_by` and `override_reason` record a
    person's override of a block, as `hss gate` does; `summary_words` is the length target of
    the length checks (default: production's stored summaries' median, else the prompt's);
    `attribution` explains that many documents of both sides with sentence-level SHAP
    (gate.attribution_documents; None: as configured, default off).
    """
    from hss_gate.decision.reports import decision_markdown
    from hss_gate.workflows.gate import run_gate
    from hss_gate.workflows.gate_preparation import gate_request

    request = gate_request(
        candidate=candidate,
        production=production,
        corpus=corpus,
        limit=limit,
        out=out,
        candidate_prompt=candidate_prompt,
        candidate_config=candidate_config,
        junit=junit,
        full=full,
        override_by=override_by,
        override_reason=override_reason,
        summary_words=summary_words,
    )
    logger = get_run_logger()
    with plain_progress(logger.info) as progress:
        outcome = run_gate(
            settings_loader(
                params,
                {"perturb__k": k, "gate__attribution_documents": attribution, **(overrides or {})},
            ),
            request,
            runner=DaskRunner(workers, dask_address, chunk_size),
            steps=PREFECT_STEPS,
            progress=progress,
            say=logger.info,
        )
    decision = outcome.verdict
    if outcome.error is not None:
        logger.error("the gate could not decide: %s", error_message(outcome.error))
    publish(
        decision_markdown(decision), "hss-gate-decision", f"hss-gate: {decision.decision}", logger
    )
    logger.info(
        "%s (exit %d); wrote %s/decision.json, decision.md, decision.html",
        decision.decision.upper(),
        decision.exit_code,
        outcome.out_dir,
    )
    return decision


def main(argv: list[str] | None = None) -> int:
    """Command line: python -m flows.gate --candidate URI [...]; returns the gate's exit code."""
    parser = argparse.ArgumentParser(prog="python -m flows.gate", description=__doc__)
    parser.add_argument("--candidate", "-c", default=None, help="model URI to promote")
    parser.add_argument("--candidate-config", default=None, help="YAML: uri, generate")
    parser.add_argument("--candidate-prompt", default=None, help="the candidate's prompt")
    parser.add_argument("--production", "-p", default=None, help="default: run.production_model")
    parser.add_argument("--corpus", default=None, help="default: run.corpus")
    parser.add_argument("--out", default=None, help="default: gate.out")
    parser.add_argument("--limit", type=int, default=None, help="gate on the first N documents")
    parser.add_argument("-k", type=int, default=None, help="perturbations per strength")
    parser.add_argument("--full", action="store_true", help="no sequential stopping")
    parser.add_argument("--junit", default=None, help="the checks as JUnit XML too")
    parser.add_argument("--override-by", default=None, help="who overrides a block")
    parser.add_argument("--override-reason", default=None, help="why (recorded)")
    parser.add_argument(
        "--summary-words", type=int, default=None, help="the length target of the length checks"
    )
    parser.add_argument(
        "--attribution", type=int, default=None, help="SHAP instability of N documents, both sides"
    )
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
            full=args.full,
            workers=args.workers,
            dask_address=args.dask_address,
            chunk_size=args.chunk_size,
            candidate_config=args.candidate_config,
            candidate_prompt=args.candidate_prompt,
            junit=args.junit,
            override_by=args.override_by,
            override_reason=args.override_reason,
            summary_words=args.summary_words,
            attribution=args.attribution,
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
