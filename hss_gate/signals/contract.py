"""What one signal of a summary declares (pure): its columns, how it is computed from a summary
and its source, its paired comparison with production (and the margin that can block), its
monitor window test and its report label. The registry (`hss_gate.signals`) lists the
signals in order; the paired comparison, the decision rule, the monitor and the reports iterate
over it.

Modelled on huggingface/evaluate (one contract per metric: compute + features), evidently (a
metric carries what its renderer shows) and great_expectations (an expectation states how it
is rendered)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from hss_gate.signals.tables import Column


@dataclass(frozen=True)
class Paired:
    """A documents column compared between candidate and production, paired by document:
    `ci` "student-t" for the columns that decide (calibrated at small n), else a percentile
    bootstrap; `needs_hss`: measured from the perturbed summaries (skipped when not measured)."""

    column: str
    label: str
    ci: Literal["student-t", "bootstrap"] = "bootstrap"
    needs_hss: bool = False


@dataclass(frozen=True)
class Margin:
    """A paired comparison that can block: the signal it decides (`decided_by`), the
    documents column, the GateSettings field holding its margin, the direction that is worse,
    the finding's code and text, and the GateSettings switch that makes it block (None: it
    always blocks, and an early promotion needs it inside its margin)."""

    signal: str
    column: str
    setting: str
    worse: Literal["lower", "higher"]
    code: str
    text: str  # {margin}, {diff}, {level}, {n}
    switch: str | None = None
    scale: str | None = None  # the GateSettings field naming the margin's units (None: absolute)
    floor: str | None = None  # the GateSettings field: the least margin, in the column's units

    def scale_of(self, gate: Any) -> str:
        """The margin's units: "checker" (the column's own), "standardized" (production's
        per-document standard deviation on the gate's documents) or "relative" (a share of
        production's mean)."""
        return str(getattr(gate, self.scale)) if self.scale else "checker"

    def of(self, gate: Any, stats: Mapping[str, float] | None = None) -> float:
        """This margin in the column's units: the setting, times production's spread or mean
        on the gate's documents (`stats`, the paired comparison) when its scale says so, and
        never below the floor (a production whose summaries are all supported has no spread)."""
        value = float(getattr(gate, self.setting))
        scale = self.scale_of(gate)
        if scale == "checker":
            return value
        if stats is None:
            raise ValueError(f"a {scale} {self.setting} needs the paired comparison's statistics")
        scaled = value * float(stats["production_sd" if scale == "standardized" else "production"])
        return max(scaled, self.floor_of(gate))

    def floor_of(self, gate: Any) -> float:
        return float(getattr(gate, self.floor)) if self.floor else 0.0

    def beyond(self, stats: Mapping[str, float], gate: Any) -> bool:
        """Worse beyond the margin with confidence (the whole CI past it)."""
        if self.worse == "lower":
            return stats["ci_high"] < -self.of(gate, stats)
        return stats["ci_low"] > self.of(gate, stats)

    def inside(self, stats: Mapping[str, float], gate: Any) -> bool:
        """Not worse than the margin with confidence (the whole CI on the good side)."""
        if self.worse == "lower":
            return stats["ci_low"] > -self.of(gate, stats)
        return stats["ci_high"] < self.of(gate, stats)

    def text_of(self, gate: Any, stats: Mapping[str, float]) -> str:
        """The margin as a reason writes it: 0.1, or 0.087 (0.4 x production's standard
        deviation 0.218)."""
        value = self.of(gate, stats)
        scale = self.scale_of(gate)
        if scale == "checker":
            return f"{value:g}"
        setting = float(getattr(gate, self.setting))
        base = "standard deviation" if scale == "standardized" else "mean"
        key = "production_sd" if scale == "standardized" else "production"
        scaled = f"{setting:g} x production's {base} {float(stats[key]):.3f}"
        if value > setting * float(stats[key]):
            return f"{value:.3f} (the floor gate.{self.floor}; {scaled})"
        return f"{value:.3f} ({scaled})"

    def blocks(self, gate: Any) -> bool:
        return self.switch is None or bool(getattr(gate, self.switch))


@dataclass(frozen=True)
class RelativeBound:
    """An absolute facts bound (the GateSettings field `setting`, kept as the floor) that follows
    production's own mean of `column` on the same documents plus a headroom (a number, or the
    name of the GateSettings field holding it), at most 1. `label` and `digits` write it in the
    decision's note; `check`, `code` and `text` are the check that holds the documents' mean of
    `column` to it (hss_gate.decision.checks)."""

    setting: str
    column: str
    headroom: float | str
    label: str
    digits: int
    check: str
    code: str
    text: str

    def headroom_of(self, gate: Any) -> float:
        value = self.headroom
        return float(getattr(gate, value) if isinstance(value, str) else value)


@dataclass(frozen=True)
class WindowTest:
    """The monitor's test of a served column between the model's reference and current
    windows, reported and never blocking: "mann_whitney" for a continuous value ("less": a
    lower current window is worse; "two-sided": changed either way), "fisher" for a 0/1 flag
    (higher is worse)."""

    column: str
    label: str
    test: Literal["mann_whitney", "fisher"]
    alternative: Literal["less", "greater", "two-sided"]
    drift_only: bool = False  # not tested itself: only in Evidently's drift of the windows


Compute = Callable[[str, str], dict[str, Any]]
"""(summary, source) -> the signal's values by column name (without a table prefix)."""


@dataclass(frozen=True)
class Signal:
    """One signal. `columns`: the summary-level columns it computes (declared with
    hss_gate.signals.tables.Column; written as `base_*` in documents.csv, `summary_*` in
    perturbations.csv, `live_*` for served summaries) — empty when the pipeline computes it
    (the signals before the contract). `compute`: those columns' values from a summary and its
    source."""

    name: str
    columns: tuple[Column, ...] = ()
    compute: Compute | None = None
    paired: tuple[Paired, ...] = ()
    margins: tuple[Margin, ...] = ()
    bounds: tuple[RelativeBound, ...] = ()
    window: tuple[WindowTest, ...] = ()
