"""monitor.html's pictures: the trend over recorded runs and the windows' flagged shares.

Pure: monitor.json's records in (the stored runs, read by `trend.trend_points`; the
windows' tests), SVG text out, drawn by `figures.picture`. The numbers of each picture are in
the report's tables beside it (the recorded runs; "Is the current window worse?").
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from functools import partial
from typing import Any

import numpy as np

from hss_gate.decision.reports import figures
from hss_gate.monitoring.trend import TrendPoint, trend_points

# a run's verdict -> (words, colour, marker, filled): told apart by shape, not colour alone
DECISIONS = {
    "healthy": ("healthy", figures.GOOD, "o", True),
    "unhealthy": ("unhealthy", figures.BAD, "^", True),
    "insufficient_data": ("insufficient data", "#8a6d00", "D", False),
    "error": ("error", "#444444", "X", True),
}
OTHER = ("other verdict", figures.NEUTRAL, "s", True)
DEPLOY = "#6a5acd"
NO_VALUE = -0.12
"""Where a run without a recorded flagged share sits: a band below the axis, marked n/a."""


# ------------------------------------------------------------------------------ the trend


def positions(points: Sequence[TrendPoint]) -> tuple[list[float], str]:
    """x of each run and the axis' words: hours (or days) since the first run when every run
    has its own time, else the run's number, oldest first."""
    times = [p.when for p in points]
    if len(points) > 1 and all(times) and len(set(times)) == len(times):
        first: dt.datetime = times[0]  # type: ignore[assignment]
        hours = [(t - first).total_seconds() / 3600 for t in times]  # type: ignore[operator]
        if hours[-1] > 72:
            started = figures.label(points[0].started)
            return [h / 24 for h in hours], f"days since the first run ({started})"
        return hours, f"hours since the first run ({figures.label(points[0].started)})"
    return [float(i) for i in range(1, len(points) + 1)], "recorded run, oldest first"


def deploy_points(points: Sequence[TrendPoint], xs: Sequence[float]) -> list[tuple[float, str]]:
    """(x, model id) where the runs' model id changes: a deploy."""
    out, previous = [], points[0].model_id
    for x, p in zip(xs, points, strict=True):
        if p.model_id is not None and previous is not None and p.model_id != previous:
            out.append((x, p.model_id))
        previous = p.model_id if p.model_id is not None else previous
    return out


def trend_svg(runs: Sequence[Mapping[str, Any]]) -> str:
    """The share of served summaries the checker flags per recorded run (any order in; drawn
    oldest left), each run's verdict by its marker, the windows' consistency test p-value, and
    a dotted line where the model id changes ("" without runs)."""
    points = trend_points(runs)
    if not points:
        return ""
    return figures.picture(
        "monitor-trend",
        (6.4, 3.4),
        partial(draw_trend, points=points),
        "Share of served summaries the checker flags, per recorded run (oldest left)",
        _trend_description(points),
    )


def draw_trend(figure: Any, points: Sequence[TrendPoint]) -> None:
    """The flagged share (a solid line broken where a run recorded none), the p-value (dashed),
    each run's verdict marker (a run without a share in the n/a band), the deploys."""
    ax = figure.add_subplot()
    xs, xlabel = positions(points)
    missing = any(p.flagged is None for p in points)
    flagged = np.array([np.nan if p.flagged is None else p.flagged for p in points])
    p_values = np.array([np.nan if p.p_value is None else p.p_value for p in points])
    ax.plot(xs, flagged, color=figures.PRODUCTION, linewidth=2, label="flagged share")
    if not np.isnan(p_values).all():
        ax.plot(
            xs,
            p_values,
            color=figures.NEUTRAL,
            linewidth=1.2,
            linestyle="--",
            marker="s",
            markersize=3,
            label="consistency test p-value",
        )
    deploys = deploy_points(points, xs)
    middle = (min(xs) + max(xs)) / 2
    for x, model_id in deploys:  # the label on the side of the line with more room
        ax.axvline(x, color=DEPLOY, linestyle=":", linewidth=1.2)
        right = x > middle
        words = f"{figures.label(model_id, 24)} " if right else f" {figures.label(model_id, 24)}"
        side = "right" if right else "left"
        ax.text(x, 1.0, words, color=DEPLOY, fontsize=8, va="top", ha=side)
    _verdict_markers(ax, points, xs)
    if deploys:
        ax.plot([], [], color=DEPLOY, linestyle=":", label="new model id (a deploy)")
    ticks = [0.0, 0.25, 0.5, 0.75, 1.0]
    if missing:
        ax.set_yticks([NO_VALUE, *ticks], ["n/a", *(f"{t:.2f}" for t in ticks)])
    else:
        ax.set_yticks(ticks)
    ax.set_ylim(NO_VALUE - 0.06 if missing else -0.03, 1.03)
    if len(points) == 1:
        ax.set_xlim(xs[0] - 1, xs[0] + 1)
    ax.set_xlabel(xlabel)
    ax.set_ylabel("share / p-value")
    figure.legend(loc="outside lower center", ncols=3, fontsize=8)


def _verdict_markers(ax: Any, points: Sequence[TrendPoint], xs: Sequence[float]) -> None:
    """Each run at its flagged share (or in the n/a band), its verdict's marker, one legend
    entry a verdict."""
    shown = list(dict.fromkeys(p.decision for p in points))
    for decision in [d for d in DECISIONS if d in shown] + [d for d in shown if d not in DECISIONS]:
        words, colour, marker, filled = DECISIONS.get(decision, OTHER)
        if decision not in DECISIONS:
            words = f"{figures.label(decision.replace('_', ' '), 24)} (other verdict)"
        mine = [(x, p) for x, p in zip(xs, points, strict=True) if p.decision == decision]
        ax.plot(
            [x for x, _ in mine],
            [NO_VALUE if p.flagged is None else p.flagged for _, p in mine],
            linestyle="none",
            marker=marker,
            markersize=7,
            color=colour,
            markerfacecolor=colour if filled else "white",
            markeredgewidth=1.5,
            label=f"verdict: {words}",
            zorder=3,
        )


def _trend_description(points: Sequence[TrendPoint]) -> str:
    def run(p: TrendPoint) -> str:
        share = "n/a" if p.flagged is None else f"{p.flagged:.3f}"
        text = f"{p.started}: {p.decision.replace('_', ' ')}, flagged share {share}"
        if p.p_value is not None:
            text += f", consistency test p={p.p_value:.4f}"
        return text + (f", model id {p.model_id}" if p.model_id is not None else "")

    return (
        f"The share of served summaries the checker flags in each of {len(points)} recorded "
        f"runs, oldest first: {'; '.join(run(p) for p in points)}."
    )


# ------------------------------------------------------------ the windows' flagged shares


def flag_tests(result: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The windows' tests of 0/1 signals (a Fisher test on the share of summaries flagged)
    with both shares recorded."""
    tests = (result.get("windows") or {}).get("tests") or []
    return [
        t
        for t in tests
        if isinstance(t, Mapping)
        and t.get("test") == "fisher"
        and all(_share(t.get(k)) is not None for k in ("reference_mean", "current_mean"))
    ]


def _share(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if 0.0 <= value <= 1.0 else None


def flagged_shares_svg(result: Mapping[str, Any]) -> str:
    """The share of summaries each 0/1 signal flags in the reference and the current window,
    side by side, a signal the current window is significantly worse on marked ("" without
    such a test)."""
    return figures.rows_picture(
        "monitor-flagged",
        flag_tests(result),
        (1.4, 0.42),
        draw_flagged_shares,
        "Share of summaries flagged in the reference and the current window",
        _flagged_description,
    )


WINDOW_STYLE = (  # (offset, share, size, colour, hatch, words)
    (-0.2, "reference_mean", "n_reference", figures.PRODUCTION, "", "reference window"),
    (0.2, "current_mean", "n_current", figures.CANDIDATE, "//", "current window"),
)


def draw_flagged_shares(figure: Any, tests: Sequence[Mapping[str, Any]]) -> None:
    """A row a signal, top down: the reference window's share (plain bar) above the current
    window's (hatched), each bar's value and window size written at its end."""
    ax = figure.add_subplot()
    ys = np.arange(len(tests))
    for offset, key, n_key, colour, hatch, words in WINDOW_STYLE:
        values = [float(t[key]) for t in tests]
        ax.barh(
            ys + offset,
            values,
            height=0.38,
            color=colour,
            alpha=0.85,
            hatch=hatch,
            edgecolor="white",
            label=words,
        )
        for y, t, v in zip(ys, tests, values, strict=True):
            words_at = (v + 0.01, y + offset)  # just past the bar's end
            ax.annotate(f"{v:.3f} (n={t.get(n_key, '?')})", words_at, va="center", fontsize=7)
    ax.set_yticks(ys, [_test_label(t) for t in tests])
    ax.set_ylim(len(tests) - 0.5, -0.5)
    ax.set_xlim(0.0, 1.18)
    ax.set_xticks([0.0, 0.25, 0.5, 0.75, 1.0])
    ax.set_xlabel("share of summaries flagged")
    figure.legend(loc="outside lower center", ncols=2, fontsize=8)


def _test_label(test: Mapping[str, Any]) -> str:
    text = figures.label(test.get("label", test.get("signal", "")), 40)
    return f"{text} [WORSE]" if test.get("worse") else text


def _flagged_description(tests: Sequence[Mapping[str, Any]]) -> str:
    def one(t: Mapping[str, Any]) -> str:
        p = t.get("p_value")
        p_text = f", one-sided p={p:.4f}" if _share(p) is not None else ""
        worse = ", significantly worse" if t.get("worse") else ""
        return (
            f"{t.get('label', t.get('signal', ''))}: {float(t['reference_mean']):.3f} "
            f"(n={t.get('n_reference', '?')}) -> {float(t['current_mean']):.3f} "
            f"(n={t.get('n_current', '?')}){p_text}{worse}"
        )

    return (
        "For each 0/1 signal, the share of summaries it flags in the model's reference window "
        f"and in the current window: {'; '.join(one(t) for t in tests)}."
    )
