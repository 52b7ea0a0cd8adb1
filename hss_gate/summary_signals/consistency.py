"""The checker's factual consistency of a summary with its source (the trained `entail` checker
by default: consistency.model): the mean score and the share of summaries below the checker's
threshold. Blocks when consistency falls beyond gate.consistency_margin."""

from hss_gate.summary_signals.contract import Margin, Paired, RelativeBound, Signal, WindowTest

RELATIVE_SHARE_HEADROOM = 0.10
"""A candidate's share of summaries the checker finds unsupported may exceed production's own
share on the same documents by this much before the facts check fails (the headroom the
reference calibration gave: bound 0.66 over production's 0.56 under the invented-sbert
checker, 0.50 over 0.40 under sbert; kept for entail: 0.33 over 0.23)."""

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
    bounds=(
        RelativeBound(
            "max_low_consistency_share",
            "base_low_consistency",
            RELATIVE_SHARE_HEADROOM,
            "unsupported by the checker",
            2,
        ),
    ),
    window=(
        WindowTest(
            "live_consistency", "checker consistency (lower is worse)", "mann_whitney", "less"
        ),
    ),
)
