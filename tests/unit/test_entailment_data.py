"""The entailment checker's training recipe: SNLI from the sdist, and document-grounded pairs
whose labels follow from how they were made."""

from __future__ import annotations

import io
import json
import random
import tarfile
from pathlib import Path

import pytest

from hss_gate.consistency import entailment_data as ed
from hss_gate.errors import InputError

pytestmark = pytest.mark.unit

DOC = (
    "Hartley's Bakery, a family business from Leeds, will open five new shops this year. "
    "The company made the announcement on Monday, 3 March 2025. "
    "Owner Sarah Hartley said the shops will create 40 jobs. "
    "The first shop opens in York in June, which is earlier than planned. "
    "Sales rose 12 percent in 2024 after the bakery added a vegan range. "
    "Mark Jones, the finance director, said costs have fallen. "
    "The bakery was founded in 1952 by Albert Hartley."
)
OTHER = (
    "The council approved a new library on Tuesday. It will cost 4 million pounds. "
    "Councillor Ann Smith said work starts in May. The old library closed in 2019."
)


def test_snli_pairs_read_from_the_tarball_balanced_and_seeded(tmp_path: Path) -> None:
    rows = [
        {"sentence1": f"A man plays {i}.", "sentence2": f"Someone plays {i}.", "gold_label": g}
        for i, g in enumerate(["entailment", "neutral", "contradiction", "-"] * 10)
    ]
    data = "".join(json.dumps(r) + "\n" for r in rows).encode()
    sdist = tmp_path / "nli.tar.gz"
    with tarfile.open(sdist, "w:gz") as tar:
        info = tarfile.TarInfo(ed.SNLI_MEMBER)
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    pairs = ed.snli_pairs(sdist, 10, seed=1)
    assert len(pairs) == 10 and sum(p.label for p in pairs) == 5
    assert all(p.kind == "snli" for p in pairs)
    assert pairs == ed.snli_pairs(sdist, 10, seed=1)
    assert pairs != ed.snli_pairs(sdist, 10, seed=2)
    with pytest.raises(InputError, match="missing"):
        ed.snli_pairs(tmp_path / "absent.tar.gz", 10, seed=1)


def test_corruptions_change_what_the_sentence_claims() -> None:
    rng = random.Random(0)
    sentence = "Owner Sarah Hartley said the shops will create 40 jobs."
    assert ed.negate(sentence) == "Owner Sarah Hartley said the shops will not create 40 jobs."
    assert ed.negate("It was not late.") == "It was late."
    swapped = ed.swap_number(sentence, ["40", "12", "1952"], rng)
    assert swapped is not None and " 40 " not in swapped and swapped != sentence
    named = ed.swap_name(sentence, ["Mark Jones", "Sarah Hartley"], rng)
    assert named == "Owner Mark Jones said the shops will create 40 jobs."
    assert ed.exchange_names("Mark Jones paid Sarah Hartley.") == "Sarah Hartley paid Mark Jones."
    assert ed.swap_number("No numbers here.", ["3"], rng) is None


def test_compressions_and_fusions_keep_only_what_the_source_says() -> None:
    cut = ed.compress("The first shop opens in York in June, which is earlier than planned.")
    assert cut == "The first shop opens in York in June."
    assert ed.compress("Short one.") is None
    fused = ed.fuse("It rained.", "The match was off.")
    assert fused == "It rained, and the match was off."


def test_document_pairs_are_grounded_balanced_and_reproducible() -> None:
    docs = [("a", DOC), ("b", OTHER + " " + OTHER.replace("May", "June"))]
    pairs = ed.document_pairs(docs, 30, seed=3)
    assert pairs == ed.document_pairs(docs, 30, seed=3)
    assert 0.3 < sum(p.label for p in pairs) / len(pairs) < 0.8
    for p in pairs:
        premise = p.premise.lower()
        if p.kind == "extract":  # a sentence of the premise window, word for word
            assert p.hypothesis.lower() in premise
        if p.kind in ("outside", "other-document"):
            assert p.label == 0 and p.hypothesis.lower() not in premise
        if p.kind.startswith("swap") or p.kind in ("negate", "exchange"):
            assert p.label == 0
    kinds = {p.kind for p in pairs}
    assert {"extract", "negate"} <= kinds


def test_pairs_round_trip_through_jsonl(tmp_path: Path) -> None:
    pairs = ed.document_pairs([("a", DOC)], 5, seed=1)
    ed.write_pairs(pairs, tmp_path / "p.jsonl")
    assert ed.read_pairs(tmp_path / "p.jsonl") == pairs


def test_llm_claims_are_kept_only_when_grounded_and_each_gets_a_corruption() -> None:
    premise = DOC
    rows = [
        {"source": "a", "premise": premise, "claim": "Summary: Sarah Hartley says 40 jobs come."},
        {"source": "a", "premise": premise, "claim": "Sarah Hartley will open 9 shops in Paris."},
        {"source": "a", "premise": premise, "claim": "Too short."},
        {"source": "b", "premise": premise, "claim": '"The bakery was founded by Albert Hartley."'},
    ]
    pairs = ed.llm_pairs(rows, seed=2)
    assert pairs == ed.llm_pairs(rows, seed=2)
    supported = [p.hypothesis.lower() for p in pairs if p.label == 1]
    # the label and the quotes go; the invented "9" and "Paris" drop the second claim
    assert supported == [
        "sarah hartley says 40 jobs come.",
        "the bakery was founded by albert hartley.",
    ]
    wrong = [p for p in pairs if p.label == 0]
    assert len(wrong) == 2 and all(p.kind.startswith("llm-") for p in wrong)
    assert all(p.hypothesis.lower() not in supported for p in wrong)


def test_grounded_reads_names_and_numbers_case_blind() -> None:
    assert ed.grounded("Sarah Hartley founded nothing in 1952.", DOC.lower())
    assert not ed.grounded("Sarah Hartley opened 41 shops.", DOC)
    assert not ed.grounded("Jane Hartley opened shops.", DOC)


def test_claim_passages_are_windows_of_two_or_more_sentences_drawn_by_seed() -> None:
    docs = [("a", DOC), ("b", OTHER)]
    passages = ed.claim_passages(docs, 2, seed=4)
    assert passages == ed.claim_passages(docs, 2, seed=4)
    assert [s for s, _ in passages] == ["a", "a", "b", "b"]
    for source, passage in passages:
        text = DOC if source == "a" else OTHER
        assert passage in text and len(passage.split(". ")) >= 2 and len(passage.split()) <= 120
    assert ed.claim_passages(docs, 0, seed=4) == []
