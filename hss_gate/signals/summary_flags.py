"""Does a summarizer summarize? Per-summary flags for output that is not a summary (pure).

A candidate whose summaries are empty, copy the whole source, run far past the length the
settings ask for, or are written in another language than their source must not pass the gate
however stable or "consistent" its output looks. Copying sentences (as lead-3 does) is
summarizing and is not flagged: only a summary about as long as its source is.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from hss_gate.text.english import looks_non_english

FLAGS = ("near_empty", "copies_source", "overlong", "other_language")
FLAG_REASONS = {
    "near_empty": "empty or near-empty summaries",
    "copies_source": "summaries about as long as their source (a copy, not a summary)",
    "overlong": "summaries far longer than the length the settings ask for",
    "other_language": "summaries in another language than their source",
}


@dataclass(frozen=True)
class LengthPolicy:
    """What counts as a summary's length gone wrong, relative to the words asked for."""

    target_words: int
    min_share: float = 0.2
    max_ratio: float = 3.0
    copy_ratio: float = 0.8

    @property
    def min_words(self) -> int:
        """Fewer words than this is near-empty (at least 3)."""
        return max(3, round(self.min_share * self.target_words))

    @property
    def max_words(self) -> int:
        """More words than this is far outside the length asked for."""
        return round(self.max_ratio * self.target_words)


def summary_flags(summary: str, source: str, policy: LengthPolicy) -> dict[str, Any]:
    """The flags of one summary of `source` (the text the summarizer was given)."""
    words = len(summary.split())
    source_words = max(len(source.split()), 1)
    ratio = words / source_words
    return {
        "near_empty": words < policy.min_words,
        # a short source cannot be shortened much: only a long one's copy is flagged
        "copies_source": ratio >= policy.copy_ratio
        and words >= policy.min_words
        and source_words > 2 * policy.target_words,
        "overlong": words > policy.max_words,
        "other_language": words >= policy.min_words
        and looks_non_english(summary, min_words=min(20, policy.min_words))
        and not looks_non_english(source),
        "length_ratio": round(ratio, 6),
    }


def flag_shares(rows: Sequence[Mapping[str, Any]], prefix: str = "base_") -> dict[str, float]:
    """The share of rows carrying each flag (columns `{prefix}{flag}`)."""
    n = max(len(rows), 1)
    return {flag: sum(bool(r.get(f"{prefix}{flag}")) for r in rows) / n for flag in FLAGS}
