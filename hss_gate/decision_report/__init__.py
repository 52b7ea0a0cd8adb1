"""Readable reports of a gate decision and a monitor run: Markdown (PR comment) and HTML.

Every text that comes from documents, summaries or model ids is HTML-escaped.
"""

from __future__ import annotations

import html
import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

from hss_gate.gate import Decision, Finding
from hss_gate.tables import Evidence, unsupported_evidence
from hss_gate.trend_plot import CONSISTENCY_TEST, trend_line, trend_svg

VERDICT = {
    "promote": "PROMOTE",
    "block": "BLOCKED",
    "error": "COULD NOT DECIDE (fails closed)",
    "healthy": "HEALTHY",
    "unhealthy": "UNHEALTHY",
    "insufficient_data": "INSUFFICIENT DATA (no reference window yet)",
}

_CSS = """
body{font-family:system-ui,sans-serif;max-width:70rem;margin:2rem auto;padding:0 1rem;color:#222}
table{border-collapse:collapse;margin:1rem 0}td,th{border:1px solid #ccc;padding:.3rem .6rem;
vertical-align:top;text-align:left}th{background:#f3f3f3}.promote,.healthy{color:#176f2c}
.block,.unhealthy,.error{color:#b00020}.fail{background:#fde8ea}.summary{max-width:28rem;
font-size:.9em}code{background:#f3f3f3;padding:0 .2rem}
mark.unsupported-word{background:#f4a6a6;font-weight:bold}
.evidence table{width:100%;table-layout:fixed}.evidence th:nth-child(2){width:12rem}
figure.trend{margin:1rem 0}figure.trend svg{max-width:100%;height:auto}
"""

LEGEND = (
    "<p class='legend'><mark>sentence the checker finds unsupported</mark> &middot; "
    "<mark class='unsupported-word'>word, name or number the source does not contain</mark></p>"
)


class _Markup(str):
    """A table cell already HTML (built from escaped text only): `_html_table` keeps it."""


def _num(value: Any, digits: int = 3) -> str:
    if value is None:
        return "n/a"
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, int | float):
        return f"{value:.{digits}f}"
    return str(value)


def _diff(signal: Mapping[str, Any]) -> str:
    return f"{signal['difference']:+.3f} [{signal['ci_low']:+.3f}, {signal['ci_high']:+.3f}]"


def _md_table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> list[str]:
    def cell(value: Any) -> str:
        return str(value).replace("|", "\\|").replace("\n", " ")

    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return lines


def _html_table(
    headers: Sequence[str], rows: Sequence[Sequence[Any]], failed: Sequence[bool] = ()
) -> str:
    head = "".join(f"<th>{html.escape(str(h))}</th>" for h in headers)
    body = []
    for i, row in enumerate(rows):
        mark = ' class="fail"' if i < len(failed) and failed[i] else ""
        cells = "".join(
            f"<td>{v if isinstance(v, _Markup) else html.escape(str(v))}</td>" for v in row
        )
        body.append(f"<tr{mark}>{cells}</tr>")
    return f"<table><tr>{head}</tr>{''.join(body)}</table>"


def _signal_rows(
    signals: Mapping[str, Any],
    not_measured: str | None = None,
    attribution: Mapping[str, Any] | None = None,
) -> list[list[str]]:
    rows = [
        [s["label"], _num(s["candidate"]), _num(s["production"]), _diff(s)]
        for s in signals.values()
    ]
    if not_measured:  # said, never shown as a number
        rows.append(["HSS", "not measured", "not measured", not_measured])
    if attribution:
        rows.append(_attribution_row(attribution))
    return rows


def _attribution_row(record: Mapping[str, Any]) -> list[str]:
    """SHAP attribution instability beside HSS: each side's mean over its explained documents
    (or "not measured: why", never a number), the paired difference with its CI."""

    def side(name: str) -> str:
        s = record[name]
        if not s.get("measured"):
            return f"not measured: {s.get('not_measured', '')}"
        return f"{_num(s.get('mean'))} (n={s.get('documents', 0)})"

    d = record.get("difference")
    diff = _diff(d) if d else "n/a (needs both sides measured)"
    label = "attribution instability (rank, sentence SHAP)"
    return [label, side("candidate"), side("production"), diff]


def _result(check: Mapping[str, Any]) -> str:
    if check["success"]:
        return "pass"
    return "FAIL" if check.get("blocking", True) else "FAIL (advisory)"


def _check_rows(checks: Sequence[Mapping[str, Any]]) -> list[list[str]]:
    return [
        [
            _result(c),
            c["kind"],
            c["table"],
            c["description"],
            _num(c["observed"]),
        ]
        for c in checks
    ]


CATEGORY_HEADERS = ["category", "candidate", "production", "delta", "n"]


def _category_rows(categories: Sequence[Mapping[str, Any]]) -> list[list[Any]]:
    return [
        [
            c["category"],
            _num(c["candidate_hss"]),
            _num(c["production_hss"]),
            f"{c['delta']:+.3f}",
            c["n"],
        ]
        for c in categories
    ]


def _coded(decision: Decision, reasons: bool) -> list[tuple[str, str]]:
    """(text, code) of the decision's reasons or notes; a decision without findings (made by
    hand) has its texts without codes."""
    if not decision.findings:
        return [(t, "") for t in (decision.reasons if reasons else decision.notes)]
    return [(f.text, f.code) for f in decision.findings if f.is_reason == reasons]


def _md_item(text: str, code: str) -> str:
    return f"- {text}" + (f" (`{code}`)" if code else "")


def _html_item(text: str, code: str) -> str:
    code_html = f" <code>{html.escape(code)}</code>" if code else ""
    return f"<li>{html.escape(text)}{code_html}</li>"


def headline(decision: Decision) -> list[str]:
    """The deciding numbers in a few lines (the console's summary of a decision)."""
    m = decision.metrics
    lines = []
    for column, label in (
        ("base_consistency", "consistency"),
        ("base_unsupported_share", "unsupported entities/numbers"),
        ("hss", "HSS (reported)"),
    ):
        signal = (m.get("signals") or {}).get(column)
        if signal:
            lines.append(
                f"{label}: candidate {signal['candidate']:.3f} vs production "
                f"{signal['production']:.3f}, difference {_diff(signal)}"
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


def decision_markdown(decision: Decision) -> str:
    """The pull-request comment."""
    m = decision.metrics
    lines = [
        f"## hss-gate: {VERDICT[decision.decision]}",
        "",
        f"Candidate `{decision.candidate}` against production `{decision.production}`"
        + (f" on {m['documents']} documents." if "documents" in m else "."),
        "",
        "**Why**",
        "",
        *[_md_item(text, code) for text, code in _coded(decision, reasons=True)],
        "",
        f"Decided by: {', '.join(decision.decided_by) or 'nothing'}.",
    ]
    if decision.notes:
        notes = [_md_item(text, code) for text, code in _coded(decision, reasons=False)]
        lines += ["", "**Read with**", "", *notes]
    if m.get("signals"):
        lines += [
            "",
            "**Signals** (means; difference = candidate - production, paired bootstrap CI)",
            "",
        ]
        lines += _md_table(
            ["signal", "candidate", "production", "difference [CI]"],
            _signal_rows(m["signals"], m.get("hss_not_measured"), m.get("attribution")),
        )
    if m.get("categories"):
        lines += ["", "<details><summary>HSS by category</summary>", ""]
        lines += _md_table(CATEGORY_HEADERS, _category_rows(m["categories"]))
        lines += ["", "</details>"]
    if decision.checks:
        failed = [c for c in decision.checks if not c["success"]]
        lines += [
            "",
            f"<details><summary>Suite checks: {len(decision.checks) - len(failed)} passed, "
            f"{len(failed)} failed</summary>",
            "",
        ]
        lines += _md_table(
            ["result", "kind", "table", "expectation", "observed"], _check_rows(decision.checks)
        )
        lines += ["", "</details>"]
    lines += [
        "",
        "Reports: `decision.html`, `data_docs/index.html` (Great Expectations), `drift.html` "
        "(Evidently), score tables in `candidate/` and `production/`.",
    ]
    return "\n".join(lines) + "\n"


def decision_html(decision: Decision, examples: Sequence[Mapping[str, Any]] = ()) -> str:
    """A standalone HTML page of the decision; examples are the documents that moved most."""
    m = decision.metrics
    esc = html.escape
    parts = [
        f"<!doctype html><html><head><meta charset='utf-8'><title>hss-gate decision</title>"
        f"<style>{_CSS}</style></head><body>",
        f"<h1 class='{esc(decision.decision)}'>hss-gate: {esc(VERDICT[decision.decision])}</h1>",
        f"<p>Candidate <code>{esc(decision.candidate)}</code> against production "
        f"<code>{esc(decision.production)}</code>; {esc(decision.created)}.</p>",
        "<h2>Why</h2><ul>"
        + "".join(_html_item(text, code) for text, code in _coded(decision, reasons=True))
        + "</ul>",
        f"<p>Decided by: <b>{esc(', '.join(decision.decided_by) or 'nothing')}</b>. Consistency "
        f"checker: <code>{esc(decision.checker or 'n/a')}</code>.</p>",
    ]
    if decision.notes:
        parts.append(
            "<h2>Read with</h2><ul>"
            + "".join(_html_item(text, code) for text, code in _coded(decision, reasons=False))
            + "</ul>"
        )
    if m.get("signals"):
        parts.append(
            "<h2>Signals</h2><p>Means over documents; difference = candidate - "
            "production with a paired bootstrap CI. The gate decides on the facts (consistency, "
            "unsupported entities/numbers); HSS is shown beside rewriting (1 - extractiveness): "
            "a paraphrasing model moves more.</p>"
        )
        parts.append(
            _html_table(
                ["signal", "candidate", "production", "difference [CI]"],
                _signal_rows(m["signals"], m.get("hss_not_measured"), m.get("attribution")),
            )
        )
    if m.get("categories"):
        parts.append("<h2>HSS by category</h2>")
        parts.append(_html_table(CATEGORY_HEADERS, _category_rows(m["categories"])))
    if decision.checks:
        failed = [c for c in decision.checks if not c["success"]]
        passed = [c for c in decision.checks if c["success"]]
        headers = ["result", "kind", "table", "expectation", "observed"]
        parts.append(
            f"<h2>Suite checks: {len(failed)} failed, {len(passed)} passed</h2><p>Great "
            "Expectations Data Docs: <a href='data_docs/index.html'>data_docs/index.html</a></p>"
        )
        if failed:
            parts.append(_html_table(headers, _check_rows(failed), [True] * len(failed)))
        parts.append(
            f"<details><summary>{len(passed)} passing checks</summary>"
            + _html_table(headers, _check_rows(passed))
            + "</details>"
        )
    if decision.drift:
        parts.append(_drift_html(decision.drift))
    if examples:
        parts.append(_examples_html(examples))
    parts.append("</body></html>")
    return "\n".join(parts)


def _drift_html(drift: Mapping[str, Any]) -> str:
    columns = drift.get("columns", [])
    rows = [
        [
            c["column"],
            "drift" if c["drifted"] else "no drift",
            c.get("method", ""),
            _num(c.get("score")),
        ]
        for c in columns
    ]
    return (
        f"<h2>Drift (Evidently)</h2><p>{'Drift' if drift.get('drifted') else 'No drift'}: "
        f"{html.escape(str(drift.get('share', '')))} of the columns drifted. Full report: "
        "<a href='drift.html'>drift.html</a></p>"
        + _html_table(
            ["column", "result", "method", "score"], rows, [c["drifted"] for c in columns]
        )
    )


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


def _spans(text: str, found: Sequence[tuple[str, Any]]) -> list[tuple[int, int, Any]]:
    """Where each (needle, payload) first occurs in `text` apart from the needles placed
    before it, in text order; a needle not found (or empty) is left out."""
    spans: list[tuple[int, int, Any]] = []
    for needle, payload in found:
        if not needle:
            continue
        for m in re.finditer(r"(?<!\w)" + re.escape(needle) + r"(?!\w)", text, re.IGNORECASE):
            if all(m.end() <= a or m.start() >= b for a, b, _ in spans):
                spans.append((m.start(), m.end(), payload))
                break
    return sorted(spans, key=lambda s: s[0])


def _marked(text: str, spans: Sequence[tuple[int, int, Any]], wrap: Any) -> str:
    """`text` escaped, each span's escaped text passed through `wrap(inner, payload)`."""
    out, at = [], 0
    for a, b, payload in spans:
        out += [html.escape(text[at:a]), wrap(text[a:b], payload)]
        at = b
    return "".join(out) + html.escape(text[at:])


def _word_spans(sentence: str, words: Sequence[str]) -> list[tuple[int, int, Any]]:
    """Where each unsupported word occurs in the sentence (each occurrence, longest words
    first, never overlapping), in text order."""
    spans: list[tuple[int, int, Any]] = []
    for word in sorted(dict.fromkeys(words), key=len, reverse=True):
        if not word:
            continue
        pattern = r"(?<!\w)" + re.escape(word) + r"(?!\w)"
        for m in re.finditer(pattern, sentence, re.IGNORECASE):
            if all(m.end() <= a or m.start() >= b for a, b, _ in spans):
                spans.append((m.start(), m.end(), None))
    return sorted(spans, key=lambda s: s[0])


def _marked_words(sentence: str, words: Sequence[str]) -> str:
    """The sentence (escaped) with each of its unsupported words marked (each occurrence)."""
    return _marked(
        sentence,
        _word_spans(sentence, words),
        lambda inner, _: f"<mark class='unsupported-word'>{html.escape(inner)}</mark>",
    )


def _highlighted(summary: str, unsupported: Any) -> str:
    """The summary (escaped) with its unsupported sentences marked, and within each the words
    the source does not contain (`unsupported`: evidence triples or old [sentence, passage])."""
    evidence = unsupported_evidence(list(unsupported or []))
    spans = _spans(summary, [(sentence, words) for sentence, _, words in evidence])
    return _marked(
        summary, spans, lambda inner, words: f"<mark>{_marked_words(inner, words)}</mark>"
    )


def _evidence_rows(evidence: Sequence[Evidence]) -> list[list[Any]]:
    """sentence (its unsupported words marked) | unsupported words | best source passage."""
    return [
        [_Markup(_marked_words(sentence, words)), ", ".join(words), passage]
        for sentence, passage, words in evidence
    ]


EVIDENCE_HEADERS = ["unsupported words", "best-matching source passage"]


def _examples_html(examples: Sequence[Mapping[str, Any]]) -> str:
    esc = html.escape
    parts = [
        "<h2>Documents whose summaries lost most consistency</h2><p>The candidate's summary "
        "with the sentences the checker finds unsupported <mark>marked</mark> and, within them, "
        "the words the source does not contain (the invented name or number), each sentence "
        "beside the source passage that matches it best; production's summary for "
        "comparison.</p>",
        LEGEND,
    ]
    for e in examples:
        parts.append(
            f"<h3>{esc(str(e['doc_id']))} ({esc(str(e['category']))}): consistency "
            f"{_num(e.get('consistency_candidate'))} vs {_num(e.get('consistency_production'))}, "
            f"HSS {_num(e['hss_candidate'])} vs {_num(e['hss_production'])}</h3>"
        )
        parts.append(
            f"<p class='summary'><b>Candidate:</b> "
            f"{_highlighted(e['summary_candidate'], e.get('unsupported', []))}</p>"
            f"<p class='summary'><b>Production:</b> {esc(e['summary_production'])}</p>"
        )
        evidence = unsupported_evidence(list(e.get("unsupported") or []))
        if evidence:
            parts.append(
                _html_table(
                    ["unsupported sentence (candidate)", *EVIDENCE_HEADERS],
                    _evidence_rows(evidence),
                )
            )
    return "\n".join(parts)


def _monitor_rows(result: Mapping[str, Any]) -> list[list[str]]:
    """Served signals, then HSS after a full run: live mean, reference, difference [CI]."""
    rows = [
        [s["label"], _num(s["live_mean"]), _num(s["reference_mean"]), _diff(s)]
        for s in result.get("served") or []
    ]
    rise = result.get("severity") or {}
    if rise:
        rows.append(["HSS", _num(rise["live_mean"]), _num(rise["reference_mean"]), _diff(rise)])
    return rows


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
    "worse?",
]


def _window_rows(result: Mapping[str, Any]) -> tuple[list[list[str]], list[list[str]]]:
    """--served-only: the two windows side by side (model id, sizes, time ranges, how each
    was chosen) and each signal's test."""
    windows = result.get("windows") or {}
    if not windows.get("reference"):
        return [], []
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
    spans = [
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
    tests = [
        [
            str(t.get("label", t.get("signal", ""))),
            _num(t.get("reference_mean")),
            _num(t.get("current_mean")),
            _signed(t.get("difference")),
            _num(t.get("p_value"), 4),
            str(t.get("alpha", "")),
            "blocking" if t.get("blocking", True) else "reported",
            _test_outcome(t),
        ]
        for t in windows.get("tests") or []
    ]
    return spans, tests


def _test_outcome(test: Mapping[str, Any]) -> str:
    """WORSE for a significant one-sided test, CHANGED for a significant two-sided one."""
    if not test.get("worse"):
        return "no"
    return "CHANGED" if test.get("alternative") == "two-sided" else "WORSE"


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _signed(value: Any) -> str:
    return f"{value:+.3f}" if _is_number(value) else "n/a"


def _span(window: Mapping[str, Any]) -> list[str]:
    return [str(window.get("first") or ""), str(window.get("last") or "")]


def _quantiles(stats: Mapping[str, Any]) -> str:
    return " / ".join(_num(stats.get(k)) for k in ("p10", "median", "p90"))


def _distribution_rows(result: Mapping[str, Any]) -> list[list[str]]:
    """Each signal's distribution in the reference and the current window, side by side."""
    rows = []
    for d in (result.get("windows") or {}).get("distributions") or []:
        ref, cur = d.get("reference") or {}, d.get("current") or {}
        a, b = ref.get("mean"), cur.get("mean")
        numbers = _is_number(a) and _is_number(b)
        rows.append(
            [
                str(d.get("label") or d.get("signal", "")),
                str(ref.get("n", "")),
                _num(a),
                _quantiles(ref),
                str(cur.get("n", "")),
                _num(b),
                _quantiles(cur),
                _signed(b - a) if numbers else "n/a",
            ]
        )
    return rows


def _failed_tests(result: Mapping[str, Any]) -> list[bool]:
    """Which window tests made the run unhealthy (worse, and blocking)."""
    tests = (result.get("windows") or {}).get("tests") or []
    return [bool(t.get("worse")) and bool(t.get("blocking", True)) for t in tests]


REPORT_NAME = re.compile(r"[\w][\w.-]*\.html")
"""A report beside monitor.html that may be linked (a plain file name, nothing else)."""


def _window_drift(result: Mapping[str, Any]) -> dict[str, Any] | None:
    """The Evidently drift of the two windows: {"text", "report" (a linkable file name or
    None), "rows" (column, result, method, score), "failed"}; None when not measured."""
    drift = (result.get("windows") or {}).get("drift")
    if not isinstance(drift, Mapping) or not drift:
        return None
    if "drifted" not in drift:
        reason = drift.get("skipped") or "not measured"
        return {"text": f"not measured: {reason}", "report": None, "rows": [], "failed": []}
    drifted = [str(c) for c in drift.get("drifted_columns") or []]
    columns = [  # dicts as Evidently's, or bare names
        c if isinstance(c, Mapping) else {"column": c, "drifted": str(c) in drifted}
        for c in drift.get("columns") or []
    ]
    share = drift.get("share")
    text = (
        f"{'drift' if drift.get('drifted') else 'no drift'}: {len(drifted)} of {len(columns)} "
        f"columns drifted (share {_num(share)}); reference n={drift.get('n_reference', '?')}, "
        f"current n={drift.get('n_current', '?')}"
        + (f"; drifted: {', '.join(drifted)}" if drifted else "")
    )
    report = str(drift.get("report") or "")
    return {
        "text": text,
        "report": report if REPORT_NAME.fullmatch(report) else None,
        "rows": [
            [
                str(c.get("column", "")),
                "drift" if c.get("drifted") else "no drift",
                str(c.get("method", "")),
                _num(c.get("score")),
            ]
            for c in columns
        ],
        "failed": [bool(c.get("drifted")) for c in columns],
    }


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
        return (not _is_number(value), float(value) if _is_number(value) else 0.0)

    return sorted(found, key=key)


def _flagged_intro(flagged: Sequence[Any], total: int) -> str:
    """How many served summaries are flagged, and how many more monitor.json holds."""
    more = len(flagged) - FLAGGED_SHOWN
    order = "lowest consistency first"
    if more > 0:
        order += f"; the first {FLAGGED_SHOWN} shown, {more} more in monitor.json"
    return (
        f"{len(flagged)} of {total} served summaries are flagged: the checker finds sentences "
        f"of them unsupported ({order})."
    )


_MD_SPECIAL = re.compile(r"([\\`*_\[\]])")


def _md_text(text: str) -> str:
    """User text for Markdown: HTML-escaped, emphasis and link syntax backslashed, one line."""
    return _MD_SPECIAL.sub(r"\\\1", html.escape(re.sub(r"\s+", " ", text), quote=False))


def _md_marked(sentence: str, words: Sequence[str]) -> str:
    """The sentence for Markdown with each unsupported word in bold."""
    out, at = [], 0
    for a, b, _ in _word_spans(sentence, words):
        out += [_md_text(sentence[at:a]), f"**{_md_text(sentence[a:b])}**"]
        at = b
    return "".join([*out, _md_text(sentence[at:])]).strip()


def _flagged_markdown(samples: Sequence[Mapping[str, Any]]) -> list[str]:
    flagged = flagged_samples(samples)
    if not flagged:
        return []
    rows = [
        [
            _md_text(str(s.get("doc_id", ""))),
            _num(s.get("live_consistency")),
            _md_marked(sentence, words),
            _md_text(passage) or "(none)",
        ]
        for s, evidence in flagged[:FLAGGED_SHOWN]
        for sentence, passage, words in evidence
    ]
    return [
        "",
        "**Served summaries the checker flags**",
        "",
        _flagged_intro(flagged, len(samples)) + " Words the source does not contain in bold.",
        "",
        *_md_table(
            ["sample", "consistency", "unsupported sentence", "best-matching source passage"], rows
        ),
    ]


def _flagged_html(samples: Sequence[Mapping[str, Any]]) -> str:
    """Each flagged served summary: its unsupported sentences, each beside the source passage
    that matches it best, the words the source does not contain marked."""
    flagged = flagged_samples(samples)
    if not flagged:
        return ""
    esc = html.escape
    parts = [
        "<h2>Unsupported sentences in served summaries</h2>"
        f"<p>{esc(_flagged_intro(flagged, len(samples)))} Each sentence the checker finds "
        "unsupported, the words of it the source does not contain, and the source passage "
        "that matches it best.</p>" + LEGEND
    ]
    for s, evidence in flagged[:FLAGGED_SHOWN]:
        parts.append(
            f"<h3>{esc(str(s.get('doc_id', '')))} ({esc(str(s.get('category', '')))}): "
            f"consistency {esc(_num(s.get('live_consistency')))}</h3>"
        )
        parts.append(
            "<div class='evidence'>"
            + _html_table(
                ["unsupported sentence (served)", *EVIDENCE_HEADERS], _evidence_rows(evidence)
            )
            + "</div>"
        )
    return "\n".join(parts)


# ------------------------------------------------------------------- monitor: the trend


def _trend_rows(result: Mapping[str, Any]) -> list[list[Any]]:
    rows = []
    for t in result.get("trend") or []:
        details = t.get("details") or {}
        p_values = details.get("p_values") or {}
        rows.append(
            [
                t.get("started_at", ""),
                details.get("kind", "full"),
                t.get("n_samples", ""),
                _num(details.get("unsupported_share")),
                _num(p_values.get(CONSISTENCY_TEST) if isinstance(p_values, Mapping) else None, 4),
                _num(t.get("mean_hss")),
                t.get("drift", ""),
                t.get("decision", ""),
            ]
        )
    return rows


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


def _windows_markdown(result: Mapping[str, Any]) -> list[str]:
    spans, tests = _window_rows(result)
    if not spans:
        return []
    lines = ["", "**Windows of the model's own traffic**", "", *_md_table(WINDOW_HEADERS, spans)]
    distributions = _distribution_rows(result)
    if distributions:
        lines += ["", "Each signal's distribution:", ""]
        lines += _md_table(DISTRIBUTION_HEADERS, distributions)
    if tests:
        lines += ["", *_md_table(WINDOW_TEST_HEADERS, tests)]
    attribution = _attribution_line(result)
    if attribution:
        lines += ["", attribution]
    drift = _window_drift(result)
    if drift:
        report = f" Report: `{drift['report']}`." if drift["report"] else ""
        lines += ["", f"Evidently drift between the windows: {drift['text']}.{report}"]
    return lines


def _attribution_line(result: Mapping[str, Any]) -> str:
    """The windows' attribution instability (monitor.attribution_documents), or ""."""
    from hss_gate.gate_attribution import windows_text

    record = result.get("attribution")
    return windows_text(record) if record else ""


def monitor_markdown(result: Mapping[str, Any]) -> str:
    """The monitor run as Markdown (for an issue comment)."""
    lines = [
        f"## hss-gate monitor: {VERDICT[result['decision']]}",
        "",
        f"Deployed model `{result.get('model', '')}`, {result.get('n_samples', 0)} recent "
        f"samples from the store ({result.get('kind', 'full')} run {result.get('run_id', '')}).",
        "",
        *[f"- {r}" for r in result.get("reasons", [])],
    ]
    windowed = _windows_markdown(result)
    lines += windowed
    if windowed:
        lines += ["", "**Absolute floor: the production reference corpus**"]
    if result.get("notes"):
        lines += ["", *[f"- {n}" for n in result["notes"]]]
    rows = _monitor_rows(result)
    if rows:
        lines += ["", *_md_table(["signal", "live", "reference", "difference [CI]"], rows)]
    lines += _flagged_markdown(result.get("samples") or [])
    if result.get("trend"):
        lines += ["", "**Recent runs** (newest first)", "", trend_line(result["trend"]), ""]
        lines += _md_table(TREND_HEADERS, _trend_rows(result))
    return "\n".join(lines) + "\n"


def _windows_html(result: Mapping[str, Any]) -> list[str]:
    spans, tests = _window_rows(result)
    if not spans:
        return []
    parts = ["<h2>Windows of the model's own traffic</h2>", _html_table(WINDOW_HEADERS, spans)]
    distributions = _distribution_rows(result)
    if distributions:
        parts.append(
            "<h3>Each signal's distribution</h3><p>Mean and the 10th, 50th and 90th "
            "percentiles per window; a 0/1 signal's mean is the share of summaries flagged.</p>"
        )
        parts.append(_html_table(DISTRIBUTION_HEADERS, distributions))
    if tests:
        parts.append(
            "<h3>Is the current window worse?</h3><p>One-sided tests of the current window "
            "against the reference; a blocking test below its alpha makes the run unhealthy, "
            "a reported one is shown only.</p>"
        )
        parts.append(_html_table(WINDOW_TEST_HEADERS, tests, _failed_tests(result)))
    attribution = _attribution_line(result)
    if attribution:
        parts.append(f"<h3>Attribution instability</h3><p>{html.escape(attribution)}</p>")
    drift = _window_drift(result)
    if drift:
        link = ""
        if drift["report"]:
            name = html.escape(drift["report"])
            link = f" Full report: <a href='{name}'>{name}</a>"
        parts.append(
            "<h3>Evidently drift between the windows</h3>"
            f"<p>{html.escape(drift['text'].capitalize())}.{link}</p>"
        )
        if drift["rows"]:
            parts.append(
                _html_table(["column", "result", "method", "score"], drift["rows"], drift["failed"])
            )
    return parts


def monitor_html(result: Mapping[str, Any]) -> str:
    """The monitor run as a standalone HTML page (all sample text escaped)."""
    esc = html.escape
    parts = [
        "<!doctype html><html><head><meta charset='utf-8'><title>hss-gate monitor</title>"
        f"<style>{_CSS}</style></head><body>",
        f"<h1 class='{esc(result['decision'])}'>hss-gate monitor: "
        f"{esc(VERDICT[result['decision']])}</h1>",
        f"<p>Deployed model <code>{esc(str(result.get('model', '')))}</code>; "
        f"{esc(str(result.get('n_samples', 0)))} samples; {esc(str(result.get('kind', 'full')))} "
        f"run {esc(str(result.get('run_id')))}.</p>",
        "<ul>" + "".join(f"<li>{esc(r)}</li>" for r in result.get("reasons", [])) + "</ul>",
    ]
    windowed = _windows_html(result)
    parts += windowed
    rows = _monitor_rows(result)
    if windowed and (rows or result.get("notes")):
        parts.append("<h2>Absolute floor: the production reference corpus</h2>")
    if result.get("notes"):
        parts.append("<ul>" + "".join(f"<li>{esc(n)}</li>" for n in result["notes"]) + "</ul>")
    if rows:
        parts.append(_html_table(["signal", "live", "reference", "difference [CI]"], rows))
    if result.get("drift"):
        parts.append(_drift_html(result["drift"]))
    if result.get("checks"):
        parts.append("<h2>Suite checks</h2>")
        parts.append(
            _html_table(
                ["result", "kind", "table", "expectation", "observed"],
                _check_rows(result["checks"]),
                [not c["success"] for c in result["checks"]],
            )
        )
    if result.get("samples"):
        parts.append(_flagged_html(result["samples"]))
    if result.get("trend"):
        parts.append(
            "<h2>Recent runs</h2><p>The share of served summaries the checker flags per "
            f"recorded run, oldest left. {esc(trend_line(result['trend']))}</p>"
        )
        parts.append(f"<figure class='trend'>{trend_svg(result['trend'])}</figure>")
        if result.get("trend_png"):
            parts.append(f"<img src='{esc(result['trend_png'])}' alt='mean HSS per run'>")
        parts.append("<p>The recorded runs, newest first:</p>")
        parts.append(_html_table(TREND_HEADERS, _trend_rows(result)))
    if result.get("samples"):
        parts.append("<h2>Samples</h2>")
        parts.append(
            _html_table(
                [
                    "sample",
                    "category",
                    "consistency",
                    "HSS",
                    "unsupported mentions",
                    "served summary",
                ],
                [
                    [
                        s["doc_id"],
                        s["category"],
                        _num(s.get("live_consistency")),
                        _num(s.get("hss")),
                        s.get("live_unsupported", ""),
                        _Markup(_highlighted(s.get("live_summary", ""), s.get("unsupported"))),
                    ]
                    for s in result["samples"]
                ],
            )
        )
    parts.append("</body></html>")
    return "\n".join(parts)


JUNIT_SIGNALS = {
    "consistency": "consistency",
    "unsupported_entities": "unsupported_entities",
    "hss": "hss.rise",
}
"""The paired signals JUnit shows as tests: test name -> the code of the finding that fails it."""


def decision_junit(decision: Decision) -> str:
    """The gate as JUnit XML, which CI systems show as tests: one test per suite check and per
    deciding signal (consistency, unsupported entities, HSS); a test fails when a finding with
    its code blocked the decision, an error is one erroring test, an override is a passing test
    that says who and why. Reads the findings' codes, never their text."""
    from xml.sax.saxutils import quoteattr

    cases: list[str] = []

    def case(classname: str, name: str, failure: str | None = None, kind: str = "failure") -> None:
        head = f"<testcase classname={quoteattr(classname)} name={quoteattr(name)}"
        if failure is None:
            cases.append(head + "/>")
        else:
            cases.append(f"{head}><{kind} message={quoteattr(failure)}/></testcase>")

    if decision.decision == "error":
        case("hss-gate", "decision", decision.reasons[0], kind="error")
    blocked = _blocking(decision.findings)
    not_measured = decision.metrics.get("hss_not_measured")
    for name, code in JUNIT_SIGNALS.items():
        if name == "hss" and not_measured:
            case("hss-gate.signals", name, not_measured, kind="skipped")
            continue
        finding = next((f for f in blocked if f.code == code), None)
        case("hss-gate.signals", name, finding.text if finding else None)
    failed_checks = {f.check for f in blocked if f.check}
    for check in decision.checks:
        where = f"{check['table']}.{check['name']}"
        message = f"{check['description']} (observed {_num(check['observed'])})"
        failed = not check["success"] and where in failed_checks
        case(f"hss-gate.checks.{check['kind']}", check["name"], message if failed else None)
    if decision.override:
        case("hss-gate", f"override by {decision.override['by']}: {decision.override['reason']}")
    failures = sum("<failure" in c for c in cases)
    errors = sum("<error" in c for c in cases)
    return (
        '<?xml version="1.0" encoding="utf-8"?>\n'
        f"<testsuite name={quoteattr('hss-gate: ' + decision.candidate)} tests='{len(cases)}' "
        f"failures='{failures}' errors='{errors}'>\n" + "\n".join(cases) + "\n</testsuite>\n"
    )


def _blocking(findings: Sequence[Finding]) -> list[Finding]:
    """The findings that blocked the decision (none once a person overrode the block)."""
    return [f for f in findings if f.effect == "block"]
