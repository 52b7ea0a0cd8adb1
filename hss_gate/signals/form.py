"""The form of a summary: cut mid-sentence, and its length (the form flags' checks are
hss_gate.decision.checks.flag_checks). Reported; form checks block with gate.form_blocks."""

from hss_gate.signals.contract import Paired, Signal, WindowTest

SIGNAL = Signal(
    name="form",
    paired=(
        Paired("base_truncated", "summary ends mid-sentence"),
        Paired("base_n_words", "summary length (words)"),
    ),
    window=(
        WindowTest("live_n_words", "length (words)", "mann_whitney", "two-sided"),
        WindowTest("live_truncated", "summaries cut mid-sentence", "fisher", "greater"),
        WindowTest("live_near_empty", "empty or near-empty summaries", "fisher", "greater"),
        WindowTest(
            "live_copies_source", "summaries about as long as their source", "fisher", "greater"
        ),
        WindowTest("live_overlong", "summaries over the length limit", "fisher", "greater"),
        WindowTest("live_other_language", "summaries in another language", "fisher", "greater"),
    ),
)
