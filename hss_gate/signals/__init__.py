"""The registered signals of a summary, in the order the reports list them. A new signal is one
module (hss_gate/signals/contract.py says what it declares) and one line here."""

from __future__ import annotations

from typing import Any

from hss_gate.signals import consistency, form, hss, lead_coverage, rewriting, unsupported
from hss_gate.signals.contract import Margin, Paired, RelativeBound, Signal, WindowTest

REGISTERED: tuple[Signal, ...] = (
    consistency.SIGNAL,
    unsupported.SIGNAL,
    hss.SIGNAL,
    rewriting.SIGNAL,
    form.SIGNAL,
    lead_coverage.SIGNAL,
)


def paired() -> tuple[Paired, ...]:
    """Every paired comparison, in the registry's order."""
    return tuple(p for s in REGISTERED for p in s.paired)


def margins() -> tuple[Margin, ...]:
    """Every margin that can block, in the registry's order."""
    return tuple(m for s in REGISTERED for m in s.margins)


def relative_bounds() -> tuple[RelativeBound, ...]:
    """Every facts bound that follows production's own values, in the registry's order."""
    return tuple(b for s in REGISTERED for b in s.bounds)


def declared_window_tests() -> tuple[WindowTest, ...]:
    """Every registered monitor window test."""
    return tuple(w for s in REGISTERED for w in s.window)


def computed() -> tuple[Signal, ...]:
    """The signals computed from a summary and its source by their own module."""
    return tuple(s for s in REGISTERED if s.compute is not None)


def computed_values(summary: str, source: str) -> dict[str, Any]:
    """Every column the registered signals compute themselves, for one summary (no prefix)."""
    values: dict[str, Any] = {}
    for signal in computed():
        values |= signal.compute(summary, source)  # type: ignore[misc]
    return values
