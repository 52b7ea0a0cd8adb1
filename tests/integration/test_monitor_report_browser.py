"""monitor.html with every new section (the windows side by side, the flagged served summaries,
the trend and the flagged shares' pictures) filled with hostile text, opened in headless
Chromium: nothing runs, the text is shown as text, each picture renders (the browser checks of
tests/reliability/test_security.py)."""

from __future__ import annotations

import pytest

from hss_gate.decision.reports import monitor_html
from tests.reliability.test_security import (
    PAYLOAD,
    assert_pictures_render,
    injected,
    rendered_dom,
    visible_text,
)
from tests.unit.test_monitor_report import _result

pytestmark = pytest.mark.integration


def _hostile() -> dict:
    result = _result()
    windows = result["windows"]
    windows["model_id"] = PAYLOAD
    windows["reference"] |= {"model_id": PAYLOAD, "instead_of": PAYLOAD, "first": PAYLOAD}
    windows["current"]["last"] = PAYLOAD
    windows["distributions"][0] |= {"label": PAYLOAD}
    windows["tests"][0] |= {"label": PAYLOAD, "alpha": PAYLOAD, "test": "fisher"}
    windows["drift"] |= {"drifted_columns": [PAYLOAD], "report": PAYLOAD}
    windows["drift"]["columns"][0] |= {"column": PAYLOAD, "method": PAYLOAD}
    result["samples"] = [
        {
            "doc_id": PAYLOAD,
            "category": PAYLOAD,
            "live_consistency": 0.1,
            "live_unsupported": PAYLOAD,
            "live_summary": f"Texas {PAYLOAD}",
            "unsupported": [[f"Texas {PAYLOAD}", PAYLOAD, ["Texas", PAYLOAD]]],
        }
    ]
    for run in result["trend"]:
        run["started_at"] = PAYLOAD
        run["details"]["model_id"] = PAYLOAD
    result["trend"][0]["decision"] = PAYLOAD
    return result


def test_every_new_section_of_monitor_html_escapes_hostile_text(tmp_path):
    page = tmp_path / "monitor.html"
    page.write_text(monitor_html(_hostile()), encoding="utf-8")
    dom = rendered_dom(page)
    assert injected(dom) == []
    shown = visible_text(dom)
    # windows (model id x2, instead of, first, last), distribution, test label, alpha, drift
    # text, drift column, method, flagged sample (id, category, sentence, words, passage),
    # samples table (id, category, mentions, summary), trend (svg labels, titles, table)
    assert shown.count("<script>window.__pwned=1;") >= 25
    assert "onmouseover='window.__pwned=4'" in shown
    assert "<svg" in dom and "<a href" not in dom  # the hostile report name is not linked


def test_every_picture_of_monitor_html_renders(tmp_path):
    """The trend and the windows' flagged shares, hostile text in both: each renders (a box,
    shapes, every text shown), nothing is fetched and Chromium logs no console message."""
    page = tmp_path / "monitor.html"
    page.write_text(monitor_html(_hostile()), encoding="utf-8")
    assert_pictures_render(page, {"monitor-trend", "monitor-flagged"})
