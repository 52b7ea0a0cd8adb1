"""The paired comparison of a candidate's documents with production's (pure): per registered
signal's paired column (hss_gate.summary_signals) the two means, their difference and its CI,
and HSS by category. A signal measured from the perturbed summaries is "not measured" when
either side has none (stored summaries without perturbed ones), never compared on NaN. The
rule that reads it is hss_gate.decision_rule."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from hss_gate.errors import InputError
from hss_gate.severity import bootstrap_ci, paired_bootstrap_ci, paired_t_ci
from hss_gate.summary_signals import paired

NOT_MEASURED_TEXT = (
    "HSS not measured: the summaries file has no perturbed summaries (export them with "
    "`hss perturb`)"
)


def paired_rows(
    candidate: Sequence[Mapping[str, Any]], production: Sequence[Mapping[str, Any]]
) -> list[tuple[Mapping[str, Any], Mapping[str, Any]]]:
    """Candidate and production document rows paired by doc_id (both must cover the same set)."""
    prod = {r["doc_id"]: r for r in production}
    cand_ids = [r["doc_id"] for r in candidate]
    if set(cand_ids) != set(prod) or len(cand_ids) != len(prod):
        missing = sorted(set(prod) ^ set(cand_ids))[:5]
        raise InputError(f"candidate and production were scored on different documents: {missing}")
    if not cand_ids:
        raise InputError("no documents to compare")
    return [(r, prod[r["doc_id"]]) for r in candidate]


def _measured(row: Mapping[str, Any]) -> bool:
    value = row.get("hss")
    return value is not None and not np.isnan(float(value))


def hss_measured(
    candidate: Sequence[Mapping[str, Any]], production: Sequence[Mapping[str, Any]]
) -> bool:
    """Whether both sides measured HSS on every document (a run of stored summaries without
    perturbed ones has NaN there)."""
    return all(_measured(r) for r in (*candidate, *production))


def compare(
    candidate: Sequence[Mapping[str, Any]],
    production: Sequence[Mapping[str, Any]],
    *,
    resamples: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
) -> dict[str, Any]:
    """Paired means, differences and bootstrap CIs of every compared signal, and by category.
    When either side did not measure HSS (`hss_measured` false), the HSS signals, the
    categories' HSS and the candidate's HSS CI are left out: "not measured", never NaN or 0."""
    pairs = paired_rows(candidate, production)
    measured = hss_measured(candidate, production)
    signals: dict[str, Any] = {}
    for signal in paired():
        column = signal.column
        if not all(column in c and column in p for c, p in pairs):
            continue
        if signal.needs_hss and not measured:
            continue
        a = [float(c[column]) for c, _ in pairs]
        b = [float(p[column]) for _, p in pairs]
        if signal.ci == "student-t":  # calibrated at small n: tests/unit/test_sequential.py
            diff, low, high = paired_t_ci(a, b, level=confidence)
        else:
            diff, low, high = paired_bootstrap_ci(
                a, b, resamples=resamples, level=confidence, seed=seed
            )
        signals[column] = {
            "label": signal.label,
            "candidate": float(np.mean(a)),
            "production": float(np.mean(b)),
            "difference": diff,
            "ci_low": low,
            "ci_high": high,
        }
    if not measured:
        return {
            "documents": len(pairs),
            "confidence": confidence,
            "signals": signals,
            "categories": [],
            "candidate_hss_ci": None,
            "hss_measured": False,
            "hss_not_measured": NOT_MEASURED_TEXT,
        }
    categories = []
    for category in sorted({c["category"] for c, _ in pairs}):
        members = [(c, p) for c, p in pairs if c["category"] == category]
        cand = float(np.mean([c["hss"] for c, _ in members]))
        prod = float(np.mean([p["hss"] for _, p in members]))
        categories.append(
            {
                "category": category,
                "candidate_hss": cand,
                "production_hss": prod,
                "delta": cand - prod,
                "n": len(members),
            }
        )
    hss = [float(c["hss"]) for c, _ in pairs]
    low, high = bootstrap_ci(hss, resamples=resamples, level=confidence, seed=seed)
    return {
        "documents": len(pairs),
        "confidence": confidence,
        "signals": signals,
        "categories": categories,
        "candidate_hss_ci": [low, high],
        "hss_measured": True,
    }
