"""The paired comparison of a candidate's documents with production's (pure): per registered
signal's paired column (hss_gate.signals) the two means, their difference and its CI,
and HSS by category; the intervals the facts bounds are checked on (`bound_intervals`, and
`one_sample_bound_intervals` where there is no production to pair with). A signal measured
from the perturbed summaries is "not measured" when either side has none (stored summaries
without perturbed ones), never compared on NaN. The rule that reads it is
hss_gate.decision.rule."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any

import numpy as np

from hss_gate.common.errors import InputError
from hss_gate.scoring.severity import bootstrap_ci, paired_bootstrap_ci, paired_t_ci
from hss_gate.signals import margins, paired, relative_bounds

NOT_MEASURED_TEXT = (
    "HSS not measured: the summaries file has no perturbed summaries (export them with "
    "`hss perturb`)"
)


def difference_text(d: Mapping[str, Any]) -> str:
    """A paired difference with its CI, as every report and reason writes it:
    +0.123 [+0.010, +0.240]."""
    return f"{d['difference']:+.3f} [{d['ci_low']:+.3f}, {d['ci_high']:+.3f}]"


def interval_text(interval: Mapping[str, Any]) -> str:
    """A facts bound's interval, as every report and reason writes it: 0.400 [0.171, 0.629],
    paired with production's 0.350 over 20 documents at 95%."""
    paired_with = (
        f"paired with production's {interval['production']:.3f}"
        if "production" in interval
        else "one-sample"
    )
    level = f"{interval['confidence'] * 100:.4g}%"
    return (
        f"{interval['estimate']:.3f} [{interval['ci_low']:.3f}, {interval['ci_high']:.3f}], "
        f"{paired_with} over {interval['documents']} documents at {level}"
    )


def observed_text(check: Mapping[str, Any]) -> str:
    """What a check result observed, as every report and reason writes it: a facts bound's
    interval (its lower end decided), else the value."""
    if check.get("interval"):
        return interval_text(check["interval"])
    value = check["observed"]
    return f"{value:.3f}" if isinstance(value, float) else str(value)


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
    hss_documents: Collection[str] | None = None,
) -> dict[str, Any]:
    """Paired means, differences and bootstrap CIs of every compared signal, and by category.
    `hss_documents` (facts first, gate.hss_documents): the doc_ids HSS was measured on; the
    signals measured from the perturbed summaries, the categories' HSS and the candidate's HSS
    CI rest on those documents alone (their number is in `hss_documents`), the other signals
    on every document. When either side did not measure HSS on them (`hss_measured` false),
    the HSS signals, the categories' HSS and the candidate's HSS CI are left out: "not
    measured", never NaN or 0."""
    pairs = paired_rows(candidate, production)
    _require_deciding_columns(pairs)
    subset = None if hss_documents is None else set(hss_documents)
    hss_pairs = pairs if subset is None else [(c, p) for c, p in pairs if c["doc_id"] in subset]
    measured = bool(hss_pairs) and hss_measured(*map(list, zip(*hss_pairs, strict=True)))
    signals: dict[str, Any] = {}
    for signal in paired():
        column = signal.column
        if not all(column in c and column in p for c, p in pairs):
            continue
        if signal.needs_hss and not measured:
            continue
        signals[column] = _paired_signal(
            signal, hss_pairs if signal.needs_hss else pairs, resamples, confidence, seed
        )
        if signal.needs_hss and subset is not None:
            signals[column]["documents"] = len(hss_pairs)
    out: dict[str, Any] = {"documents": len(pairs), "confidence": confidence, "signals": signals}
    if subset is not None:
        out["hss_documents"] = len(hss_pairs)
    if not measured:
        return out | {
            "categories": [],
            "candidate_hss_ci": None,
            "hss_measured": False,
            "hss_not_measured": NOT_MEASURED_TEXT,
        }
    hss = [float(c["hss"]) for c, _ in hss_pairs]
    low, high = bootstrap_ci(hss, resamples=resamples, level=confidence, seed=seed)
    return out | {
        "categories": _categories(hss_pairs),
        "candidate_hss_ci": [low, high],
        "hss_measured": True,
    }


def _require_deciding_columns(
    pairs: Sequence[tuple[Mapping[str, Any], Mapping[str, Any]]],
) -> None:
    """A margin that always blocks needs its column on both sides: a table scored before it
    existed (base_mean_support came with schema 4) is an error, never a silent promotion."""
    for margin in margins():
        if margin.switch is not None:
            continue
        for side, index in (("candidate", 0), ("production", 1)):
            if any(margin.column not in pair[index] for pair in pairs):
                raise InputError(
                    f"the {side}'s documents table has no {margin.column} (the "
                    f"{margin.signal} margin's column): it was scored before this version of "
                    "hss-gate; score it again"
                )


def _paired_signal(
    signal: Any,
    pairs: Sequence[tuple[Mapping[str, Any], Mapping[str, Any]]],
    resamples: int,
    confidence: float,
    seed: int,
) -> dict[str, Any]:
    """One signal's means on both sides, their paired difference and its CI."""
    column = signal.column
    a = [float(c[column]) for c, _ in pairs]
    b = [float(p[column]) for _, p in pairs]
    if signal.ci == "student-t":  # calibrated at small n: tests/unit/test_sequential.py
        diff, low, high = paired_t_ci(a, b, level=confidence)
    else:
        diff, low, high = paired_bootstrap_ci(
            a, b, resamples=resamples, level=confidence, seed=seed
        )
    return {
        "label": signal.label,
        "candidate": float(np.mean(a)),
        "production": float(np.mean(b)),
        "production_sd": float(np.std(b, ddof=1)) if len(b) > 1 else 0.0,
        "difference": diff,
        "ci_low": low,
        "ci_high": high,
    }


def _categories(
    pairs: Sequence[tuple[Mapping[str, Any], Mapping[str, Any]]],
) -> list[dict[str, Any]]:
    """HSS by category: both sides' means, the change and the documents it rests on."""
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
    return categories


def bound_intervals(comparison: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The interval each facts bound is checked on (hss_gate.decision.checks), paired with
    production on the same documents: the candidate's mean of the bound's column as production's
    mean plus the paired difference's CI at the look's level (the comparison's). A bound blocks
    only when the interval's lower end is above it: the candidate's value is above the bound with
    confidence, never on a point estimate."""
    rows = []
    for bound in relative_bounds():
        signal = comparison["signals"].get(bound.column)
        if signal is None:
            continue
        own = float(signal["production"])
        rows.append(
            {
                "bound": bound.check,
                "column": bound.column,
                "test": "paired",
                "documents": int(comparison["documents"]),
                "confidence": float(comparison["confidence"]),
                "estimate": float(signal["candidate"]),
                "ci_low": own + float(signal["ci_low"]),
                "ci_high": own + float(signal["ci_high"]),
                "production": own,
            }
        )
    return rows


def one_sample_bound_intervals(
    rows: Sequence[Mapping[str, Any]], confidence: float
) -> list[dict[str, Any]]:
    """The interval each facts bound is checked on where nothing pairs with the rows (the
    monitor's rescored samples against the absolute ceilings): the mean of the bound's column
    with its Student-t CI at `confidence` (the paired one against zero)."""
    out = []
    for bound in relative_bounds():
        values = [float(r[bound.column]) for r in rows if bound.column in r]
        if not values:
            continue
        mean, low, high = paired_t_ci(values, [0.0] * len(values), level=confidence)
        out.append(
            {
                "bound": bound.check,
                "column": bound.column,
                "test": "one-sample",
                "documents": len(values),
                "confidence": float(confidence),
                "estimate": mean,
                "ci_low": low,
                "ci_high": high,
            }
        )
    return out
