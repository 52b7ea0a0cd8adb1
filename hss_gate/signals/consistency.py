"""The checker's factual consistency of a summary with its source (the trained `entail` checker
by default: consistency.model). Two statistics of the summary's sentence scores: the mean (the
paired statistic that blocks when it falls beyond gate.consistency_margin: on FRANK's five
systems it has two thirds of the least supported sentence's noise and blocks 62.5% of the
pairs humans find worse against 25%, docs/FACTUALITY.md) and consistency.aggregate (the least
supported sentence by default: the flag below the checker's threshold, whose share is bounded,
and the monitor's windows)."""

from hss_gate.signals.contract import Margin, Paired, RelativeBound, Signal, WindowTest

RELATIVE_SHARE_HEADROOM = 0.10
"""A candidate's share of summaries the checker finds unsupported may exceed production's own
share on the same documents by this much before the facts check fails (the headroom the
reference calibration gave: bound 0.66 over production's 0.56 under the invented-sbert
checker, 0.50 over 0.40 under sbert; kept for entail: 0.33 over 0.23)."""

SIGNAL = Signal(
    name="consistency",
    paired=(
        Paired(
            "base_mean_support",
            "mean support of the summary's sentences (checker, 0-1)",
            ci="student-t",
        ),
        Paired("base_consistency", "factual consistency with the source (checker, 0-1)"),
        Paired("base_low_consistency", "summaries the checker finds unsupported", ci="student-t"),
    ),
    margins=(
        Margin(
            "consistency",
            "base_mean_support",
            "consistency_margin",
            "lower",
            "consistency",
            "the summaries' factual consistency (mean sentence support) fell beyond the margin "
            "{margin}: {diff}, "
            "paired Student-t {level} CI over {n} documents",
            scale="consistency_margin_scale",
            floor="consistency_margin_floor",
        ),
    ),
    bounds=(
        RelativeBound(
            "max_low_consistency_share",
            "base_low_consistency",
            RELATIVE_SHARE_HEADROOM,
            "unsupported by the checker",
            2,
            check="low_consistency_share",
            code="facts.low_consistency_share",
            text="share of summaries the consistency checker finds unsupported",
        ),
    ),
    window=(
        WindowTest(
            "live_consistency", "checker consistency (lower is worse)", "mann_whitney", "less"
        ),
    ),
)
