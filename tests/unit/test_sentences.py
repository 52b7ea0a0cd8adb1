"""The one sentence splitter: cased, lower-cased, tokenized and glued text split where a reader
would, abbreviations and initials kept together."""

from __future__ import annotations

import pytest

from hss_gate.text.sentences import ends_mid_sentence, split_sentences

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "It rained in North America.No bombs fell.",
            ["It rained in North America.", "No bombs fell."],
        ),
        ("it rained . no bombs fell .\nthe end .", ["it rained .", "no bombs fell .", "the end ."]),
        ("the u.s. sent mr. smith. he left.", ["the u.s. sent mr. smith.", "he left."]),
        (
            "Mr. Smith met J. K. Rowling. It was 5.5 percent.",
            ["Mr. Smith met J. K. Rowling.", "It was 5.5 percent."],
        ),
        ("see cnn.com for more. then go.", ["see cnn.com for more.", "then go."]),
        (
            "the bakery will open five shops. it will hire 40 people. sales rose 5.5 percent.",
            [
                "the bakery will open five shops.",
                "it will hire 40 people.",
                "sales rose 5.5 percent.",
            ],
        ),
        (
            "you may not copy the app. we may end these terms at any time. fees are not refunded.",
            [
                "you may not copy the app.",
                "we may end these terms at any time.",
                "fees are not refunded.",
            ],
        ),
        (
            "The fund grew.It paid 3% more.38 hours later it closed.",
            ["The fund grew.", "It paid 3% more.", "38 hours later it closed."],
        ),
        ("Costs:\n- rent rose.\n- wages fell.", ["Costs:", "- rent rose.", "- wages fell."]),
        ("", []),
        ("   ", []),
    ],
)
def test_split_sentences_cased_lower_tokenized_glued(text: str, expected: list[str]) -> None:
    assert split_sentences(text) == expected


def test_split_sentences_keeps_cased_lowercase_continuation_together() -> None:
    # in a cased text a lower-case word after a period does not start a sentence ("approx. two")
    assert split_sentences("He paid approx. two dollars. She left.") == [
        "He paid approx. two dollars.",
        "She left.",
    ]


def test_lower_cased_document_lead_three_is_three_sentences() -> None:
    text = " ".join(f"sentence number {i} says something about the bakery ." for i in range(10))
    lead = split_sentences(text)[:3]
    assert len(lead) == 3
    assert all(len(s.split()) == 9 for s in lead)  # eight words and the " ."


def test_ends_mid_sentence() -> None:
    assert ends_mid_sentence("It rained and")
    assert not ends_mid_sentence("It rained.")
    assert not ends_mid_sentence("")
