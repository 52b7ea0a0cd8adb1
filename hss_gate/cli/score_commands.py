"""`hss score`, `hss perturb` and `hss baseline`: a summarizer's HSS, the export for a model
the gate does not run, and production's baseline."""

from __future__ import annotations

from typing import Annotated

import typer

from hss_gate.cli.common import (
    DEFAULT_PARAMS,
    CorpusOpt,
    KOpt,
    LimitOpt,
    ModelOpt,
    ParamsOpt,
    ProductionOpt,
    SeedOpt,
    cli_settings,
    console,
    guarded,
    out_console,
    out_option,
    print_table,
    say,
    setting_help,
)
from hss_gate.common.errors import InputError
from hss_gate.common.progress import progress_reporter

ScoreOutOpt = out_option("run.out")
BaselineOutOpt = out_option("run.baseline_dir")
StrengthsOpt = Annotated[
    str | None,
    typer.Option(help=setting_help("perturb.strengths", "the strength bands kept, e.g. low,high")),
]
NormalizationOpt = Annotated[
    str | None,
    typer.Option(help=setting_help("score.normalization", "normalization constants file")),
]


@guarded
def score(
    model: ModelOpt,
    corpus: CorpusOpt = None,
    limit: LimitOpt = None,
    k: KOpt = None,
    strengths: StrengthsOpt = None,
    seed: SeedOpt = None,
    out: ScoreOutOpt = None,
    normalization: NormalizationOpt = None,
    params: ParamsOpt = DEFAULT_PARAMS,
) -> None:
    """Score a summarizer: per-document, per-category and model HSS with the evidence."""
    from hss_gate.scoring.run_files import category_rows, headline
    from hss_gate.scoring.runner import LocalRunner
    from hss_gate.workflows.score import run_score

    settings = cli_settings(params, k, seed, score__normalization=normalization, run__corpus=corpus)
    if strengths is not None:
        settings.perturb.keep_strengths(strengths.split(","))
    with progress_reporter(console) as progress:
        run = run_score(
            settings,
            model,
            runner=LocalRunner(),
            corpus=None,  # in settings.run.corpus (packaged when not here)
            limit=limit,
            out=out,
            write=True,
            progress=progress,
        )
    for warning in run.result.warnings:
        console.print(f"[yellow]warning:[/] {warning}", highlight=False)
    agg = run.result.aggregates
    print_table(
        ("category", "HSS", "95% CI", "n"),
        category_rows(agg),
        f"HSS by category ({agg['variant']} distance)",
    )
    out_console.print(headline(agg))
    say(
        f"wrote {run.out_dir}/ (documents.csv, perturbations.csv, edits.jsonl, "
        f"summaries.jsonl, summary.json, report.md) in {run.meta['wall_time_s']} s"
    )


@guarded
def perturb(
    out: Annotated[str, typer.Option(help="the export: a .jsonl file to write")],
    corpus: CorpusOpt = None,
    limit: LimitOpt = None,
    k: KOpt = None,
    seed: SeedOpt = None,
    params: ParamsOpt = DEFAULT_PARAMS,
) -> None:
    """Export the documents to summarize for HSS (originals and perturbed versions) for a model
    the gate does not run: summarize each line's `document`, hand back `doc_id` + `summary`."""
    from hss_gate.scoring.runner import LocalRunner
    from hss_gate.workflows.perturb import export_perturbations

    settings = cli_settings(params, k, seed, run__corpus=corpus)
    with progress_reporter(console) as progress:
        path, originals, perturbed = export_perturbations(
            settings,
            LocalRunner().toolkit(settings),
            out=out,
            corpus=None,  # in settings.run.corpus
            limit=limit,
            progress=progress,
        )
    say(
        f"wrote {path}: {originals} documents and {perturbed} perturbed versions to summarize; "
        "give the summaries back as --candidate summaries:FILE (doc_id, summary)"
    )


@guarded
def baseline(
    model: ProductionOpt = None,
    corpus: CorpusOpt = None,
    out: BaselineOutOpt = None,
    stage: Annotated[
        str,
        typer.Option(
            help="scores | constants | metrics | all (those three) | attribution (production's "
            "SHAP results for the gate to restore; costly: docs/REFERENCE.md)"
        ),
    ] = "all",
    params: ParamsOpt = DEFAULT_PARAMS,
) -> None:
    """The production baseline (what `dvc repro` runs): reference scores, the normalization
    constants M_c, and the production model's metrics on the reference corpus; on its own
    stage, production's attribution results."""
    from hss_gate.scoring.runner import LocalRunner
    from hss_gate.workflows.baseline import STAGES, run_baseline
    from hss_gate.workflows.baseline_attribution import STAGE, run_attribution_stage

    if stage not in (*STAGES, STAGE):
        raise InputError(f"--stage: unknown '{stage}'; choose from {', '.join(STAGES)}, {STAGE}")
    # it writes the baseline's paths; --corpus is a setting, so the packaged-data rule sees it
    settings = cli_settings(params, inputs=("run.corpus",), run__corpus=corpus)
    if stage == STAGE:
        run_attribution_stage(settings, model=model, out=out, say=say)
        return
    with progress_reporter(console) as progress:
        run_baseline(
            settings,
            runner=LocalRunner(),
            stage=stage,
            model=model,
            corpus=None,  # in settings.run.corpus
            out=out,
            progress=progress,
            say=say,
        )
