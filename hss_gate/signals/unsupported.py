"""Entities and numbers of a summary that its source does not support. Blocks when their share
rises beyond gate.unsupported_margin."""

from hss_gate.signals.contract import Margin, Paired, RelativeBound, Signal, WindowTest

SIGNAL = Signal(
    name="unsupported_entities",
    paired=(
        Paired(
            "base_unsupported_share",
            "entities/numbers unsupported by the source",
            ci="student-t",
        ),
    ),
    margins=(
        Margin(
            "unsupported_entities",
            "base_unsupported_share",
            "unsupported_margin",
            "higher",
            "unsupported_entities",
            "the share of summary entities/numbers unsupported by the source rose beyond the "
            "margin {margin}: {diff}",
        ),
    ),
    bounds=(
        RelativeBound(
            "max_unsupported_share",
            "base_unsupported_share",
            "unsupported_margin",
            "unsupported entities/numbers",
            3,
            check="mean_unsupported_share",
            code="facts.mean_unsupported_share",
            text="mean share of summary entities/numbers not in the source",
        ),
    ),
    window=(
        WindowTest(
            "live_unsupported_share",
            "share of entities/numbers not in the source",
            "mann_whitney",
            "greater",
            drift_only=True,
        ),
    ),
)
