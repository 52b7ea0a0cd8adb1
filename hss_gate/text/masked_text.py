"""A document with some of its words or sentences removed: the text an attribution's model
evaluates (a mask keeps or removes each feature). Pure.

A removed word takes the whitespace before it along, so the text that stays keeps its own
separators and the document with every feature kept is the document exactly: f(all kept) is
f(document). Sentences are hss_gate.text.sentences.split_sentences's, located in the exact text as
runs of whitespace words (`sentence_features`); the word level of the research wing
(hss_gate.research.attribution) masks the same words.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from hss_gate.text.sentences import split_sentences


def word_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) character spans of the whitespace-separated words."""
    return [m.span() for m in re.finditer(r"\S+", text)]


def render(
    text: str,
    spans: Sequence[tuple[int, int]],
    keep: np.ndarray,
    mask_token: str | None = None,
) -> str:
    """The document with the words where keep is False removed (or replaced by mask_token).

    Words past len(keep) are always kept. A removed word takes the whitespace before it along,
    so the remaining text keeps its own separators.
    """
    keep = np.asarray(keep, dtype=bool)
    if keep.all() or not spans:
        return text
    out = [text[: spans[0][0]]]  # leading whitespace
    emitted = False
    for i, (start, end) in enumerate(spans):
        kept = bool(keep[i]) if i < len(keep) else True
        if not kept and mask_token is None:
            continue
        gap = text[spans[i - 1][1] : start] if emitted else ""
        out.append(gap + (text[start:end] if kept else mask_token or ""))
        emitted = True
    out.append(text[spans[-1][1] :])  # trailing whitespace
    return "".join(out)


@dataclass(frozen=True)
class SentenceFeatures:
    """The sentences of one text as slices of it, and how a sentence mask renders."""

    text: str
    sentences: list[str]  # exact source text of each sentence
    word_counts: list[int]
    n: int  # explained sentences: those starting within the words the summarizer sees

    def render(self, keep: np.ndarray) -> str:
        """The text with the sentences where keep is False removed (sentences past n kept)."""
        keep = np.asarray(keep, dtype=bool).ravel()
        counts = np.asarray(self.word_counts[: len(keep)], dtype=int)
        return render(self.text, word_spans(self.text), np.repeat(keep, counts))


def sentence_features(
    text: str, max_words: int | None = None, word_counts: Sequence[int] | None = None
) -> SentenceFeatures:
    """Split `text` into sentences (split_sentences), keeping their exact text.

    `word_counts` imposes another text's sentence split by word counts: a perturbation (one-for-
    one word swaps) then has the same sentences as its original even where a swap would move a
    boundary, so sentence i of both is the same slot.
    """
    spans = word_spans(text)
    if word_counts is None:
        word_counts = [len(s.split()) for s in split_sentences(text)]
    counts = [int(c) for c in word_counts if c > 0]
    if sum(counts) != len(spans):
        raise ValueError(f"sentences cover {sum(counts)} words but the text has {len(spans)}")
    sentences, start = [], 0
    for c in counts:
        sentences.append(text[spans[start][0] : spans[start + c - 1][1]])
        start += c
    limit = len(spans) if max_words is None else max_words
    starts = np.cumsum([0, *counts])[:-1]
    n = int(np.sum(starts < limit))
    return SentenceFeatures(text, sentences, counts, n)
