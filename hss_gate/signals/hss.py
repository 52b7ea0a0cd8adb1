"""The Hallucination Severity Score and what is measured from the perturbed summaries with it.
An HSS rise beyond gate.margin is reported, and blocks only with gate.hss_blocks."""

from hss_gate.signals.contract import Margin, Paired, Signal

SIGNAL = Signal(
    name="hss",
    paired=(
        Paired("hss", "HSS", needs_hss=True),
        Paired("hss_raw", "HSS, raw distance", needs_hss=True),
        Paired(
            "consistency_drop_mean",
            "consistency lost under meaning-preserving perturbation",
            needs_hss=True,
        ),
    ),
    margins=(
        Margin(
            "hss",
            "hss",
            "margin",
            "higher",
            "hss.rise",
            "HSS rose significantly beyond the margin {margin}: {diff}, paired bootstrap "
            "{level} CI over {n} documents",
            switch="hss_blocks",
        ),
    ),
)
