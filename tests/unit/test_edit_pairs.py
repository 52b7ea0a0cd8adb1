"""Seeds, documents and labelled rows of the checker's training pairs (consistency/edit_pairs.py),
with a hashing encoder and a word counter (no spaCy, no GloVe, no model)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hss_gate.common.errors import InputError
from hss_gate.consistency import edit_pairs as ep
from hss_gate.consistency.labelled_summaries import document_marks
from hss_gate.models.embedding import HashingEmbedder

pytestmark = pytest.mark.unit

DOC = (
    "Ann: Darling, buy some butter. Mike: Ok, I will go to the shop now. "
    "Mike: Do we have any milk at home? Ann: I will check the fridge first. "
    "Ann: Yes, there is some milk in the fridge."
)
SEED = "Ann asks Mike to buy butter. Ann finds milk in the fridge."


def _tools(max_length: int = 256) -> ep.EditTools:
    return ep.EditTools(
        tagger=None,
        vectors=None,
        wordnet=None,
        encode=HashingEmbedder(128).encode,
        count=lambda text: len(text.split()),
        perturb=None,
        max_length=max_length,
    )


def _summedits(tmp_path: Path) -> Path:
    rows = [
        {"doc": DOC, "summary": SEED, "original_summary": SEED, "label": 1, "split": "evaluation"},
        {
            "doc": DOC,
            "summary": "Ann asks Mike to buy cheese. Ann finds milk in the fridge.",
            "original_summary": SEED,
            "label": 0,
            "split": "evaluation",
        },
        {
            "doc": DOC,
            "summary": "Mike asks Ann to buy butter. Ann finds milk in the fridge.",
            "original_summary": SEED,
            "label": 0,
            "split": "test",  # read only when a stage's splits name it
        },
    ]
    path = tmp_path / "summedits_chat.json"
    path.write_text(json.dumps(rows))
    return path


def test_summedits_documents_take_seeds_from_the_named_splits_only(tmp_path):
    path = _summedits(tmp_path)
    documents = ep.read_seed_documents(path)
    assert documents == [ep.SeedDocument("summedits_chat:0", DOC, (SEED,))]
    rows = json.loads(path.read_text())
    for row in rows:
        row["split"] = "test"
    path.write_text(json.dumps(rows))
    assert ep.read_seed_documents(path) == []  # only test rows: nothing is read by default
    both = ep.read_seed_documents(path, splits=("evaluation", "test"))
    assert both == [ep.SeedDocument("summedits_chat:0", DOC, (SEED,))]


def test_jsonl_documents_get_their_stored_base_summaries_and_summac_their_reference(tmp_path):
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text(json.dumps({"doc_id": "d1", "text": DOC}) + "\n")
    stored = tmp_path / "summaries.jsonl"
    stored.write_text(
        json.dumps({"doc_id": "d1", "summary": SEED, "strength": "base"})
        + "\n"
        + json.dumps({"doc_id": "d1", "summary": "perturbed one.", "strength": "low"})
        + "\n"
    )
    assert ep.read_seed_documents(corpus, stored) == [ep.SeedDocument("corpus:d1", DOC, (SEED,))]
    summac = tmp_path / "legal.json"
    summac.write_text(json.dumps({"k": {"document": DOC, "reference_summary": SEED}}))
    assert ep.read_seed_documents(summac) == [ep.SeedDocument("legal:k", DOC, (SEED,))]
    with pytest.raises(InputError, match="no such file"):
        ep.read_seed_documents(tmp_path / "absent.jsonl")


def test_seeds_are_source_and_summary_sentences_on_evidence_that_fits_the_window():
    documents = [ep.SeedDocument("d", DOC, (SEED,))]
    seeds = ep.claim_seeds(documents, 2, seed=1, tools=_tools(max_length=30))
    origins = [s.origin for s, _ in seeds]
    assert origins.count("sentence") == 2 and origins.count("summary") == 2
    for s, index in seeds:
        assert index == 0 and s.premise
        assert len(s.premise.split()) <= max(32, 30 - len(s.claim.split()) - 3) or (
            s.premise.count(". ") == 0  # a single sentence longer than the budget
        )
        if s.origin == "sentence":
            assert s.claim in s.premise  # its own sentence is its best evidence
            assert s.without_support is None or s.claim not in s.without_support
    assert seeds == ep.claim_seeds(documents, 2, seed=1, tools=_tools(max_length=30))


def test_labelled_rows_label_the_edited_sentence_of_an_inconsistent_summary(tmp_path):
    pairs = ep.labelled_pairs(_summedits(tmp_path), _tools(), unique=True)
    got = [(p.hypothesis, p.label, p.kind) for p in pairs]
    assert got == [
        ("Ann asks Mike to buy butter.", 1, "labelled:same"),
        ("Ann finds milk in the fridge.", 1, "labelled:same"),
        ("Ann asks Mike to buy cheese.", 0, "labelled:edited"),
    ]  # the unchanged sentence of the edited row is taken once; the test row is not read
    repeated = ep.labelled_pairs(_summedits(tmp_path), _tools())
    assert [p.hypothesis for p in repeated].count("Ann finds milk in the fridge.") == 2
    both = ep.labelled_pairs(_summedits(tmp_path), _tools(), ("evaluation", "test"), unique=True)
    assert [(p.hypothesis, p.label) for p in both][3:] == [("Mike asks Ann to buy butter.", 0)]
    with pytest.raises(InputError, match="no such file"):
        ep.labelled_pairs(tmp_path / "absent.json", _tools())


def test_labelled_qags_sentences_keep_their_own_labels_and_excluded_documents_give_none(tmp_path):
    qags = tmp_path / "qags.jsonl"
    no, yes = {"response": "no"}, {"response": "yes"}
    sentences = [
        {"sentence": "Ann asks Mike to buy butter.", "responses": [yes, yes, no]},
        {"sentence": "Ann finds cheese in the fridge.", "responses": [no, no, yes]},
    ]
    qags.write_text(json.dumps({"article": DOC, "summary_sentences": sentences}) + "\n")
    pairs = ep.labelled_pairs(qags, _tools())
    assert [(p.hypothesis, p.label, p.kind) for p in pairs] == [
        ("Ann asks Mike to buy butter.", 1, "labelled:supported"),
        ("Ann finds cheese in the fridge.", 0, "labelled:unsupported"),
    ]
    assert "butter" in pairs[0].premise  # the sentence is read on its evidence
    marked = tmp_path / "other_set.jsonl"  # another set holds a copy: other case and spacing
    marked.write_text(json.dumps({"id": "a", "text": DOC.upper().replace(".", " .")}) + "\n")
    assert ep.labelled_pairs(qags, _tools(), exclude=document_marks([marked])) == []
