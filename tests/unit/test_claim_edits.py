"""Minimal edits of a claim (consistency/claim_edits.py) and the paired pairs built from them
(entailment_data.seed_pairs), on hand-tagged tokens: no spaCy, no WordNet files."""

from __future__ import annotations

import random
import re

import pytest

from hss_gate.consistency import claim_edits as ce
from hss_gate.consistency.entailment_data import Seed, seed_pairs
from hss_gate.text.perturb import Candidate, Token

pytestmark = pytest.mark.unit

# word -> (pos, tag, lemma, entity type)
TAGS = {
    "Ann": ("PROPN", "NNP", "ann", "PERSON"),
    "Mike": ("PROPN", "NNP", "mike", "PERSON"),
    "Paris": ("PROPN", "NNP", "paris", "GPE"),
    "asks": ("VERB", "VBZ", "ask", ""),
    "buy": ("VERB", "VB", "buy", ""),
    "butter": ("NOUN", "NN", "butter", ""),
    "cheap": ("ADJ", "JJ", "cheap", ""),
    "plan": ("NOUN", "NN", "plan", ""),
    "opened": ("VERB", "VBD", "open", ""),
    "shop": ("NOUN", "NN", "shop", ""),
    "3": ("NUM", "CD", "3", "CARDINAL"),
}


def tokens(text: str) -> tuple[Token, ...]:
    out = []
    for i, m in enumerate(re.finditer(r"\w+|[^\w\s]", text)):
        word = m.group(0)
        pos, tag, lemma, ent = TAGS.get(
            word, ("PUNCT" if not word.isalnum() else "X", "", word.lower(), "")
        )
        out.append(
            Token(
                i,
                word,
                m.start(),
                pos,
                tag,
                lemma,
                ent,
                word.lower() in {"to", "the", "a", "in", "and"},
                word.isdigit(),
                not word.isalnum(),
                False,
                0,
            )
        )
    return tuple(out)


CLAIM = "Ann asks Mike to buy butter."


def test_entity_spans_join_runs_of_one_type():
    spans = ce.entity_spans(tokens("Ann and Mike went to Paris"))
    assert [(s.text, s.label) for s in spans] == [
        ("Ann", "PERSON"),
        ("Mike", "PERSON"),
        ("Paris", "GPE"),
    ]


def test_an_entity_is_swapped_for_another_of_its_type_never_one_already_there():
    rng = random.Random(0)
    pool = {"PERSON": ["Ann", "Mike", "Sarah"], "GPE": ["Rome"]}
    for _ in range(10):
        edited = ce.swap_entity(CLAIM, tokens(CLAIM), pool, rng)
        assert edited in ("Sarah asks Mike to buy butter.", "Ann asks Sarah to buy butter.")
    assert ce.swap_entity(CLAIM, tokens(CLAIM), {"GPE": ["Rome"]}, rng) is None


def test_exchanging_two_entities_of_one_type_swaps_the_roles():
    assert ce.exchange_entities(CLAIM, tokens(CLAIM)) == "Mike asks Ann to buy butter."
    one = "Ann opened the shop."
    assert ce.exchange_entities(one, tokens(one)) is None


def test_antonyms_are_inflected_like_the_word_they_replace():
    claim = "Ann opened the shop."
    edited = ce.antonym(
        claim,
        tokens(claim),
        lambda lemma, pos: {"open": ["close"]}.get(lemma, []),
        random.Random(0),
    )
    assert edited == "Ann closed the shop."
    assert ce.inflect("stop", "VBD") == "stopped"
    assert ce.inflect("carry", "VBZ") == "carries"
    assert ce.inflect("make", "VBG") == "making"


def test_a_related_word_that_is_a_synonym_is_never_used():
    neighbours = {"butter": ["margarine", "cheese"]}
    is_synonym = lambda token, word: word == "margarine"  # noqa: E731
    edited = ce.related_word(
        CLAIM, tokens(CLAIM), lambda w: neighbours.get(w, []), is_synonym, random.Random(1)
    )
    assert edited == "Ann asks Mike to buy cheese."


def test_insertions_add_a_detail_the_claim_did_not_state():
    rng = random.Random(0)
    edited = ce.insert_modifier(CLAIM, tokens(CLAIM), ["salted"], rng)
    assert edited == "Ann asks Mike to buy salted butter."
    phrase = ce.insert_phrase(CLAIM, {"GPE": ["Paris"], "DATE": ["12-week"]}, rng)
    assert phrase == "Ann asks Mike to buy butter in Paris."  # "12-week" is no calendar date


def test_synonym_swaps_and_reordering_keep_the_facts():
    candidates = {4: [Candidate("purchase", 0.8, 0.95)]}
    assert ce.synonym_swap(CLAIM, candidates, tokens(CLAIM), random.Random(0)) == (
        "Ann asks Mike to purchase butter."
    )
    assert ce.reorder("It sells items such as bread, milk and eggs.") == (
        "It sells items such as milk, bread and eggs."
    )
    # an item of several words is never split: "property damage, medical theft, expenses ..."
    assert ce.reorder("It covers property damage, medical expenses, theft and vandalism.") is None
    assert ce.reorder("Bread, milk and eggs are sold.") == "Milk, bread and eggs are sold."


def _context(claim: str) -> ce.ClaimContext:
    return ce.ClaimContext(
        claim, tokens(claim), {}, {"PERSON": ["Sarah"]}, ("3",), {"GPE": ["Paris"]}, ("salted",)
    )


def test_seed_pairs_give_both_labels_on_the_same_premise_and_claim():
    seeds = [
        Seed("d1", "Ann: buy butter. Mike: ok.", CLAIM, "summary"),
        Seed("d2", "Ann asks Mike to buy butter.", CLAIM, "sentence", without_support="Mike: ok."),
    ]
    contexts = {id(s): _context(s.claim) for s in seeds}

    def consistent(seed, rng):
        return ce.consistent_edit(contexts[id(seed)], rng, lambda c: None)

    def inconsistent(seed, rng):
        return ce.inconsistent_edit(
            contexts[id(seed)], rng, lambda w: [], lambda t, w: False, lambda lemma, pos: []
        )

    pairs = seed_pairs(
        seeds, consistent, inconsistent, seed=3, second_pair=1.0, unsupported_share=1.0
    )
    for seed in seeds:
        mine = [p for p in pairs if p.source == seed.source and p.premise == seed.premise]
        assert {p.label for p in mine} == {0, 1}
        assert all(
            p.hypothesis == CLAIM for p in mine if p.label == 1
        )  # no consistent edit applies
        assert all(p.hypothesis != CLAIM for p in mine if p.label == 0)
    dropped = [p for p in pairs if p.kind.endswith(":dropped")]
    assert [(p.premise, p.hypothesis, p.label) for p in dropped] == [("Mike: ok.", CLAIM, 0)]
    assert pairs == seed_pairs(
        seeds, consistent, inconsistent, seed=3, second_pair=1.0, unsupported_share=1.0
    )


def test_a_seed_without_a_one_fact_change_gives_no_pair():
    seed = Seed("d", "Rain fell.", "Rain fell.", "sentence")
    pairs = seed_pairs([seed], lambda s, r: None, lambda s, r: None, seed=1)
    assert pairs == []
