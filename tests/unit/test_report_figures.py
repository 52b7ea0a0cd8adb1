"""The reports' pictures (decision_report/figures.py, gate_figures.py, monitor_figures.py):
byte-reproducible, offline, accessible, their numbers in tables beside them, and only in the
HTML reports (issue 45, item 1)."""

from __future__ import annotations

import copy
import hashlib
import json
import os
import re
import subprocess
import sys
import warnings
import xml.etree.ElementTree as ET
from pathlib import Path

import matplotlib
import numpy as np
import pytest
import yaml
from matplotlib.figure import Figure

from hss_gate.decision.record import Decision
from hss_gate.decision.reports import (
    decision_html,
    decision_junit,
    decision_markdown,
    figures,
    gate_figures,
    monitor_figures,
    monitor_html,
    monitor_markdown,
    paired_documents,
    pull_request_comment,
)
from hss_gate.decision.reports.markdown import REPORT_ARTIFACT
from hss_gate.scoring.severity import bootstrap_ci, paired_bootstrap_ci
from tests.conftest import REPO

pytestmark = pytest.mark.unit

GOLDEN = REPO / "tests" / "golden"
NAMES = ("gate-looks", "gate-consistency", "gate-categories", "monitor-flagged", "monitor-trend")


def _decision() -> Decision:
    return Decision.model_validate(json.loads((GOLDEN / "gate" / "decision.json").read_text()))


def _monitor() -> dict:
    return json.loads((GOLDEN / "monitor" / "monitor.json").read_text())


def _documents(n: int = 24) -> list[dict]:
    rng = np.random.default_rng(3)
    return [
        {
            "doc_id": f"d{i}",
            "category": ("business", "sport", "tech")[i % 3],
            "consistency_candidate": float(rng.uniform(0.2, 1.0)),
            "consistency_production": float(rng.uniform(0.5, 1.0)),
            "hss_candidate": float(rng.uniform(0.0, 0.6)),
            "hss_production": float(rng.uniform(0.0, 0.4)),
        }
        for i in range(n)
    ]


def _pictures(documents: list[dict] | None = None) -> dict[str, str]:
    """Every picture the two reports draw, by name, on the golden runs' records."""
    decision, monitor = _decision(), _monitor()
    documents = _documents() if documents is None else documents
    return {
        "gate-looks": gate_figures.looks_svg(decision.metrics["sequential"]["looks"], 0.05),
        "gate-consistency": gate_figures.consistency_svg(documents),
        "gate-categories": gate_figures.categories_svg(gate_figures.category_intervals(documents)),
        "monitor-flagged": monitor_figures.flagged_shares_svg(monitor),
        "monitor-trend": monitor_figures.trend_svg(monitor["trend"] * 3),
    }


# ------------------------------------------------------------ deterministic and offline


def test_the_same_inputs_draw_the_same_bytes():
    first, second = _pictures(), _pictures()
    assert set(first) == set(NAMES) and all(first.values())
    assert first == second


SCRIPT = """
import hashlib, sys
sys.path.insert(0, {repo!r})
from tests.unit.test_report_figures import _pictures
for name, svg in sorted(_pictures().items()):
    print(name, hashlib.sha256(svg.encode()).hexdigest())
"""


def test_the_bytes_do_not_depend_on_the_process_hash_seed_or_a_users_matplotlibrc(tmp_path):
    """Two fresh processes (other hash seeds; one with a matplotlibrc that changes the look)
    draw the same bytes as this one."""
    here = "\n".join(
        f"{name} {hashlib.sha256(svg.encode()).hexdigest()}"
        for name, svg in sorted(_pictures().items())
    )
    rc = tmp_path / "rc"
    rc.mkdir()
    (rc / "matplotlibrc").write_text(
        "axes.facecolor: eeeeee\nxtick.major.size: 9\nsvg.hashsalt: x\n"
    )
    outputs = []
    for seed, config in (("1", None), ("12345", rc)):
        env = os.environ | {"PYTHONHASHSEED": seed, "PYTHONPATH": str(REPO)}
        if config is not None:
            env["MPLCONFIGDIR"] = str(config)
        result = subprocess.run(
            [sys.executable, "-c", SCRIPT.format(repo=str(REPO))],
            capture_output=True,
            text=True,
            env=env,
            timeout=300,
            check=True,
        )
        outputs.append(result.stdout.strip())
    assert outputs == [here, here]


def test_a_picture_fetches_nothing_and_runs_nothing():
    for name, svg in _pictures().items():
        assert "<script" not in svg.lower() and not re.search(r"https?://", svg), name
        assert "<?xml" not in svg and "<!DOCTYPE" not in svg and "<metadata" not in svg, name
        assert "xlink:" not in svg and "xmlns" not in svg and "@font-face" not in svg, name
        assert not re.search(r"\son\w+=", svg), name  # no event handler attribute
        assert "<image" not in svg and "url(http" not in svg, name
        root = ET.fromstring(svg)  # well-formed
        refs = re.findall(r'href="#([^"]+)"|url\(#([^)]+)\)', svg)
        ids = {el.get("id") for el in root.iter() if el.get("id")}
        assert {a or b for a, b in refs} <= ids, name  # every reference is inside the picture


def test_the_text_is_measured_with_matplotlibs_own_dejavu_sans():
    """svg.fonttype "none": the bytes depend on the font's metrics only, and the font is the
    one matplotlib ships (found before any system copy), not the machine's."""
    from matplotlib import font_manager, rc_context

    with rc_context(figures.STYLE):
        found = Path(font_manager.findfont(font_manager.FontProperties(family=["sans-serif"])))
    assert found.name == "DejaVuSans.ttf"
    assert found.is_relative_to(Path(matplotlib.get_data_path()))
    assert "font-family: 'DejaVu Sans', sans-serif" in _pictures()["gate-looks"]


def test_drawing_leaves_no_global_state_behind():
    before = copy.deepcopy(dict(matplotlib.rcParams))
    _pictures()
    assert dict(matplotlib.rcParams) == before
    if "matplotlib.pyplot" in sys.modules:  # imported by another test: no figure of ours in it
        assert sys.modules["matplotlib.pyplot"].get_fignums() == []


def test_text_with_dollars_or_glyphs_dejavu_lacks_is_drawn_as_text_without_warnings():
    documents = _documents(6)
    for d, category in zip(documents, ("$x^2$ deals", "東京 news", "a$b"), strict=False):
        d["category"] = category
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        svg = gate_figures.categories_svg(gate_figures.category_intervals(documents))
    texts = [t.text or "" for t in ET.fromstring(svg).iter("text")]
    assert any("$x^2$ deals" in t for t in texts) and any("東京 news" in t for t in texts)


def test_a_bad_picture_name_is_refused():
    with pytest.raises(ValueError, match="picture's name"):
        figures.picture("Bad name", (1, 1), lambda figure: None, "t", "d")


def test_labels_are_one_line_and_cut():
    assert figures.label("a\nb\x00c  d") == "a b c d"
    assert figures.label("x" * 50, 10) == "x" * 9 + "…"


# ------------------------------------------------------------------ a text alternative


def test_each_picture_has_a_text_alternative_with_its_numbers():
    pictures = _pictures()
    for name, svg in pictures.items():
        root = ET.fromstring(svg)
        assert root.get("id") == name and root.get("role") == "img", name
        assert root.get("aria-label"), name
        assert [child.tag for child in root][:2] == ["title", "desc"], name
        assert root.find("title").text == root.get("aria-label"), name
    looks = ET.fromstring(pictures["gate-looks"]).find("desc").text
    assert "look 1 on 4 documents: -0.250 [-0.303, -0.197], verdict block" in looks
    assert "the margin is -0.050" in looks
    flagged = ET.fromstring(pictures["monitor-flagged"]).find("desc").text
    assert "summaries the checker finds unsupported: 0.200 (n=100) -> 0.800 (n=20)" in flagged
    assert "length (words)" not in flagged  # a continuous signal is no flagged share


# ------------------------------------------------------------- the pictures' numbers


def test_paired_documents_reads_both_sides_and_says_not_measured_as_none():
    candidate = [
        {"doc_id": 2, "category": "a", "base_mean_support": 0.4, "hss": float("nan")},
        {"doc_id": 1, "category": "b", "base_mean_support": 0.9, "hss": 0.2},
    ]
    production = [
        {"doc_id": 1, "category": "b", "base_mean_support": 1.0, "hss": 0.1},
        {"doc_id": 2, "category": "a", "base_mean_support": 0.8, "hss": 0.3},
    ]
    assert paired_documents(candidate, production) == [
        {
            "doc_id": "2",
            "category": "a",
            "consistency_candidate": 0.4,
            "consistency_production": 0.8,
            "hss_candidate": None,
            "hss_production": 0.3,
        },
        {
            "doc_id": "1",
            "category": "b",
            "consistency_candidate": 0.9,
            "consistency_production": 1.0,
            "hss_candidate": 0.2,
            "hss_production": 0.1,
        },
    ]


def test_category_intervals_are_each_categorys_bootstrap_over_its_own_documents():
    documents = _documents()
    documents[0]["hss_candidate"] = None  # not measured: left out of its category
    rows = gate_figures.category_intervals(documents)
    assert [r["category"] for r in rows] == ["business", "sport", "tech"]
    business = [d for d in documents[1:] if d["category"] == "business"]
    cand = [d["hss_candidate"] for d in business]
    prod = [d["hss_production"] for d in business]
    assert rows[0]["n"] == len(business) == 7
    assert rows[0]["candidate"][0] == pytest.approx(np.mean(cand))
    assert rows[0]["candidate"][1:] == bootstrap_ci(cand, resamples=1000, level=0.95, seed=0)
    assert rows[0]["production"][1:] == bootstrap_ci(prod, resamples=1000, level=0.95, seed=0)
    assert rows[0]["delta"] == paired_bootstrap_ci(cand, prod, resamples=1000, seed=0)
    for r in rows:
        for side in ("candidate", "production", "delta"):
            mean, low, high = r[side]
            assert low <= mean <= high
    constant = [dict(d, hss_candidate=0.5, hss_production=0.5) for d in documents]
    assert gate_figures.category_intervals(constant)[0]["delta"] == (0.0, 0.0, 0.0)
    none = [dict(d, hss_candidate=None) for d in documents]
    assert gate_figures.category_intervals(none) == [] and gate_figures.categories_svg([]) == ""


def test_the_looks_table_and_drawing_agree_with_decision_json():
    looks = [
        {"documents": 12, "confidence": 0.983333, "verdict": "continue",
         "consistency": {"difference": -0.02, "ci": [-0.09, 0.05]}},
        {"documents": 24, "confidence": 0.983333, "verdict": "block",
         "consistency": {"difference": -0.2, "ci": [-0.3, -0.1]},
         "unsupported": {"difference": 0.1, "ci": [0.05, 0.15]}},
        {"documents": 36, "verdict": "promote"},  # no consistency recorded: not drawn
    ]  # fmt: skip
    table = gate_figures.looks_table(looks)
    assert table.rows[1] == ["2", "24", "98.33%", "-0.200 [-0.300, -0.100]",
                             "+0.100 [+0.050, +0.150]", "block"]  # fmt: skip
    assert table.rows[2][3] == "n/a" and list(table.failed) == [False, True, False]
    figure = Figure()
    gate_figures.draw_looks(figure, gate_figures.look_points(looks), 0.05)
    ax = figure.axes[0]
    markers = {line.get_marker(): (list(line.get_xdata()), list(line.get_ydata()))
               for line in ax.lines if line.get_marker() in ("s", "v", "o", "D")}  # fmt: skip
    assert markers == {"s": ([1], [-0.02]), "v": ([2], [-0.2])}  # continue, block
    margins = [line for line in ax.lines if line.get_linestyle() == "--"]
    assert [list(line.get_ydata()) for line in margins] == [[-0.05, -0.05]]
    assert [t.get_text() for t in ax.get_xticklabels()] == [
        "look 1\n12 documents",
        "look 2\n24 documents",
    ]
    assert gate_figures.looks_svg([{"documents": 3}], 0.05) == ""


def test_the_consistency_histograms_count_every_summary():
    documents = _documents(30)
    figure = Figure()
    sides = {s: gate_figures._consistency(documents, s) for s in ("candidate", "production")}
    gate_figures.draw_consistency(figure, sides)
    outlines = {
        p.get_label().split(":")[0]: p
        for p in figure.axes[0].patches
        if str(p.get_label()).startswith(("candidate:", "production:"))
    }
    assert set(outlines) == {"candidate", "production"}
    for side, outline in outlines.items():
        values = [d[f"consistency_{side}"] for d in documents]
        counts, edges = np.histogram(values, np.linspace(0, 1, 21))
        steps = outline.get_xy()  # the outline's corners: each bin's left and right at its count
        drawn = [max(y for x, y in steps if left <= x <= right and y > 0) if c else 0
                 for left, right, c in zip(edges[:-1], edges[1:], counts, strict=True)]  # fmt: skip
        assert counts.sum() == 30 and max(drawn) == counts.max()
    table = gate_figures.consistency_table(documents)
    mean = np.mean([d["consistency_production"] for d in documents])
    assert table.rows[1][:3] == ["production", "30", f"{mean:.3f}"]
    assert gate_figures.consistency_svg([]) == ""
    assert gate_figures.consistency_table([]).rows[0] == ["candidate", "0", *["n/a"] * 6]


def test_the_flagged_shares_are_the_fisher_tests_of_the_windows():
    monitor = _monitor()
    tests = monitor_figures.flag_tests(monitor)
    assert [t["signal"] for t in tests] == [
        t["signal"] for t in monitor["windows"]["tests"] if t["test"] == "fisher"
    ]
    figure = Figure()
    monitor_figures.draw_flagged_shares(figure, tests)
    ax = figure.axes[0]
    reference, current = ax.containers
    assert [bar.get_width() for bar in reference] == [t["reference_mean"] for t in tests]
    assert [bar.get_width() for bar in current] == [t["current_mean"] for t in tests]
    labels = [t.get_text() for t in ax.get_yticklabels()]
    assert labels[0] == "summaries the checker finds unsupported [WORSE]"
    assert monitor_figures.flagged_shares_svg({"windows": {"tests": []}}) == ""


# -------------------------------------------------------------------- in the reports


def test_decision_html_places_each_picture_beside_its_table():
    decision, documents = _decision(), _documents()
    page = decision_html(decision, (), documents)
    for name in ("gate-looks", "gate-consistency", "gate-categories"):
        at = page.index(f'id="{name}"')
        figure_end = page.index("</figure>", at)
        assert page[figure_end:].startswith("</figure>\n<table>"), name
    rows = gate_figures.category_intervals(documents)
    business = rows[0]
    cell = f"{business['candidate'][0]:.3f} [{business['candidate'][1]:.3f}, "
    assert f"<td>business</td><td>{business['n']}</td><td>{cell}" in page
    assert "<td>-0.250 [-0.303, -0.197]</td><td>+0.129 [+0.115, +0.144]</td><td>block</td>" in page


def test_without_documents_the_page_keeps_the_plain_category_table_and_the_looks():
    page = decision_html(_decision())
    assert 'id="gate-looks"' in page and 'id="gate-categories"' not in page
    assert "<th>category</th><th>candidate</th><th>production</th><th>delta</th>" in page
    assert 'id="gate-consistency"' not in page


def test_an_error_decision_renders_without_pictures():
    from hss_gate.decision.record import error_decision

    page = decision_html(error_decision("boom", candidate="c", production="p"))
    assert "<svg" not in page


def test_the_ids_of_a_page_are_unique():
    decision, monitor = _decision(), _monitor()
    monitor["trend"] = monitor["trend"] * 2
    for page in (decision_html(decision, (), _documents()), monitor_html(monitor)):
        ids = re.findall(r'\sid="([^"]+)"', page)
        assert len(ids) == len(set(ids)) and ids


def test_the_markdown_and_junit_stay_picture_free():
    decision, monitor = _decision(), _monitor()
    for text in (decision_markdown(decision), decision_junit(decision), monitor_markdown(monitor)):
        assert "<svg" not in text and "<figure" not in text
    assert 'id="monitor-trend"' in monitor_html(monitor)
    assert 'id="monitor-flagged"' in monitor_html(monitor)


def test_the_pull_request_comment_says_where_the_pictures_are():
    comment = pull_request_comment(_decision())
    line = comment.rstrip("\n").splitlines()[-1]
    assert line == (
        "Pictures of the looks against the margin, of each summary's consistency and of HSS by "
        "category are in `decision.html` (on GitHub: the run's `gate-report` artifact)."
    )


def test_the_artifact_the_comment_names_is_the_one_the_workflows_upload_and_download():
    action = yaml.safe_load((REPO / "action.yml").read_text())
    uploads = [
        step["with"]["name"]
        for step in action["runs"]["steps"]
        if str(step.get("uses", "")).startswith("actions/upload-artifact")
    ]
    gate = yaml.safe_load((REPO / ".github" / "workflows" / "gate.yml").read_text())
    downloads = [
        step["with"]["name"]
        for job in gate["jobs"].values()
        for step in job.get("steps", [])
        if str(step.get("uses", "")).startswith("actions/download-artifact")
    ]
    assert uploads == [REPORT_ARTIFACT] and downloads == [REPORT_ARTIFACT]


def test_hostile_text_in_a_picture_stays_text():
    payload = "<script>alert(1)</script> & \" ' onload=x"
    documents = _documents(6)
    documents[0]["category"] = payload
    monitor = _monitor()
    monitor["windows"]["tests"][0]["label"] = payload
    monitor["trend"][0]["decision"] = payload
    monitor["trend"][0]["started_at"] = payload
    svgs = [
        gate_figures.categories_svg(gate_figures.category_intervals(documents)),
        monitor_figures.flagged_shares_svg(monitor),
        monitor_figures.trend_svg(monitor["trend"]),
    ]
    for svg in svgs:
        assert "<script" not in svg and 'onload="' not in svg
        root = ET.fromstring(svg)
        shown = " ".join([*(t.text or "" for t in root.iter("text")), root.find("desc").text])
        assert "<script>alert(1)</script>" in shown


def test_a_picture_costs_well_under_a_second():
    """Measured, generously bounded (the machine is shared): all five after a warm-up."""
    import time

    _pictures()
    start = time.perf_counter()
    _pictures()
    assert (time.perf_counter() - start) / len(NAMES) < 1.0
