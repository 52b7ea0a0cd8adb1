"""The steps the workflows share.

load_documents, check_model: the first steps of every workflow that scores;
restore_summaries: a stored run's perturbations and summaries put into the cache;
as_floats, score_frame, score_drift: a run's per-document table and its drift against a
  reference;
validate_tables: the Great Expectations checks of score tables, with their Data Docs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from hss_gate.common.errors import InputError
from hss_gate.common.inputs import load_corpus
from hss_gate.common.io import atomic_folder, write_text_atomic
from hss_gate.decision.baseline_metrics import with_strength_distances
from hss_gate.scoring.pipeline import ScoreResult
from hss_gate.settings import HssSettings, MonitorSettings
from hss_gate.signals.tables import flag_columns
from hss_gate.text.corpus import Document


def load_documents(path: str | Path, limit: int | None = None) -> list[Document]:
    """The documents of a corpus file or folder (the first `limit`, if given)."""
    if limit is not None and limit < 1:
        raise InputError("--limit must be at least 1")
    return load_corpus(path, limit)


def check_model(uri: str, settings: HssSettings, embedder: Any) -> str:
    """Build (without loading) the summarizer a URI names, so a bad URI fails before any
    scoring; returns its fingerprint."""
    from hss_gate.models.summarizers import load_summarizer

    return load_summarizer(uri, settings, embedder).fingerprint


def restore_summaries(
    run_dir: str | Path, uri: str, docs: list[Document], settings: HssSettings, tools: Any
) -> str:
    """Put a stored run's perturbations and summaries (e.g. the production baseline) into the
    cache when they were made with the same settings and models and the summarizer's
    fingerprint is the stored one; returns one line saying what happened."""
    from hss_gate.common.cache import Cache
    from hss_gate.scoring.stored_run import (
        fingerprint_difference,
        load_stored_run,
        seed_perturbations,
        seed_summaries,
    )

    run_dir = Path(run_dir)
    if not (run_dir / "summaries.jsonl").exists():
        return f"no stored summaries in {run_dir}: every summary is generated"
    stored = load_stored_run(run_dir)
    fingerprint = check_model(uri, settings, tools.embedder)
    cache = Cache(settings.run.cache_dir)
    try:
        perturbed = seed_perturbations(stored, docs, settings, tools.perturb_fingerprint, cache)
        if stored.fingerprint != fingerprint:
            return (
                f"{run_dir} was written by another summarizer "
                f"({fingerprint_difference(stored.fingerprint, fingerprint)}): "
                "summaries regenerated"
            )
        seeded = seed_summaries(stored, docs, fingerprint, cache)
    finally:
        cache.close()
    return (
        f"restored {seeded} summaries and the perturbations of {perturbed} of {len(docs)} "
        f"documents from {run_dir}"
    )


def as_floats(table: pd.DataFrame) -> pd.DataFrame:
    """True/false columns as 1.0/0.0: the suites check them as shares."""
    flags = [c for c in table if table[c].dtype == bool]
    return table.astype(dict.fromkeys(flags, float))


def score_frame(result: ScoreResult, variant: str = "aware") -> pd.DataFrame:
    """A run's documents with per-band mean distances (the drift and suite input)."""
    return with_strength_distances(
        pd.DataFrame(result.documents), pd.DataFrame(result.perturbations), variant
    )


def score_drift(
    reference: pd.DataFrame,
    current: pd.DataFrame,
    monitor: MonitorSettings,
    out_dir: Path | None,
    title: str,
) -> dict[str, Any]:
    """Evidently drift of the current score distributions against the reference; its report
    is written to out_dir/drift.html and drift.json."""
    from hss_gate.monitoring.drift import drift_report

    columns = monitor.drift_columns
    result = drift_report(
        reference,
        current,
        columns,
        drift_share=monitor.drift_share,
        title=title,
        flags=flag_columns(columns),
    )
    if out_dir is not None and result.pages:
        for kind, page in result.pages.items():
            path = Path(out_dir) / f"drift.{kind}"
            write_text_atomic(path, page)
            setattr(result, kind, str(path))
    return result.to_dict()


def validate_tables(
    tables: Mapping[str, pd.DataFrame], specs: Sequence[Any], docs_dir: Path | None
) -> list[dict[str, Any]]:
    """Run the Great Expectations suites; their Data Docs replace docs_dir as a whole (GX
    builds the site into the folder io.atomic_folder gives it, which then replaces docs_dir).
    Each facts bound's result carries its interval (checks.with_intervals)."""
    from hss_gate.decision.checks import FACTS_BOUNDS, with_intervals
    from hss_gate.decision.suites import run_suites

    if docs_dir is None:
        results = run_suites(tables, specs)
    else:
        with atomic_folder(docs_dir) as built:
            results = run_suites(tables, specs, docs_dir=built)
    intervals = tables[FACTS_BOUNDS].to_dict("records") if FACTS_BOUNDS in tables else []
    return with_intervals([r.to_dict() for r in results], intervals)
