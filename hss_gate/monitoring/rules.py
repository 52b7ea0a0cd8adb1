"""Live-traffic monitoring: samples as documents, live summary signals, the verdict (pure)."""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Mapping, Sequence
from typing import Any

from hss_gate.common.errors import InputError
from hss_gate.consistency.verdict import Verdict
from hss_gate.decision.paired_comparison import difference_text
from hss_gate.scoring.severity import bootstrap_ci, difference_bootstrap_ci
from hss_gate.signals import declared_window_tests
from hss_gate.signals.summary_flags import LengthPolicy
from hss_gate.signals.summary_values import summary_values
from hss_gate.signals.tables import SERVED_COLUMNS, names, unsupported_evidence
from hss_gate.text.corpus import Document

EXIT_CODES = {"healthy": 0, "unhealthy": 1, "error": 2, "insufficient_data": 3}


def samples_to_documents(samples: Sequence[Any]) -> list[Document]:
    """Production samples as documents to score (doc_id = sample_id)."""
    if not samples:
        raise InputError("the sample store has no samples to monitor; run `hss samples ingest`")
    return [
        Document(doc_id=s.sample_id, category=s.category, tier="live", text=s.document)
        for s in samples
    ]


def live_summary_signals(
    samples: Sequence[Any],
    mentions: Sequence[list[str]],
    verdicts: Sequence[Verdict],
    ngram: int,
    policy: LengthPolicy,
    threshold: float,
) -> list[dict[str, Any]]:
    """Signals of the summaries production actually served (the served table's columns of
    hss_gate.signals.summary_values): the checker's consistency and unsupported sentences,
    entity support, rewriting, cuts and whether they summarize."""
    served = [c.removeprefix("live_") for c in names(SERVED_COLUMNS) if c.startswith("live_")]
    rows = []
    for s, m, v in zip(samples, mentions, verdicts, strict=True):
        values = summary_values(
            s.summary, s.document, v, m, ngram=ngram, policy=policy, threshold=threshold
        )
        when = s.timestamp.isoformat()
        served_by = {"doc_id": s.sample_id, "model_id": s.model_id, "timestamp": when}
        rows.append(served_by | {f"live_{name}": values[name] for name in served})
    return rows


# served-summary signals compared with the production reference: (live column, reference
# column, label, the MonitorSettings field holding its margin); a rise beyond the margin
# (significant) is unhealthy
SERVED_SIGNALS = (
    (
        "live_low_consistency",
        "base_low_consistency",
        "summaries the checker finds unsupported",
        "served_margin",
    ),
    (
        "live_unsupported_share",
        "base_unsupported_share",
        "entities/numbers not in the source",
        "served_unsupported_margin",
    ),
)


def served_margins(monitor: Any) -> dict[str, float]:
    """Each served signal's margin, read by name from the monitor settings."""
    return {live: float(getattr(monitor, setting)) for live, _, _, setting in SERVED_SIGNALS}


def served_rises(
    live: Any,
    reference: Any,
    margins: Mapping[str, float],
    *,
    resamples: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
) -> list[dict[str, Any]]:
    """Each served signal's live mean against the production reference rate: a rise is a
    bootstrap CI of the difference entirely above its margin."""
    out = []
    for live_column, reference_column, label, _ in SERVED_SIGNALS:
        if reference_column not in reference:
            raise InputError(
                f"the production reference has no '{reference_column}' column; rebuild it with "
                "`dvc repro` (hss baseline --stage metrics)"
            )
        values = [float(v) for v in live[live_column]]
        rates = [float(v) for v in reference[reference_column]]
        diff, low, high = difference_bootstrap_ci(
            values, rates, resamples=resamples, level=confidence, seed=seed
        )
        margin = margins[live_column]
        out.append(
            {
                "signal": live_column,
                "label": label,
                "live_mean": float(sum(values) / len(values)),
                "reference_mean": float(sum(rates) / len(rates)),
                "difference": diff,
                "ci_low": low,
                "ci_high": high,
                "margin": margin,
                "rise": low > margin,
            }
        )
    return out


# served signals compared between the model's own windows, each a 0/1 flag per summary (the
# per-summary share of unsupported entities is mostly 0 with a long tail; its flag is exact):
# (name, label); higher is worse. These two block (their false-alarm rate is measured in
# docs/MONITORING.md).
WINDOW_SIGNALS = (
    ("live_low_consistency", "summaries the checker finds unsupported"),
    ("live_any_unsupported", "summaries with an entity/number not in the source"),
)

# served signals compared between the windows and only reported (never blocking), declared by
# their signals (hss_gate.signals, `WindowTest`): (name, label, test, alternative).
# "mann_whitney": a continuous signal, Mann-Whitney U of the current window against the
# reference ("less": the current is lower, worse; "two-sided": changed either way); "fisher": a
# 0/1 flag, the one-sided Fisher exact test (higher is worse).
REPORTED_SIGNALS = tuple(
    (w.column, w.label, w.test, w.alternative) for w in declared_window_tests() if not w.drift_only
)
_DRIFT_ONLY = tuple(w for w in declared_window_tests() if w.drift_only)

# every column a stored reference window must hold (an older one lacking any is rescored): the
# blocking flags, the reported tests and the columns only Evidently's drift of the windows reads
WINDOW_COLUMNS = (
    *(name for name, _ in WINDOW_SIGNALS),
    *(name for name, *_ in REPORTED_SIGNALS),
    *(w.column for w in _DRIFT_ONLY),
)
WINDOW_LABELS = {
    **dict(WINDOW_SIGNALS),
    **{name: label for name, label, *_ in REPORTED_SIGNALS},
    **{w.column: w.label for w in _DRIFT_ONLY},
}
CONTINUOUS_COLUMNS = tuple(w.column for w in declared_window_tests() if w.test == "mann_whitney")
"""The continuous window columns: tested with Mann-Whitney U (or only compared by Evidently's
drift), in the registry's order."""


def blocking_signal_values(rows: Sequence[Mapping[str, Any]]) -> dict[str, list[float]]:
    """The blocking window signals (WINDOW_SIGNALS) of served summaries' signal rows
    (`live_summary_signals`): 1.0 where the summary is flagged."""
    return {
        "live_low_consistency": [float(bool(r["live_low_consistency"])) for r in rows],
        "live_any_unsupported": [float(float(r["live_unsupported_share"]) > 0) for r in rows],
    }


def window_signal_values(rows: Sequence[Mapping[str, Any]]) -> dict[str, list[float | None]]:
    """Every window column (WINDOW_COLUMNS) of served summaries' signal rows: the blocking
    flags, the continuous signals (None where not finite) and the 0/1 form flags."""
    values: dict[str, list[float | None]] = dict(blocking_signal_values(rows))
    for column in WINDOW_COLUMNS:
        if column in values:
            continue
        if column in CONTINUOUS_COLUMNS:
            values[column] = [_finite(r[column]) for r in rows]
        else:
            values[column] = [float(bool(r[column])) for r in rows]
    return values


def _finite(value: Any) -> float | None:
    number = None if value is None else float(value)
    return number if number is not None and math.isfinite(number) else None


def one_sided_fisher(reference: Sequence[float], current: Sequence[float]) -> float:
    """One-sided Fisher exact test that the current window's share of flagged summaries (0/1
    values) is above the reference window's: P(X >= flagged now) for X hypergeometric, with
    both windows' flags pooled under the null. Exact, so conservative at any window size (a
    two-proportion z-test at 20 samples called false alarms up to 5x too often on rare flags)."""
    n_r, n_c = len(reference), len(current)
    if n_r == 0 or n_c == 0:
        raise InputError("a window without samples cannot be tested")
    if any(v not in (0.0, 1.0) for v in (*reference, *current)):
        raise InputError("window signals are 0/1 flags")
    k_c = int(sum(current))
    total, flagged = n_r + n_c, int(sum(reference)) + k_c
    ways = math.comb(total, n_c)
    tail = sum(
        math.comb(flagged, x) * math.comb(total - flagged, n_c - x)
        for x in range(k_c, min(flagged, n_c) + 1)
    )
    return min(1.0, tail / ways)


def mann_whitney(reference: Sequence[float], current: Sequence[float], alternative: str) -> float:
    """Mann-Whitney U p-value of the current window against the reference ("less": the
    current values tend to be lower; "two-sided": either way); scipy's exact test for small
    windows without ties, else the normal approximation with the tie correction. Windows
    whose values are all one and the same value give 1.0 (nothing changed)."""
    from scipy.stats import mannwhitneyu

    if not reference or not current:
        raise InputError("a window without samples cannot be tested")
    if len({*reference, *current}) == 1:
        return 1.0
    p = float(mannwhitneyu(current, reference, alternative=alternative).pvalue)
    return 1.0 if math.isnan(p) else min(1.0, p)


def compare_blocking_windows(
    reference: Mapping[str, Sequence[float]],
    current: Mapping[str, Sequence[float]],
    alpha: float,
) -> list[dict[str, Any]]:
    """Each blocking served signal (WINDOW_SIGNALS, 0/1 flags) of the current window against
    the model's own reference window: significantly worse when the one-sided Fisher exact
    p-value is below alpha (alpha is per signal; the run's false-alarm rate is measured by
    scripts/monitor_power.py, docs/MONITORING.md), with the smallest current share these
    windows detect with 80% power (`detectable_share`; None: no share does)."""
    from hss_gate.monitoring.detectable import detectable_share

    out = []
    for column, label in WINDOW_SIGNALS:
        ref = [float(v) for v in reference[column]]
        cur = [float(v) for v in current[column]]
        p = one_sided_fisher(ref, cur)
        row = _test_row(column, label, ref, cur, p, alpha)
        seen = detectable_share(row["reference_mean"], len(ref), len(cur), alpha)
        out.append(
            row
            | {"test": "fisher", "alternative": "greater", "blocking": True}
            | {"detectable_share": seen}
        )
    return out


def compare_reported_windows(
    reference: Mapping[str, Sequence[float | None]],
    current: Mapping[str, Sequence[float | None]],
    alpha: float,
) -> list[dict[str, Any]]:
    """The reported (never blocking) comparisons of the windows (REPORTED_SIGNALS), each at
    `alpha`: "worse" is p < alpha (for a two-sided test: changed, either way). Missing values
    (None) are left out; a signal without values in a window is not tested."""
    out = []
    for column, label, test, alternative in REPORTED_SIGNALS:
        ref = [float(v) for v in reference[column] if v is not None]
        cur = [float(v) for v in current[column] if v is not None]
        if not ref or not cur:
            continue
        fisher = test == "fisher"
        p = one_sided_fisher(ref, cur) if fisher else mann_whitney(ref, cur, alternative)
        out.append(
            _test_row(column, label, ref, cur, p, alpha)
            | {"test": test, "alternative": alternative, "blocking": False}
        )
    return out


ATTRIBUTION_SIGNAL = "attribution_instability"
ATTRIBUTION_LABEL = "attribution instability (rank, sentence SHAP; higher is less stable)"


def attribution_window_test(
    reference: Sequence[float], current: Sequence[float], alpha: float
) -> dict[str, Any] | None:
    """The attribution instability of the explained served samples, current window against
    the reference window: a reported (never blocking) one-sided Mann-Whitney test that it rose
    ("greater"), at `alpha`; None when a window has no value."""
    ref, cur = [float(v) for v in reference], [float(v) for v in current]
    if not ref or not cur:
        return None
    p = mann_whitney(ref, cur, "greater")
    return _test_row(ATTRIBUTION_SIGNAL, ATTRIBUTION_LABEL, ref, cur, p, alpha) | {
        "test": "mann_whitney",
        "alternative": "greater",
        "blocking": False,
    }


def _test_row(
    column: str, label: str, ref: list[float], cur: list[float], p: float, alpha: float
) -> dict[str, Any]:
    return {
        "signal": column,
        "label": label,
        "reference_mean": sum(ref) / len(ref),
        "current_mean": sum(cur) / len(cur),
        "difference": sum(cur) / len(cur) - sum(ref) / len(ref),
        "p_value": p,
        "alpha": alpha,
        "n_reference": len(ref),
        "n_current": len(cur),
        "worse": p < alpha,
    }


def window_distributions(
    reference: Mapping[str, Sequence[float | None]],
    current: Mapping[str, Sequence[float | None]],
) -> list[dict[str, Any]]:
    """Each window column's distribution in both windows (n, mean, p10, median, p90; None
    values left out), for the report to show side by side."""
    return [
        {
            "signal": column,
            "label": WINDOW_LABELS[column],
            "reference": _summary([v for v in reference.get(column, []) if v is not None]),
            "current": _summary([v for v in current.get(column, []) if v is not None]),
        }
        for column in WINDOW_COLUMNS
    ]


def _summary(values: list[float]) -> dict[str, Any]:
    import numpy as np

    if not values:
        return {"n": 0, "mean": None, "p10": None, "median": None, "p90": None}
    p10, median, p90 = (float(x) for x in np.percentile(values, [10, 50, 90]))
    return {
        "n": len(values),
        "mean": float(np.mean(values)),
        "p10": p10,
        "median": median,
        "p90": p90,
    }


def previous_current_last(
    runs: Sequence[Mapping[str, Any]], model_id: str, kind: str
) -> dt.datetime | None:
    """The newest sample time of the current window of the latest recorded run of this kind
    ("served" or "full") on this model id (runs newest first, as `SampleStore.runs` gives them,
    as dicts); None when no such run recorded one (e.g. it failed)."""
    for run in runs:
        details = run.get("details") or {}
        if details.get("kind", "full") != kind or details.get("model_id") != model_id:
            continue
        if details.get("current_last"):
            return dt.datetime.fromisoformat(details["current_last"])
    return None


def window_reasons(tests: Sequence[Mapping[str, Any]]) -> list[str]:
    """Why the current window is worse than the model's own reference (empty: it is not)."""
    return [
        f"served summaries: {t['label']} rose from the model's reference window "
        f"{t['reference_mean']:.3f} (n={t['n_reference']}) to {t['current_mean']:.3f} "
        f"(n={t['n_current']}), one-sided p={t['p_value']:.4f} < alpha {t['alpha']}"
        for t in tests
        if t["worse"] and t.get("blocking", True)
    ]


def reported_test_notes(tests: Sequence[Mapping[str, Any]]) -> list[str]:
    """The reported (not blocking) window tests that are significant, one note each (the
    blocking ones give `window_reasons`)."""
    sides = {"less": "fell", "greater": "rose", "two-sided": "changed"}
    return [
        f"reported (not blocking): {t['label']} {sides[t['alternative']]} from the model's "
        f"reference window {t['reference_mean']:.3f} (n={t['n_reference']}) to "
        f"{t['current_mean']:.3f} (n={t['n_current']}), {t['test']} "
        f"{'two-sided' if t['alternative'] == 'two-sided' else 'one-sided'} "
        f"p={t['p_value']:.4f} < alpha {t['alpha']}"
        for t in tests
        if t["worse"] and not t.get("blocking", True)
    ]


def severity_rise(
    live: Sequence[float],
    reference: Sequence[float],
    *,
    margin: float,
    resamples: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
) -> dict[str, Any]:
    """Live mean HSS against the production reference: a rise is a CI above the margin."""
    diff, low, high = difference_bootstrap_ci(
        live, reference, resamples=resamples, level=confidence, seed=seed
    )
    live_low, live_high = bootstrap_ci(live, resamples=resamples, level=confidence, seed=seed)
    return {
        "live_mean": float(sum(live) / len(live)),
        "live_ci_low": live_low,
        "live_ci_high": live_high,
        "reference_mean": float(sum(reference) / len(reference)),
        "difference": diff,
        "ci_low": low,
        "ci_high": high,
        "margin": margin,
        "rise": low > margin,
        "n_live": len(live),
        "n_reference": len(reference),
    }


def monitor_verdict(
    rise: Mapping[str, Any] | None,
    drift: Mapping[str, Any] | None,
    checks: Sequence[Mapping[str, Any]],
    served: Sequence[Mapping[str, Any]] = (),
) -> tuple[str, list[str]]:
    """'unhealthy' on a significant rise of unsupported served summaries (or entities), a
    significant severity rise, drift, or a failed suite check."""
    reasons = [
        f"served summaries: {s['label']} rose from the reference {s['reference_mean']:.3f} to "
        f"{s['live_mean']:.3f}, difference {difference_text(s)} beyond the margin {s['margin']}"
        for s in served
        if s["rise"]
    ]
    if rise and rise["rise"]:
        reasons.append(
            f"severity rise: live mean HSS {rise['live_mean']:.3f} vs reference "
            f"{rise['reference_mean']:.3f}, difference {difference_text(rise)} "
            f"beyond the margin {rise['margin']}"
        )
    if drift and drift.get("drifted"):
        reasons.append(
            "score distributions drifted from the production reference: "
            + ", ".join(drift.get("drifted_columns", []))
        )
    for check in checks:
        if not check["success"]:
            reasons.append(
                f"{check['kind']} check failed: {check['description']} "
                f"(observed {check['observed']})"
            )
    return ("unhealthy" if reasons else "healthy"), reasons


def sample_rows(
    scored: Sequence[Mapping[str, Any]], samples: Sequence[Any]
) -> list[dict[str, Any]]:
    """One report row per sample: its consistency, unsupported mentions, the summary served,
    its unsupported sentences (sentence, passage, words) and (after a full run) its HSS."""
    served = {s.sample_id: s for s in samples}
    return [
        {
            "doc_id": row["doc_id"],
            "category": row.get("category", served[row["doc_id"]].category),
            "hss": row.get("hss"),
            "live_consistency": row["live_consistency"],
            "live_unsupported": row["live_unsupported"],
            "live_summary": served[row["doc_id"]].summary,
            "unsupported": [
                [sentence, passage, list(words)]
                for sentence, passage, words in unsupported_evidence(
                    row.get("live_unsupported_sentences")
                )
            ],
        }
        for row in scored
    ]


def run_record(result: Mapping[str, Any], started: dt.datetime) -> dict[str, Any]:
    """The store's record of one monitor run (the severity trend), as the fields of a
    `samples.MonitorRun` (the store validates them)."""
    rise = result.get("severity") or {}
    drift = result.get("drift") or {}
    served = {s["signal"]: s for s in result.get("served") or []}
    low = served.get("live_low_consistency", {})
    return {
        "run_id": result["run_id"],
        "started_at": started,
        "model": result["model"],
        "n_samples": result["n_samples"],
        "mean_hss": rise.get("live_mean"),
        "ci_low": rise.get("live_ci_low"),
        "ci_high": rise.get("live_ci_high"),
        "drift": bool(drift.get("drifted")),
        "drifted_columns": list(drift.get("drifted_columns", [])),
        "decision": result["decision"],
        "details": {
            "kind": result.get("kind", "full"),
            "reasons": list(result["reasons"]),
            "unsupported_share": low.get("live_mean"),
            **_window_details(result.get("windows")),
        },
    }


def _window_details(windows: Mapping[str, Any] | None) -> dict[str, Any]:
    """What the store keeps of a windowed run: the model id, the reference it was compared
    with, the window sizes and each signal's p-value (the trend)."""
    if not windows:
        return {}
    reference = windows.get("reference") or {}
    current = windows.get("current") or {}
    return {
        "window_status": windows["status"],
        "model_id": windows.get("model_id"),
        "reference_model_id": reference.get("model_id"),
        "n_reference": reference.get("n"),
        "n_current": current.get("n"),
        "current_last": current.get("last"),  # where monitor.current_window since_last_run resumes
        "p_values": {t["signal"]: t["p_value"] for t in windows.get("tests", [])},
        "window_drift": bool((windows.get("drift") or {}).get("drifted")),
    }
