"""Readable reports of a gate decision and a monitor run, one module per format.

- sections.py: what the reports say, section by section, before any format (the verdict's
  words, numbers as text, each section's table, the flagged served samples); gate and monitor
  share it.
- markdown.py: the pull-request comment (decision.md, `pull_request_comment`) and monitor.md.
- html_page.py: decision.html and monitor.html, every user text escaped, with their pictures:
  figures.py (matplotlib to deterministic, offline inline SVG with a text alternative),
  gate_figures.py (the looks, each summary's consistency, HSS by category) and
  monitor_figures.py (the trend over recorded runs, the windows' flagged shares).
- junit.py: the gate as JUnit XML.

The workflows call the renderers through this package (`reports.monitor_html(...)`).
"""

from __future__ import annotations

from hss_gate.decision.reports.gate_figures import paired_documents
from hss_gate.decision.reports.html_page import LEGEND, decision_html, monitor_html
from hss_gate.decision.reports.junit import decision_junit
from hss_gate.decision.reports.markdown import (
    decision_markdown,
    monitor_markdown,
    pull_request_comment,
)
from hss_gate.decision.reports.sections import (
    FLAGGED_SHOWN,
    VERDICT,
    flagged_samples,
    headline,
    moved_most,
)

__all__ = [
    "FLAGGED_SHOWN",
    "LEGEND",
    "VERDICT",
    "decision_html",
    "decision_junit",
    "decision_markdown",
    "flagged_samples",
    "headline",
    "monitor_html",
    "monitor_markdown",
    "moved_most",
    "paired_documents",
    "pull_request_comment",
]
