"""Text features of a (premise, claim) pair: tokens, names, numbers, overlap and the
FactCC-style feature vector (pure functions; no model, no file)."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import pairwise

import numpy as np

from hss_gate.text.mentions import normalize_token
from hss_gate.text.sentences import split_sentences

_TOKEN = re.compile(r"[A-Za-z]+|\d+(?:[.,]\d+)*")

STOP_WORDS = frozenset(
    """
    a about above after again against all also am an and any are as at be because been before
    being below between both but by can could did do does doing down during each few for from
    further had has have having he her here hers herself him himself his how i if in into is it
    its itself just me more most my myself no nor not now of off on once only or other our ours
    ourselves out over own same she should so some such than that the their theirs them
    themselves then there these they this those through to too under until up very was we were
    what when where which while who whom why will with would you your yours yourself yourselves
    s t d ll m re ve y n't nt don didn doesn isn wasn weren won wouldn couldn shouldn hasn haven
    hadn aren ain said says say one us may might must shall would also mr mrs ms dr lrb rrb lsb
    rsb cnn
    """.split()  # noqa: SIM905
)

NEGATIONS = frozenset({"not", "no", "never", "nobody", "nothing", "none", "neither", "nor", "t"})

_MALE = frozenset({"he", "him", "his", "himself"})

_FEMALE = frozenset({"she", "her", "hers", "herself"})


def tokens(text: str) -> list[str]:
    """Lower-cased word and number tokens ("n't" and "cannot" become "not")."""
    text = re.sub(
        r"\b(ca|wo)n't\b",
        lambda m: "can not" if m.group(1).lower() == "ca" else "will not",
        text,
        flags=re.IGNORECASE,
    )
    text = re.sub(r"n't\b", " not", text, flags=re.IGNORECASE)
    text = re.sub(r"\bcannot\b", "can not", text, flags=re.IGNORECASE)
    return [normalize_token(t) for t in _TOKEN.findall(text)]


def content_tokens(text: str) -> list[str]:
    """Tokens that carry content: no stop words."""
    return [t for t in tokens(text) if t not in STOP_WORDS]


def is_number(token: str) -> bool:
    return token[:1].isdigit()


def name_tokens(text: str) -> set[str]:
    """Lower-cased words the text writes capitalized inside a sentence (names, mostly)."""
    names: set[str] = set()
    for sentence in split_sentences(text):
        words = re.findall(r"[A-Za-z][A-Za-z'-]*", sentence)
        for word in words[1:]:
            if word[0].isupper() and word.lower() not in STOP_WORDS:
                names.update(t for t in tokens(word) if t not in STOP_WORDS)
    return names


SBERT_MAX_WORDS = 190
"""all-MiniLM-L6-v2 reads 256 word pieces of a sentence, about 190 English words: a longer
source unit (often unsplit text: no punctuation, or one long list) is cut for the checker."""


def long_units(text: str, max_words: int = SBERT_MAX_WORDS) -> int:
    """How many of the text's units the checker's sentence encoder would cut."""
    return sum(len(unit.split()) > max_words for unit in split_sentences(text))


def truecase(summary: str, document: str) -> str:
    """Capitalize the summary's lower-case words that the document mostly writes capitalized
    (lower-cased benchmark summaries hide names from a case-sensitive NER)."""
    forms: Counter[str] = Counter()
    for sentence in split_sentences(document):  # sentence-initial capitals say nothing
        forms.update(re.findall(r"[A-Za-z]+", sentence)[1:])

    def fix(match: re.Match[str]) -> str:
        word = match.group(0)
        if word != word.lower():
            return word
        cap = word.capitalize()
        return cap if forms[cap] > forms[word] else word

    return re.sub(r"[A-Za-z]+", fix, summary)


@dataclass(frozen=True)
class Overlap:
    """Content-word overlap of a summary with its document (clipped counts, like ROUGE-1)."""

    precision: float
    recall: float
    f1: float


def overlap_scores(document: str, summary: str) -> Overlap:
    """Precision = share of the summary's content words found in the document; recall = share of
    the document's content words the summary uses; F1 their harmonic mean (0 when empty)."""
    doc, summ = Counter(content_tokens(document)), Counter(content_tokens(summary))
    common = sum((doc & summ).values())
    precision = common / sum(summ.values()) if summ else 0.0
    recall = common / sum(doc.values()) if doc else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall > 0 else 0.0
    return Overlap(precision, recall, f1)


@dataclass
class Premise:
    """A premise (a document or one sentence) prepared once for many claims. ``names`` are the
    lower-cased name tokens (default: those the premise writes capitalized inside a sentence);
    pass the whole document's when the premise is one of its sentences."""

    sentences: list[str]
    vectors: np.ndarray  # (n_sentences, dim), L2-normalized
    names: set[str] | None = None
    token_sets: list[set[str]] = field(init=False)
    bigram_sets: list[set[tuple[str, str]]] = field(init=False)
    negations: list[int] = field(init=False)
    genders: list[set[str]] = field(init=False)
    all_tokens: set[str] = field(init=False)

    def __post_init__(self) -> None:
        toks = [tokens(s) for s in self.sentences]
        self.token_sets = [set(t) for t in toks]
        self.bigram_sets = [set(pairwise(t)) for t in toks]
        self.negations = [sum(w in NEGATIONS for w in t) for t in toks]
        self.genders = [_genders(t) for t in toks]
        self.all_tokens = set().union(*self.token_sets) if toks else set()
        if self.names is None:
            self.names = name_tokens(" ".join(self.sentences))


FEATURES = (
    "cos_max",
    "cos_second",
    "precision_local",
    "precision_global",
    "bigram_local",
    "salient_local",
    "salient_missing",
    "number_missing",
    "negation_mismatch",
    "pronoun_mismatch",
)


def _genders(toks: Sequence[str]) -> set[str]:
    out = set()
    if any(t in _MALE for t in toks):
        out.add("m")
    if any(t in _FEMALE for t in toks):
        out.add("f")
    return out


def claim_features(claim: str, vector: np.ndarray, premise: Premise, top: int = 2) -> np.ndarray:
    """FEATURES of one claim sentence against a premise: similarity to the best-aligned premise
    sentences (SBERT cosine), lexical support there and in the whole premise, support of the
    claim's numbers and names, and negation / pronoun disagreement with the best sentence."""
    if not premise.sentences:
        return np.array([0, 0, 0, 0, 0, 0, 1, 1, 0, 0], dtype=float)
    cos = premise.vectors @ np.asarray(vector, dtype=float)
    order = np.argsort(-cos, kind="stable")[:top]
    nearby: set[str] = set().union(*(premise.token_sets[i] for i in order))
    nearby_bigrams: set[tuple[str, str]] = set().union(*(premise.bigram_sets[i] for i in order))
    toks = tokens(claim)
    content = [t for t in toks if t not in STOP_WORDS]
    bigrams = list(pairwise(toks))
    names = (premise.names or set()) | _claim_names(claim)
    salient = [t for t in content if is_number(t) or t in names]

    def share(items: Sequence[object], pool: set, empty: float = 1.0) -> float:
        return sum(i in pool for i in items) / len(items) if items else empty

    numbers = [t for t in content if is_number(t)]
    claim_neg = sum(t in NEGATIONS for t in toks) % 2
    best = int(order[0])
    best_genders = premise.genders[best]
    claim_genders = _genders(toks)
    return np.array(
        [
            float(cos[order[0]]),
            float(cos[order[1]]) if len(order) > 1 else float(cos[order[0]]),
            share(content, nearby),
            share(content, premise.all_tokens),
            share(bigrams, nearby_bigrams),
            share(salient, nearby),
            1.0 - share(salient, premise.all_tokens),
            float(any(t not in premise.all_tokens for t in numbers)),
            float(claim_neg != premise.negations[best] % 2),
            float(bool(claim_genders and best_genders) and not claim_genders & best_genders),
        ]
    )


def _claim_names(claim: str) -> set[str]:
    return name_tokens(claim) if claim != claim.lower() else set()
