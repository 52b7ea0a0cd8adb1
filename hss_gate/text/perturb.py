"""Meaning-preserving perturbations (METHOD.md section 1).

Only content words are swapped. A swap must be (1) a word-vector neighbour with cosine >= tau,
(2) a WordNet synonym of the word's lemma in the same part of speech and never an antonym,
(3) re-tagged in context with the same fine-grained tag, not a proper noun or entity, and a
different lemma, and (4) keep the sentence's SBERT cosine >= gamma, also when several swaps land
in one sentence. Entities, numbers, stop words and punctuation are never touched.
"""

from __future__ import annotations

import math
import zlib
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Protocol

import numpy as np

from hss_gate.settings import PerturbSettings

CONTENT_POS = {"NOUN", "VERB", "ADJ", "ADV"}
# light and reporting verbs: their "synonyms" change the frame ("said" -> "told")
PROTECTED_LEMMAS = {
    "say",
    "tell",
    "make",
    "take",
    "get",
    "give",
    "go",
    "come",
    "have",
    "do",
    "be",
    "put",
    "set",
    "keep",
    "let",
    "seem",
    "become",
    "new",
    "old",
    "first",
    "last",
    "next",
    "other",
    "same",
}
_TRIES_PER_WORD = 4


@dataclass(frozen=True)
class Token:
    """What the perturbation engine needs to know about one token."""

    i: int
    text: str
    idx: int
    pos: str
    tag: str
    lemma: str
    ent: str
    is_stop: bool
    like_num: bool
    is_punct: bool
    is_space: bool
    sent: int


class Tagger(Protocol):
    def tag_many(self, texts: Sequence[str]) -> list[list[Token]]: ...


class Neighbours(Protocol):
    def neighbours(self, word: str, n: int, min_cosine: float) -> tuple[tuple[str, float], ...]: ...


class Lexicon(Protocol):
    def synonyms(self, lemma: str, pos: str, max_senses: int = 3) -> set[str]: ...
    def is_antonym(self, a: str, b: str) -> bool: ...
    def base_forms(self, word: str, pos: str) -> list[str]: ...


Encode = Callable[[Sequence[str]], np.ndarray]


@dataclass(frozen=True)
class Candidate:
    """A checked replacement for one token."""

    replacement: str
    word_cosine: float
    sentence_similarity: float


@dataclass
class Edit:
    """One swap in the edit log."""

    position: int  # token index in the document
    char_start: int
    original: str
    replacement: str
    word_cosine: float
    sentence_similarity: float


@dataclass
class Perturbation:
    """A perturbed document with its edit log."""

    doc_id: str
    strength: str
    index: int
    text: str
    n_words: int
    band: tuple[float, float]
    edits: list[Edit] = field(default_factory=list)
    reached: bool = True
    note: str = ""

    @property
    def share(self) -> float:
        return len(self.edits) / self.n_words if self.n_words else 0.0

    @property
    def swaps(self) -> list[tuple[str, str]]:
        return [(e.original, e.replacement) for e in self.edits]

    def to_dict(self) -> dict:
        return asdict(self) | {"share": self.share}


def match_case(template: str, word: str) -> str:
    """Give `word` the capitalization pattern of `template`."""
    if len(template) > 1 and template.isupper():
        return word.upper()
    if template[:1].isupper():
        return word[:1].upper() + word[1:]
    return word


def is_word_token(token: Token) -> bool:
    return not (token.is_punct or token.is_space) and any(c.isalnum() for c in token.text)


def is_eligible(token: Token, sentence_start: bool, settings: PerturbSettings) -> bool:
    """Content word that may be swapped: never entities, numbers, stop words or proper nouns."""
    if token.pos not in CONTENT_POS or not token.text.isalpha() or len(token.text) < 3:
        return False
    if token.like_num or (settings.protect_entities and token.ent):
        return False
    if settings.protect_stopwords and token.is_stop:
        return False
    if token.text.isupper() or token.lemma in PROTECTED_LEMMAS:  # acronyms, light verbs
        return False
    return not (token.text[:1].isupper() and not sentence_start)  # capitalized mid-sentence


def _morphological_relatives(a: str, b: str) -> bool:
    """Same stem (investigation/investigating, harbor/harbour): not a synonym swap."""
    common = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        common += 1
    return common >= min(len(a), len(b)) or (common >= 5 and common >= min(len(a), len(b)) - 3)


def _sentence_spans(tokens: Sequence[Token]) -> dict[int, tuple[int, int]]:
    spans: dict[int, list[int]] = {}
    for t in tokens:
        span = spans.setdefault(t.sent, [t.idx, t.idx + len(t.text)])
        span[0] = min(span[0], t.idx)
        span[1] = max(span[1], t.idx + len(t.text))
    return {s: (a, b) for s, (a, b) in spans.items()}


_Proposal = tuple[Token, str, float, str]  # token, replacement, cosine, swapped sentence


def _word_proposals(
    text: str,
    token: Token,
    span: tuple[int, int],
    settings: PerturbSettings,
    vectors: Neighbours,
    lexicon: Lexicon,
) -> list[_Proposal]:
    """Up to _TRIES_PER_WORD vector neighbours of one token that pass the WordNet checks."""
    lower = token.text.lower()
    synonyms = lexicon.synonyms(token.lemma, token.pos, settings.max_senses)
    if not synonyms:
        return []
    proposals: list[_Proposal] = []
    for word, cosine in vectors.neighbours(lower, settings.neighbours, settings.tau):
        bases = lexicon.base_forms(word, token.pos)
        if token.lemma in bases or _morphological_relatives(lower, word):
            continue
        if not any(b in synonyms for b in bases):
            continue
        if any(lexicon.is_antonym(token.lemma, b) for b in bases):
            continue
        start, end = span
        replacement = match_case(token.text, word)
        offset = token.idx - start
        sentence = text[start:end]
        swapped = sentence[:offset] + replacement + sentence[offset + len(token.text) :]
        proposals.append((token, replacement, cosine, swapped))
        if len(proposals) >= _TRIES_PER_WORD:
            break
    return proposals


def _retag_checked(
    proposals: list[_Proposal], spans: dict[int, tuple[int, int]], tagger: Tagger
) -> list[_Proposal]:
    """The proposals whose replacement keeps its fine-grained tag in context, is no proper
    noun or entity, and has a different lemma."""
    retagged = tagger.tag_many([p[3] for p in proposals])
    kept: list[_Proposal] = []
    for (token, replacement, cosine, swapped), tags in zip(proposals, retagged, strict=True):
        start = spans[token.sent][0]
        hit = [t for t in tags if t.idx == token.idx - start]
        if not hit or hit[0].text != replacement:
            continue
        new = hit[0]
        if new.tag != token.tag or new.pos == "PROPN" or new.ent or new.lemma == token.lemma:
            continue
        kept.append((token, replacement, cosine, swapped))
    return kept


def _sentence_similarities(
    text: str,
    kept: list[_Proposal],
    spans: dict[int, tuple[int, int]],
    settings: PerturbSettings,
    encode: Encode,
) -> list[float]:
    """SBERT cosine of each swapped sentence with its original (1.0 without the filter)."""
    if not settings.semantic_filter:
        return [1.0] * len(kept)
    originals = sorted({t.sent for t, *_ in kept})
    base = encode([text[spans[s][0] : spans[s][1]] for s in originals])
    base_of = dict(zip(originals, base, strict=True))
    swapped_vecs = encode([k[3] for k in kept])
    return [float(np.dot(base_of[k[0].sent], v)) for k, v in zip(kept, swapped_vecs, strict=True)]


def find_candidates(
    text: str,
    tokens: Sequence[Token],
    settings: PerturbSettings,
    *,
    vectors: Neighbours,
    lexicon: Lexicon,
    tagger: Tagger,
    encode: Encode,
) -> dict[int, list[Candidate]]:
    """Checked replacements per token index, best word cosine first."""
    spans = _sentence_spans(tokens)
    first_of_sentence = {}
    for t in tokens:
        first_of_sentence.setdefault(t.sent, t.i)
    proposals: list[_Proposal] = []
    for token in tokens:
        if is_eligible(token, first_of_sentence[token.sent] == token.i, settings):
            span = spans[token.sent]
            proposals += _word_proposals(text, token, span, settings, vectors, lexicon)
    if not proposals:
        return {}
    kept = _retag_checked(proposals, spans, tagger)
    if not kept:
        return {}
    sims = _sentence_similarities(text, kept, spans, settings, encode)
    out: dict[int, list[Candidate]] = defaultdict(list)
    for (token, replacement, cosine, _), sim in zip(kept, sims, strict=True):
        if settings.semantic_filter and sim < settings.gamma:
            continue
        out[token.i].append(Candidate(replacement, round(cosine, 6), round(sim, 6)))
    for cands in out.values():
        cands.sort(key=lambda c: (-c.word_cosine, c.replacement))
    return dict(out)


def _seed(seed: int, doc_id: str, strength: str, index: int) -> np.random.Generator:
    return np.random.default_rng(
        [seed, zlib.crc32(doc_id.encode()), zlib.crc32(strength.encode()), index]
    )


def apply_edits(text: str, edits: Sequence[Edit]) -> str:
    """Rebuild the text with every edit applied (char offsets refer to the original)."""
    out = text
    for edit in sorted(edits, key=lambda e: e.char_start, reverse=True):
        out = (
            out[: edit.char_start] + edit.replacement + out[edit.char_start + len(edit.original) :]
        )
    return out


def _group_similarity(
    text: str, span: tuple[int, int], edits: Sequence[Edit], encode: Encode
) -> float:
    """SBERT cosine of a sentence with all of `edits` applied to it and the original."""
    start, end = span
    sentence = text[start:end]
    shifted = [replace(e, char_start=e.char_start - start) for e in edits]
    vecs = encode([sentence, apply_edits(sentence, shifted)])
    return float(np.dot(vecs[0], vecs[1]))


def _choose_edits(
    text: str,
    tokens: Sequence[Token],
    candidates: dict[int, list[Candidate]],
    order: Sequence[int],
    target: int,
    settings: PerturbSettings,
    encode: Encode,
) -> list[Edit]:
    """Up to `target` edits, each token's best candidate taken in `order`; a swap that would
    bring its sentence (with the swaps already in it) below gamma is skipped."""
    by_index = {t.i: t for t in tokens}
    spans = _sentence_spans(tokens)
    chosen: dict[int, list[Edit]] = defaultdict(list)  # sentence -> edits
    count = 0
    for position in order:
        if count >= target:
            break
        token = by_index[position]
        cand = candidates[position][0]
        edit = Edit(
            position,
            token.idx,
            token.text,
            cand.replacement,
            cand.word_cosine,
            cand.sentence_similarity,
        )
        group = chosen[token.sent]
        if group and settings.semantic_filter:
            sim = _group_similarity(text, spans[token.sent], [*group, edit], encode)
            if sim < settings.gamma:
                continue
            for e in [*group, edit]:
                e.sentence_similarity = round(sim, 6)
        group.append(edit)
        count += 1
    return sorted((e for group in chosen.values() for e in group), key=lambda e: e.char_start)


def perturb(
    doc_id: str,
    text: str,
    tokens: Sequence[Token],
    candidates: dict[int, list[Candidate]],
    strength: str,
    index: int,
    settings: PerturbSettings,
    *,
    encode: Encode,
) -> Perturbation:
    """One perturbation in the strength band; says so when the band cannot be reached."""
    low, high = settings.strengths[strength]
    n_words = sum(is_word_token(t) for t in tokens)
    need_min = max(1, math.ceil(low * n_words))
    need_max = max(need_min, math.floor(high * n_words))
    rng = _seed(settings.seed, doc_id, strength, index)
    target = int(rng.integers(need_min, need_max + 1))
    pool = sorted(candidates)
    order = [pool[i] for i in rng.permutation(len(pool))]
    edits = _choose_edits(text, tokens, candidates, order, target, settings, encode)
    count = len(edits)
    result = Perturbation(
        doc_id, strength, index, apply_edits(text, edits), n_words, (low, high), edits
    )
    if count < need_min:
        result.reached = False
        result.note = (
            f"only {count} eligible swaps (band needs {need_min}-{need_max} of {n_words} words)"
        )
    return result
