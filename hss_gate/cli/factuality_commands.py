"""`hss factuality` and `hss checker`: summaries' factual consistency with their documents,
and the entailment checker's training (what `dvc repro checker` runs) and claims."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from hss_gate.cli.common import (
    DEFAULT_PARAMS,
    ParamsOpt,
    cli_settings,
    console,
    fail,
    guarded,
    named,
    out_option,
    say,
    setting_help,
)
from hss_gate.common.progress import progress_reporter
from hss_gate.settings import setting_field

FactualityModelOpt = Annotated[
    str | None,
    typer.Option(
        "--model",
        "-m",
        help=setting_help(
            "consistency.model",
            f"{setting_field('consistency.model').description}; here also hf:<NLI id|dir>",
        ),
    ),
]
FactualityOutOpt = out_option("consistency.out")
WeightsOpt = Annotated[
    Path | None, typer.Option(help=setting_help("consistency.weights_dir", "factcc weights folder"))
]
TrainingCorpusOpt = Annotated[
    str | None, typer.Option(help=f"factcc's training documents (default: {named('run.corpus')})")
]
CalibrateOpt = Annotated[
    bool,
    typer.Option(
        "--calibrate",
        help="choose consistency.threshold on the pairs' labels (1 consistent, 0 not) and "
        "write it into --params",
    ),
]


@guarded
def factuality(
    pairs: Annotated[
        Path | None, typer.Option(help="JSONL with id, document, summary (one pair a line)")
    ] = None,
    out: FactualityOutOpt = None,
    model: FactualityModelOpt = None,
    train: Annotated[bool, typer.Option("--train", help="(re)train factcc weights")] = False,
    calibrate: CalibrateOpt = False,
    weights: WeightsOpt = None,
    corpus: TrainingCorpusOpt = None,
    params: ParamsOpt = DEFAULT_PARAMS,
) -> None:
    """Factual consistency of summaries with their documents: DIR/factuality.csv with
    consistency in [0, 1] (higher = more consistent) and every comparator's column."""
    from hss_gate.workflows.factuality import run_factuality

    if calibrate and pairs is None:
        fail("--calibrate needs --pairs FILE with a label (1 consistent, 0 not) on every pair")
    with progress_reporter(console) as progress:
        run = run_factuality(
            cli_settings(params),
            pairs,
            model=model,
            weights=weights,
            train=train,
            corpus=corpus,
            out=out,
            progress=progress,
            say=say,
        )
    if run.path is None:
        return
    values = [r["consistency"] for r in run.rows if r["consistency"] == r["consistency"]]
    say(
        f"wrote {run.path} ({len(run.rows)} pairs; model {run.model}; mean consistency "
        f"{sum(values) / max(len(values), 1):.3f}; {sum(v < 0.5 for v in values)} below 0.5)"
    )
    if calibrate:
        from hss_gate.workflows.factuality import calibrate as choose
        from hss_gate.workflows.factuality import write_threshold

        chosen = choose(run)
        write_threshold(params, chosen, pairs)
        say(
            f"consistency.threshold {chosen.previous:g} -> {chosen.threshold:g} in {params} "
            f"({chosen.pairs} pairs, {chosen.inconsistent} inconsistent; ROC AUC "
            f"{chosen.auc:.3f}; balanced accuracy {chosen.previous_balanced_accuracy:.3f} -> "
            f"{chosen.balanced_accuracy:.3f} in-sample, {chosen.cross_fitted:.3f} cross-fitted)"
        )


@guarded
def checker_train(params: ParamsOpt = DEFAULT_PARAMS) -> None:
    """Train the entailment checker's adapter from params.yaml `checker` (resumes from its
    checkpoints); what `dvc repro checker` runs. Hours on 2 cores."""
    from hss_gate.workflows.checker import train_checker

    settings = cli_settings(params)
    with progress_reporter(console) as progress:
        log = train_checker(settings, progress, say)
    say(
        f"wrote {settings.checker.out} ({log['pairs']} pairs, {log['steps']} steps, "
        f"{log['seconds']:.0f} s); pin its sha256 in hss_gate/consistency/entail_release.py"
    )
