"""The entailment checker's training data: SNLI from the sdist, the regex corruptions, the pairs'
file format (the paired edits: test_claim_edits.py, test_edit_pairs.py)."""

from __future__ import annotations

import io
import json
import random
import tarfile
from pathlib import Path

import pytest

from hss_gate.common.errors import InputError
from hss_gate.consistency import claim_edits as ce
from hss_gate.consistency import entailment_data as ed

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
    assert ce.negate(sentence) == "Owner Sarah Hartley said the shops will not create 40 jobs."
    assert ce.negate("It was not late.") == "It was late."
    swapped = ce.swap_number(sentence, ["40", "12", "1952"], rng)
    assert swapped is not None and " 40 " not in swapped and swapped != sentence
    named = ce.swap_name(sentence, ["Mark Jones", "Sarah Hartley"], rng)
    assert named == "Owner Mark Jones said the shops will create 40 jobs."
    assert ce.exchange_names("Mark Jones paid Sarah Hartley.") == "Sarah Hartley paid Mark Jones."
    assert ce.swap_number("No numbers here.", ["3"], rng) is None
    kind, wrong = ed.corrupt(sentence, DOC, random.Random(1))
    assert wrong != sentence and kind in ("swap-name", "swap-number", "negate", "exchange")


def test_compressions_keep_only_what_the_source_says() -> None:
    cut = ce.compress("The first shop opens in York in June, which is earlier than planned.")
    assert cut == "The first shop opens in York in June."
    assert ce.compress("Short one.") is None


def test_pairs_round_trip_through_jsonl(tmp_path: Path) -> None:
    pairs = [ed.Pair(DOC, "The bakery was founded in 1952.", 1, "sentence:same", "a")]
    pairs.append(ed.Pair(OTHER, "It will cost 5 million pounds.", 0, "sentence:number", "b"))
    ed.write_pairs(pairs, tmp_path / "p.jsonl")
    assert ed.read_pairs(tmp_path / "p.jsonl") == pairs
