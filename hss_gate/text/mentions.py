"""The measures of a summary's words against its source (pure): mentions (entities, numbers) the
source does not support, and the share of new n-grams. The signals (hss_gate/signals/) are made
of them."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

# possessives split off ("Joanna's" -> joanna, s) so a name matches its possessive form
_WORD = re.compile(r"[A-Za-z]+|\d+(?:[.,]\d+)*")
_NUMBER_WORDS = {
    "zero": "0",
    "one": "1",
    "two": "2",
    "three": "3",
    "four": "4",
    "five": "5",
    "six": "6",
    "seven": "7",
    "eight": "8",
    "nine": "9",
    "ten": "10",
    "eleven": "11",
    "twelve": "12",
    "twenty": "20",
    "thirty": "30",
    "forty": "40",
    "fifty": "50",
    "hundred": "100",
    "thousand": "1000",
    "million": "million",
    "billion": "billion",
    "first": "1st",
    "second": "2nd",
    "third": "3rd",
    "half": "half",
    "dozen": "12",
}
_FILLER = {
    "the",
    "a",
    "an",
    "of",
    "and",
    "in",
    "on",
    "at",
    "for",
    "to",
    "'s",
    "s",
    "per",
    "cent",
    "percent",
    "about",
    "around",
    "approximately",
    "some",
    "nearly",
    "over",
    "than",
    "more",
}


def normalize_token(token: str) -> str:
    """Lower-case a word; strip thousands separators and trailing zeros from numbers."""
    t = token.lower()
    if t in _NUMBER_WORDS:
        return _NUMBER_WORDS[t]
    if t[:1].isdigit():
        t = t.replace(",", "")
        if "." in t:
            t = t.rstrip("0").rstrip(".")
    return t


def word_tokens(text: str) -> list[str]:
    """Normalized word and number tokens of a text."""
    return [normalize_token(t) for t in _WORD.findall(text)]


def unsupported_mentions(mentions: Iterable[str], source_text: str) -> list[str]:
    """Mentions (entities, numbers) with a content token that the source never uses."""
    source = set(word_tokens(source_text))
    missing = []
    for mention in mentions:
        tokens = [t for t in word_tokens(mention) if t not in _FILLER]
        if tokens and any(t not in source for t in tokens):
            missing.append(mention)
    return missing


def unsupported_share(mentions: Sequence[str], source_text: str) -> float:
    """Share of mentions not supported by the source (0 when there are none)."""
    if not mentions:
        return 0.0
    return len(unsupported_mentions(mentions, source_text)) / len(mentions)


def _ngrams(tokens: Sequence[str], n: int) -> list[tuple[str, ...]]:
    return [tuple(tokens[i : i + n]) for i in range(len(tokens) - n + 1)]


def novel_ngram_share(summary: str, source: str, n: int = 4) -> float:
    """Share of the summary's n-grams absent from the source: 0 = pure copying."""
    summary_grams = _ngrams(word_tokens(summary), n)
    if not summary_grams:
        return 0.0
    source_grams = set(_ngrams(word_tokens(source), n))
    return sum(g not in source_grams for g in summary_grams) / len(summary_grams)
