"""Sentence splitting for summaries: deterministic, dependency-free, abbreviation-aware."""

from __future__ import annotations

import re

_ABBREVIATIONS = {
    "mr",
    "mrs",
    "ms",
    "dr",
    "prof",
    "sr",
    "jr",
    "st",
    "vs",
    "etc",
    "inc",
    "ltd",
    "co",
    "corp",
    "no",
    "fig",
    "eq",
    "al",
    "approx",
    "dept",
    "est",
    "gen",
    "gov",
    "sen",
    "rep",
    "lt",
    "col",
    "jan",
    "feb",
    "mar",
    "apr",
    "jun",
    "jul",
    "aug",
    "sep",
    "sept",
    "oct",
    "nov",
    "dec",
    "u.s",
    "u.k",
    "e.g",
    "i.e",
    "mt",
    "ft",
}
_BOUNDARY = re.compile(r"([.!?]+[\"')\]]*)\s+(?=[\"'(\[]?[A-Z0-9])")
_TERMINAL = re.compile(r"[.!?][\"')\]]*$")


def split_sentences(text: str) -> list[str]:
    """Split text into sentences; an empty text gives an empty list."""
    sentences: list[str] = []
    for block in re.split(r"\n\s*\n|\n(?=\s*[-*•]\s)", text.strip()):
        start = 0
        for match in _BOUNDARY.finditer(block):
            head = block[start : match.end(1)]
            last_word = re.findall(r"([A-Za-z.]+)\.[\"')\]]*$", head)
            if last_word and last_word[0].lower().rstrip(".") in _ABBREVIATIONS:
                continue
            if last_word and len(last_word[0]) == 1:  # an initial such as "J."
                continue
            sentences.append(head.strip())
            start = match.end()
        tail = block[start:].strip()
        if tail:
            sentences.append(tail)
    return [" ".join(s.split()) for s in sentences if s.strip()]


def ends_mid_sentence(text: str) -> bool:
    """True when a non-empty text does not end with sentence-final punctuation."""
    stripped = text.strip()
    return bool(stripped) and not _TERMINAL.search(stripped)
