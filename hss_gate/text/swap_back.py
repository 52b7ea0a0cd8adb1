"""Perturbation-aware comparison: map swapped words in a summary back to the originals."""

from __future__ import annotations

import re
from collections.abc import Iterable


def _match_case(template: str, word: str) -> str:
    if template.isupper() and len(template) > 1:
        return word.upper()
    if template[:1].isupper():
        return word[:1].upper() + word[1:]
    return word


def swap_back(summary: str, swaps: Iterable[tuple[str, str]], source: str) -> str:
    """Replace each replacement word in `summary` with its original (case kept).

    `swaps` holds (original, replacement) pairs from the edit log. A replacement that the
    original source itself also uses is ambiguous and left alone.
    """
    source_words = {w.lower() for w in re.findall(r"[A-Za-z]+", source)}
    mapping: dict[str, str] = {}
    for original, replacement in swaps:
        key = replacement.lower()
        if key != original.lower() and key not in source_words:
            mapping.setdefault(key, original.lower())
    if not mapping:
        return summary
    pattern = re.compile(
        r"\b(" + "|".join(re.escape(k) for k in sorted(mapping, key=len, reverse=True)) + r")\b",
        re.IGNORECASE,
    )
    return pattern.sub(lambda m: _match_case(m.group(0), mapping[m.group(0).lower()]), summary)
