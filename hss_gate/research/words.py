"""The words of a text as attribution features (METHOD.md §5): whitespace words, the word an
edit falls in, and a sentence-aware balanced binary hierarchy of them for shap's Partition
explainer."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import numpy as np

from hss_gate.text.masked_text import word_spans

_SENTENCE_END = re.compile(r"[.!?][\"'”’)\]]*$")


def split_words(text: str) -> list[str]:
    """The whitespace words (the attribution features); equals text.split()."""
    return [text[a:b] for a, b in word_spans(text)]


def word_index(spans: Sequence[tuple[int, int]], char_pos: int) -> int:
    """Index of the word containing character char_pos (-1 if it falls between words)."""
    for i, (start, end) in enumerate(spans):
        if start <= char_pos < end:
            return i
    return -1


def edit_positions(text: str, edits: Sequence[Any]) -> list[int]:
    """Word positions of perturbation edits (hss_gate.text.perturb.Edit, char_start on `text`)."""
    spans = word_spans(text)
    return [word_index(spans, int(e.char_start)) for e in edits]


def sentence_groups(words: Sequence[str]) -> list[list[int]]:
    """Consecutive word indices per sentence (a word ending in . ! ? closes one)."""
    groups: list[list[int]] = [[]]
    for i, w in enumerate(words):
        groups[-1].append(i)
        if _SENTENCE_END.search(w):
            groups.append([])
    return [g for g in groups if g]


def word_hierarchy(words: Sequence[str]) -> np.ndarray:
    """A scipy-style linkage over the words: balanced binary splits inside each sentence,
    then balanced over sentences. Only contiguous spans are ever grouped.

    Rows are [left, right, height, size] with leaves 0..M-1 and merged nodes M, M+1, ...
    """
    m = len(words)
    rows: list[list[float]] = []

    def build(items: list[int], heights: dict[int, float]) -> int:
        if len(items) == 1:
            return items[0]
        mid = (len(items) + 1) // 2
        left, right = build(items[:mid], heights), build(items[mid:], heights)
        size = _size(left, m, rows) + _size(right, m, rows)
        height = max(heights.get(left, 0.0), heights.get(right, 0.0)) + 1.0
        rows.append([left, right, height, size])
        node = m + len(rows) - 1
        heights[node] = height
        return node

    heights: dict[int, float] = {}
    sentence_nodes = [build(g, heights) for g in sentence_groups(words)]
    if len(sentence_nodes) > 1:
        build(sentence_nodes, heights)
    out = np.array(rows, dtype=np.float64).reshape(-1, 4)
    if len(out):
        out[:, 2] /= out[:, 2].max()
    return out


def _size(node: int, m: int, rows: list[list[float]]) -> float:
    return 1.0 if node < m else rows[node - m][3]
