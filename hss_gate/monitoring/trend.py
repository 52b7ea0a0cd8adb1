"""The monitor's trend over recorded runs, as the report reads it: the runs as points, oldest
first, and the trend in one sentence.

Pure: the share of served summaries the checker flags per run (`details.unsupported_share` of a
stored run), its verdict, its model id and, where recorded, the p-value of the windows'
consistency test. `decision/reports/monitor_figures.py` draws it (matplotlib, inline SVG);
monitor.md and monitor.html write `trend_line`.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

CONSISTENCY_TEST = "live_low_consistency"
"""The windows' test whose p-value the plot shows (summaries the checker finds unsupported)."""


@dataclass(frozen=True)
class TrendPoint:
    """One recorded run, as the plot reads it."""

    started: str
    decision: str
    flagged: float | None
    p_value: float | None
    model_id: str | None
    when: dt.datetime | None


def _float(value: Any) -> float | None:
    """A finite number, else None (missing, text, NaN)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    number = float(value)
    return number if number == number and abs(number) != float("inf") else None


def _when(value: Any) -> dt.datetime | None:
    try:
        when = dt.datetime.fromisoformat(str(value))
    except ValueError:
        return None
    return when if when.tzinfo is not None else when.replace(tzinfo=dt.UTC)


def trend_points(runs: Sequence[Mapping[str, Any]]) -> list[TrendPoint]:
    """The runs (stored MonitorRuns as dicts, any order) oldest first; a run whose start is
    not a time keeps its place after the timed ones."""
    points = []
    for run in runs:
        details = run.get("details") or {}
        p_values = details.get("p_values") or {}
        points.append(
            TrendPoint(
                started=str(run.get("started_at", "")),
                decision=str(run.get("decision") or "unknown"),
                flagged=_float(details.get("unsupported_share")),
                p_value=_float(p_values.get(CONSISTENCY_TEST))
                if isinstance(p_values, Mapping)
                else None,
                model_id=None if details.get("model_id") is None else str(details["model_id"]),
                when=_when(run.get("started_at")),
            )
        )
    order = sorted(
        range(len(points)),
        key=lambda i: (points[i].when is None, points[i].when or dt.datetime.min, i),
    )
    return [points[i] for i in order]


def trend_line(runs: Sequence[Mapping[str, Any]]) -> str:
    """The trend in one sentence: the flagged share of the oldest and newest runs that
    recorded one, and the verdicts counted."""
    points = trend_points(runs)
    if not points:
        return "No recorded runs yet."
    counts: dict[str, int] = {}
    for p in points:
        counts[p.decision] = counts.get(p.decision, 0) + 1
    verdicts = ", ".join(f"{n} {d.replace('_', ' ')}" for d, n in sorted(counts.items()))
    valued = [p for p in points if p.flagged is not None]
    runs_text = f"{len(points)} recorded run" + ("s" if len(points) != 1 else "")
    if not valued:
        return f"Flagged share over {runs_text}: none recorded; verdicts: {verdicts}."
    first, last = valued[0], valued[-1]
    if first is last:
        return (
            f"Flagged share over {runs_text}: {first.flagged:.3f} ({first.started}); "
            f"verdicts: {verdicts}."
        )
    share = (
        f"{first.flagged:.3f} ({first.started}) -> {last.flagged:.3f} ({last.started}), "
        f"{(last.flagged or 0.0) - (first.flagged or 0.0):+.3f}"
    )
    return f"Flagged share over {runs_text} (oldest first): {share}; verdicts: {verdicts}."
