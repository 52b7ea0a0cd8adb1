"""The reports as standalone HTML pages: decision.html and monitor.html.

Every text that comes from documents, summaries or model ids is HTML-escaped; a cell is kept
as it is only when it is `Markup` (built from escaped text only).
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from typing import Any

from hss_gate.consistency.entail_release import checker_trust
from hss_gate.decision.record import Decision
from hss_gate.decision.reports.gate_figures import (
    categories_svg,
    category_intervals,
    category_table,
    consistency_svg,
    consistency_table,
    looks_svg,
    looks_table,
)
from hss_gate.decision.reports.monitor_figures import flagged_shares_svg, trend_svg
from hss_gate.decision.reports.sections import (
    DETECTS_TEXT,
    FLAGGED_SHOWN,
    VERDICT,
    Table,
    attribution_line,
    categories_table,
    checks_table,
    coded,
    distributions_table,
    drift_table,
    flagged_intro,
    flagged_samples,
    floor_table,
    monitored,
    num,
    signals_table,
    spans,
    trend_table,
    window_drift,
    window_tests_table,
    windows_table,
    word_spans,
)
from hss_gate.monitoring.trend import trend_line
from hss_gate.signals.tables import Evidence, unsupported_evidence

_CSS = """
body{font-family:system-ui,sans-serif;max-width:70rem;margin:2rem auto;padding:0 1rem;color:#222}
table{border-collapse:collapse;margin:1rem 0}td,th{border:1px solid #ccc;padding:.3rem .6rem;
vertical-align:top;text-align:left}th{background:#f3f3f3}.promote,.healthy{color:#176f2c}
.block,.unhealthy,.error{color:#b00020}.fail{background:#fde8ea}.summary{max-width:28rem;
font-size:.9em}code{background:#f3f3f3;padding:0 .2rem}
mark.unsupported-word{background:#f4a6a6;font-weight:bold}
.evidence table{width:100%;table-layout:fixed}.evidence th:nth-child(2){width:12rem}
figure.chart{margin:1rem 0}figure.chart svg{max-width:100%;height:auto;display:block}
figure.chart figcaption{font-size:.9em;color:#444;max-width:46rem}
"""

LEGEND = (
    "<p class='legend'><mark>sentence the checker finds unsupported</mark> &middot; "
    "<mark class='unsupported-word'>word, name or number the source does not contain</mark></p>"
)


class Markup(str):
    """A table cell already HTML (built from escaped text only): `table` keeps it."""


def table(t: Table) -> str:
    """An HTML table, each cell escaped unless Markup, a failed row marked (class "fail")."""
    failed = t.failed
    head = "".join(f"<th>{html.escape(str(h))}</th>" for h in t.headers)
    body = []
    for i, row in enumerate(t.rows):
        mark = ' class="fail"' if i < len(failed) and failed[i] else ""
        cells = "".join(
            f"<td>{v if isinstance(v, Markup) else html.escape(str(v))}</td>" for v in row
        )
        body.append(f"<tr{mark}>{cells}</tr>")
    return f"<table><tr>{head}</tr>{''.join(body)}</table>"


def _page(title: str, parts: list[str]) -> str:
    head = (
        f"<!doctype html><html><head><meta charset='utf-8'><title>{title}</title>"
        f"<style>{_CSS}</style></head><body>"
    )
    return "\n".join([head, *parts, "</body></html>"])


def figure(svg: str, caption: str) -> str:
    """A picture (figures.picture's inline SVG, its text alternative inside) with its caption
    (escaped); "" without a picture."""
    if not svg:
        return ""
    return f"<figure class='chart'>{svg}<figcaption>{html.escape(caption)}</figcaption></figure>"


def _item(text: str, code: str) -> str:
    code_html = f" <code>{html.escape(code)}</code>" if code else ""
    return f"<li>{html.escape(text)}{code_html}</li>"


# ------------------------------------------------------------- unsupported text, marked


def _marked(text: str, found: Sequence[tuple[int, int, Any]], wrap: Any) -> str:
    """`text` escaped, each span's escaped text passed through `wrap(inner, payload)`."""
    out, at = [], 0
    for a, b, payload in found:
        out += [html.escape(text[at:a]), wrap(text[a:b], payload)]
        at = b
    return "".join(out) + html.escape(text[at:])


def _marked_words(sentence: str, words: Sequence[str]) -> str:
    """The sentence (escaped) with each of its unsupported words marked (each occurrence)."""
    return _marked(
        sentence,
        word_spans(sentence, words),
        lambda inner, _: f"<mark class='unsupported-word'>{html.escape(inner)}</mark>",
    )


def _highlighted(summary: str, unsupported: Any) -> str:
    """The summary (escaped) with its unsupported sentences marked, and within each the words
    the source does not contain (`unsupported`: evidence triples or old [sentence, passage])."""
    evidence = unsupported_evidence(list(unsupported or []))
    found = spans(summary, [(sentence, words) for sentence, _, words in evidence])
    return _marked(
        summary, found, lambda inner, words: f"<mark>{_marked_words(inner, words)}</mark>"
    )


EVIDENCE_HEADERS = ["unsupported words", "best-matching source passage"]


def _evidence(first: str, evidence: Sequence[Evidence]) -> Table:
    """sentence (its unsupported words marked) | unsupported words | best source passage."""
    rows = [
        [Markup(_marked_words(sentence, words)), ", ".join(words), passage]
        for sentence, passage, words in evidence
    ]
    return Table([first, *EVIDENCE_HEADERS], rows)


# ----------------------------------------------------------------------------- the gate


def decision_html(
    decision: Decision,
    examples: Sequence[Mapping[str, Any]] = (),
    documents: Sequence[Mapping[str, Any]] = (),
) -> str:
    """A standalone HTML page of the decision; examples are the documents that moved most,
    documents each paired document's values (`gate_figures.paired_documents`: the pictures of
    consistency and of HSS by category need them)."""
    m = decision.metrics
    esc = html.escape
    parts = [
        f"<h1 class='{esc(decision.decision)}'>hss-gate: {esc(VERDICT[decision.decision])}</h1>",
        f"<p>Candidate <code>{esc(decision.candidate)}</code> against production "
        f"<code>{esc(decision.production)}</code>; {esc(decision.created)}.</p>",
        "<h2>Why</h2><ul>"
        + "".join(_item(text, code) for text, code in coded(decision, reasons=True))
        + "</ul>",
        f"<p>Decided by: <b>{esc(', '.join(decision.decided_by) or 'nothing')}</b>. Consistency "
        f"checker: <code>{esc(decision.checker or 'n/a')}</code>: "
        f"{esc(checker_trust(decision.checker))}.</p>",
    ]
    parts += _looks(m)
    if decision.notes:
        parts.append(
            "<h2>Read with</h2><ul>"
            + "".join(_item(text, code) for text, code in coded(decision, reasons=False))
            + "</ul>"
        )
    if m.get("signals"):
        parts.append(
            "<h2>Signals</h2><p>Means over documents; difference = candidate - "
            "production with a paired bootstrap CI. The gate decides on the facts (consistency, "
            "unsupported entities/numbers); HSS is shown beside rewriting (1 - extractiveness): "
            "a paraphrasing model moves more.</p>"
        )
        parts.append(table(signals_table(m)))
    parts += _consistency(documents)
    parts += _categories(m, documents)
    if decision.checks:
        parts += _decision_checks(decision.checks)
    if decision.drift:
        parts.append(_drift(decision.drift))
    if examples:
        parts.append(_examples(examples))
    return _page("hss-gate decision", parts)


def _looks(metrics: Mapping[str, Any]) -> list[str]:
    """The sequential decision at a glance: the consistency difference at each look against
    the margin, and the looks' table."""
    looks = (metrics.get("sequential") or {}).get("looks") or []
    if not looks:
        return []
    margin = (metrics.get("consistency") or {}).get("margin")
    return [
        "<h2>The looks</h2><p>The gate scores both models look by look and stops at the first "
        "look that settles: consistency falling below the margin with confidence blocks, a "
        "difference clearly above it may promote.</p>",
        figure(
            looks_svg(looks, margin),
            "Consistency, candidate - production, with its confidence interval at each look; "
            "the dashed line is the margin. The numbers are in the table below.",
        ),
        table(looks_table(looks)),
    ]


def _consistency(documents: Sequence[Mapping[str, Any]]) -> list[str]:
    """Each summary's consistency, candidate and production, and its quantiles' table."""
    svg = consistency_svg(documents)
    if not svg:
        return []
    return [
        "<h2>Consistency of each summary</h2>",
        figure(
            svg,
            "How many summaries of each model reach each consistency with their source, on "
            "the same documents; each mean is a vertical line.",
        ),
        table(consistency_table(documents)),
    ]


def _categories(metrics: Mapping[str, Any], documents: Sequence[Mapping[str, Any]]) -> list[str]:
    """HSS by category: with intervals (a picture and its table) when the documents are
    given, else decision.json's table."""
    if not metrics.get("categories"):
        return []
    rows = category_intervals(documents)
    if not rows:
        return ["<h2>HSS by category</h2>", table(categories_table(metrics["categories"]))]
    return [
        "<h2>HSS by category</h2>",
        figure(
            categories_svg(rows),
            "Each category's mean HSS with a 95% bootstrap interval, candidate and production.",
        ),
        table(category_table(rows)),
    ]


def _decision_checks(checks: Sequence[Mapping[str, Any]]) -> list[str]:
    """The failed checks shown, the passing ones folded."""
    failed = [c for c in checks if not c["success"]]
    passed = [c for c in checks if c["success"]]
    parts = [
        f"<h2>Suite checks: {len(failed)} failed, {len(passed)} passed</h2><p>Great "
        "Expectations Data Docs: <a href='data_docs/index.html'>data_docs/index.html</a></p>"
    ]
    if failed:
        parts.append(table(checks_table(failed)))
    parts.append(
        f"<details><summary>{len(passed)} passing checks</summary>"
        + table(checks_table(passed))
        + "</details>"
    )
    return parts


def _drift(drift: Mapping[str, Any]) -> str:
    """Evidently's drift against the production reference, a column per row."""
    return (
        f"<h2>Drift (Evidently)</h2><p>{'Drift' if drift.get('drifted') else 'No drift'}: "
        f"{html.escape(str(drift.get('share', '')))} of the columns drifted. Full report: "
        "<a href='drift.html'>drift.html</a></p>" + table(drift_table(drift.get("columns", [])))
    )


def _examples(examples: Sequence[Mapping[str, Any]]) -> str:
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
            f"{num(e.get('consistency_candidate'))} vs {num(e.get('consistency_production'))}, "
            f"HSS {num(e['hss_candidate'])} vs {num(e['hss_production'])}</h3>"
        )
        parts.append(
            f"<p class='summary'><b>Candidate:</b> "
            f"{_highlighted(e['summary_candidate'], e.get('unsupported', []))}</p>"
            f"<p class='summary'><b>Production:</b> {esc(e['summary_production'])}</p>"
        )
        evidence = unsupported_evidence(list(e.get("unsupported") or []))
        if evidence:
            parts.append(table(_evidence("unsupported sentence (candidate)", evidence)))
    return "\n".join(parts)


# -------------------------------------------------------------------------- the monitor


def monitor_html(result: Mapping[str, Any]) -> str:
    """The monitor run as a standalone HTML page (all sample text escaped)."""
    esc = html.escape
    what, model = monitored(result)
    parts = [
        f"<h1 class='{esc(result['decision'])}'>hss-gate monitor: "
        f"{esc(VERDICT[result['decision']])}</h1>",
        f"<p>{esc(what)} <code>{esc(model)}</code>; "
        f"{esc(str(result.get('n_samples', 0)))} samples; {esc(str(result.get('kind', 'full')))} "
        f"run {esc(str(result.get('run_id')))}.</p>",
        "<ul>" + "".join(f"<li>{esc(r)}</li>" for r in result.get("reasons", [])) + "</ul>",
    ]
    if result.get("checker"):
        parts.append(
            f"<p>Consistency checker <code>{esc(result['checker'])}</code>: "
            f"{esc(checker_trust(result['checker']))}.</p>"
        )
    windowed = _windows(result)
    parts += windowed
    floor = floor_table(result)
    if windowed and (floor or result.get("notes")):
        parts.append("<h2>Absolute floor: the production reference corpus</h2>")
    if result.get("notes"):
        parts.append("<ul>" + "".join(f"<li>{esc(n)}</li>" for n in result["notes"]) + "</ul>")
    if floor:
        parts.append(table(floor))
    if result.get("drift"):
        parts.append(_drift(result["drift"]))
    if result.get("checks"):
        parts.append("<h2>Suite checks</h2>")
        parts.append(table(checks_table(result["checks"])))
    if result.get("samples"):
        parts.append(_flagged(result["samples"]))
    if result.get("trend"):
        parts += _trend(result)
    if result.get("samples"):
        parts.append("<h2>Samples</h2>")
        parts.append(table(_samples(result["samples"])))
    return _page("hss-gate monitor", parts)


def _windows(result: Mapping[str, Any]) -> list[str]:
    spans_table = windows_table(result)
    if spans_table is None:
        return []
    parts = ["<h2>Windows of the model's own traffic</h2>", table(spans_table)]
    distributions = distributions_table(result)
    if distributions.rows:
        parts.append(
            "<h3>Each signal's distribution</h3><p>Mean and the 10th, 50th and 90th "
            "percentiles per window; a 0/1 signal's mean is the share of summaries flagged.</p>"
        )
        parts.append(table(distributions))
    tests = window_tests_table(result)
    if tests.rows:
        parts.append(
            "<h3>Is the current window worse?</h3><p>One-sided tests of the current window "
            "against the reference; a blocking test below its alpha makes the run unhealthy, "
            f"a reported one is shown only. {html.escape(DETECTS_TEXT)}</p>"
        )
        parts.append(
            figure(
                flagged_shares_svg(result),
                "The share of summaries each 0/1 signal flags in each window; the table below "
                "has the tests.",
            )
        )
        parts.append(table(tests))
    attribution = attribution_line(result)
    if attribution:
        parts.append(f"<h3>Attribution instability</h3><p>{html.escape(attribution)}</p>")
    drift = window_drift(result)
    if drift:
        link = ""
        if drift.report:
            name = html.escape(drift.report)
            link = f" Full report: <a href='{name}'>{name}</a>"
        parts.append(
            "<h3>Evidently drift between the windows</h3>"
            f"<p>{html.escape(drift.text.capitalize())}.{link}</p>"
        )
        if drift.table:
            parts.append(table(drift.table))
    return parts


def _flagged(samples: Sequence[Mapping[str, Any]]) -> str:
    """Each flagged served summary: its unsupported sentences, each beside the source passage
    that matches it best, the words the source does not contain marked."""
    flagged = flagged_samples(samples)
    if not flagged:
        return ""
    esc = html.escape
    parts = [
        "<h2>Unsupported sentences in served summaries</h2>"
        f"<p>{esc(flagged_intro(flagged, len(samples)))} Each sentence the checker finds "
        "unsupported, the words of it the source does not contain, and the source passage "
        "that matches it best.</p>" + LEGEND
    ]
    for s, evidence in flagged[:FLAGGED_SHOWN]:
        parts.append(
            f"<h3>{esc(str(s.get('doc_id', '')))} ({esc(str(s.get('category', '')))}): "
            f"consistency {esc(num(s.get('live_consistency')))}</h3>"
        )
        parts.append(
            "<div class='evidence'>"
            + table(_evidence("unsupported sentence (served)", evidence))
            + "</div>"
        )
    return "\n".join(parts)


def _trend(result: Mapping[str, Any]) -> list[str]:
    esc = html.escape
    parts = [
        "<h2>Recent runs</h2><p>The share of served summaries the checker flags per "
        f"recorded run, oldest left. {esc(trend_line(result['trend']))}</p>",
        figure(trend_svg(result["trend"]), "The numbers are in the table of recorded runs below."),
    ]
    if result.get("trend_png"):
        parts.append(f"<img src='{esc(result['trend_png'])}' alt='mean HSS per run'>")
    parts.append("<p>The recorded runs, newest first:</p>")
    parts.append(table(trend_table(result)))
    return parts


SAMPLE_HEADERS = [
    "sample",
    "category",
    "consistency",
    "HSS",
    "unsupported mentions",
    "served summary",
]


def _samples(samples: Sequence[Mapping[str, Any]]) -> Table:
    """Every served sample, its unsupported sentences and words marked in its summary."""
    rows = [
        [
            s["doc_id"],
            s["category"],
            num(s.get("live_consistency")),
            num(s.get("hss")),
            s.get("live_unsupported", ""),
            Markup(_highlighted(s.get("live_summary", ""), s.get("unsupported"))),
        ]
        for s in samples
    ]
    return Table(SAMPLE_HEADERS, rows)
