"""How much a summary rewrites its source (novel n-gram share, 1 - extractiveness): reported,
and read beside HSS (hss_gate.decision.rule.reading_notes)."""

from hss_gate.signals.contract import Paired, Signal, WindowTest

SIGNAL = Signal(
    name="rewriting",
    paired=(
        Paired("base_novel_ngram_share", "rewriting: novel n-gram share (1 - extractiveness)"),
    ),
    window=(
        WindowTest(
            "live_novel_ngram_share",
            "rewriting (share of novel n-grams)",
            "mann_whitney",
            "two-sided",
        ),
    ),
)
