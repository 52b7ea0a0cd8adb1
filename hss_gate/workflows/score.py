"""Scoring a model on a corpus (`hss score`).

run_score: load the documents and constants, score, return the run (and, for `hss score`,
  write its files to its folder). The steps it shares with the other workflows are in
  shared.py.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hss_gate.common.errors import InputError
from hss_gate.common.inputs import load_normalization
from hss_gate.common.progress import Progress, no_progress
from hss_gate.scoring.pipeline import ScoreResult
from hss_gate.scoring.run_files import write_outputs
from hss_gate.settings import HssSettings
from hss_gate.workflows.shared import load_documents, restore_summaries
from hss_gate.workflows.steps import DIRECT, ModelRunner, Say, Steps, silent


@dataclass
class ScoredRun:
    """One model's run: what `report.write_outputs` writes."""

    result: ScoreResult
    meta: dict[str, Any]
    out_dir: Path


def run_score(
    settings: HssSettings,
    model: str,
    *,
    runner: ModelRunner,
    corpus: str | None = None,
    limit: int | None = None,
    out: str | None = None,
    reference: bool = False,
    reuse: str | Path | None = None,
    write: bool = False,
    steps: Steps = DIRECT,
    progress: Progress = no_progress,
    say: Say = silent,
) -> ScoredRun:
    """Score `model` on the corpus with the production constants (`reference`: without
    constants, as the baseline's reference run is); `reuse`: a stored run whose summaries are
    restored when they were written by this very summarizer; `write`: the run's files are
    written to its folder (`hss score`; the baseline writes its reference run itself)."""
    out_dir = Path(out or settings.run.out)
    if out_dir.exists() and not out_dir.is_dir():  # refuse before the work, not after it
        raise InputError(f"--out {out_dir}: exists and is not a directory")
    corpus = corpus or settings.run.corpus
    docs = steps.io(load_documents, corpus, limit)
    norm = None if reference else steps.io(load_normalization, settings.score.normalization)
    if reuse is not None:
        say(steps.io(restore_summaries, reuse, model, docs, settings, runner.toolkit(settings)))
    result, meta = runner(model, docs, settings, norm, progress)
    meta["corpus"] = str(corpus)
    if norm is not None:
        meta["normalization"]["path"] = settings.score.normalization
    run = ScoredRun(result, meta, out_dir)
    if write:
        steps.io(write_outputs, out_dir, result, meta)
    return run
