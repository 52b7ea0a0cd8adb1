"""The form of a summary: cut mid-sentence, and its length (the form flags' checks are
hss_gate.gate_checks.flag_checks). Reported; form checks block with gate.form_blocks."""

from hss_gate.summary_signals.contract import Paired, Signal

SIGNAL = Signal(
    name="form",
    paired=(
        Paired("base_truncated", "summary ends mid-sentence"),
        Paired("base_n_words", "summary length (words)"),
    ),
)
