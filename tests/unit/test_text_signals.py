import pytest

from hss_gate.text.mentions import novel_ngram_share, unsupported_mentions, unsupported_share
from hss_gate.text.sentences import ends_mid_sentence, split_sentences
from hss_gate.text.swap_back import swap_back

pytestmark = pytest.mark.unit


def test_split_sentences_keeps_abbreviations_and_decimals():
    text = "Dr. Smith paid 3.5 million dollars. The U.S. team won! Did it rain? Yes."
    assert split_sentences(text) == [
        "Dr. Smith paid 3.5 million dollars.",
        "The U.S. team won!",
        "Did it rain?",
        "Yes.",
    ]


def test_split_sentences_empty():
    assert split_sentences("   ") == []


def test_ends_mid_sentence():
    assert ends_mid_sentence("The bank raised rates to")
    assert not ends_mid_sentence('He said "no."')
    assert not ends_mid_sentence("")


def test_unsupported_mentions_finds_invented_numbers_and_names():
    source = "Hartley's Bakery opened 5 shops in Leeds in 2024, costing 1,200,000 pounds."
    mentions = ["Hartley's Bakery", "5", "Leeds", "2024", "1.2 million", "Manchester", "1200000"]
    missing = unsupported_mentions(mentions, source)
    assert missing == ["1.2 million", "Manchester"]
    assert unsupported_share(mentions, source) == pytest.approx(2 / 7)
    assert unsupported_share([], source) == 0.0


def test_novel_ngram_share_zero_for_copy_one_for_rewrite():
    source = "the quick brown fox jumps over the lazy dog today"
    assert novel_ngram_share("the quick brown fox jumps", source) == 0.0
    assert novel_ngram_share("a fast auburn fox leaps far", source) == 1.0


def test_restore_swaps_maps_back_with_case():
    source = "The rapid rise worried residents."
    summary = "Swift growth worried locals. The swift rise was noted."
    restored = swap_back(summary, [("rapid", "swift"), ("residents", "locals")], source)
    assert restored == "Rapid growth worried residents. The rapid rise was noted."


def test_restore_skips_replacements_that_the_source_also_uses():
    source = "A swift decision by rapid officials."
    summary = "A swift decision."
    assert swap_back(summary, [("rapid", "swift")], source) == summary


def test_a_name_is_supported_by_its_possessive_form():
    assert unsupported_mentions(["Joanna", "Chile"], "Joanna's review of Chile's wines") == []
