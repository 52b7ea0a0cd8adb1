"""The monitor's trend over recorded runs as an inline SVG plot and a one-line summary.

Pure string building (no plotting library): the share of served summaries the checker flags
per run (`details.unsupported_share` of a stored run) over time, each run's verdict marked by
shape and colour with a legend in words, and, where recorded, the p-value of the windows'
consistency test. Every text from a run (times, model ids, verdicts) is XML-escaped; the same
runs give the same bytes.
"""

from __future__ import annotations

import datetime as dt
import html
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

CONSISTENCY_TEST = "live_low_consistency"
"""The windows' test whose p-value the plot shows (summaries the checker finds unsupported)."""

# verdict -> (legend text, colour); the shape is drawn by `_marker`
DECISIONS = {
    "healthy": ("healthy (circle)", "#176f2c"),
    "unhealthy": ("unhealthy (triangle)", "#b00020"),
    "insufficient_data": ("insufficient data (hollow diamond)", "#8a6d00"),
    "error": ("error (cross)", "#444444"),
}
OTHER = ("other verdict (square)", "#555555")

WIDTH, HEIGHT = 640, 320
LEFT, RIGHT, TOP, BOTTOM = 52, 20, 20, 190  # the plot area: y from TOP (1.0) to BOTTOM (0.0)
NO_VALUE_Y = BOTTOM + 18  # runs without a recorded share sit in a band below the axis


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


def _xs(points: Sequence[TrendPoint]) -> list[float]:
    """x of each point: by time when every run has a distinct time, else evenly spaced."""
    span = WIDTH - LEFT - RIGHT
    if len(points) == 1:
        return [LEFT + span / 2]
    times = [p.when for p in points if p.when is not None]
    if len(times) == len(points) and len(set(times)) == len(times):
        total = (times[-1] - times[0]).total_seconds()
        return [LEFT + span * (t - times[0]).total_seconds() / total for t in times]
    return [LEFT + span * i / (len(points) - 1) for i in range(len(points))]


def _y(value: float) -> float:
    return BOTTOM - (BOTTOM - TOP) * min(1.0, max(0.0, value))


def _f(value: float) -> str:
    return f"{value:.1f}"


def _marker(decision: str, x: float, y: float, tip: str) -> str:
    """The verdict's shape at (x, y), with its tooltip."""
    colour = DECISIONS.get(decision, OTHER)[1]
    title = f"<title>{html.escape(tip)}</title>"
    if decision == "healthy":
        shape = f"<circle cx='{_f(x)}' cy='{_f(y)}' r='5' fill='{colour}'>"
        return f"{shape}{title}</circle>"
    if decision == "unhealthy":
        pts = f"{_f(x)},{_f(y - 6)} {_f(x + 6)},{_f(y + 5)} {_f(x - 6)},{_f(y + 5)}"
        return f"<polygon points='{pts}' fill='{colour}'>{title}</polygon>"
    if decision == "insufficient_data":
        pts = f"{_f(x)},{_f(y - 6)} {_f(x + 6)},{_f(y)} {_f(x)},{_f(y + 6)} {_f(x - 6)},{_f(y)}"
        return (
            f"<polygon points='{pts}' fill='white' stroke='{colour}' stroke-width='2'>"
            f"{title}</polygon>"
        )
    if decision == "error":
        d = f"M{_f(x - 5)},{_f(y - 5)} L{_f(x + 5)},{_f(y + 5)} M{_f(x - 5)},{_f(y + 5)} " + (
            f"L{_f(x + 5)},{_f(y - 5)}"
        )
        return f"<path d='{d}' stroke='{colour}' stroke-width='2.5'>{title}</path>"
    return (
        f"<rect x='{_f(x - 4)}' y='{_f(y - 4)}' width='8' height='8' fill='{colour}'>{title}</rect>"
    )


def _lines(xs: Sequence[float], values: Sequence[float | None]) -> list[list[tuple[float, float]]]:
    """The runs of consecutive recorded values (a missing value breaks the line)."""
    out: list[list[tuple[float, float]]] = [[]]
    for x, v in zip(xs, values, strict=True):
        if v is None:
            out.append([])
        else:
            out[-1].append((x, _y(v)))
    return [line for line in out if line]


def _polyline(line: Sequence[tuple[float, float]], style: str) -> str:
    pts = " ".join(f"{_f(x)},{_f(y)}" for x, y in line)
    return f"<polyline points='{pts}' fill='none' {style}/>"


def _short(text: str, n: int = 28) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"


def _tip(p: TrendPoint) -> str:
    share = "n/a" if p.flagged is None else f"{p.flagged:.3f}"
    parts = [p.started, p.decision.replace("_", " "), f"flagged share {share}"]
    if p.p_value is not None:
        parts.append(f"consistency test p={p.p_value:.4f}")
    if p.model_id is not None:
        parts.append(f"model id {p.model_id}")
    return " · ".join(parts)


def trend_svg(runs: Sequence[Mapping[str, Any]]) -> str:
    """The flagged share per recorded run as a standalone SVG element ("" without runs)."""
    points = trend_points(runs)
    if not points:
        return ""
    esc = html.escape
    xs = _xs(points)
    out = [
        f"<svg xmlns='http://www.w3.org/2000/svg' width='{WIDTH}' height='{HEIGHT}' "
        f"viewBox='0 0 {WIDTH} {HEIGHT}' role='img' aria-labelledby='trend-title' "
        "font-family='sans-serif' font-size='11'>",
        "<title id='trend-title'>Share of served summaries the checker flags, per recorded "
        "run (oldest left)</title>",
    ]
    for tick in (0.0, 0.25, 0.5, 0.75, 1.0):  # the grid and the y axis
        y = _y(tick)
        out.append(
            f"<line x1='{LEFT}' y1='{_f(y)}' x2='{WIDTH - RIGHT}' y2='{_f(y)}' "
            f"stroke='{'#999' if tick == 0 else '#e3e3e3'}'/>"
        )
        out.append(f"<text x='{LEFT - 6}' y='{_f(y + 4)}' text-anchor='end'>{tick:.2f}</text>")
    out.append(
        f"<text x='12' y='{_f((TOP + BOTTOM) / 2)}' text-anchor='middle' "
        f"transform='rotate(-90 12 {_f((TOP + BOTTOM) / 2)})'>share / p-value</text>"
    )
    if any(p.flagged is None for p in points):
        out.append(f"<text x='{LEFT - 6}' y='{_f(NO_VALUE_Y + 4)}' text-anchor='end'>n/a</text>")
    previous = points[0].model_id
    for x, p in zip(xs, points, strict=True):  # a new model id: a deploy
        if p.model_id is not None and previous is not None and p.model_id != previous:
            out.append(
                f"<line x1='{_f(x)}' y1='{TOP}' x2='{_f(x)}' y2='{BOTTOM}' stroke='#6a5acd' "
                f"stroke-dasharray='2,3'><title>{esc('new model id: ' + p.model_id)}</title>"
                "</line>"
            )
            out.append(
                f"<text x='{_f(x + 3)}' y='{TOP + 10}' fill='#6a5acd'>{esc(_short(p.model_id))}"
                "</text>"
            )
        previous = p.model_id if p.model_id is not None else previous
    for line in _lines(xs, [p.p_value for p in points]):
        out.append(_polyline(line, "stroke='#777' stroke-width='1.5' stroke-dasharray='5,4'"))
        out += [
            f"<rect x='{_f(x - 2.5)}' y='{_f(y - 2.5)}' width='5' height='5' fill='#777'/>"
            for x, y in line
        ]
    for line in _lines(xs, [p.flagged for p in points]):
        out.append(_polyline(line, "stroke='#1f4e9a' stroke-width='2'"))
    for x, p in zip(xs, points, strict=True):
        y = NO_VALUE_Y if p.flagged is None else _y(p.flagged)
        out.append(_marker(p.decision, x, y, _tip(p)))
    label_y = NO_VALUE_Y + 22
    out.append(f"<text x='{LEFT}' y='{label_y}'>{esc(_short(points[0].started, 40))}</text>")
    if len(points) > 1:
        out.append(
            f"<text x='{WIDTH - RIGHT}' y='{label_y}' text-anchor='end'>"
            f"{esc(_short(points[-1].started, 40))}</text>"
        )
    out += _legend(points, label_y + 20)
    out.append("</svg>")
    return "\n".join(out)


def _deploys(points: Sequence[TrendPoint]) -> bool:
    """Whether the runs' model id changes (a deploy line is drawn)."""
    return len({p.model_id for p in points if p.model_id is not None}) > 1


def _legend(points: Sequence[TrendPoint], y: float) -> list[str]:
    """The lines and the verdicts shown, in words beside their shapes."""
    out = [
        f"<line x1='{LEFT}' y1='{y - 4}' x2='{LEFT + 20}' y2='{y - 4}' stroke='#1f4e9a' "
        "stroke-width='2'/>",
        f"<text x='{LEFT + 24}' y='{y}'>flagged share</text>",
        f"<line x1='{LEFT + 110}' y1='{y - 4}' x2='{LEFT + 130}' y2='{y - 4}' stroke='#777' "
        "stroke-width='1.5' stroke-dasharray='5,4'/>",
        f"<text x='{LEFT + 134}' y='{y}'>consistency test p-value</text>",
    ]
    if _deploys(points):
        out += [
            f"<line x1='{LEFT + 290}' y1='{y - 4}' x2='{LEFT + 310}' y2='{y - 4}' "
            "stroke='#6a5acd' stroke-dasharray='2,3'/>",
            f"<text x='{LEFT + 314}' y='{y}'>new model id (a deploy)</text>",
        ]
    shown = list(dict.fromkeys(p.decision for p in points))
    x, y = LEFT, y + 20
    for decision in [d for d in DECISIONS if d in shown] + [d for d in shown if d not in DECISIONS]:
        label = _short(DECISIONS.get(decision, (f"{decision} (square)",))[0], 40)
        width = 14 + 6 * len(label) + 14
        if x > LEFT and x + width > WIDTH - RIGHT:  # the next row
            x, y = LEFT, y + 18
        out.append(_marker(decision, x + 5, y - 4, label))
        out.append(f"<text x='{x + 14}' y='{y}'>{html.escape(label)}</text>")
        x += width
    return out
