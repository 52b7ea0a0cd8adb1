"""Factual consistency of (document, summary) pairs (`hss factuality`).

Steps: read and check every pair (before any model loads); build the SBERT encoder with the
embedding cache; train the checker's weights if they are missing (or when asked); score every
pair with every comparator; write OUT/factuality.csv.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hss_gate.common.errors import InputError
from hss_gate.common.io import write_rows_csv_atomic
from hss_gate.common.progress import Progress, no_progress
from hss_gate.settings import HssSettings
from hss_gate.workflows.steps import Say, silent

# the checkers whose verdict is the consistency (the others: comparator columns)
VERDICT_CHECKERS = ("invented", "invented-sbert", "entail")


MIN_CALIBRATION_CLASS = 20  # labelled pairs of each class below which --calibrate refuses


@dataclass
class FactualityRun:
    """The scored rows and the file they were written to (None when only training)."""

    rows: list[dict[str, Any]]
    path: Path | None
    model: str = ""
    labels: list[int | None] | None = None
    threshold: float | None = None  # the gate checker's, when it scored `consistency`


@dataclass(frozen=True)
class Calibration:
    """A threshold chosen on a user's labelled sample, and how well it separates it."""

    threshold: float
    previous: float
    pairs: int
    inconsistent: int
    auc: float
    balanced_accuracy: float  # at the new threshold, in-sample
    cross_fitted: float  # each pair judged by a threshold chosen without it (the honest one)
    previous_balanced_accuracy: float


def consistency_scorer(
    settings: HssSettings,
    model: str | None = None,
    weights: str | Path | None = None,
    *,
    train: bool = False,
    corpus: str | None = None,
    say: Say = silent,
) -> Any:
    """The FactualityComparators for a consistency model URI, training the checker's weights first
    when they are missing or `train` is set."""
    from hss_gate.common.cache import Cache
    from hss_gate.consistency.model import (
        DEFAULT_MODEL,
        cached_encoder,
        load_consistency_model,
        load_factcc_weights,
        weights_path,
    )
    from hss_gate.consistency.scorer import FactualityComparators
    from hss_gate.consistency.training import train_from_corpus
    from hss_gate.models.embedding import SbertEmbedder

    model = model or settings.consistency.model
    weights = Path(weights or settings.consistency.weights_dir)
    embedder = SbertEmbedder(settings.score.embedder)
    encode = cached_encoder(embedder, Cache(settings.run.cache_dir))
    checker = None
    if model in VERDICT_CHECKERS:  # the gate's checker: consistency is its verdict
        from hss_gate.consistency.checker import load_checker

        threshold = settings.consistency.threshold
        checker = load_checker(
            model,
            str(weights),
            threshold,
            encode,
            embedder.fingerprint,
            **settings.consistency.entail_options(),
        )
    nli = (
        None
        if model in (DEFAULT_MODEL, *VERDICT_CHECKERS)
        else load_consistency_model(model, encode)
    )
    if train or not weights_path(weights).exists():
        train_from_corpus(weights, corpus or settings.run.corpus, encode, say)
    return FactualityComparators(load_factcc_weights(weights), encode, nli, checker)


def run_factuality(
    settings: HssSettings,
    pairs: Path | None,
    *,
    model: str | None = None,
    weights: str | Path | None = None,
    train: bool = False,
    corpus: str | None = None,
    out: str | None = None,
    progress: Progress = no_progress,
    say: Say = silent,
) -> FactualityRun:
    """Score the pairs of a JSONL file (id, document, summary) and write factuality.csv."""
    from hss_gate.consistency.features import SBERT_MAX_WORDS, long_units
    from hss_gate.consistency.scorer import COLUMNS, read_pairs

    if pairs is None and not train:
        raise InputError("give --pairs FILE (or --train to only train the weights)")
    records = read_pairs(pairs) if pairs is not None else []
    scorer = consistency_scorer(settings, model, weights, train=train, corpus=corpus, say=say)
    model = model or settings.consistency.model
    if not records:
        return FactualityRun([], None, model)
    cut = sum(long_units(r.document) > 0 for r in records)
    if cut:
        say(
            f"warning: {cut} document(s) have passages longer than {SBERT_MAX_WORDS} words (no "
            "sentence punctuation?): the checker's sentence encoder reads only their beginning"
        )
    rows = scorer.score_many(
        [(r.id, r.document, r.summary) for r in records],
        advance=progress("factuality", len(records), 0),
    )
    target = Path(out or settings.consistency.out) / "factuality.csv"
    write_rows_csv_atomic(target, rows, COLUMNS)
    threshold = scorer.checker.threshold if scorer.checker is not None else None
    return FactualityRun(rows, target, model, [r.label for r in records], threshold)


def calibrate(run: FactualityRun) -> Calibration:
    """The threshold with the best balanced accuracy on the run's labelled pairs (beside the
    checker's threshold the run used)."""
    from hss_gate.consistency.calibration import (
        balanced_accuracy,
        best_threshold,
        cross_fit_balanced_accuracy,
        roc_auc,
    )

    labels = run.labels or []
    if run.model not in VERDICT_CHECKERS or run.threshold is None:
        raise InputError(
            f"--calibrate: for the checkers {', '.join(VERDICT_CHECKERS)} (not '{run.model}')"
        )
    if any(label is None for label in labels):
        missing = sum(label is None for label in labels)
        raise InputError(
            f"--calibrate needs a label (1 consistent, 0 not) on every pair: {missing} lack one"
        )
    kept = [
        (r["consistency"], y)
        for r, y in zip(run.rows, labels, strict=True)
        if r["consistency"] == r["consistency"]
    ]
    scores, y = [s for s, _ in kept], [int(label) for _, label in kept]
    counts = (y.count(0), y.count(1))
    if min(counts) < MIN_CALIBRATION_CLASS:
        raise InputError(
            f"--calibrate: {counts[0]} inconsistent and {counts[1]} consistent pairs; need at "
            f"least {MIN_CALIBRATION_CLASS} of each (a few hundred pairs from your domain)"
        )
    threshold, previous = best_threshold(y, scores), run.threshold
    predict = lambda t: [int(s >= t) for s in scores]  # noqa: E731
    return Calibration(
        round(threshold, 4),
        previous,
        len(y),
        counts[0],
        roc_auc(y, scores),
        balanced_accuracy(y, predict(threshold)),
        cross_fit_balanced_accuracy(y, scores),
        balanced_accuracy(y, predict(run.threshold)),
    )


def write_threshold(params: Path, calibration: Calibration, pairs: Path) -> None:
    """Set consistency.threshold in the params file (its other lines and comments kept)."""
    from hss_gate.common.io import write_text_atomic
    from hss_gate.settings import with_param

    text = params.read_text(encoding="utf-8") if params.exists() else ""
    note = (
        f"calibrated on {pairs.name} ({calibration.pairs} pairs, cross-fitted balanced accuracy "
        f"{calibration.cross_fitted:.3f}; was {calibration.previous:g})"
    )
    value = f"{calibration.threshold:g}"
    write_text_atomic(params, with_param(text, "consistency", "threshold", value, note))


def ensure_checker(settings: HssSettings, say: Say = silent) -> str:
    """The consistency checker's weights: trained (deterministically, from text that is not
    evaluation data) when missing; returns the checker's fingerprint."""
    from hss_gate.scoring.toolkit import real_toolkit

    if settings.consistency.model == "factcc":
        consistency_scorer(settings, "factcc", say=say)  # trains the weights when missing
    return real_toolkit(settings).checker.fingerprint
