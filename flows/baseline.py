"""The `baseline` flow: what `hss baseline` (and `dvc repro`) does, as Prefect tasks.

Three stages, as in the CLI: `scores` (score the reference corpus with the production model),
`constants` (per-category normalization constants M_c from the reference distances) and `metrics`
(the production model's per-document HSS and headline metrics).

    python -m flows.baseline --limit 4 --out /tmp/baseline
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from prefect import flow, get_run_logger

from flows.scoring import (
    add_common_arguments,
    compute_task,
    load_corpus_task,
    load_normalization_task,
    load_settings_task,
    read_json_task,
    read_table_task,
    score_subflow,
    write_csv_task,
    write_json_task,
    write_outputs_task,
)

STAGES = ("scores", "constants", "metrics", "all")


@compute_task
def normalization_task(perturbations: Any, meta: dict[str, Any], quantile: float) -> Any:
    """M_c per category from a reference run's perturbation distances (as `hss baseline`)."""
    from hss_gate.normalization import normalization_from_run

    rows = perturbations[["category", "distance_aware", "distance_raw"]].itertuples(index=False)
    return normalization_from_run(rows, meta, quantile)


@compute_task
def document_scores_task(documents: Any, perturbations: Any, normalization: Any, variant: str):
    """The reference documents with their HSS under the constants."""
    from hss_gate.baseline import document_scores

    return document_scores(documents, perturbations, normalization, variant)


@compute_task
def score_metrics_task(scores: Any, settings: Any) -> dict[str, Any]:
    """Headline metrics of the production model on the reference corpus."""
    from hss_gate.baseline import score_metrics

    return score_metrics(scores, settings.gate)


@flow(name="baseline", log_prints=True)
def baseline_flow(
    params: str = "params.yaml",
    model: str | None = None,
    corpus: str | None = None,
    out: str = "data/baseline",
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
    from hss_gate.errors import InputError

    logger = get_run_logger()
    if stage not in STAGES:
        raise InputError(f"stage: unknown '{stage}'; choose from {', '.join(STAGES)}")
    if limit is not None and limit < 1:
        raise InputError("limit must be at least 1")
    settings = load_settings_task(params, {"perturb__k": k, **(overrides or {})})
    reference = Path(out) / "reference"
    normalization_path = settings.score.normalization
    written: dict[str, Any] = {}
    if stage in ("scores", "all"):
        corpus_path = corpus or settings.run.corpus
        docs = load_corpus_task(corpus_path, limit)
        result, meta = score_subflow(
            model or settings.run.production_model,
            docs,
            settings,
            None,
            workers=workers,
            dask_address=dask_address,
            chunk_size=chunk_size,
        )
        meta["corpus"] = str(corpus_path)
        written["reference"] = write_outputs_task(str(reference), result, meta)
        logger.info("wrote %s/ in %s s", reference, meta["wall_time_s"])
    if stage in ("constants", "all"):
        meta = read_json_task(str(reference / "summary.json"))
        perts = read_table_task(str(reference / "perturbations.csv"))
        norm = normalization_task(perts, meta, settings.score.quantile)
        written["normalization"] = write_json_task(normalization_path, norm.model_dump(mode="json"))
        logger.info("wrote %s (%d categories)", normalization_path, len(norm.counts))
    if stage in ("metrics", "all"):
        variant = "aware" if settings.score.perturbation_aware else "raw"
        scores = document_scores_task(
            read_table_task(str(reference / "documents.csv")),
            read_table_task(str(reference / "perturbations.csv")),
            load_normalization_task(normalization_path),
            variant,
        )
        metrics = score_metrics_task(scores, settings)
        written["production_scores"] = write_csv_task(
            str(Path(out) / "production_scores.csv"), scores
        )
        written["metrics_path"] = write_json_task(str(Path(out) / "metrics.json"), metrics)
        written["metrics"] = metrics
        logger.info(
            "production mean HSS %.3f on %d documents", metrics["hss_mean"], metrics["documents"]
        )
    return written


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Command line: python -m flows.baseline [--model URI] [--out DIR] ..."""
    parser = argparse.ArgumentParser(prog="python -m flows.baseline", description=__doc__)
    parser.add_argument("--model", default=None, help="default: run.production_model")
    parser.add_argument("--corpus", default=None, help="default: run.corpus")
    parser.add_argument("--out", default="data/baseline", help="baseline directory")
    parser.add_argument("--stage", default="all", choices=STAGES)
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
