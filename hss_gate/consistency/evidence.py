"""A claim's evidence: the source sentences that could support it, as one premise.

The source sentences most similar to the claim (SBERT cosine) and their neighbours, in document
order, joined into one premise that fits the encoder's context beside the claim. Pure: the
similarities and the token counter come from the caller.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

DEFAULT_TOP = 3
DEFAULT_NEIGHBOURS = 1


@dataclass(frozen=True)
class Evidence:
    """The source sentences chosen for one claim (indices in document order) and their text."""

    indices: tuple[int, ...]
    text: str


def choose_evidence(
    sentences: Sequence[str],
    similarity: np.ndarray,
    budget: int,
    count: Callable[[str], int],
    top: int = DEFAULT_TOP,
    neighbours: int = DEFAULT_NEIGHBOURS,
) -> Evidence:
    """The `top` sentences most similar to the claim and `neighbours` sentences on each side of
    each, best-ranked first until `budget` tokens (by `count`) are used; at least the best
    sentence, whatever its length. Returned in document order."""
    if not sentences:
        return Evidence((), "")
    order = [int(j) for j in np.argsort(-np.asarray(similarity), kind="stable")]
    wanted: list[int] = []
    for j in order[:top]:  # the top sentences first, then their neighbours, nearest first
        wanted.append(j)
    for distance in range(1, neighbours + 1):
        for j in order[:top]:
            wanted += [k for k in (j - distance, j + distance) if 0 <= k < len(sentences)]
    kept: list[int] = []
    used = 0
    for k in dict.fromkeys(wanted):
        n = count(sentences[k])
        if kept and used + n > budget:
            continue
        kept.append(k)
        used += n
    chosen = tuple(sorted(kept))
    return Evidence(chosen, " ".join(sentences[k] for k in chosen))


def without(evidence: Evidence, sentences: Sequence[str], drop: int) -> Evidence:
    """The evidence without sentence `drop` (the claim's support removed)."""
    kept = tuple(k for k in evidence.indices if k != drop)
    return Evidence(kept, " ".join(sentences[k] for k in kept))
