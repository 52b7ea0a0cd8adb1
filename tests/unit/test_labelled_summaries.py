"""Which sentences of a human-labelled summary have a known label (labelled_summaries.py): QAGS
by sentence, SummaC by summary, FRANK by its share of factual sentences; copies of documents."""

from __future__ import annotations

import json

import pytest

from hss_gate.common.errors import InputError
from hss_gate.consistency.labelled_summaries import (
    document_marks,
    is_marked,
    read_labelled_summaries,
)

pytestmark = pytest.mark.unit

ARTICLE = (
    "(CNN) The council voted on Monday to close the old bridge over the river for repairs. " * 3
)


def test_summac_labels_every_sentence_of_a_consistent_summary_and_only_a_lone_wrong_one(tmp_path):
    records = {
        "a": {
            "document": ARTICLE,
            "claim": "The council met. It voted to close the bridge.",
            "label": 1,
        },
        "b": {"document": ARTICLE, "claim": "The council voted to open the bridge.", "label": 0},
        "c": {"document": ARTICLE, "claim": "The council met. It voted to open it.", "label": 0},
    }
    path = tmp_path / "summac_set.json"
    path.write_text(json.dumps(records))
    got = {s.id: s.sentences for s in read_labelled_summaries(path)}
    assert got["summac_set:a"] == (("The council met.", 1), ("It voted to close the bridge.", 1))
    assert got["summac_set:b"] == (("The council voted to open the bridge.", 0),)
    assert got["summac_set:c"] == ()  # which of its two sentences is wrong is not known


def test_frank_reads_all_factual_and_all_wrong_summaries_and_skips_the_mixed(tmp_path):
    folder = tmp_path / "frank"
    folder.mkdir()
    (folder / "documents.jsonl").write_text(json.dumps({"doc_id": "d", "document": ARTICLE}))
    summaries = [("s1", "It closed. It reopened.", 1.0), ("s2", "It sank. It flew.", 0.0)]
    summaries.append(("s3", "It closed. It flew.", 0.5))
    lines = [
        json.dumps({"doc_id": "d", "system": s, "summary": t, "factuality": f})
        for s, t, f in summaries
    ]
    (folder / "summaries.jsonl").write_text("\n".join(lines) + "\n")
    got = [s.sentences for s in read_labelled_summaries(folder / "summaries.jsonl")]
    assert got == [(("It closed.", 1), ("It reopened.", 1)), (("It sank.", 0), ("It flew.", 0)), ()]
    (folder / "documents.jsonl").unlink()
    with pytest.raises(InputError, match=r"documents\.jsonl"):
        read_labelled_summaries(folder / "summaries.jsonl")


def test_a_copy_of_a_marked_document_is_found_whatever_its_opening_case_and_spacing(tmp_path):
    path = tmp_path / "docs.jsonl"
    path.write_text(json.dumps({"id": "x", "text": ARTICLE}) + "\n")
    marks = document_marks([path])
    copy = "By . Daily Mail Reporter . " + ARTICLE[5:].upper().replace(" ", "  ")
    assert is_marked(copy, marks)
    assert not is_marked(ARTICLE.replace("bridge", "tunnel"), marks)
    assert not is_marked(ARTICLE[:60], marks)  # a part of it too short to hold its mark


def test_a_file_of_another_shape_is_a_clear_error(tmp_path):
    path = tmp_path / "rows.jsonl"
    path.write_text(json.dumps({"doc": "d", "summary": "s"}) + "\n")
    with pytest.raises(InputError, match="neither QAGS"):
        read_labelled_summaries(path)
    with pytest.raises(InputError, match="no such file"):
        read_labelled_summaries(tmp_path / "absent.jsonl")
