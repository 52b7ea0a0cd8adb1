"""Does the summary cover the source's lead facts: the share of the distinct content words of the
source's first three sentences (news puts its main facts there) that the summary contains.
Reported, never blocking: a summary that keeps only the first sentence covers less than one
that keeps the lead's facts, and nothing else measures that. Content words: words and numbers
(normalized as for the unsupported-entity signal) that are not English function words."""

from __future__ import annotations

from typing import Any

from hss_gate.signals.contract import Paired, Signal, WindowTest
from hss_gate.signals.tables import SIGNAL_COLUMNS
from hss_gate.text.english import ENGLISH_FUNCTION_WORDS
from hss_gate.text.mentions import word_tokens
from hss_gate.text.sentences import split_sentences

LEAD_SENTENCES = 3
COLUMN = next(c for c in SIGNAL_COLUMNS if c.name == "lead_coverage")


def content_words(text: str) -> set[str]:
    """The distinct normalized words and numbers of a text that are not function words."""
    return {w for w in word_tokens(text) if w not in ENGLISH_FUNCTION_WORDS}


def lead_coverage(summary: str, source: str) -> dict[str, Any]:
    """The share of the lead's content words found in the summary (NaN for a source without
    any: nothing to cover)."""
    lead = content_words(" ".join(split_sentences(source)[:LEAD_SENTENCES]))
    if not lead:
        return {COLUMN.name: float("nan")}
    covered = len(lead & content_words(summary)) / len(lead)
    return {COLUMN.name: round(covered, 6)}


SIGNAL = Signal(
    name="lead_coverage",
    columns=(COLUMN,),
    compute=lead_coverage,
    paired=(Paired(f"base_{COLUMN.name}", "coverage: the source lead's content words kept"),),
    window=(
        WindowTest(
            f"live_{COLUMN.name}",
            "coverage of the source's lead (lower is worse)",
            "mann_whitney",
            "less",
        ),
    ),
)
