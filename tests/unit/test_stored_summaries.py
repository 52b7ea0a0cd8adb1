"""Summaries users already have: the `summaries:` file format, its errors, the lookup."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hss_gate.common.errors import InputError, ModelError
from hss_gate.models.summarizers.stored import (
    MissingSummaryError,
    StoredSummarizer,
    SummariesSource,
    perturbed_id,
    read_summaries,
)

pytestmark = pytest.mark.unit


def _write(path: Path, rows: list[dict[str, object]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_one_system_is_picked_and_unknown_fields_are_ignored(tmp_path: Path) -> None:
    path = _write(
        tmp_path / "s.jsonl",
        [
            {"doc_id": "a", "system": "bart", "summary": "A.", "factual": 1},
            {"doc_id": "a", "system": "s2s", "summary": "B.", "factuality": 0.5},
            {"doc_id": 7, "system": "s2s", "summary": "C."},
        ],
    )
    assert read_summaries(SummariesSource(path, "s2s")) == {"a": "B.", "7": "C."}
    assert read_summaries(SummariesSource(path, "bart")) == {"a": "A."}


@pytest.mark.parametrize(
    ("rows", "message"),
    [
        ([], "has no summaries"),
        ([{"doc_id": "a", "summary": "x"}, {"doc_id": "a", "summary": "y"}], ":2: duplicate"),
        ([{"doc_id": "a"}], ":1: field 'summary'"),
        ([{"summary": "x"}], ":1: field 'doc_id'"),
        (
            [
                {"doc_id": "a", "system": "p", "summary": "x"},
                {"doc_id": "a", "system": "q", "summary": "y"},
            ],
            "pick one with ?system=NAME",
        ),
    ],
)
def test_bad_files_give_one_line_errors(
    tmp_path: Path, rows: list[dict[str, object]], message: str
) -> None:
    path = _write(tmp_path / "s.jsonl", rows)
    with pytest.raises(InputError, match=message.replace("?", r"\?")) as error:
        read_summaries(SummariesSource(path))
    assert "\n" not in str(error.value)


def test_an_unknown_system_names_the_known_ones(tmp_path: Path) -> None:
    path = _write(tmp_path / "s.jsonl", [{"doc_id": "a", "system": "bart", "summary": "x"}])
    with pytest.raises(InputError, match=r"no summaries of system 'pgn' \(systems: bart\)"):
        read_summaries(SummariesSource(path, "pgn"))


def test_uri_targets_parse_and_refuse_unknown_options() -> None:
    assert SummariesSource.from_target("runs/a.jsonl?system=s2s") == SummariesSource(
        Path("runs/a.jsonl"), "s2s"
    )
    assert SummariesSource.from_target("a.jsonl").system is None
    with pytest.raises(ModelError, match="unknown option 'sytem'"):
        SummariesSource.from_target("a.jsonl?sytem=x")


def test_texts_map_back_to_their_summaries(tmp_path: Path) -> None:
    perturbed_text = "The cat sat on the rug."
    path = _write(
        tmp_path / "s.jsonl",
        [
            {"doc_id": "d1", "summary": "base"},
            {"doc_id": perturbed_id("d1", perturbed_text), "summary": "perturbed"},
        ],
    )
    summarizer = StoredSummarizer.from_target(str(path))
    summarizer.attach({"d1": "The cat sat on the mat.", "d2": "Other."})
    assert summarizer.summarize(["The cat sat on the mat.", perturbed_text]) == [
        "base",
        "perturbed",
    ]
    assert summarizer.perturbed_sources() == {"d1"}
    with pytest.raises(MissingSummaryError, match="no summary for document 'd2'"):
        summarizer.summarize(["Other."])


def test_the_fingerprint_follows_the_content(tmp_path: Path) -> None:
    one = _write(tmp_path / "1.jsonl", [{"doc_id": "a", "summary": "x"}])
    two = _write(tmp_path / "2.jsonl", [{"doc_id": "a", "summary": "y"}])
    same = _write(tmp_path / "3.jsonl", [{"doc_id": "a", "summary": "x", "extra": 1}])
    fingerprints = [StoredSummarizer.from_target(str(p)).fingerprint for p in (one, two, same)]
    assert fingerprints[0] != fingerprints[1]
    assert fingerprints[0] == fingerprints[2]
