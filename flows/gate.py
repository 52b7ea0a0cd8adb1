"""The `gate` flow: `hss gate` as a Prefect flow. Fails closed.

The steps, their order and the fail-closed handling are hss_gate.workflows.gate's; this flow
runs each step as a Prefect task (I/O retried), scores on Dask when asked, and publishes the
decision as an artifact. Any error before the decision becomes the decision "error", written
like any other: the flow returns it and does not raise.

    python -m flows.gate --candidate hf:./my-checkpoint --limit 8 --out outputs/gate
    (exit code 0 = promote, 1 = block, 2 = error, as `hss gate`)
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from prefect import flow, get_run_logger

from flows.scoring import DaskScorer, add_common_arguments
from flows.tasks import PREFECT_STEPS, publish, settings_loader
from hss_gate.errors import error_message
from hss_gate.gate import Decision
from hss_gate.progress import plain_progress


@flow(name="gate", log_prints=True)
def gate_flow(
    candidate: str,
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
) -> Decision:
    """Promote or block a candidate against production (hss_gate.workflows.gate).

    Returns the Decision ("promote", "block" or "error") after writing it to `out`
    (default gate.out). `overrides` are extra settings as `section__key`; `workers` > 1 or
    `dask_address` fans the scoring out over Dask.
    """
    from hss_gate.decision_report import decision_markdown
    from hss_gate.workflows.gate import GateRequest, run_gate

    logger = get_run_logger()
    with plain_progress(logger.info) as progress:
        outcome = run_gate(
            settings_loader(params, {"perturb__k": k, **(overrides or {})}),
            GateRequest(candidate, production, corpus, limit, out, full=full),
            score=DaskScorer(workers, dask_address, chunk_size),
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
    parser.add_argument("--candidate", "-c", required=True, help="model URI to promote")
    parser.add_argument("--production", "-p", default=None, help="default: run.production_model")
    parser.add_argument("--corpus", default=None, help="default: run.corpus")
    parser.add_argument("--out", default=None, help="default: gate.out")
    parser.add_argument("--limit", type=int, default=None, help="gate on the first N documents")
    parser.add_argument("-k", type=int, default=None, help="perturbations per strength")
    parser.add_argument("--full", action="store_true", help="no sequential stopping")
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
