"""A summary's signals against its source, computed once for the gate's score tables and the
monitor's served table (pure): what the checker's verdict says, the unsupported mentions, the
rewriting, the form and whether it summarizes, and the registered signals' own columns."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from hss_gate.consistency.verdict import Verdict
from hss_gate.signals import computed_values, row_builders, tables
from hss_gate.signals.summary_flags import LengthPolicy, summary_flags
from hss_gate.text.mentions import novel_ngram_share, unsupported_mentions, unsupported_share
from hss_gate.text.sentences import ends_mid_sentence, split_sentences


def summary_values(
    summary: str,
    source: str,
    verdict: Verdict,
    mentions: Sequence[str],
    *,
    ngram: int,
    policy: LengthPolicy,
    threshold: float,
) -> dict[str, Any]:
    """Every `SIGNAL_COLUMNS` value of one summary (no prefix); `mentions`: its entity and
    number mentions, `threshold`: the checker's consistency below which it is flagged."""
    return row_builders.signal_values(
        unsupported_share=unsupported_share(mentions, source),
        unsupported="; ".join(unsupported_mentions(mentions, source)),
        novel_ngram_share=novel_ngram_share(summary, source, ngram),
        truncated=ends_mid_sentence(summary),
        empty=not summary.strip(),
        n_sentences=len(split_sentences(summary)),
        n_words=len(summary.split()),
        **summary_flags(summary, source, policy),
        consistency=verdict.consistency,
        mean_support=verdict.support,
        low_consistency=verdict.consistency < threshold,
        unsupported_sentences=tables.unsupported_cell(verdict.unsupported),
        **computed_values(summary, source),
    )
