"""Sentence splitting, the one splitter every caller uses: deterministic, dependency-free.

It keeps working on lower-cased, tokenized and glued text: "...North America.No bombs..."
(glued), "... the draw . andros ..." (lower-cased, tokenized CNN/DM style) and lower-cased prose
each split where a reader would. `split_sentences` decides per text whether it is cased (then a
boundary needs an upper-case letter, digit or quote after it) or lower-cased (then any word may
start a sentence), handles tokenized punctuation (" .", " ''"), un-glues "word.Word" (and, in
lower-cased text, "word.word" unless it looks like a domain or an abbreviation), and keeps
abbreviations and initials together. Measured against the earlier splitters and spaCy in
`experiments/checker_dev.py split` (docs/CHECKER_DEV.md section 4).
"""

from __future__ import annotations

import re

SPLITTER_VERSION = "split-v2"
"""Goes into the fingerprints of what depends on sentence boundaries (extractive summaries,
checker verdicts): bump it when `split_sentences` changes its output."""

ABBREVIATIONS = frozenset(
    """mr mrs ms dr prof sr jr st vs etc inc ltd co corp no fig eq al approx dept est gen gov sen
    rep lt col capt sgt cpl maj adm rev hon jan feb mar apr jun jul aug sep sept oct nov dec mt ft
    u.s u.k u.n e.g i.e a.m p.m d.c l.a n.y ph.d v p.s""".split()  # noqa: SIM905
)
_TLDS = frozenset(
    [
        "com",
        "org",
        "net",
        "gov",
        "edu",
        "co",
        "uk",
        "io",
        "us",
        "de",
        "fr",
        "info",
        "biz",
        "tv",
        "ly",
        "me",
    ]
)
_TERM = r"(?:[.!?]+|\.\.\.)"
_CLOSE = r"(?:\s*(?:''|\"|'|\)|\]|’|”))*"
# a candidate boundary: terminal punctuation (maybe tokenized: " ."), closing quotes, whitespace
_BOUNDARY = re.compile(rf"({_TERM}{_CLOSE})(\s+)")
_GLUED_CASED = re.compile(
    r"(?<=[a-z0-9\"')][.!?])(?=[A-Z][a-z ])"  # "America.No", "flower.A diet"
    r"|(?<=[a-z][.!?]['\"’”])(?=[A-Z])"  # "missy.'Two"
    r"|(?<=[a-z]{3}[.!?])(?=\d)"  # "more.38 hours" (not "2.5": letters before)
)
_GLUED_LOWER = re.compile(r"(?<=[a-z]{3}[.!?])(?=[a-z]{2,}\b)")
_WORD_BEFORE = re.compile(r"([A-Za-z][A-Za-z.]*)\s*$")


def is_lower_cased(text: str) -> bool:
    """True when (almost) no letter is upper-case: case says nothing about boundaries."""
    letters = [c for c in text if c.isalpha()]
    if not letters:
        return False
    return sum(c.isupper() for c in letters) <= 0.005 * len(letters)


def _unglue(text: str, lower: bool) -> str:
    text = _GLUED_CASED.sub(" ", text)
    if lower:
        out, last = [], 0
        for m in _GLUED_LOWER.finditer(text):
            after = re.match(r"[a-z]+", text[m.end() :])
            before = _WORD_BEFORE.search(text[: m.start() - 1])
            word_before = before.group(1).lower() if before else ""
            if after and after.group(0) in _TLDS:
                continue
            if "." in word_before or word_before in ABBREVIATIONS:
                continue
            out.append(text[last : m.start()])
            out.append(" ")
            last = m.start()
        out.append(text[last:])
        text = "".join(out)
    return text


def split_sentences(text: str) -> list[str]:
    """Sentences of a text (cased, lower-cased, tokenized or glued); empty text -> []."""
    if not text or not text.strip():
        return []
    lower = is_lower_cased(text)
    out: list[str] = []
    for block in re.split(r"\n\s*\n|\n(?=\s*[-*•]\s)", text):
        block = _unglue(" ".join(block.split()), lower)
        if not block:
            continue
        start = 0
        for m in _BOUNDARY.finditer(block):
            end = m.end(1)
            rest = block[m.end() :]
            if not rest:
                continue
            if not _can_start(rest, lower):
                continue
            before = block[start : m.start(1)]
            if m.group(1).startswith(".") and _is_abbreviation(before, m.group(1), rest, lower):
                continue
            sentence = block[start:end].strip()
            if sentence:
                out.append(sentence)
            start = m.end()
        tail = block[start:].strip()
        if tail:
            out.append(tail)
    return _merge_fragments(out)


def _can_start(rest: str, lower: bool) -> bool:
    first = rest.lstrip("\"'`([“‘ ")[:1]
    if not first:
        return False
    if first.isdigit() or first.isupper():
        return True
    return lower and first.isalpha()


def _is_abbreviation(before: str, punct: str, rest: str, lower: bool) -> bool:
    if punct != "." or before.endswith(" "):  # tokenized " ." ends a sentence
        return False
    m = _WORD_BEFORE.search(before)
    if not m:
        return False
    word = m.group(1).lower().rstrip(".")
    if word in ABBREVIATIONS:
        return True
    if len(word) == 1 and word.isalpha():  # an initial: "J. K. Rowling", "john f. kennedy"
        nxt = rest[:1]
        return nxt.isupper() or lower
    return bool(re.fullmatch(r"(?:[a-z]\.)+[a-z]", word))  # u.s, e.g


def _merge_fragments(sentences: list[str]) -> list[str]:
    """A 'sentence' without any letter or digit (a stray quote) joins the previous one."""
    out: list[str] = []
    for s in sentences:
        if out and not re.search(r"[A-Za-z0-9]", s):
            out[-1] = out[-1] + " " + s
        else:
            out.append(s)
    return out


_TERMINAL = re.compile(r"[.!?][\"')\]]*$")


def ends_mid_sentence(text: str) -> bool:
    """True when a non-empty text does not end with sentence-final punctuation."""
    stripped = text.strip()
    return bool(stripped) and not _TERMINAL.search(stripped)
