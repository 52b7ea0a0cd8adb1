"""The production baseline (`hss baseline`, the dvc.yaml stages, the `baseline` flow).

Three stages, in order: `scores` (the production model on the reference corpus, without
constants -> BASELINE/reference/), `constants` (M_c per category from those distances ->
score.normalization) and `metrics` (the production model's per-document HSS and headline
numbers -> BASELINE/production_scores.csv and metrics.json). Each stage reads what the one
before it wrote, so each can run alone (one dvc stage each).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hss_gate.common.errors import InputError
from hss_gate.common.inputs import load_normalization
from hss_gate.common.io import read_json, read_score_table, write_csv_atomic, write_json_atomic
from hss_gate.common.progress import Progress, no_progress
from hss_gate.decision.baseline_metrics import document_scores, score_metrics
from hss_gate.scoring.normalization import normalization_from_run
from hss_gate.scoring.run_files import write_outputs
from hss_gate.settings import HssSettings
from hss_gate.workflows.score import ScoredRun, run_score
from hss_gate.workflows.steps import DIRECT, ModelRunner, Say, Steps, silent

STAGES = ("scores", "constants", "metrics", "all")


def reference_normalization(reference: Path, quantile: float) -> Any:
    """M_c per category from a reference run's perturbation distances."""
    perturbations = read_score_table(reference / "perturbations.csv")
    return normalization_from_run(
        perturbations[["category", "distance_aware", "distance_raw"]].itertuples(index=False),
        read_json(reference / "summary.json"),
        quantile,
    )


def reference_scores(reference: Path, normalization_path: str, variant: str) -> Any:
    """The reference documents with their HSS under the stored constants."""
    return document_scores(
        read_score_table(reference / "documents.csv"),
        read_score_table(reference / "perturbations.csv"),
        load_normalization(normalization_path),
        variant,
    )


def run_baseline(
    settings: HssSettings,
    *,
    runner: ModelRunner,
    stage: str = "all",
    model: str | None = None,
    corpus: str | None = None,
    out: str | None = None,
    limit: int | None = None,
    steps: Steps = DIRECT,
    progress: Progress = no_progress,
    say: Say = silent,
) -> dict[str, Any]:
    """Run the stage(s) asked for; returns the paths written and, after `metrics`, the metrics."""
    if stage not in STAGES:
        raise InputError(f"--stage: unknown '{stage}'; choose from {', '.join(STAGES)}")
    out_dir = Path(out or settings.run.baseline_dir)
    reference = out_dir / "reference"
    written: dict[str, Any] = {}
    if stage in ("scores", "all"):
        run = run_score(
            settings,
            model or settings.run.production_model,
            runner=runner,
            corpus=corpus,
            limit=limit,
            out=str(out_dir),
            reference=True,
            reuse=reference,  # the previous reference run: only what changed is regenerated
            steps=steps,
            progress=progress,
            say=say,
        )
        written |= write_reference(reference, run, steps, say)
    if stage in ("constants", "all"):
        written |= write_constants(reference, settings, steps, say)
    if stage in ("metrics", "all"):
        written |= write_metrics(out_dir, settings, steps, say)
    return written


def write_reference(reference: Path, run: ScoredRun, steps: Steps, say: Say) -> dict[str, Any]:
    """Stage `scores`: the production model's run on the reference corpus to
    BASELINE/reference/."""
    steps.io(write_outputs, reference, run.result, run.meta)
    say(f"wrote {reference}/ in {run.meta['wall_time_s']} s")
    return {"reference": str(reference)}


def write_constants(
    reference: Path, settings: HssSettings, steps: Steps, say: Say
) -> dict[str, Any]:
    """Stage `constants`: M_c per category from the reference run -> score.normalization."""
    norm = steps.io(reference_normalization, reference, settings.score.quantile)
    target = settings.score.normalization
    steps.io(write_json_atomic, target, norm.model_dump(mode="json"))
    say(f"wrote {target} ({len(norm.counts)} categories)")
    return {"normalization": target}


def write_metrics(out_dir: Path, settings: HssSettings, steps: Steps, say: Say) -> dict[str, Any]:
    """Stage `metrics`: the reference documents' HSS under the stored constants and the
    production metrics -> BASELINE/production_scores.csv and metrics.json."""
    reference = out_dir / "reference"
    scores = steps.io(
        reference_scores, reference, settings.score.normalization, settings.score.variant
    )
    metrics = steps.compute(score_metrics, scores, settings.gate)
    summary = steps.io(read_json, reference / "summary.json")
    metrics["checker"] = summary.get("checker", "")  # the monitor refuses another checker
    steps.io(write_csv_atomic, out_dir / "production_scores.csv", scores)
    steps.io(write_json_atomic, out_dir / "metrics.json", metrics)
    say(
        f"wrote {out_dir}/production_scores.csv and {out_dir}/metrics.json "
        f"(production mean HSS {metrics['hss_mean']:.3f} on {metrics['documents']} documents)"
    )
    return {
        "production_scores": str(out_dir / "production_scores.csv"),
        "metrics_path": str(out_dir / "metrics.json"),
        "metrics": metrics,
    }
