"""The `baseline` flow: `hss baseline` (and `dvc repro`) as a Prefect flow.

The stages are hss_gate.workflows.baseline's: `scores` (score the reference corpus with the
production model), `constants` (per-category normalization constants M_c from the reference
distances) and `metrics` (the production model's per-document HSS and headline metrics); on
its own, `attribution` (hss_gate.workflows.baseline_attribution: production's attribution
results for the gate to restore). This flow runs each step as a Prefect task (I/O retried) and
scores on Dask when asked.

    python -m flows.baseline --limit 4 --out /tmp/baseline
"""

from __future__ import annotations

import argparse
from typing import Any

from prefect import flow, get_run_logger

from flows.scoring import DaskRunner, add_common_arguments
from flows.tasks import PREFECT_STEPS, settings_loader
from hss_gate.common.progress import plain_progress
from hss_gate.workflows.baseline import STAGES
from hss_gate.workflows.baseline_attribution import STAGE as ATTRIBUTION_STAGE


@flow(name="baseline", log_prints=True)
def baseline_flow(
    params: str = "params.yaml",
    model: str | None = None,
    corpus: str | None = None,
    out: str | None = None,
    stage: str = "all",
    limit: int | None = None,
    k: int | None = None,
    overrides: dict[str, Any] | None = None,
    workers: int = 1,
    dask_address: str | None = None,
    chunk_size: int | None = None,
) -> dict[str, Any]:
    """Reference scores, normalization constants and production metrics (like `hss baseline`).

    `overrides` are extra settings as `section__key` (e.g. {"run__cache_dir": "/tmp/c"});
    `workers` > 1 or `dask_address` fans the scoring out over Dask. Returns the paths written
    and, when the metrics stage ran, the metrics.
    """
    from hss_gate.workflows.baseline import run_baseline
    from hss_gate.workflows.baseline_attribution import run_attribution_stage

    logger = get_run_logger()
    settings = PREFECT_STEPS.io(settings_loader(params, {"perturb__k": k, **(overrides or {})}))
    if stage == ATTRIBUTION_STAGE:
        return run_attribution_stage(
            settings, model=model, corpus=corpus, out=out, steps=PREFECT_STEPS, say=logger.info
        )
    with plain_progress(logger.info) as progress:
        return run_baseline(
            settings,
            runner=DaskRunner(workers, dask_address, chunk_size),
            stage=stage,
            model=model,
            corpus=corpus,
            out=out,
            limit=limit,
            steps=PREFECT_STEPS,
            progress=progress,
            say=logger.info,
        )


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Command line: python -m flows.baseline [--model URI] [--out DIR] ..."""
    parser = argparse.ArgumentParser(prog="python -m flows.baseline", description=__doc__)
    parser.add_argument("--model", default=None, help="default: run.production_model")
    parser.add_argument("--corpus", default=None, help="default: run.corpus")
    parser.add_argument("--out", default=None, help="default: run.baseline_dir")
    parser.add_argument("--stage", default="all", choices=[*STAGES, ATTRIBUTION_STAGE])
    parser.add_argument("--limit", type=int, default=None, help="only the first N documents")
    parser.add_argument("-k", type=int, default=None, help="perturbations per strength")
    add_common_arguments(parser)
    args = parser.parse_args(argv)
    return baseline_flow(
        params=args.params,
        model=args.model,
        corpus=args.corpus,
        out=args.out,
        stage=args.stage,
        limit=args.limit,
        k=args.k,
        workers=args.workers,
        dask_address=args.dask_address,
        chunk_size=args.chunk_size,
    )


if __name__ == "__main__":
    main()
