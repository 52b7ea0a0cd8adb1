"""Production baseline: per-document HSS of a reference run and its summary metrics (pure)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from hss_gate.common.errors import InputError
from hss_gate.scoring.normalization import Normalization
from hss_gate.scoring.severity import severity
from hss_gate.settings import GateSettings
from hss_gate.signals.tables import REFERENCE_PERTURBATION_COLUMNS


def document_scores(
    documents: pd.DataFrame,
    perturbations: pd.DataFrame,
    normalization: Normalization,
    variant: str = "aware",
) -> pd.DataFrame:
    """The documents table of a reference run with its HSS (from the perturbation distances)."""
    missing = [c for c in REFERENCE_PERTURBATION_COLUMNS if c not in perturbations]
    if missing:
        raise InputError(f"reference perturbations table lacks columns {missing}")
    rows = []
    for doc_id, group in perturbations.groupby("doc_id", sort=False):
        category = str(group["category"].iloc[0])
        scores = {}
        for v in ("aware", "raw"):
            constant, _ = normalization.constant(category, v)
            scores[f"hss_{v}"] = severity(group[f"distance_{v}"].to_numpy(), constant)
        rows.append(
            {
                "doc_id": doc_id,
                "hss": scores[f"hss_{variant}"],
                **scores,
                "mean_distance": float(group[f"distance_{variant}"].mean()),
            }
        )
    scored = with_strength_distances(pd.DataFrame(rows), perturbations, variant)
    base = documents.drop(columns=[c for c in scored if c != "doc_id" and c in documents])
    merged = base.merge(scored, on="doc_id", how="inner", validate="one_to_one")
    if len(merged) != len(documents):
        raise InputError("reference documents and perturbations do not cover the same documents")
    return merged


def with_strength_distances(
    documents: pd.DataFrame, perturbations: pd.DataFrame, variant: str = "aware"
) -> pd.DataFrame:
    """Documents plus distance_<strength>: each document's mean distance per perturbation band."""
    if perturbations.empty:
        return documents.copy()
    wide = perturbations.pivot_table(
        index="doc_id", columns="strength", values=f"distance_{variant}", aggfunc="mean"
    )
    wide.columns = [f"distance_{s}" for s in wide.columns]
    base = documents.drop(columns=[c for c in wide.columns if c in documents])
    return base.merge(wide.reset_index(), on="doc_id", how="left")


def score_metrics(scores: pd.DataFrame, gate: GateSettings) -> dict[str, Any]:
    """Headline numbers of a scored run (what `dvc metrics diff` compares)."""
    hss = scores["hss"].to_numpy(dtype=float)
    return {
        "documents": len(scores),
        "hss_mean": round(float(np.mean(hss)), 6),
        "hss_p95": round(float(np.quantile(hss, 0.95)), 6),
        "share_above_severity_level": round(float(np.mean(hss > gate.severity_level)), 6),
        "hss_raw_mean": round(float(scores["hss_raw"].mean()), 6),
        "unsupported_share_mean": round(float(scores["base_unsupported_share"].mean()), 6),
        "novel_ngram_share_mean": round(float(scores["base_novel_ngram_share"].mean()), 6),
        "truncated_share": round(float(scores["base_truncated"].astype(float).mean()), 6),
        "summary_words_mean": round(float(scores["base_n_words"].mean()), 3),
        **(
            {
                "consistency_mean": round(float(scores["base_consistency"].mean()), 6),
                "low_consistency_share": round(
                    float(scores["base_low_consistency"].astype(float).mean()), 6
                ),
            }
            if "base_consistency" in scores
            else {}
        ),
        "by_category": {
            str(c): round(float(g["hss"].mean()), 6) for c, g in scores.groupby("category")
        },
    }
