"""Evidence a reviewer can check: per unsupported sentence, the words the source does not
contain (the invented name or number), from every checker, through the score tables' cell, the
verdict cache, decision.html and monitor.html (fake checkers and sources, no model)."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from types import SimpleNamespace

import pytest

from hss_gate.common.cache import Cache, content_key
from hss_gate.consistency.invented import InventedChecker
from hss_gate.consistency.novelty import unsupported_words
from hss_gate.consistency.verdict import Unsupported, Verdict
from hss_gate.decision.paired_comparison import compare
from hss_gate.decision.reports import LEGEND, decision_html, monitor_html, moved_most
from hss_gate.decision.rule import decide
from hss_gate.monitoring.rules import live_summary_signals, sample_rows
from hss_gate.scoring.pipeline import verdicts_cached
from hss_gate.settings import GateSettings
from hss_gate.signals import tables
from hss_gate.signals.summary_flags import LengthPolicy
from tests.conftest import FakeChecker
from tests.unit.test_invented_checker import _rank, _weights

pytestmark = pytest.mark.unit

SOURCE = (
    "The city council met on Monday in Leeds. The council approved 3 million pounds for "
    "new homes. Residents welcomed the homes."
)
INVENTED = "In Texas, 40 million went to the council."
SUPPORTED = "The council met on Monday in Leeds <script>alert(1)</script>."
SUMMARY = f"{SUPPORTED} {INVENTED}"
NOT_MARKED = {"council", "Leeds", "Monday", "met", "went", "In", "the"}
MARKED = re.compile(r"<mark class='unsupported-word'>(.*?)</mark>")


def _marked_words(page: str) -> list[str]:
    """The words marked unsupported in a page (its legend left out)."""
    assert page.count(LEGEND) <= 1
    return MARKED.findall(page.replace(LEGEND, ""))


# ----------------------------------------------------------------------------- the words


def test_the_words_are_the_invented_name_and_number_case_insensitively() -> None:
    assert unsupported_words(INVENTED, SOURCE) == ("Texas", "40 million")
    assert unsupported_words(INVENTED.lower(), SOURCE.lower()) == ("texas", "40 million")
    # stems and normalized numbers: a reworded supported sentence has none
    assert unsupported_words("Councils approved three million pounds.", SOURCE) == ()
    assert unsupported_words("Anything at all.", "") == ("Anything",)


def test_every_checker_fills_the_same_words() -> None:
    matrix = FakeChecker().check([(SOURCE, SUMMARY)])[0]
    invented = InventedChecker(_weights(), _rank).check([(SOURCE, SUMMARY)])[0]
    for verdict in (matrix, invented):
        found = {u.sentence: u.words for u in verdict.unsupported}
        assert found[INVENTED] == ("Texas", "40 million")


def test_the_invented_checker_scores_are_unchanged_by_the_evidence() -> None:
    checker = InventedChecker(_weights(), _rank)
    verdict = checker.check([(SOURCE, SUMMARY)])[0]
    finding = checker.explain([(SOURCE, SUMMARY)])[0]
    assert verdict == finding.verdict
    by_sentence = {f.sentence: f for f in finding.sentences}
    for u in verdict.unsupported:
        assert u.score == by_sentence[u.sentence].score
        assert u.words == by_sentence[u.sentence].unsupported_words


# ----------------------------------------------------------------------------- records, cells


def test_verdict_round_trips_with_and_without_words() -> None:
    with_words = Verdict(0.4, (Unsupported("s.", "p.", 0.2, ("Texas", "40 million")),))
    assert Verdict.from_dict(json.loads(json.dumps(with_words.to_dict()))) == with_words
    assert with_words.to_dict()["unsupported"][0]["words"] == ["Texas", "40 million"]
    old = {"consistency": 0.4, "unsupported": [{"sentence": "s.", "passage": "p.", "score": 0.2}]}
    assert Verdict.from_dict(old) == Verdict(0.4, (Unsupported("s.", "p.", 0.2),))
    assert Verdict.from_dict(old).unsupported[0].words == ()
    assert Verdict.from_dict(Verdict(1.0).to_dict()) == Verdict(1.0)
    assert Verdict.from_dict(Verdict(0.2, (), 0.7).to_dict()).support == 0.7
    assert Verdict(0.2).support == 0.2  # a checker without sentence scores: its own score


def test_a_verdict_cached_before_the_words_gets_them(tmp_path) -> None:
    checker, cache = FakeChecker(), Cache(tmp_path)
    key = content_key("verdict-v2", checker.fingerprint, SOURCE, SUMMARY)
    old = {"consistency": 0.5, "unsupported": [{"sentence": INVENTED, "passage": "", "score": 0.1}]}
    cache.put_many("verdicts", {key: json.dumps(old).encode()})
    verdict = verdicts_cached([(SOURCE, SUMMARY)], checker, cache)[0]
    assert verdict.consistency == 0.5  # the cached score, not a new check
    assert verdict.unsupported == (Unsupported(INVENTED, "", 0.1, ("Texas", "40 million")),)


def test_the_cell_carries_the_words_and_old_cells_still_read() -> None:
    verdict = FakeChecker().check([(SOURCE, SUMMARY)])[0]
    cell = tables.unsupported_cell(verdict.unsupported)
    evidence = dict((s, (p, w)) for s, p, w in tables.unsupported_evidence(cell))
    assert evidence[INVENTED][1] == ("Texas", "40 million")
    assert json.loads(cell)[0][2] == list(verdict.unsupported[0].words)
    assert tables.unsupported_evidence('[["s.", "p."]]') == [("s.", "p.", ())]
    for nothing in ("", "not json", None, float("nan"), '[["only one"]]', '{"a": 1}'):
        assert tables.unsupported_evidence(nothing) == []


# ----------------------------------------------------------------------------- decision.html


def _rows(cell: str, consistency: float) -> list[dict]:
    return [
        {
            "doc_id": f"d{i}",
            "category": "news",
            "hss": 0.5,
            "hss_raw": 0.5,
            "base_consistency": consistency if i == 0 else 0.9,
            "base_mean_support": consistency if i == 0 else 0.9,
            "base_low_consistency": False,
            "base_unsupported_share": 0.0,
            "base_novel_ngram_share": 0.3,
            "base_truncated": False,
            "base_n_words": 50,
            "base_unsupported_sentences": cell if i == 0 else "[]",
        }
        for i in range(4)
    ]


def _decision_page(cell: str) -> str:
    candidate, production = _rows(cell, 0.4), _rows("[]", 0.9)
    decision = decide(compare(candidate, production, resamples=200, seed=1), [], GateSettings())
    summaries = [{"doc_id": "d0", "strength": "base", "summary": SUMMARY}]
    return decision_html(decision, moved_most(candidate, production, (summaries, summaries), n=1))


def test_decision_html_marks_the_invented_words_beside_the_passage() -> None:
    verdict = FakeChecker().check([(SOURCE, SUMMARY)])[0]
    page = _decision_page(tables.unsupported_cell(verdict.unsupported))
    # in the summary and again in the table's sentence cell; the supported words are not
    assert _marked_words(page) == ["Texas", "40 million"] * 2
    assert "<mark>In <mark class='unsupported-word'>Texas</mark>, " in page
    assert LEGEND in page
    assert "<th>unsupported words</th><th>best-matching source passage</th>" in page
    passage = next(u.passage for u in verdict.unsupported if u.sentence == INVENTED)
    row = re.search(r"<td>[^<]*Texas, 40 million</td><td>([^<]*)</td>", page)
    assert row and row.group(1) == passage
    assert "<script>" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page


def test_decision_html_reads_old_two_element_cells() -> None:
    page = _decision_page(json.dumps([[INVENTED, "The council approved 3 million pounds."]]))
    assert f"<mark>{INVENTED}</mark>" in page  # the sentence marked, no words to mark
    assert _marked_words(page) == []
    assert f"<td>{INVENTED}</td><td></td><td>The council approved 3 million pounds.</td>" in page


def test_hostile_words_and_passages_are_escaped() -> None:
    hostile = "<img src=x onerror=alert(1)>"
    sentence = f"Texas paid {hostile}."
    cell = json.dumps([[sentence, f"<xss>{hostile}</xss>", ["Texas", hostile, "<xss>"]]])
    page = _decision_page(cell)
    assert "<img" not in page and "<xss>" not in page
    assert "&lt;img src=x onerror=alert(1)&gt;" in page and "&lt;xss&gt;" in page
    assert "<td>Texas, &lt;img src=x onerror=alert(1)&gt;, &lt;xss&gt;</td>" in page


# ----------------------------------------------------------------------------- monitor.html


def _monitor_page(summary: str, checker=None) -> str:
    sample = SimpleNamespace(
        sample_id="s1",
        document=SOURCE,
        summary=summary,
        model_id="m",
        timestamp=datetime(2026, 1, 1, tzinfo=UTC),
        category="news",
    )
    verdicts = (checker or FakeChecker()).check([(SOURCE, summary)])
    live = live_summary_signals(
        [sample], [["Texas"]], verdicts, 3, LengthPolicy(60, 0.1, 3.0, 0.8), 0.5
    )
    result = {"decision": "healthy", "reasons": [], "samples": sample_rows(live, [sample])}
    return monitor_html(json.loads(json.dumps(result)))  # as monitor.json stores it


@pytest.mark.parametrize("checker", [FakeChecker(), InventedChecker(_weights(), _rank)])
def test_monitor_html_marks_the_invented_words_of_served_summaries(checker) -> None:
    page = _monitor_page(SUMMARY, checker)
    marked = _marked_words(page)
    assert [w for w in marked if w in ("Texas", "40 million")] == ["Texas", "40 million"] * 2
    assert not set(marked) & NOT_MARKED
    assert "<h2>Unsupported sentences in served summaries</h2>" in page
    assert LEGEND in page
    assert "<td>Texas, 40 million</td>" in page
    assert "<script" not in page and "&lt;/" in page  # "script" may be marked itself


def test_monitor_html_without_unsupported_sentences_has_no_evidence_section() -> None:
    page = _monitor_page("The council met on Monday in Leeds.")
    assert "<mark" not in page
    assert "Unsupported sentences in served summaries" not in page


def test_monitor_html_reads_old_two_element_evidence() -> None:
    row = {
        "doc_id": "s1",
        "category": "news",
        "live_summary": SUMMARY,
        "unsupported": [[INVENTED, "The council approved 3 million pounds."]],
    }
    page = monitor_html({"decision": "healthy", "reasons": [], "samples": [row]})
    assert f"<mark>{INVENTED}</mark>" in page and _marked_words(page) == []
    assert f"<td>{INVENTED}</td><td></td>" in page


def test_the_scoring_run_writes_the_words_into_the_documents_table(tmp_path) -> None:
    from hss_gate.models.summarizers.base import FakeSummarizer
    from hss_gate.scoring.pipeline import score_documents
    from tests.unit.test_pipeline_fakes import DOCS, _settings, _toolkit

    summarizer = FakeSummarizer(inject=INVENTED)
    result = score_documents(DOCS, summarizer, _settings(), _toolkit(), Cache(tmp_path), None)
    text = {d.doc_id: d.text for d in DOCS}
    found = [
        (words, text[r["doc_id"]])
        for r in result.documents
        for sentence, _, words in tables.unsupported_evidence(r["base_unsupported_sentences"])
        if sentence == INVENTED
    ]
    assert found  # the injected sentence is unsupported, with the words its own source lacks
    for words, source in found:
        assert words[:2] == ("Texas", "40 million")
        assert words == unsupported_words(INVENTED, source)  # "council" where the source lacks it
