"""The reports as Markdown: the gate's pull-request comment (decision.md) and monitor.md.

.github/workflows/gate.yml posts decision.md as the pull-request comment: its script cuts it at
60,000 characters (GitHub's limit is 65,536) and adds a marker and a link to the run;
`pull_request_comment` writes the rest.
"""

from __future__ import annotations

import html
import re
from collections.abc import Mapping, Sequence
from typing import Any

from hss_gate.consistency.entail_release import checker_trust
from hss_gate.decision.record import Decision
from hss_gate.decision.reports import sections
from hss_gate.monitoring.trend import trend_line

REPORT_ARTIFACT = "gate-report"
"""The artifact action.yml uploads the gate's output folder as (decision.html among it); the
pull-request comment names it (tests/unit/test_report_figures.py checks they agree)."""


def table(t: sections.Table) -> list[str]:
    """A Markdown table, one line a row; its failed rows are not marked."""

    def cell(value: Any) -> str:
        return str(value).replace("|", "\\|").replace("\n", " ")

    lines = ["| " + " | ".join(t.headers) + " |", "|" + "---|" * len(t.headers)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in t.rows]
    return lines


_SPECIAL = re.compile(r"([\\`*_\[\]])")


def text(value: str) -> str:
    """User text for Markdown: HTML-escaped, emphasis and link syntax backslashed, one line."""
    return _SPECIAL.sub(r"\\\1", html.escape(re.sub(r"\s+", " ", value), quote=False))


def _item(value: str, code: str) -> str:
    return f"- {value}" + (f" (`{code}`)" if code else "")


# ----------------------------------------------------------------------------- the gate


def pull_request_comment(decision: Decision) -> str:
    """The pull-request comment: what decision.md holds."""
    m = decision.metrics
    lines = [
        f"## hss-gate: {sections.VERDICT[decision.decision]}",
        "",
        f"Candidate `{decision.candidate}` against production `{decision.production}`"
        + (f" on {m['documents']} documents." if "documents" in m else "."),
        "",
        "**Why**",
        "",
        *[_item(value, code) for value, code in sections.coded(decision, reasons=True)],
        "",
        f"Decided by: {', '.join(decision.decided_by) or 'nothing'}. Consistency checker: "
        f"`{decision.checker or 'n/a'}`: {checker_trust(decision.checker)}.",
    ]
    if decision.notes:
        notes = [_item(value, code) for value, code in sections.coded(decision, reasons=False)]
        lines += ["", "**Read with**", "", *notes]
    if m.get("signals"):
        lines += [
            "",
            "**Signals** (means; difference = candidate - production, paired bootstrap CI)",
            "",
        ]
        lines += table(sections.signals_table(m))
    if m.get("categories"):
        lines += ["", "<details><summary>HSS by category</summary>", ""]
        lines += table(sections.categories_table(m["categories"]))
        lines += ["", "</details>"]
    if decision.checks:
        failed = [c for c in decision.checks if not c["success"]]
        lines += [
            "",
            f"<details><summary>Suite checks: {len(decision.checks) - len(failed)} passed, "
            f"{len(failed)} failed</summary>",
            "",
        ]
        lines += table(sections.checks_table(decision.checks))
        lines += ["", "</details>"]
    lines += [
        "",
        "Reports: `decision.html`, `data_docs/index.html` (Great Expectations), `drift.html` "
        "(Evidently), score tables in `candidate/` and `production/`.",
        "Pictures of the looks against the margin, of each summary's consistency and of HSS by "
        f"category are in `decision.html` (on GitHub: the run's `{REPORT_ARTIFACT}` artifact).",
    ]
    return "\n".join(lines) + "\n"


def decision_markdown(decision: Decision) -> str:
    """decision.md: the pull-request comment."""
    return pull_request_comment(decision)


# -------------------------------------------------------------------------- the monitor


def monitor_markdown(result: Mapping[str, Any]) -> str:
    """The monitor run as Markdown (for an issue comment)."""
    what, model = sections.monitored(result)
    lines = [
        f"## hss-gate monitor: {sections.VERDICT[result['decision']]}",
        "",
        f"{what} `{model}`, {result.get('n_samples', 0)} recent "
        f"samples from the store ({result.get('kind', 'full')} run {result.get('run_id', '')}).",
        "",
        *[f"- {r}" for r in result.get("reasons", [])],
    ]
    if result.get("checker"):
        lines += [
            "",
            f"Consistency checker `{result['checker']}`: {checker_trust(result['checker'])}.",
        ]
    windowed = _windows(result)
    lines += windowed
    if windowed:
        lines += ["", "**Absolute floor: the production reference corpus**"]
    if result.get("notes"):
        lines += ["", *[f"- {n}" for n in result["notes"]]]
    floor = sections.floor_table(result)
    if floor:
        lines += ["", *table(floor)]
    lines += _flagged(result.get("samples") or [])
    if result.get("trend"):
        lines += ["", "**Recent runs** (newest first)", "", trend_line(result["trend"]), ""]
        lines += table(sections.trend_table(result))
    return "\n".join(lines) + "\n"


def _windows(result: Mapping[str, Any]) -> list[str]:
    spans = sections.windows_table(result)
    if spans is None:
        return []
    lines = ["", "**Windows of the model's own traffic**", "", *table(spans)]
    distributions = sections.distributions_table(result)
    if distributions.rows:
        lines += ["", "Each signal's distribution:", ""]
        lines += table(distributions)
    tests = sections.window_tests_table(result)
    if tests.rows:
        lines += ["", *table(tests), "", sections.DETECTS_TEXT]
    attribution = sections.attribution_line(result)
    if attribution:
        lines += ["", attribution]
    drift = sections.window_drift(result)
    if drift:
        report = f" Report: `{drift.report}`." if drift.report else ""
        lines += ["", f"Evidently drift between the windows: {drift.text}.{report}"]
    return lines


def _marked(sentence: str, words: Sequence[str]) -> str:
    """The sentence for Markdown with each unsupported word in bold."""
    out, at = [], 0
    for a, b, _ in sections.word_spans(sentence, words):
        out += [text(sentence[at:a]), f"**{text(sentence[a:b])}**"]
        at = b
    return "".join([*out, text(sentence[at:])]).strip()


FLAGGED_HEADERS = ["sample", "consistency", "unsupported sentence", "best-matching source passage"]


def _flagged(samples: Sequence[Mapping[str, Any]]) -> list[str]:
    flagged = sections.flagged_samples(samples)
    if not flagged:
        return []
    rows = [
        [
            text(str(s.get("doc_id", ""))),
            sections.num(s.get("live_consistency")),
            _marked(sentence, words),
            text(passage) or "(none)",
        ]
        for s, evidence in flagged[: sections.FLAGGED_SHOWN]
        for sentence, passage, words in evidence
    ]
    return [
        "",
        "**Served summaries the checker flags**",
        "",
        sections.flagged_intro(flagged, len(samples))
        + " Words the source does not contain in bold.",
        "",
        *table(sections.Table(FLAGGED_HEADERS, rows)),
    ]
