"""decision.html's pictures, each with the table of its numbers: the sequential decision at a
glance (the paired consistency difference and its interval at each look, against the margin),
the per-summary consistency of the candidate and of production, and HSS by category with
intervals.

Pure: plain records in (decision.json's looks, `paired_documents`' records), SVG text and
`Table`s out; the figures are drawn by `figures.picture`. Nothing here reads a file or a
setting, and decision.json is not changed: the category intervals are computed here, from the
same documents, with a fixed seed.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np

from hss_gate.decision.reports.figures import (
    BAD,
    CANDIDATE,
    GOOD,
    NEUTRAL,
    PRODUCTION,
    label,
    picture,
    rows_picture,
)
from hss_gate.decision.reports.sections import Table, num, signed
from hss_gate.scoring.severity import bootstrap_ci, paired_bootstrap_ci
from hss_gate.signals import consistency

CONSISTENCY_COLUMN = consistency.SIGNAL.paired[0].column
"""The documents column of the checker's consistency (the registered signal's, not named here)."""

LEVEL = 0.95
RESAMPLES = 1000
SEED = 0
"""The category intervals: percentile bootstrap of each side's mean and of the paired delta."""

VERDICT_STYLE = {  # a look's verdict -> (marker, colour, words)
    "block": ("v", BAD, "block"),
    "promote": ("o", GOOD, "promote"),
    "continue": ("s", NEUTRAL, "continue"),
}


def _value(value: Any) -> float | None:
    """A finite number, else None (missing, text, NaN, a boolean)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


def paired_documents(
    candidate: Sequence[Mapping[str, Any]], production: Sequence[Mapping[str, Any]]
) -> list[dict[str, Any]]:
    """Each document both sides scored, as the pictures read it: its id, category and each
    side's consistency and HSS (None where not measured), in the candidate's order."""
    prod = {r["doc_id"]: r for r in production}
    return [
        {
            "doc_id": str(r["doc_id"]),
            "category": str(r.get("category", "")),
            "consistency_candidate": _value(r.get(CONSISTENCY_COLUMN)),
            "consistency_production": _value(prod[r["doc_id"]].get(CONSISTENCY_COLUMN)),
            "hss_candidate": _value(r.get("hss")),
            "hss_production": _value(prod[r["doc_id"]].get("hss")),
        }
        for r in candidate
        if r["doc_id"] in prod
    ]


# ------------------------------------------------------------------ the looks, at a glance

LOOK_HEADERS = [
    "look",
    "documents",
    "confidence",
    "consistency difference [CI]",
    "unsupported difference [CI]",
    "verdict",
]


def _interval(record: Any) -> str:
    """A look's difference with its CI: -0.250 [-0.303, -0.197]; n/a when not recorded."""
    if not isinstance(record, Mapping) or _value(record.get("difference")) is None:
        return "n/a"
    low, high = [*(record.get("ci") or []), None, None][:2]
    return f"{signed(record['difference'])} [{signed(low)}, {signed(high)}]"


def looks_table(looks: Sequence[Mapping[str, Any]]) -> Table:
    """Each look of the sequential rule: its documents, confidence, the paired differences of
    consistency and of unsupported entities with their CIs, and its verdict."""
    rows = [
        [
            str(i),
            str(look.get("documents", "")),
            f"{look['confidence']:.2%}" if _value(look.get("confidence")) is not None else "n/a",
            _interval(look.get("consistency")),
            _interval(look.get("unsupported")),
            str(look.get("verdict", "")),
        ]
        for i, look in enumerate(looks, start=1)
    ]
    return Table(LOOK_HEADERS, rows, [look.get("verdict") == "block" for look in looks])


@dataclass(frozen=True)
class LookPoint:
    """One look as the picture draws it."""

    look: int
    documents: str
    difference: float
    low: float
    high: float
    verdict: str


def look_points(looks: Sequence[Mapping[str, Any]]) -> list[LookPoint]:
    """Each look that recorded its consistency difference and CI, numbered from 1."""
    out = []
    for i, look in enumerate(looks, start=1):
        record = look.get("consistency")
        if not isinstance(record, Mapping):
            continue
        ci = list(record.get("ci") or [])
        values = [_value(v) for v in [record.get("difference"), *ci[:2]]]
        if len(values) == 3 and all(v is not None for v in values):
            diff, low, high = (float(v) for v in values)  # type: ignore[arg-type]
            documents = str(look.get("documents", "?"))
            out.append(LookPoint(i, documents, diff, low, high, str(look.get("verdict", ""))))
    return out


def looks_svg(looks: Sequence[Mapping[str, Any]], margin: float | None) -> str:
    """The paired consistency difference (candidate - production) and its CI at each look,
    against the margin: below -margin with confidence blocks ("" without a recorded look)."""
    points = look_points(looks)
    if not points:
        return ""
    margin = _value(margin)
    return picture(
        "gate-looks",
        (6.4, 3.4),
        partial(draw_looks, points=points, margin=margin),
        "The sequential decision: consistency difference at each look against the margin",
        _looks_description(points, margin),
    )


def draw_looks(figure: Any, points: Sequence[LookPoint], margin: float | None) -> None:
    """Each look's difference and CI as an error bar, its verdict by marker and colour; the
    margin a dashed line with the side below it shaded, no change a solid one."""
    ax = figure.add_subplot()
    floor = min([*(p.low for p in points), -(margin or 0.0), 0.0])
    bottom = floor - 0.1 * max(0.05, abs(floor))
    ax.axhline(0.0, color=NEUTRAL, linewidth=1, label="no change")
    if margin is not None:
        ax.axhspan(bottom, -margin, color=BAD, alpha=0.08, linewidth=0)
        ax.axhline(-margin, color=BAD, linestyle="--", linewidth=1.2, label=margin_words(margin))
    shown: set[str] = set()
    for p in points:
        marker, colour, words = VERDICT_STYLE.get(p.verdict, ("D", NEUTRAL, label(p.verdict, 20)))
        ax.errorbar(
            [p.look],
            [p.difference],
            yerr=[[p.difference - p.low], [p.high - p.difference]],
            fmt=marker,
            color=colour,
            markersize=8,
            capsize=5,
            linewidth=1.6,
            label=None if words in shown else f"verdict: {words}",
        )
        shown.add(words)
    ax.set_xticks(
        [p.look for p in points], [f"look {p.look}\n{p.documents} documents" for p in points]
    )
    ax.set_xlim(0.5, max(p.look for p in points) + 0.5)
    top = max([*(p.high for p in points), 0.0])
    ax.set_ylim(bottom, top + 0.1 * max(0.05, top - bottom))
    ax.set_ylabel("consistency: candidate - production")
    figure.legend(loc="outside lower center", ncols=2, fontsize=8)


def margin_words(margin: float) -> str:
    return f"margin -{margin:.3f} (below it: worse)"


def _looks_description(points: Sequence[LookPoint], margin: float | None) -> str:
    where = "no margin recorded" if margin is None else f"the margin is -{margin:.3f}"
    looks = "; ".join(
        f"look {p.look} on {p.documents} documents: {p.difference:+.3f} "
        f"[{p.low:+.3f}, {p.high:+.3f}], verdict {p.verdict}"
        for p in points
    )
    return (
        "The paired difference in the checker's consistency, candidate minus production, with "
        f"its confidence interval at each look of the sequential rule; {where}. {looks}."
    )


# ----------------------------------------------------- per-summary consistency, both sides

DISTRIBUTION_HEADERS = ["model", "summaries", "mean", "min", "p10", "median", "p90", "max"]


def _consistency(documents: Sequence[Mapping[str, Any]], side: str) -> list[float]:
    key = f"consistency_{side}"
    return [v for d in documents if (v := _value(d.get(key))) is not None]


def consistency_table(documents: Sequence[Mapping[str, Any]]) -> Table:
    """Each side's per-summary consistency: how many, the mean and the quantiles."""
    rows = []
    for side in ("candidate", "production"):
        values = _consistency(documents, side)
        if not values:
            rows.append([side, "0", *["n/a"] * 6])
            continue
        q = np.quantile(values, [0.0, 0.1, 0.5, 0.9, 1.0])
        rows.append([side, str(len(values)), num(float(np.mean(values))), *map(num, map(float, q))])
    return Table(DISTRIBUTION_HEADERS, rows)


def consistency_svg(documents: Sequence[Mapping[str, Any]]) -> str:
    """Histograms of the per-summary consistency of both sides over the same documents (bins
    of 0.05 on 0-1), each side's mean marked ("" when neither side has a value)."""
    sides = {side: _consistency(documents, side) for side in ("candidate", "production")}
    if not any(sides.values()):
        return ""
    return picture(
        "gate-consistency",
        (6.4, 3.0),
        partial(draw_consistency, sides=sides),
        "Per-summary consistency of the candidate and of production",
        _consistency_description(sides),
    )


SIDE_STYLE = {"candidate": (CANDIDATE, "-"), "production": (PRODUCTION, "--")}
BINS = 20


def draw_consistency(figure: Any, sides: Mapping[str, Sequence[float]]) -> None:
    """Each side's histogram, filled lightly and outlined (solid: candidate, dashed:
    production), its mean a vertical line of the same style."""
    ax = figure.add_subplot()
    bins = np.linspace(0.0, 1.0, BINS + 1)
    for side, values in sides.items():
        if not values:
            continue
        colour, style = SIDE_STYLE[side]
        clipped = np.clip(values, 0.0, 1.0)
        mean = float(np.mean(values))
        ax.hist(clipped, bins=bins, histtype="stepfilled", color=colour, alpha=0.18)
        ax.hist(
            clipped,
            bins=bins,
            histtype="step",
            color=colour,
            linestyle=style,
            linewidth=1.8,
            label=f"{side}: {len(values)} summaries, mean {mean:.3f}",
        )
        ax.axvline(mean, color=colour, linestyle=style, linewidth=1)
    ax.set_xlim(0.0, 1.0)
    ax.set_xlabel("consistency with the source (checker, 0-1; higher is better)")
    ax.set_ylabel("summaries")
    ax.yaxis.get_major_locator().set_params(integer=True)
    figure.legend(loc="outside lower center", ncols=2, fontsize=8)


def _consistency_description(sides: Mapping[str, Sequence[float]]) -> str:
    parts = []
    for side, values in sides.items():
        if not values:
            parts.append(f"{side}: no value")
            continue
        parts.append(
            f"{side}: {len(values)} summaries, mean {np.mean(values):.3f}, median "
            f"{np.median(values):.3f}, {sum(v < 0.5 for v in values)} below 0.5"
        )
    return (
        "Histograms (bins of 0.05) of the checker's consistency of each summary with its "
        f"source, the same documents on both sides, each mean a vertical line. {'; '.join(parts)}."
    )


# ------------------------------------------------------------- HSS by category, intervals

CATEGORY_HEADERS = [
    "category",
    "n",
    f"candidate [{LEVEL:.0%} CI]",
    f"production [{LEVEL:.0%} CI]",
    f"delta [{LEVEL:.0%} CI, paired]",
]


def category_intervals(documents: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """HSS by category from the documents both sides measured: each side's mean with a
    percentile bootstrap interval, and the paired delta with its own (`LEVEL`, `RESAMPLES`,
    `SEED`); categories sorted by name, none when HSS was not measured."""
    rows = []
    for category in sorted({str(d.get("category", "")) for d in documents}):
        pairs = [
            (a, b)
            for d in documents
            if str(d.get("category", "")) == category
            and (a := _value(d.get("hss_candidate"))) is not None
            and (b := _value(d.get("hss_production"))) is not None
        ]
        if not pairs:
            continue
        cand, prod = [a for a, _ in pairs], [b for _, b in pairs]
        delta, low, high = paired_bootstrap_ci(
            cand, prod, resamples=RESAMPLES, level=LEVEL, seed=SEED
        )
        rows.append(
            {
                "category": category,
                "n": len(pairs),
                "candidate": (float(np.mean(cand)), *_ci(cand)),
                "production": (float(np.mean(prod)), *_ci(prod)),
                "delta": (delta, low, high),
            }
        )
    return rows


def _ci(values: Sequence[float]) -> tuple[float, float]:
    return bootstrap_ci(values, resamples=RESAMPLES, level=LEVEL, seed=SEED)


def _mean_ci(triple: Sequence[float], sign: bool = False) -> str:
    text = signed if sign else num
    return f"{text(triple[0])} [{text(triple[1])}, {text(triple[2])}]"


def category_table(rows: Sequence[Mapping[str, Any]]) -> Table:
    """HSS by category: each side's mean and interval, the paired delta and its interval."""
    return Table(
        CATEGORY_HEADERS,
        [
            [
                r["category"],
                str(r["n"]),
                _mean_ci(r["candidate"]),
                _mean_ci(r["production"]),
                _mean_ci(r["delta"], sign=True),
            ]
            for r in rows
        ],
    )


def categories_svg(rows: Sequence[Mapping[str, Any]]) -> str:
    """Each category's mean HSS of both sides with its interval (`category_intervals`' rows),
    a row a category in the table's order ("" without a category)."""
    return rows_picture(
        "gate-categories",
        rows,
        (1.6, 0.45),
        draw_categories,
        "HSS by category, candidate and production, with intervals",
        _categories_description,
    )


def draw_categories(figure: Any, rows: Sequence[Mapping[str, Any]]) -> None:
    """A row a category, top down: the candidate's mean (circle) and production's (square)
    with horizontal interval bars."""
    ax = figure.add_subplot()
    for offset, side, colour, marker in (
        (-0.17, "candidate", CANDIDATE, "o"),
        (0.17, "production", PRODUCTION, "s"),
    ):
        means = [r[side][0] for r in rows]
        errors = [
            [max(0.0, r[side][0] - r[side][1]) for r in rows],
            [max(0.0, r[side][2] - r[side][0]) for r in rows],
        ]
        ax.errorbar(
            means,
            [i + offset for i in range(len(rows))],
            xerr=errors,
            fmt=marker,
            color=colour,
            capsize=4,
            markersize=6,
            linewidth=1.4,
            label=f"{side} ({LEVEL:.0%} interval)",
        )
    ax.set_yticks(range(len(rows)), [f"{label(r['category'], 28)} (n={r['n']})" for r in rows])
    ax.set_ylim(len(rows) - 0.5, -0.5)
    ax.set_xlim(left=0.0)
    ax.set_xlabel("HSS, mean over the category's documents (higher is worse)")
    figure.legend(loc="outside lower center", ncols=2, fontsize=8)


def _categories_description(rows: Sequence[Mapping[str, Any]]) -> str:
    parts = "; ".join(
        f"{r['category']} (n={r['n']}): candidate {_mean_ci(r['candidate'])}, production "
        f"{_mean_ci(r['production'])}"
        for r in rows
    )
    return (
        f"Mean HSS of each category's documents with a {LEVEL:.0%} bootstrap interval, "
        f"candidate and production. {parts}."
    )
