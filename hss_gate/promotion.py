"""The gate's steps after scoring: score tables, threshold suites, drift, the decision.

Each function is one step of the `gate` flow and of `hss gate`; the arithmetic lives in
hss_gate.gate (decision), hss_gate.expectations (suites) and hss_gate.drift (Evidently).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from hss_gate import __version__
from hss_gate.baseline import with_strength_distances
from hss_gate.corpus import Document
from hss_gate.gate import Decision, compare, decide
from hss_gate.monitor import severity_rise
from hss_gate.pipeline import ScoreResult
from hss_gate.settings import HssSettings

OPTIONAL_COLUMNS = ("attribution_instability", "factual_consistency")


def score_frame(result: ScoreResult, variant: str = "aware") -> pd.DataFrame:
    """A run's documents with per-band mean distances (the drift and suite input)."""
    return with_strength_distances(
        pd.DataFrame(result.documents), pd.DataFrame(result.perturbations), variant
    )


def live_frame(scores: pd.DataFrame, live: list[dict[str, Any]]) -> pd.DataFrame:
    """Scored samples joined with the signals of the summaries production served."""
    return scores.merge(pd.DataFrame(live), on="doc_id", how="left", validate="one_to_one")


def compare_runs(
    candidate: ScoreResult, production: ScoreResult, settings: HssSettings
) -> dict[str, Any]:
    """Paired comparison of the candidate with production on the same documents."""
    return compare(
        candidate.documents,
        production.documents,
        resamples=settings.score.bootstrap_resamples,
        confidence=settings.score.confidence,
        seed=settings.perturb.seed,
    )


def gate_tables(candidate: ScoreResult, comparison: Mapping[str, Any]) -> dict[str, pd.DataFrame]:
    """The tables the suites validate: candidate documents, perturbations, category deltas."""
    documents = pd.DataFrame(candidate.documents)
    documents["base_truncated"] = documents["base_truncated"].astype(float)
    return {
        "documents": documents,
        "perturbations": pd.DataFrame(candidate.perturbations),
        "categories": pd.DataFrame(comparison["categories"]),
    }


def run_gate_checks(
    tables: Mapping[str, pd.DataFrame],
    settings: HssSettings,
    docs: Sequence[Document],
    docs_dir: Path | None,
) -> list[dict[str, Any]]:
    """Great Expectations suites from the params.yaml thresholds; Data Docs into docs_dir."""
    from hss_gate.expectations import gate_expectations, run_suites

    specs = gate_expectations(
        settings.gate,
        categories=sorted({d.category for d in docs}),
        n_documents=len(docs),
        n_perturbations=len(docs) * len(settings.perturb.strengths) * settings.perturb.k,
        optional_columns=[c for c in OPTIONAL_COLUMNS if c in tables["documents"]],
    )
    return [r.to_dict() for r in run_suites(tables, specs, docs_dir=docs_dir)]


def run_monitor_checks(
    current: pd.DataFrame, settings: HssSettings, docs_dir: Path | None
) -> list[dict[str, Any]]:
    """The absolute severity and data-quality checks on the scored live samples."""
    from hss_gate.expectations import monitor_expectations, run_suites

    table = current.assign(base_truncated=current["base_truncated"].astype(float))
    specs = monitor_expectations(
        settings.gate,
        n_documents=len(current),
        optional_columns=[c for c in OPTIONAL_COLUMNS if c in current],
    )
    return [r.to_dict() for r in run_suites({"documents": table}, specs, docs_dir=docs_dir)]


def monitor_severity(
    current: pd.DataFrame, reference: pd.DataFrame, settings: HssSettings
) -> dict[str, Any]:
    """Live mean HSS against the production reference, with the configured bootstrap."""
    return severity_rise(
        current["hss"].tolist(),
        reference["hss"].tolist(),
        margin=settings.monitor.margin,
        resamples=settings.score.bootstrap_resamples,
        confidence=settings.score.confidence,
        seed=settings.perturb.seed,
    )


def decision_context(candidate: str, production: str | None) -> dict[str, str]:
    """Who was compared, when, by which hss-gate version (a Decision's context fields)."""
    from hss_gate.summarizers import redacted_uri

    return {
        "candidate": redacted_uri(candidate),
        "production": redacted_uri(production or ""),
        "created": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "hss_gate_version": __version__,
    }


def score_drift(
    reference: pd.DataFrame,
    current: pd.DataFrame,
    columns: list[str],
    drift_share: float,
    out_dir: Path | None,
    title: str,
) -> dict[str, Any]:
    """Evidently drift of current score distributions against the reference (HTML + JSON)."""
    from hss_gate.drift import drift_report

    return drift_report(
        reference, current, columns, drift_share=drift_share, out_dir=out_dir, title=title
    ).to_dict()


def gate_decision(
    comparison: Mapping[str, Any],
    checks: list[dict[str, Any]],
    drift: Mapping[str, Any] | None,
    settings: HssSettings,
    **context: Any,
) -> Decision:
    """Promote or block (see hss_gate.gate.decide)."""
    return decide(comparison, checks, settings.gate, drift=drift, **context)
