"""The monitor report (monitor.md, monitor.html): the two windows side by side, the served
summaries the checker flags beside their source passages, and the trend over recorded runs as
a picture (matplotlib, inline SVG: its data checked on the drawn axes, its text alternative on
the SVG); hostile text stays text, missing keys are tolerated (synthetic results)."""

from __future__ import annotations

import copy
import json
import math
import re
import xml.etree.ElementTree as ET
from datetime import UTC, datetime, timedelta

import pytest
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from hss_gate.decision.reports import FLAGGED_SHOWN, monitor_figures, monitor_html, monitor_markdown
from hss_gate.decision.reports.monitor_figures import draw_trend, trend_svg
from hss_gate.monitoring.trend import trend_line, trend_points
from tests.conftest import REPO

pytestmark = pytest.mark.unit

GOLDEN = REPO / "tests" / "golden" / "monitor"
HOSTILE = "<script>alert('x')</script> & \"q\" | *b* [l](javascript:x)"
T0 = datetime(2026, 6, 1, tzinfo=UTC)


def _run(i: int, decision: str, share: float | None, p: float | None, model_id: str = "m1"):
    details = {"kind": "served", "unsupported_share": share, "model_id": model_id}
    if p is not None:
        details["p_values"] = {"live_low_consistency": p, "live_any_unsupported": 0.9}
    return {
        "run_id": f"r{i}",
        "started_at": (T0 + timedelta(hours=i)).isoformat(),
        "model": "gguf:x",
        "n_samples": 20,
        "mean_hss": None,
        "drift": False,
        "decision": decision,
        "details": details,
    }


def _flagged_sample(i: int, consistency: float | None, sentence: str = "In Texas, 40 million.."):
    return {
        "doc_id": f"s{i}",
        "category": "news",
        "hss": None,
        "live_consistency": consistency,
        "live_unsupported": "Texas",
        "live_summary": f"The council met. {sentence}",
        "unsupported": [[sentence, f"passage of s{i}", ["Texas", "40 million"]]],
    }


def _result() -> dict:
    """A windowed (--served-only) run with every key the report renders."""
    return {
        "decision": "unhealthy",
        "model": "gguf:smol",
        "run_id": "abc",
        "kind": "served",
        "n_samples": 3,
        "reasons": ["served summaries rose"],
        "notes": ["absolute floor (not blocking): a note"],
        "served": [],
        "windows": {
            "status": "compared",
            "model_id": "m2",
            "reference": {
                "model_id": "m1",
                "pinned": False,
                "complete": True,
                "n": 100,
                "first": "2026-06-01T00:00:00+00:00",
                "last": "2026-06-01T04:57:00+00:00",
                "instead_of": "m2",
            },
            "current": {
                "n": 20,
                "first": "2026-06-01T06:00:00+00:00",
                "last": "2026-06-01T06:57:00+00:00",
            },
            "distributions": [
                {
                    "signal": "live_consistency",
                    "label": "checker consistency",
                    "reference": {"n": 100, "mean": 0.71, "p10": 0.3, "median": 0.8, "p90": 0.95},
                    "current": {"n": 20, "mean": 0.41, "p10": 0.1, "median": 0.35, "p90": 0.9},
                }
            ],
            "tests": [
                {
                    "signal": "live_low_consistency",
                    "label": "summaries the checker finds unsupported",
                    "reference_mean": 0.2,
                    "current_mean": 0.8,
                    "difference": 0.6,
                    "p_value": 0.00012,
                    "alpha": 0.01,
                    "worse": True,
                    "detectable_share": 0.68,
                },
                {
                    "signal": "live_n_words",
                    "label": "summary length (words)",
                    "reference_mean": 40.0,
                    "current_mean": 52.5,
                    "difference": 12.5,
                    "p_value": 0.004,
                    "alpha": 0.01,
                    "worse": True,
                    "blocking": False,
                },
            ],
            "drift": {
                "drifted": True,
                "drifted_columns": ["live_consistency"],
                "share": 0.5,
                "columns": [
                    {
                        "column": "live_consistency",
                        "drifted": True,
                        "method": "K-S",
                        "score": 0.001,
                    },
                    {"column": "live_n_words", "drifted": False, "method": "K-S", "score": 0.4},
                ],
                "n_reference": 100,
                "n_current": 20,
                "report": "drift_windows.html",
            },
        },
        "samples": [
            _flagged_sample(1, 0.40),
            {
                "doc_id": "ok",
                "category": "news",
                "live_consistency": 0.95,
                "live_unsupported": "",
                "live_summary": "All supported.",
                "unsupported": [],
            },
            _flagged_sample(2, 0.10),
        ],
        "trend": [_run(2, "unhealthy", 0.8, 0.0001, "m2"), _run(1, "healthy", 0.25, 0.4)],
    }


def _stored(result: dict) -> dict:
    return json.loads(json.dumps(result))  # as monitor.json stores it


def _svg_of(page: str, name: str = "monitor-trend") -> ET.Element:
    """The page's inline SVG picture `name`, parsed (it is well-formed XML)."""
    found = re.search(rf'<svg [^>]*id="{name}".*?</svg>', page, re.DOTALL)
    assert found, f"no inline SVG {name}"
    return ET.fromstring(found.group(0))


# ------------------------------------------------------------------------- the two windows


def test_markdown_shows_the_two_windows_side_by_side_with_the_distributions_and_tests():
    md = monitor_markdown(_stored(_result()))
    assert (
        "| reference | m1 | 100 | 2026-06-01T00:00:00+00:00 | 2026-06-01T04:57:00+00:00 | "
        "the model id's first 100 samples | m2 (its own reference is not complete) |"
    ) in md
    assert (
        "| current | m2 | 20 | 2026-06-01T06:00:00+00:00 | 2026-06-01T06:57:00+00:00 | "
        "the newest samples |  |"
    ) in md
    assert (
        "| checker consistency | 100 | 0.710 | 0.300 / 0.800 / 0.950 | 20 | 0.410 | "
        "0.100 / 0.350 / 0.900 | -0.300 |"
    ) in md
    assert (
        "| summaries the checker finds unsupported | 0.200 | 0.800 | +0.600 | 0.0001 | 0.01 | "
        "blocking | >= 0.68 | WORSE |"
    ) in md
    assert "| summary length (words) | 40.000 | 52.500 | +12.500 | 0.0040 | 0.01 | reported |" in md
    assert (
        "Evidently drift between the windows: drift: 1 of 2 columns drifted (share 0.500); "
        "reference n=100, current n=20; drifted: live_consistency. Report: `drift_windows.html`."
    ) in md
    # the floor comes after the windows, with its note
    assert md.index("**Windows of the model's own traffic**") < md.index("**Absolute floor")
    assert md.index("**Absolute floor") < md.index("absolute floor (not blocking)")


def test_html_shows_the_windows_and_marks_only_blocking_worse_tests():
    page = monitor_html(_stored(_result()))
    assert "<h2>Windows of the model's own traffic</h2>" in page
    assert "<td>the model id&#x27;s first 100 samples</td>" in page
    assert "<td>0.300 / 0.800 / 0.950</td>" in page and "<td>-0.300</td>" in page
    rows = re.findall(r"<tr( class=\"fail\")?><td>([^<]*)</td>", page)
    marked = {name for fail, name in rows if fail}
    assert "summaries the checker finds unsupported" in marked
    assert "summary length (words)" not in marked  # worse, but reported only
    assert "live_consistency" in marked and "live_n_words" not in marked  # drifted columns
    assert "<a href='drift_windows.html'>drift_windows.html</a>" in page
    assert page.index("Windows of the model") < page.index("Absolute floor: the production")
    assert page.index("Absolute floor: the production") < page.index("absolute floor (not")


def test_a_pinned_reference_says_its_range():
    result = _result()
    result["windows"]["reference"] |= {
        "pinned": True,
        "since": "2026-05-01T00:00:00+00:00",
        "until": "2026-05-02T00:00:00+00:00",
    }
    del result["windows"]["reference"]["instead_of"]
    md = monitor_markdown(result)
    assert (
        "| reference (pinned) | m1 | 100 | 2026-06-01T00:00:00+00:00 | 2026-06-01T04:57:00+00:00 "
        "| pinned: 2026-05-01T00:00:00+00:00 to 2026-05-02T00:00:00+00:00 |  |"
    ) in md


def test_time_based_reference_and_since_last_run_windows_say_how_they_were_chosen():
    result = _result()
    result["windows"]["reference"] |= {"days": 2.0, "since": "2026-05-01T00:00:00+00:00"}
    result["windows"]["current"] |= {
        "selection": "since_last_run",
        "after": "2026-06-01T05:57:00+00:00",
    }
    md = monitor_markdown(result)
    assert "the model id's first 2 days (2026-05-01T00:00:00+00:00 on)" in md
    assert "the samples since the last run (after 2026-06-01T05:57:00+00:00)" in md


def test_a_significant_two_sided_test_is_a_change_not_worse():
    result = _result()
    length = {
        "signal": "live_n_words",
        "label": "summary length (words)",
        "reference_mean": 40.0,
        "current_mean": 20.0,
        "difference": -20.0,
        "p_value": 0.0001,
        "alpha": 0.01,
        "worse": True,
        "blocking": False,
        "alternative": "two-sided",
    }
    result["windows"]["tests"] = [length]
    md = monitor_markdown(result)
    assert "| reported |  | CHANGED |" in md and "WORSE" not in md


@pytest.mark.parametrize("name", ["javascript:alert(1)", "../x.html", "a b.html", "x.html?y", ""])
def test_the_drift_report_is_linked_only_by_a_plain_file_name(name):
    result = _result()
    result["windows"]["drift"]["report"] = name
    page = monitor_html(result)
    assert "<a href" not in page
    assert "Report:" not in monitor_markdown(result)


def test_drift_columns_given_as_names_are_listed():
    result = _result()
    result["windows"]["drift"]["columns"] = ["live_consistency", "live_n_words"]
    page = monitor_html(result)
    assert '<tr class="fail"><td>live_consistency</td><td>drift</td><td></td><td>n/a</td>' in page
    assert "<tr><td>live_n_words</td><td>no drift</td>" in page
    assert "1 of 2 columns drifted" in monitor_markdown(result)


def test_drift_columns_as_the_monitor_writes_them_show_their_method_and_score():
    """The windows' drift names its columns bare, their methods and scores in maps beside them
    (hss_gate/workflows/monitor.py windows_drift): the table shows them, not n/a."""
    result = _result()
    result["windows"]["drift"] |= {
        "columns": ["live_consistency", "live_n_words"],
        "methods": {"live_consistency": "K-S p_value", "live_n_words": "Z-test p_value"},
        "scores": {"live_consistency": 0.001, "live_n_words": 0.42},
    }
    page = monitor_html(_stored(result))
    assert (
        '<tr class="fail"><td>live_consistency</td><td>drift</td><td>K-S p_value</td>'
        "<td>0.001</td></tr>"
    ) in page
    assert "<tr><td>live_n_words</td><td>no drift</td><td>Z-test p_value</td><td>0.420</td>" in page


def test_the_served_golden_runs_window_drift_shows_every_columns_method_and_score():
    """What `hss monitor --served-only` really writes (tests/golden/monitor/monitor.json): each
    column of the windows' drift has its method and score in monitor.html, none n/a."""
    result = json.loads((GOLDEN / "monitor.json").read_text("utf-8"))
    page = monitor_html(result)
    table = page.split("<h3>Evidently drift between the windows</h3>")[1].split("</table>")[0]
    rows = re.findall(
        r"<tr[^>]*><td>(\w+)</td><td>[^<]*</td><td>([^<]*)</td><td>([^<]*)</td>", table
    )
    assert [name for name, _, _ in rows] == result["windows"]["drift"]["columns"]
    assert all(method and score != "n/a" for _, method, score in rows), rows


def test_skipped_windows_drift_says_why():
    result = _result()
    result["windows"]["drift"] = {"skipped": "fewer than 30 samples in a window"}
    md = monitor_markdown(result)
    assert (
        "Evidently drift between the windows: not measured: fewer than 30 samples in a window."
        in md
    )
    assert "Not measured: fewer than 30 samples in a window." in monitor_html(result)


def test_missing_window_keys_are_tolerated():
    result = _result()
    windows = result["windows"]
    for key in ("distributions", "drift", "tests"):
        del windows[key]
    del windows["reference"]["first"], windows["reference"]["n"]
    md, page = monitor_markdown(result), monitor_html(result)
    assert (
        "| reference | m1 |  |  | 2026-06-01T04:57:00+00:00 | the model id's first ? samples" in md
    )
    for text in ("distribution", "Evidently drift between", "one-sided p"):
        assert text not in md and text not in page
    # a test or a distribution with missing numbers shows n/a, never a crash
    windows["tests"] = [{"label": "x", "worse": False}]
    windows["distributions"] = [{"signal": "s", "reference": {"mean": None}, "current": {}}]
    md = monitor_markdown(result)
    assert "| x | n/a | n/a | n/a | n/a |  | blocking |  | no |" in md
    assert "| s |  | n/a | n/a / n/a / n/a |  | n/a | n/a / n/a / n/a | n/a |" in md


def test_a_served_only_run_heads_the_served_model_id_a_full_run_the_deployed_model():
    """--served-only judges the samples' model id (the windows'), not run.production_model."""
    served = _stored(_result())
    md, page = monitor_markdown(served), monitor_html(served)
    assert "Served model `m2`, 3 recent samples from the store (served run abc)." in md
    assert "<p>Served model <code>m2</code>; 3 samples; served run abc.</p>" in page
    assert "gguf:smol" not in md and "gguf:smol" not in page
    full = _stored(_result()) | {"kind": "full"}
    assert "Deployed model `gguf:smol`, 3 recent samples" in monitor_markdown(full)
    assert "<p>Deployed model <code>gguf:smol</code>; 3 samples" in monitor_html(full)


def test_an_insufficient_run_without_windows_or_trend_renders():
    for windows in (None, {"status": "insufficient_data", "model_id": None, "reasons": ["x"]}):
        result = {"decision": "insufficient_data", "reasons": ["x"], "windows": windows}
        md, page = monitor_markdown(result), monitor_html(result)
        assert "INSUFFICIENT DATA" in md and "<svg" not in page
        assert "Windows of the model" not in md and "Recent runs" not in page


# ----------------------------------------------------------------- the flagged summaries


def test_flagged_summaries_lowest_consistency_first_beside_their_passages():
    result = _stored(_result())
    md, page = monitor_markdown(result), monitor_html(result)
    assert "2 of 3 served summaries are flagged" in md
    assert (
        "| s2 | 0.100 | In **Texas**, **40 million**.. | passage of s2 |\n"
        "| s1 | 0.400 | In **Texas**, **40 million**.. | passage of s1 |"
    ) in md
    assert "| ok |" not in md.split("**Served summaries the checker flags**")[1]
    flagged = page.split("<h2>Unsupported sentences in served summaries</h2>")[1]
    flagged = flagged.split("<h2>")[0]
    assert re.findall(r"<h3>(\w+) \(news\): consistency ([\d.]+)</h3>", flagged) == [
        ("s2", "0.100"),
        ("s1", "0.400"),
    ]
    # each sentence beside its passage, the words the source lacks marked
    assert (
        "<td>In <mark class='unsupported-word'>Texas</mark>, <mark class='unsupported-word'>"
        "40 million</mark>..</td><td>Texas, 40 million</td><td>passage of s2</td>"
    ) in flagged


def test_the_flagged_list_is_capped_and_says_how_many_more():
    result = _result()
    result["samples"] = [_flagged_sample(i, i / 100) for i in range(FLAGGED_SHOWN + 5)]
    md, page = monitor_markdown(result), monitor_html(result)
    assert f"the first {FLAGGED_SHOWN} shown, 5 more in monitor.json" in md
    assert f"the first {FLAGGED_SHOWN} shown, 5 more in monitor.json" in page
    flagged_md = md.split("**Served summaries the checker flags**")[1].split("**Recent runs")[0]
    assert flagged_md.count("passage of s") == FLAGGED_SHOWN
    assert "| s0 | 0.000 |" in flagged_md and f"| s{FLAGGED_SHOWN} |" not in flagged_md
    assert page.count("<h3>s") == FLAGGED_SHOWN


def test_no_flagged_summary_no_section():
    result = _result()
    result["samples"] = [result["samples"][1]]
    assert "Served summaries the checker flags" not in monitor_markdown(result)
    assert "Unsupported sentences in served summaries" not in monitor_html(result)


def test_hostile_summaries_stay_text_in_both_reports():
    result = _result()
    result["samples"] = [
        {
            "doc_id": HOSTILE,
            "category": HOSTILE,
            "live_consistency": 0.1,
            "live_unsupported": HOSTILE,
            "live_summary": HOSTILE,
            "unsupported": [[f"Texas {HOSTILE}", f"<b>{HOSTILE}</b>", ["Texas", "<script>"]]],
        }
    ]
    result["windows"]["model_id"] = HOSTILE
    result["windows"]["tests"][0]["label"] = HOSTILE
    result["windows"]["distributions"][0]["label"] = HOSTILE
    result["windows"]["drift"]["columns"][0]["column"] = HOSTILE
    result["trend"][0]["started_at"] = HOSTILE
    result["trend"][0]["details"]["model_id"] = HOSTILE
    page = monitor_html(result)
    assert "<script" not in page and "<b>" not in page and "&lt;script&gt;" in page
    md = monitor_markdown(result)
    flagged = md.split("**Served summaries the checker flags**")[1].split("**Recent runs")[0]
    assert "<script" not in flagged and "<b>" not in flagged
    assert "&lt;script&gt;alert" in flagged
    assert "\\*b\\*" in flagged and "\\[l\\](javascript:x)" in flagged  # no emphasis, no link
    row = next(line for line in flagged.splitlines() if line.startswith("| &lt;script"))
    assert row.count(" | ") == 3  # the pipe in the text is escaped: four cells
    _svg_of(page)  # still well-formed


# ---------------------------------------------------------------------------- the trend


def _drawn(runs: list[dict]) -> Axes:
    """The trend's axes as monitor_figures draws them (the picture's data, not its pixels)."""
    figure = Figure()
    draw_trend(figure, trend_points(runs))
    return figure.axes[0]


def _line(ax: Axes, label: str) -> Line2D:
    return next(line for line in ax.lines if line.get_label() == label)


def _legend_words(ax: Axes) -> list[str]:
    return [t.get_text() for t in ax.figure.legends[0].get_texts()]


def test_the_trend_plots_each_run_with_its_verdict_marker_and_value():
    runs = [
        _run(0, "insufficient_data", 0.3, None),
        _run(1, "healthy", 0.25, 0.4),
        _run(2, "healthy", 0.5, 0.2),
        _run(3, "unhealthy", 0.75, 0.001, "m2"),
        _run(4, "error", None, None, "m2"),
    ]
    ax = _drawn(runs[::-1])  # the store gives newest first
    flagged = _line(ax, "flagged share")
    assert list(flagged.get_xdata()) == [0.0, 1.0, 2.0, 3.0, 4.0]  # hours since the first run
    assert list(flagged.get_ydata())[:4] == [0.3, 0.25, 0.5, 0.75]
    assert math.isnan(flagged.get_ydata()[4])  # no share: the line stops
    p_values = _line(ax, "consistency test p-value")
    assert list(p_values.get_ydata())[1:4] == [0.4, 0.2, 0.001]
    shapes = {
        line.get_label(): (line.get_marker(), list(line.get_ydata()))
        for line in ax.lines
        if line.get_label().startswith("verdict: ")
    }
    assert shapes == {  # told apart by shape (and words), not colour alone
        "verdict: healthy": ("o", [0.25, 0.5]),
        "verdict: unhealthy": ("^", [0.75]),
        "verdict: insufficient data": ("D", [0.3]),
        "verdict: error": ("X", [monitor_figures.NO_VALUE]),  # in the n/a band
    }
    assert "n/a" in [t.get_text() for t in ax.get_yticklabels()]
    deploys = [line for line in ax.lines if line.get_linestyle() == ":" and len(line.get_xdata())]
    assert [list(line.get_xdata()) for line in deploys] == [[3.0, 3.0]]
    assert "m2" in " ".join(t.get_text() for t in ax.texts)  # m1 -> m2: a deploy at run 3
    assert "new model id (a deploy)" in _legend_words(ax)
    assert ax.get_xlabel() == "hours since the first run (2026-06-01T00:00:00+00:00)"


def test_the_trend_says_each_run_in_its_text_alternative():
    runs = [_run(0, "healthy", 0.25, 0.4), _run(1, "unhealthy", 0.75, 0.001, "m2")]
    svg = ET.fromstring(trend_svg(runs[::-1]))
    assert svg.get("role") == "img" and svg.get("aria-label", "").startswith("Share of served")
    assert [child.tag for child in svg][:2] == ["title", "desc"]
    assert svg.find("desc").text == (
        "The share of served summaries the checker flags in each of 2 recorded runs, oldest "
        "first: 2026-06-01T00:00:00+00:00: healthy, flagged share 0.250, consistency test "
        "p=0.4000, model id m1; 2026-06-01T01:00:00+00:00: unhealthy, flagged share 0.750, "
        "consistency test p=0.0010, model id m2."
    )
    texts = " ".join(t.text or "" for t in svg.iter("text"))
    assert "verdict: healthy" in texts and "flagged share" in texts  # the legend, as text


def test_runs_without_distinct_times_are_numbered_and_days_for_long_spans():
    same = [_run(0, "healthy", 0.1, None), _run(0, "healthy", 0.2, None)]
    assert monitor_figures.positions(trend_points(same)) == (
        [1.0, 2.0],
        "recorded run, oldest first",
    )
    week = [_run(0, "healthy", 0.1, None), _run(24 * 7, "healthy", 0.2, None)]
    xs, words = monitor_figures.positions(trend_points(week))
    assert xs == [0.0, 7.0] and words.startswith("days since the first run")


def test_the_trend_svg_is_deterministic_and_independent_of_the_runs_order():
    runs = [_run(i, "healthy", i / 10, 0.5) for i in range(5)]
    assert "new model id" not in trend_svg(runs)  # one model id: no deploy
    shuffled = [runs[3], runs[0], runs[4], runs[1], runs[2]]
    assert trend_svg(runs) == trend_svg(copy.deepcopy(runs)) == trend_svg(shuffled)


def test_zero_and_one_run_and_missing_values():
    assert trend_svg([]) == "" and trend_line([]) == "No recorded runs yet."
    one = _drawn([_run(0, "healthy", 0.4, None)])
    assert list(_line(one, "verdict: healthy").get_ydata()) == [0.4]
    assert one.get_xlim() == (0.0, 2.0)  # the one run in the middle
    ET.fromstring(trend_svg([_run(0, "healthy", 0.4, None)]))
    assert trend_line([_run(0, "healthy", 0.4, None)]) == (
        "Flagged share over 1 recorded run: 0.400 (2026-06-01T00:00:00+00:00); verdicts: 1 healthy."
    )
    bare = [{"decision": "error"}, {"started_at": None, "details": None}, {"details": {"x": 1}}]
    ax = _drawn(bare)
    assert all(math.isnan(v) for v in _line(ax, "flagged share").get_ydata())
    assert "consistency test p-value" not in _legend_words(ax)
    assert "<svg" in trend_svg(bare)
    assert trend_line(bare).startswith("Flagged share over 3 recorded runs: none recorded")
    # NaN, text and booleans are no numbers
    odd = [_run(0, "healthy", float("nan"), None), _run(1, "healthy", True, None)]
    assert [p.flagged for p in trend_points(odd)] == [None, None]


def test_trend_line_gives_first_and_last_flagged_share():
    runs = [_run(0, "healthy", 0.2, None), _run(1, "error", None, None)]
    runs += [_run(2, "unhealthy", 0.7, 0.001)]
    assert trend_line(runs[::-1]) == (
        "Flagged share over 3 recorded runs (oldest first): 0.200 (2026-06-01T00:00:00+00:00) "
        "-> 0.700 (2026-06-01T02:00:00+00:00), +0.500; verdicts: 1 error, 1 healthy, "
        "1 unhealthy."
    )


def test_the_reports_carry_the_trend():
    result = _stored(_result())
    md, page = monitor_markdown(result), monitor_html(result)
    assert "**Recent runs** (newest first)" in md
    assert "0.250 (2026-06-01T01:00:00+00:00) -> 0.800 (2026-06-01T02:00:00+00:00), +0.550" in md
    assert (
        "| 2026-06-01T02:00:00+00:00 | served | 20 | 0.800 | 0.0001 | n/a | False | unhealthy |\n"
        "| 2026-06-01T01:00:00+00:00 | served | 20 | 0.250 | 0.4000 | n/a | False | healthy |"
    ) in md
    assert "<svg" not in md  # the Markdown stays picture-free
    svg = _svg_of(page, "monitor-trend")
    assert "2 recorded runs" in svg.find("desc").text
    assert "<figure class='chart'><svg" in page


def test_a_hostile_trend_is_escaped_and_well_formed():
    runs = [_run(0, HOSTILE, 0.1, 0.2, HOSTILE), _run(1, "healthy", 0.2, 0.3)]
    runs[0]["started_at"] = HOSTILE
    text = trend_svg(runs)
    assert "<script" not in text
    svg = ET.fromstring(text)
    assert HOSTILE in svg.find("desc").text  # shown as text, escaped
    labels = [t.text for t in svg.iter("text")]
    assert any(label and "<script>" in label for label in labels)  # its verdict, in the legend
