"""What a summary says that its source does not contain: word-level novelty, case-robust.

Every summary word is reduced to a key: numbers to their value ("two" = "2" = "2.0",
"1,000" = "1000", "2 million" = "2m" = "2000000"; "%" / "percent" / "per cent" = "percent";
"first" = "1st"), words to their Porter stem, lower-cased. A summary content word (not a stop
word) is supported when its key occurs in the source (or, for words of 7+ letters, a source word
shares its first 6 letters: "american" / "america"). Rare words weigh more than common ones: the
weight is the word's frequency rank in a large general vocabulary (GloVe 6B's list, ordered by
frequency), log-scaled to (0, 1]; numbers and unknown words weigh 1. Invented names, numbers and
details are rare, unsupported words.

Each summary sentence is also aligned to the two source sentences sharing most of its weighted
keys (the passage shown beside it); `local` support is measured in those nearby sentences, which see
facts recombined from different places of the source.

Pure functions, no model: `word_rank` is any callable word -> rank (None = unknown).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from functools import lru_cache
from itertools import pairwise

import numpy as np

from hss_gate.consistency.features import STOP_WORDS as _BASE_STOP
from hss_gate.consistency.verdict import Verdict
from hss_gate.text.sentences import split_sentences

WordRank = Callable[[str], "int | None"]

STOP_WORDS = _BASE_STOP | frozenset(
    """according told tell also just like get got go going went year years time new last first
    week day days people way well back even still many much made make makes take took could
    would
    """.split()  # noqa: SIM905
) - frozenset({"no", "not", "never", "nor"})
_KEEP_SHORT = frozenset({"uk", "us", "eu", "un", "tv"})
_TOKEN = re.compile(
    r"\d+(?:st|nd|rd|th)\b"
    r"|\d+(?:[.,]\d+)*(?:\s?(?:%|percent|per cent))?"
    r"|[A-Za-z]+(?:['’][a-z]+)?"
    r"|%"
)
_UNITS = {
    "hundred": 100,
    "thousand": 1_000,
    "million": 1_000_000,
    "billion": 1_000_000_000,
    "trillion": 1_000_000_000_000,
    "m": 1_000_000,
    "bn": 1_000_000_000,
    "k": 1_000,
}
_TEENS = [
    "zero",
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "eleven",
    "twelve",
    "thirteen",
    "fourteen",
    "fifteen",
    "sixteen",
    "seventeen",
    "eighteen",
    "nineteen",
]
_TENS = ["twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"]
_SMALL = {w: i for i, w in enumerate(_TEENS)} | {w: 10 * (i + 2) for i, w in enumerate(_TENS)}
_ORDINALS = {
    "first": "1st",
    "third": "3rd",
    "fourth": "4th",
    "fifth": "5th",
    "sixth": "6th",
    "seventh": "7th",
    "eighth": "8th",
    "ninth": "9th",
    "tenth": "10th",
}
_NUMBER_WORDS = set(_SMALL) | {"hundred", "thousand", "million", "billion", "trillion"}


@lru_cache(maxsize=200_000)
def stem(word: str) -> str:
    from nltk.stem import PorterStemmer

    return _porter(PorterStemmer).stem(word)


@lru_cache(maxsize=1)
def _porter(cls: type) -> object:
    return cls()


def _format(value: float) -> str:
    if value == int(value):
        return "#" + str(int(value))
    return "#" + f"{value:.6g}"


@dataclass(frozen=True)
class Word:
    """One word of a text: its surface form, character span and key."""

    text: str
    start: int
    end: int
    key: str
    content: bool
    number: bool


_Token = tuple[str, int, int]  # a _TOKEN match: its text, start and end
_ORDINAL_DIGITS = r"\d+(st|nd|rd|th)"


def words(text: str) -> list[Word]:
    """The text's words and numbers with their keys (number words and units merged)."""
    raw = [(m.group(0), m.start(), m.end()) for m in _TOKEN.finditer(text)]
    out: list[Word] = []
    i = 0
    while i < len(raw):
        found, i = _read_word(text, raw, i)
        out.extend(found)
    return out


def _read_word(text: str, raw: Sequence[_Token], i: int) -> tuple[list[Word], int]:
    """The Words that start at token i, and the index of the token after them."""
    tok, a, b = raw[i]
    low = tok.lower()
    if re.fullmatch(_ORDINAL_DIGITS, low):
        return [Word(tok, a, b, "#" + low, True, True)], i + 1
    number = _read_number(text, raw, i)
    if number is not None:
        return number
    if low in ("%", "percent"):
        return [Word(tok, a, b, "percent", True, False)], i + 1
    if low == "per" and i + 1 < len(raw) and raw[i + 1][0].lower() == "cent":
        return [Word(text[a : raw[i + 1][2]], a, raw[i + 1][2], "percent", True, False)], i + 2
    if low in _ORDINALS:
        return [Word(tok, a, b, "#" + _ORDINALS[low], True, True)], i + 1
    return [_plain_word(tok, a, b)], i + 1


def _read_number(text: str, raw: Sequence[_Token], i: int) -> tuple[list[Word], int] | None:
    """A number at token i, in digits ("40", "1,000", "2.5%") or words ("twenty two"), with
    the unit words after it ("2 million"), and the index of the token after it; None when the
    token is not a number."""
    tok, a, b = raw[i]
    low = tok.lower()
    if low[:1].isdigit():
        value = _digits_value(low)
        if value is not None and ("%" in low or "percent" in low or "per cent" in low):
            return [
                Word(tok, a, b, _format(value), True, True),
                Word(tok, a, b, "percent", True, False),
            ], i + 1
        j = i + 1
    elif low in _SMALL:
        value, j = _number_words(raw, i)
    else:
        return None
    if value is None:
        return None
    while j < len(raw) and raw[j][0].lower() in _UNITS:
        value *= _UNITS[raw[j][0].lower()]
        j += 1
    end = raw[j - 1][2]
    return [Word(text[a:end], a, end, _format(value), True, True)], j


def _digits_value(low: str) -> float | None:
    """The value of a token's leading digits ("1,000" 1000, "2,5" 2.5); None if not a number."""
    digits = re.match(r"[\d.,]+", low).group(0)  # type: ignore[union-attr]
    clean = (
        digits.replace(",", "")
        if re.fullmatch(r"\d{1,3}(,\d{3})+(\.\d+)?", digits)
        else digits.replace(",", ".")
    )
    try:
        return float(clean)
    except ValueError:
        return None


def _number_words(raw: Sequence[_Token], i: int) -> tuple[float, int]:
    """The value of the number words from token i ("twenty two" 22), and the index after."""
    value = float(_SMALL[raw[i][0].lower()])
    j = i + 1
    while j < len(raw) and raw[j][0].lower() in _SMALL and _SMALL[raw[j][0].lower()] < 10 <= value:
        value += _SMALL[raw[j][0].lower()]
        j += 1
    return value, j


def _plain_word(tok: str, a: int, b: int) -> Word:
    """A word keyed by its Porter stem (lower-cased, without "'s"), a content word unless a
    stop word or shorter than 3 letters (UK, US, EU, UN, TV aside)."""
    low = tok.lower().replace("’", "'")
    if "'" in low:
        low = low.split("'")[0]
    content = low not in STOP_WORDS and (len(low) > 2 or low in _KEEP_SHORT)
    return Word(tok, a, b, stem(low), content, False)


def rarity(word: str, rank: WordRank | None) -> float:
    """Weight in (0, 1]: log-scaled frequency rank; numbers and unknown words weigh 1."""
    if rank is None or word[:1].isdigit() or word.startswith("#"):
        return 1.0
    r = rank(word.lower())
    if r is None:
        return 1.0
    return max(0.05, min(1.0, math.log(r + 10) / math.log(400_010)))


@dataclass
class Source:
    """A source prepared once for many summaries."""

    text: str
    sentences: list[str]
    sentence_keys: list[set[str]] = field(init=False)
    keys: set[str] = field(init=False)
    bigrams: set[tuple[str, str]] = field(init=False)
    sentence_bigrams: list[set[tuple[str, str]]] = field(init=False)
    prefixes: set[str] = field(init=False)

    def __post_init__(self) -> None:
        per = [words(s) for s in self.sentences]
        self.sentence_keys = [{w.key for w in ws} for ws in per]
        self.keys = set().union(*self.sentence_keys) if per else set()
        self.sentence_bigrams = [set(pairwise([w.key for w in ws if w.content])) for ws in per]
        self.bigrams = set().union(*self.sentence_bigrams) if per else set()
        self.prefixes = {k[:6] for k in self.keys if len(k) >= 6 and not k.startswith("#")}


def prepare(source: str) -> Source:
    return Source(source, split_sentences(source))


def supported(word: Word, keys: set[str], prefixes: set[str]) -> bool:
    if word.key in keys:
        return True
    return not word.number and len(word.text) >= 7 and word.key[:6] in prefixes


def _missing(ws: Sequence[Word], source: Source) -> list[bool]:
    """For each word: whether the whole source lacks it."""
    return [not supported(w, source.keys, source.prefixes) for w in ws]


def _surface(ws: Sequence[Word], miss: Sequence[bool]) -> tuple[str, ...]:
    """The surface forms of the missing words, once each, in order."""
    return tuple(dict.fromkeys(w.text for w, m in zip(ws, miss, strict=True) if m))


def unsupported_words(sentence: str, source: str | Source) -> tuple[str, ...]:
    """The surface forms of the sentence's content words, names and numbers that the whole
    source does not contain (stems and normalized numbers, case-insensitive): the evidence a
    reviewer checks, whichever checker found the sentence unsupported.

    >>> unsupported_words("Smith paid 40 million in Texas.", "Smith paid two dollars.")
    ('40 million', 'Texas')
    """
    src = source if isinstance(source, Source) else prepare(source)
    ws = [w for w in words(sentence) if w.content]
    return _surface(ws, _missing(ws, src))


def with_words(verdict: Verdict, source: str | Source) -> Verdict:
    """The verdict with each unsupported sentence's `words` (unsupported_words) filled in."""
    if not verdict.unsupported:
        return verdict
    src = source if isinstance(source, Source) else prepare(source)
    return replace(
        verdict,
        unsupported=tuple(
            replace(u, words=unsupported_words(u.sentence, src)) for u in verdict.unsupported
        ),
    )


@dataclass(frozen=True)
class SentenceNovelty:
    """One summary sentence against its source."""

    sentence: str
    unsupported: tuple[str, ...]  # surface forms of its unsupported content words
    n_content: int
    n_novel: int
    weight: float  # total rarity weight of its content words
    novel_weight: float  # ... of the unsupported ones
    novel_numbers: int
    novel_rare: int  # unsupported words of rarity >= 0.7 (rank > ~8,000: names, mostly)
    local_novel_weight: float  # rarity weight not found in the aligned two nearby sentences
    bigrams: int
    novel_bigrams: int
    local_novel_bigrams: int  # bigrams not in the aligned two nearby sentences
    recombined_bigrams: int  # novel bigrams of two supported words (facts recombined)
    cooc_novel: int  # adjacent content-word pairs no source sentence has together (any order)
    passage: str


def sentence_novelty(sentence: str, source: Source, rank: WordRank | None) -> SentenceNovelty:
    ws = [w for w in words(sentence) if w.content]
    weights = [rarity(w.text if not w.number else "#", rank) for w in ws]
    miss = _missing(ws, source)
    # align: the two source sentences sharing most weighted keys
    nearby_bigrams: set[tuple[str, str]] = set()
    if source.sentences:
        gain = np.array(
            [
                sum(wt for w, wt in zip(ws, weights, strict=True) if w.key in keys)
                for keys in source.sentence_keys
            ]
        )
        top = np.argsort(-gain, kind="stable")[:2]
        nearby = set().union(*(source.sentence_keys[i] for i in top))
        nearby_prefixes = {k[:6] for k in nearby if len(k) >= 6 and not k.startswith("#")}
        passage = " ".join(source.sentences[i] for i in sorted(top))
        for i in top:
            nearby_bigrams |= source.sentence_bigrams[i]
    else:
        nearby, nearby_prefixes, passage = set(), set(), ""
    local_miss = [not supported(w, nearby, nearby_prefixes) for w in ws]
    keys = [w.key for w in ws]
    bigrams = list(pairwise(keys))
    ok = list(pairwise([not m for m in miss]))
    return SentenceNovelty(
        sentence=sentence,
        unsupported=_surface(ws, miss),
        n_content=len(ws),
        n_novel=sum(miss),
        weight=float(sum(weights)),
        novel_weight=float(sum(wt for wt, m in zip(weights, miss, strict=True) if m)),
        novel_numbers=sum(1 for w, m in zip(ws, miss, strict=True) if m and w.number),
        novel_rare=sum(1 for wt, m in zip(weights, miss, strict=True) if m and wt >= 0.7),
        local_novel_weight=float(sum(wt for wt, m in zip(weights, local_miss, strict=True) if m)),
        bigrams=len(bigrams),
        novel_bigrams=sum(1 for b in bigrams if b not in source.bigrams),
        local_novel_bigrams=sum(1 for b in bigrams if b not in nearby_bigrams),
        recombined_bigrams=sum(
            1 for b, (x, y) in zip(bigrams, ok, strict=True) if x and y and b not in source.bigrams
        ),
        cooc_novel=sum(
            1 for a, b in bigrams if not any(a in k and b in k for k in source.sentence_keys)
        ),
        passage=passage,
    )


NOVELTY_FEATURES = (
    "novel_share",  # unweighted share of content words not in the source
    "novel_wshare",  # rarity-weighted share
    "novel_wsum",  # log1p of the unsupported rarity weight
    "novel_numbers",  # unsupported numbers (log1p)
    "novel_rare",  # unsupported rare words (log1p)
    "sent_max_wshare",  # worst sentence's weighted share
    "local_wshare",  # weighted share missing from each sentence's aligned nearby sentences
    "sent_max_local",  # worst sentence's local share
    "bigram_novel",  # share of content-word bigrams not in the source
    "bigram_local",  # ... not in each sentence's aligned nearby sentences
    "bigram_recombined",  # share of bigrams of supported words that the source never joins
    "sent_max_bigram",  # worst sentence's bigram novelty
    "cooc_novel",  # share of adjacent content-word pairs never in one source sentence together
    "sent_max_cooc",  # worst sentence's co-occurrence novelty
)


def novelty_features(sentences: Sequence[SentenceNovelty]) -> dict[str, float]:
    """Summary-level aggregates of its sentences' novelty (NOVELTY_FEATURES)."""
    if not sentences:
        return dict.fromkeys(NOVELTY_FEATURES, 0.0)
    n = sum(s.n_content for s in sentences)
    w = sum(s.weight for s in sentences)
    nov = sum(s.novel_weight for s in sentences)
    unweighted = sum(s.n_novel for s in sentences)
    b = sum(s.bigrams for s in sentences)

    def share(x: float, y: float) -> float:
        return x / y if y > 0 else 0.0

    return {
        "novel_share": share(unweighted, n),
        "novel_wshare": share(nov, w),
        "novel_wsum": math.log1p(nov),
        "novel_numbers": math.log1p(sum(s.novel_numbers for s in sentences)),
        "novel_rare": math.log1p(sum(s.novel_rare for s in sentences)),
        "sent_max_wshare": max(share(s.novel_weight, s.weight) for s in sentences),
        "local_wshare": share(sum(s.local_novel_weight for s in sentences), w),
        "sent_max_local": max(share(s.local_novel_weight, s.weight) for s in sentences),
        "bigram_novel": share(sum(s.novel_bigrams for s in sentences), b),
        "bigram_local": share(sum(s.local_novel_bigrams for s in sentences), b),
        "bigram_recombined": share(sum(s.recombined_bigrams for s in sentences), b),
        "sent_max_bigram": max(share(s.novel_bigrams, s.bigrams) for s in sentences),
        "cooc_novel": share(sum(s.cooc_novel for s in sentences), b),
        "sent_max_cooc": max(share(s.cooc_novel, s.bigrams) for s in sentences),
    }


@lru_cache(maxsize=1)
def glove_ranks() -> dict[str, int]:
    """Frequency rank of each word of the embedded GloVe 6B vocabulary (0 = most frequent)."""
    import pandas as pd

    from hss_gate.common.errors import ModelError
    from hss_gate.models import model_store

    model = model_store.resolve_name("glove-6b-50d")
    problems = model_store.verify(model)
    if problems:
        raise ModelError("GloVe failed verification: " + "; ".join(problems))
    _, parquet = model_store.weight_paths(model)
    words_ = pd.read_parquet(parquet)["index"].astype(str).tolist()
    return {w: i for i, w in enumerate(words_)}
