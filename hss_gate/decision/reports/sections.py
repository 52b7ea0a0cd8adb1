"""What the gate's and the monitor's reports say, section by section, before any format.

The verdict's words, numbers as text, and each section's content: a table (headers, rows,
which rows failed) or the data a format words itself. The formats render these: markdown.py
(the pull-request comment, monitor.md), html_page.py (decision.html, monitor.html) and
junit.py. A new section is one function here and one call in each format that shows it.

Nothing here is escaped: user text (documents, summaries, model ids) stays as it came, and each
format escapes it for its own syntax.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from hss_gate.decision.paired_comparison import difference_text, observed_text
from hss_gate.decision.record import Decision
from hss_gate.monitoring.trend import CONSISTENCY_TEST
from hss_gate.signals.consistency import SIGNAL as CONSISTENCY
from hss_gate.signals.tables import Evidence, unsupported_evidence

VERDICT = {
    "promote": "PROMOTE",
    "block": "BLOCKED",
    "error": "COULD NOT DECIDE (fails closed)",
    "healthy": "HEALTHY",
    "unhealthy": "UNHEALTHY",
    "insufficient_data": "INSUFFICIENT DATA (no reference window yet)",
}


@dataclass
class Table:
    """A section's table: its headers, its rows of cells and which rows failed (a format may
    mark them); a cell is shown as its text."""

    headers: Sequence[str]
    rows: list[list[Any]]
    failed: Sequence[bool] = field(default_factory=tuple)


# ------------------------------------------------------------------------- numbers as text


def num(value: Any, digits: int = 3) -> str:
    if value is None:
        return "n/a"
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, int | float):
        return f"{value:.{digits}f}"
    return str(value)


def diff(signal: Mapping[str, Any]) -> str:
    """A paired difference with its CI: +0.123 [+0.010, +0.240]."""
    return difference_text(signal)


def is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def signed(value: Any) -> str:
    return f"{value:+.3f}" if is_number(value) else "n/a"


# ------------------------------------------------------------------- gate: why and signals


def coded(decision: Decision, reasons: bool) -> list[tuple[str, str]]:
    """(text, code) of the decision's reasons or notes; a decision without findings (made by
    hand) has its texts without codes."""
    if not decision.findings:
        return [(t, "") for t in (decision.reasons if reasons else decision.notes)]
    return [(f.text, f.code) for f in decision.findings if f.is_reason == reasons]


def headline(decision: Decision) -> list[str]:
    """The deciding numbers in a few lines (the console's summary of a decision)."""
    m = decision.metrics
    lines = []
    for column, label in (
        (CONSISTENCY.paired[0].column, "consistency (mean sentence support, decides)"),
        (CONSISTENCY.paired[1].column, "least supported sentence"),
        ("base_unsupported_share", "unsupported entities/numbers"),
        ("hss", "HSS (reported)"),
    ):
        signal = (m.get("signals") or {}).get(column)
        if signal:
            on = "" if "documents" not in signal else f" on {signal['documents']} documents"
            lines.append(
                f"{label}: candidate {signal['candidate']:.3f} vs production "
                f"{signal['production']:.3f}, difference {diff(signal)}{on}"
            )
        elif column == "hss" and m.get("hss_not_measured"):
            lines.append(m["hss_not_measured"])
    sequential = m.get("sequential")
    if sequential:
        lines.append(
            f"documents used: {sequential['documents_used']} of "
            f"{sequential['documents_available']} ({len(sequential['looks'])} look(s)); "
            f"decided by: {', '.join(decision.decided_by)}"
        )
    return lines


SIGNAL_HEADERS = ["signal", "candidate", "production", "difference [CI]"]


def signals_table(metrics: Mapping[str, Any]) -> Table:
    """The gate's paired signals: each side's mean, the difference with its CI; HSS when it
    was not measured (said, never shown as a number); SHAP attribution instability if any."""
    rows = [
        [_on_documents(s, metrics), num(s["candidate"]), num(s["production"]), diff(s)]
        for s in metrics["signals"].values()
    ]
    not_measured = metrics.get("hss_not_measured")
    if not_measured:  # said, never shown as a number
        rows.append(["HSS", "not measured", "not measured", not_measured])
    attribution = metrics.get("attribution")
    if attribution:
        rows.append(_attribution_row(attribution))
    return Table(SIGNAL_HEADERS, rows)


def _on_documents(signal: Mapping[str, Any], metrics: Mapping[str, Any]) -> str:
    """A signal's label, with the documents it rests on when fewer than the decision's (HSS
    measured on a subset: facts first)."""
    n = signal.get("documents")
    if n is None:
        return str(signal["label"])
    return f"{signal['label']} (on {n} of {metrics.get('documents', n)} documents)"


def _attribution_row(record: Mapping[str, Any]) -> list[str]:
    """SHAP attribution instability beside HSS: each side's mean over its explained documents
    (or "not measured: why", never a number), the paired difference with its CI."""

    def side(name: str) -> str:
        s = record[name]
        if not s.get("measured"):
            return f"not measured: {s.get('not_measured', '')}"
        return f"{num(s.get('mean'))} (n={s.get('documents', 0)})"

    d = record.get("difference")
    difference = diff(d) if d else "n/a (needs both sides measured)"
    label = "attribution instability (rank, sentence SHAP)"
    return [label, side("candidate"), side("production"), difference]


CATEGORY_HEADERS = ["category", "candidate", "production", "delta", "n"]


def categories_table(categories: Sequence[Mapping[str, Any]]) -> Table:
    """HSS by category, both sides and the change."""
    rows = [
        [
            c["category"],
            num(c["candidate_hss"]),
            num(c["production_hss"]),
            f"{c['delta']:+.3f}",
            c["n"],
        ]
        for c in categories
    ]
    return Table(CATEGORY_HEADERS, rows)


# ------------------------------------------------------- both reports: checks and drift

CHECK_HEADERS = ["result", "kind", "table", "expectation", "observed"]


def _result(check: Mapping[str, Any]) -> str:
    if check["success"]:
        return "pass"
    return "FAIL" if check.get("blocking", True) else "FAIL (advisory)"


def observed(check: Mapping[str, Any]) -> str:
    """A check result's observed value as the reports write it: a facts bound's interval."""
    return observed_text(check) if check.get("interval") else num(check["observed"])


def checks_table(checks: Sequence[Mapping[str, Any]]) -> Table:
    """The Great Expectations suite checks, a failed one marked."""
    rows = [[_result(c), c["kind"], c["table"], c["description"], observed(c)] for c in checks]
    return Table(CHECK_HEADERS, rows, [not c["success"] for c in checks])


DRIFT_HEADERS = ["column", "result", "method", "score"]


def drift_table(columns: Sequence[Mapping[str, Any]]) -> Table:
    """Evidently's verdict per column (dicts as hss_gate.monitoring.drift's), a drifted one
    marked."""
    rows = [
        [
            str(c.get("column", "")),
            "drift" if c.get("drifted") else "no drift",
            str(c.get("method", "")),
            num(c.get("score")),
        ]
        for c in columns
    ]
    return Table(DRIFT_HEADERS, rows, [bool(c.get("drifted")) for c in columns])


# ------------------------------------------------- gate: the documents that moved most


def moved_most(
    candidate: Sequence[Mapping[str, Any]],
    production: Sequence[Mapping[str, Any]],
    summaries: tuple[Sequence[Mapping[str, Any]], Sequence[Mapping[str, Any]]],
    n: int = 5,
) -> list[dict[str, Any]]:
    """The n documents whose summaries lost most consistency from production to candidate
    (then whose HSS rose most), with both base summaries and the candidate's unsupported
    sentences, each beside the source passage that matches it best."""
    prod = {r["doc_id"]: r for r in production}
    base = [
        {s["doc_id"]: s["summary"] for s in rows if s["strength"] == "base"} for rows in summaries
    ]

    def hss(row: Mapping[str, Any]) -> float | None:
        """A row's HSS; None when it was not measured (NaN), never 0."""
        value = row.get("hss")
        return None if value is None or math.isnan(float(value)) else float(value)

    def moved(row: Mapping[str, Any]) -> tuple[float, float]:
        other = prod[row["doc_id"]]
        lost = float(other.get("base_consistency", 0.0)) - float(row.get("base_consistency", 0.0))
        a, b = hss(row), hss(other)
        return lost, (a - b) if a is not None and b is not None else 0.0

    ranked = sorted(candidate, key=moved, reverse=True)
    return [
        {
            "doc_id": r["doc_id"],
            "category": r["category"],
            "hss_candidate": hss(r),
            "hss_production": hss(prod[r["doc_id"]]),
            "consistency_candidate": r.get("base_consistency"),
            "consistency_production": prod[r["doc_id"]].get("base_consistency"),
            "summary_candidate": base[0].get(r["doc_id"], ""),
            "summary_production": base[1].get(r["doc_id"], ""),
            "unsupported": unsupported_evidence(r.get("base_unsupported_sentences")),
        }
        for r in ranked[:n]
    ]


# ------------------------------------------------ where the unsupported text is in a text


def spans(text: str, found: Sequence[tuple[str, Any]]) -> list[tuple[int, int, Any]]:
    """Where each (needle, payload) first occurs in `text` apart from the needles placed
    before it, in text order; a needle not found (or empty) is left out."""
    placed: list[tuple[int, int, Any]] = []
    for needle, payload in found:
        if not needle:
            continue
        for m in re.finditer(r"(?<!\w)" + re.escape(needle) + r"(?!\w)", text, re.IGNORECASE):
            if all(m.end() <= a or m.start() >= b for a, b, _ in placed):
                placed.append((m.start(), m.end(), payload))
                break
    return sorted(placed, key=lambda s: s[0])


def word_spans(sentence: str, words: Sequence[str]) -> list[tuple[int, int, Any]]:
    """Where each unsupported word occurs in the sentence (each occurrence, longest words
    first, never overlapping), in text order."""
    placed: list[tuple[int, int, Any]] = []
    for word in sorted(dict.fromkeys(words), key=len, reverse=True):
        if not word:
            continue
        pattern = r"(?<!\w)" + re.escape(word) + r"(?!\w)"
        for m in re.finditer(pattern, sentence, re.IGNORECASE):
            if all(m.end() <= a or m.start() >= b for a, b, _ in placed):
                placed.append((m.start(), m.end(), None))
    return sorted(placed, key=lambda s: s[0])


# ----------------------------------------------------------------- monitor: the heading


def monitored(result: Mapping[str, Any]) -> tuple[str, str]:
    """What the run judged: (what it is, its id). A served-only run judges the served model id
    its samples carry (the windows' model id), never the production model it does not run; a
    full run rescores the samples with the deployed (production) model."""
    served = (result.get("windows") or {}).get("model_id")
    if result.get("kind") == "served" and served:
        return "Served model", str(served)
    return "Deployed model", str(result.get("model", ""))


# ------------------------------------------------------------------ monitor: the two windows

WINDOW_HEADERS = ["window", "model id", "samples", "from", "to", "chosen as", "instead of"]
DISTRIBUTION_HEADERS = [
    "signal",
    "reference n",
    "reference mean",
    "reference p10 / median / p90",
    "current n",
    "current mean",
    "current p10 / median / p90",
    "change in mean",
]
WINDOW_TEST_HEADERS = [
    "signal",
    "reference",
    "current",
    "difference",
    "one-sided p",
    "alpha",
    "role",
    "detects (80% power)",
    "worse?",
]


def windows_table(result: Mapping[str, Any]) -> Table | None:
    """--served-only: the two windows side by side (model id, sizes, time ranges, how each
    was chosen); None when the run compared no windows."""
    windows = result.get("windows") or {}
    if not windows.get("reference"):
        return None
    ref, cur = windows["reference"], windows.get("current") or {}
    pinned = " (pinned)" if ref.get("pinned") else ""
    if ref.get("pinned"):
        chosen = f"pinned: {ref.get('since') or '?'} to {ref.get('until') or '?'}"
    elif ref.get("days") is not None:
        chosen = f"the model id's first {ref['days']:g} days ({ref.get('since') or '?'} on)"
    else:
        chosen = f"the model id's first {ref.get('n', '?')} samples"
    if cur.get("selection") == "since_last_run":
        current_chosen = f"the samples since the last run (after {cur.get('after') or '?'})"
    else:
        current_chosen = "the newest samples"
    instead = ref.get("instead_of")
    rows = [
        [
            "reference" + pinned,
            str(ref.get("model_id")),
            str(ref.get("n", "")),
            *_span(ref),
            chosen,
            f"{instead} (its own reference is not complete)" if instead else "",
        ],
        [
            "current",
            str(windows.get("model_id")),
            str(cur.get("n", "")),
            *_span(cur),
            current_chosen,
            "",
        ],
    ]
    return Table(WINDOW_HEADERS, rows)


def _span(window: Mapping[str, Any]) -> list[str]:
    return [str(window.get("first") or ""), str(window.get("last") or "")]


def window_tests_table(result: Mapping[str, Any]) -> Table:
    """Each signal's test of the current window against the reference; a row failed when the
    test made the run unhealthy (worse, and blocking)."""
    tests = (result.get("windows") or {}).get("tests") or []
    rows = [
        [
            str(t.get("label", t.get("signal", ""))),
            num(t.get("reference_mean")),
            num(t.get("current_mean")),
            signed(t.get("difference")),
            num(t.get("p_value"), 4),
            str(t.get("alpha", "")),
            "blocking" if t.get("blocking", True) else "reported",
            _detects(t),
            _test_outcome(t),
        ]
        for t in tests
    ]
    failed = [bool(t.get("worse")) and bool(t.get("blocking", True)) for t in tests]
    return Table(WINDOW_TEST_HEADERS, rows, failed)


DETECTS_TEXT = (
    '"Detects" is the smallest share of flagged summaries in a current window of this size that '
    "its test sees with 80% power against this reference window (exact Fisher power; "
    "docs/MONITORING.md): a smaller rise can pass unseen."
)


def _detects(test: Mapping[str, Any]) -> str:
    """The smallest current share a blocking test sees with 80% power ("none": no share does;
    empty for reported tests, which never make a run unhealthy)."""
    if "detectable_share" not in test:
        return ""
    seen = test["detectable_share"]
    return "none" if seen is None else f">= {seen:.2f}"


def _test_outcome(test: Mapping[str, Any]) -> str:
    """WORSE for a significant one-sided test, CHANGED for a significant two-sided one."""
    if not test.get("worse"):
        return "no"
    return "CHANGED" if test.get("alternative") == "two-sided" else "WORSE"


def _quantiles(stats: Mapping[str, Any]) -> str:
    return " / ".join(num(stats.get(k)) for k in ("p10", "median", "p90"))


def distributions_table(result: Mapping[str, Any]) -> Table:
    """Each signal's distribution in the reference and the current window, side by side."""
    rows = []
    for d in (result.get("windows") or {}).get("distributions") or []:
        ref, cur = d.get("reference") or {}, d.get("current") or {}
        a, b = ref.get("mean"), cur.get("mean")
        numbers = is_number(a) and is_number(b)
        rows.append(
            [
                str(d.get("label") or d.get("signal", "")),
                str(ref.get("n", "")),
                num(a),
                _quantiles(ref),
                str(cur.get("n", "")),
                num(b),
                _quantiles(cur),
                signed(b - a) if numbers else "n/a",
            ]
        )
    return Table(DISTRIBUTION_HEADERS, rows)


def attribution_line(result: Mapping[str, Any]) -> str:
    """The windows' attribution instability (monitor.attribution_documents), or ""."""
    from hss_gate.decision.attribution import windows_text

    record = result.get("attribution")
    return windows_text(record) if record else ""


REPORT_NAME = re.compile(r"[\w][\w.-]*\.html")
"""A report beside monitor.html that may be linked (a plain file name, nothing else)."""


@dataclass
class WindowDrift:
    """The Evidently drift of the two windows: what it found, the report beside monitor.html
    (a linkable file name, or None) and its table (None when there are no columns)."""

    text: str
    report: str | None
    table: Table | None


def window_drift(result: Mapping[str, Any]) -> WindowDrift | None:
    """The Evidently drift of the two windows; None when not measured."""
    drift = (result.get("windows") or {}).get("drift")
    if not isinstance(drift, Mapping) or not drift:
        return None
    if "drifted" not in drift:
        reason = drift.get("skipped") or "not measured"
        return WindowDrift(f"not measured: {reason}", None, None)
    drifted = [str(c) for c in drift.get("drifted_columns") or []]
    # dicts as hss_gate.monitoring.drift's, or bare names with methods and scores beside them
    columns = [
        c if isinstance(c, Mapping) else _named_column(drift, str(c), drifted)
        for c in drift.get("columns") or []
    ]
    share = drift.get("share")
    text = (
        f"{'drift' if drift.get('drifted') else 'no drift'}: {len(drifted)} of {len(columns)} "
        f"columns drifted (share {num(share)}); reference n={drift.get('n_reference', '?')}, "
        f"current n={drift.get('n_current', '?')}"
        + (f"; drifted: {', '.join(drifted)}" if drifted else "")
    )
    report = str(drift.get("report") or "")
    return WindowDrift(
        text,
        report if REPORT_NAME.fullmatch(report) else None,
        drift_table(columns) if columns else None,
    )


def _named_column(drift: Mapping[str, Any], name: str, drifted: Sequence[str]) -> dict[str, Any]:
    """A column the monitor's windows drift names bare: its verdict, and its method and score
    from the drift's "methods" and "scores" (column -> value; "" and None when absent)."""
    methods, scores = drift.get("methods"), drift.get("scores")
    return {
        "column": name,
        "drifted": name in drifted,
        "method": methods.get(name, "") if isinstance(methods, Mapping) else "",
        "score": scores.get(name) if isinstance(scores, Mapping) else None,
    }


# ----------------------------------------------------------------- monitor: the floor

FLOOR_HEADERS = ["signal", "live", "reference", "difference [CI]"]


def floor_table(result: Mapping[str, Any]) -> Table | None:
    """Served signals against the production reference corpus, then HSS after a full run:
    live mean, reference, difference [CI]; None when there is none."""
    rows = [
        [s["label"], num(s["live_mean"]), num(s["reference_mean"]), diff(s)]
        for s in result.get("served") or []
    ]
    rise = result.get("severity") or {}
    if rise:
        rows.append(["HSS", num(rise["live_mean"]), num(rise["reference_mean"]), diff(rise)])
    return Table(FLOOR_HEADERS, rows) if rows else None


# ------------------------------------------------------------ monitor: the flagged summaries

FLAGGED_SHOWN = 20
"""How many flagged served summaries the reports list (the rest are in monitor.json)."""


def flagged_samples(samples: Sequence[Mapping[str, Any]]) -> list[tuple[Mapping, list[Evidence]]]:
    """The served summaries the checker flags (those with unsupported sentences), each with its
    evidence (sentence, best-matching source passage, unsupported words), lowest consistency
    first (a sample without one last), then in the order served."""
    found = [
        (s, evidence)
        for s in samples
        if (evidence := unsupported_evidence(list(s.get("unsupported") or [])))
    ]

    def key(item: tuple[Mapping, list[Evidence]]) -> tuple[bool, float]:
        value = item[0].get("live_consistency")
        return (not is_number(value), float(value) if is_number(value) else 0.0)

    return sorted(found, key=key)


def flagged_intro(flagged: Sequence[Any], total: int) -> str:
    """How many served summaries are flagged, and how many more monitor.json holds."""
    more = len(flagged) - FLAGGED_SHOWN
    order = "lowest consistency first"
    if more > 0:
        order += f"; the first {FLAGGED_SHOWN} shown, {more} more in monitor.json"
    return (
        f"{len(flagged)} of {total} served summaries are flagged: the checker finds sentences "
        f"of them unsupported ({order})."
    )


# ------------------------------------------------------------------- monitor: the trend

TREND_HEADERS = [
    "started",
    "kind",
    "samples",
    "flagged share",
    "consistency test p",
    "mean HSS",
    "drift",
    "decision",
]


def trend_table(result: Mapping[str, Any]) -> Table:
    """The recorded runs, newest first."""
    rows = []
    for t in result.get("trend") or []:
        details = t.get("details") or {}
        p_values = details.get("p_values") or {}
        rows.append(
            [
                t.get("started_at", ""),
                details.get("kind", "full"),
                t.get("n_samples", ""),
                num(details.get("unsupported_share")),
                num(p_values.get(CONSISTENCY_TEST) if isinstance(p_values, Mapping) else None, 4),
                num(t.get("mean_hss")),
                t.get("drift", ""),
                t.get("decision", ""),
            ]
        )
    return Table(TREND_HEADERS, rows)
