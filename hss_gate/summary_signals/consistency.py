"""The checker's factual consistency of a summary with its source (the trained `entail` checker
by default: consistency.model): the mean score and the share of summaries below the checker's
threshold. Blocks when consistency falls beyond gate.consistency_margin."""

from hss_gate.summary_signals.contract import Margin, Paired, Signal

SIGNAL = Signal(
    name="consistency",
    paired=(
        Paired(
            "base_consistency",
            "factual consistency with the source (checker, 0-1)",
            ci="student-t",
        ),
        Paired("base_low_consistency", "summaries the checker finds unsupported"),
    ),
    margins=(
        Margin(
            "consistency",
            "base_consistency",
            "consistency_margin",
            "lower",
            "consistency",
            "the summaries' factual consistency fell beyond the margin {margin}: {diff}, "
            "paired Student-t {level} CI over {n} documents",
        ),
    ),
)
