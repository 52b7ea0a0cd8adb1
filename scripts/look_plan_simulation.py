"""The gate's look plan by simulation (issue 44): for candidate look sizes and alpha spending, the
false-block rate at the margin, the power against given true differences and the expected
number of documents.

usage:
  python scripts/look_plan_simulation.py (--sd SD | --tables CANDIDATE.csv PRODUCTION.csv)
      [--looks auto --looks 24,48 ...] [--spending bonferroni,haybittle-peto,pocock,obrien-fleming]
      [--differences=-0.26,-0.10] [--margin M] [--documents 48] [--categories 12]
      [--unsupported-sd 0.02] [--runs 1000] [--seed 0] [--versions 3] [--markdown]

--sd: the per-document standard deviation of the paired consistency difference (candidate minus
production, same documents), in the checker's units. --tables: two documents.csv score tables
of the same documents (a gate's OUT/candidate/ and OUT/production/, or two `hss score` runs):
the standard deviations of the paired differences of base_mean_support (the consistency
margin's column) and
base_unsupported_share are estimated from them, and the simulation resamples their centered
differences (their own shape, tails included) instead of drawing normal noise (--normal: normal
noise with the estimated standard deviations).

Each simulated gate pairs production with a candidate whose consistency differs by a true
difference plus that noise on every document (unsupported entities: no true difference, noise
--unsupported-sd), and runs the gate's own rule look by look:
hss_gate.decision.paired_comparison.compare
(paired Student-t CIs at the look's level, hss_gate.decision.sequential.look_levels) and
hss_gate.decision.rule.look_verdict (block, promote early when clearly not worse, or continue),
as tests/unit/test_sequential.py does. Not simulated: the absolute facts checks (they block
only at the last look, on shares the paired comparison already follows) and HSS (reported,
never blocking unless gate.hss_blocks).

Printed per look plan (--looks: document counts, or auto for the default plan of --documents
documents in --categories categories; counts beyond --documents give way to it, as in the gate)
and spending: each look's confidence level; the false-block rate at the margin (true difference
-margin: the rule promises at most 1 - score.confidence, Wilson 95% CI); the block rate and the
expected documents of an equal candidate (difference 0); the power (block rate) and expected
documents at each --differences value; and the expected candidate summaries at 0 under facts
first (every document's original, plus --versions perturbed ones for each of the first look's
documents, at least one a category).
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from hss_gate.decision.paired_comparison import compare
from hss_gate.decision.rule import CONSISTENCY_MARGIN, look_verdict
from hss_gate.decision.sequential import look_levels, look_plan
from hss_gate.settings import GateSettings

Noise = Callable[[np.random.Generator, int], np.ndarray]
"""Draws n per-document deviations of a paired difference from its true value."""


REFERENCE_MARGIN = 0.10
"""The consistency margin the simulation holds in the checker's units: gate.consistency_margin's
default (0.45 of production's per-document standard deviation, gate.consistency_margin_scale:
standardized) on the reference corpus, 0.45 x 0.224. A user's standardized or relative margin
is converted to these units before it is simulated (it times production's sd or mean)."""


def normal(sd: float) -> Noise:
    """Normal deviations with standard deviation sd."""
    return lambda rng, n: rng.normal(0.0, sd, n)


def resampled(differences: Sequence[float]) -> Noise:
    """The observed paired differences, centered, drawn with replacement."""
    centered = np.asarray(differences, dtype=float) - float(np.mean(differences))
    return lambda rng, n: rng.choice(centered, n, replace=True)


def paired_differences(candidate: Path, production: Path) -> dict[str, np.ndarray]:
    """The per-document paired differences (candidate minus production, by doc_id) of
    the consistency margin's column and base_unsupported_share in two documents.csv tables."""
    import pandas as pd

    a = pd.read_csv(candidate).set_index("doc_id")
    b = pd.read_csv(production).set_index("doc_id")
    shared = a.index.intersection(b.index)
    if len(shared) < 3:
        raise SystemExit(f"{candidate} and {production} share {len(shared)} documents (need 3)")
    return {
        column: (a.loc[shared, column] - b.loc[shared, column]).to_numpy(dtype=float)
        for column in (CONSISTENCY_MARGIN.column, "base_unsupported_share")
    }


@dataclass(frozen=True)
class Plan:
    """A look plan: the document counts at which the gate looks and each look's level."""

    sizes: list[int]
    levels: list[float]
    spending: str

    @property
    def name(self) -> str:
        return ",".join(map(str, self.sizes))


def _rows(consistency: np.ndarray, unsupported: np.ndarray) -> list[dict[str, object]]:
    return [
        {
            "doc_id": f"d{i}",
            "category": "c",
            CONSISTENCY_MARGIN.column: c,
            "base_unsupported_share": u,
        }
        for i, (c, u) in enumerate(zip(consistency.tolist(), unsupported.tolist(), strict=True))
    ]


def one_gate(
    rng: np.random.Generator,
    difference: float,
    plan: Plan,
    noise: tuple[Noise, Noise],
    gate: GateSettings,
) -> tuple[str, int]:
    """One simulated gate: its verdict and the documents it used."""
    n = plan.sizes[-1]
    production_c, production_u = np.full(n, 0.8), np.full(n, 0.01)
    candidate_c = production_c + difference + noise[0](rng, n)
    candidate_u = production_u + noise[1](rng, n)
    for i, (m, level) in enumerate(zip(plan.sizes, plan.levels, strict=True)):
        comparison = compare(
            _rows(candidate_c[:m], candidate_u[:m]),
            _rows(production_c[:m], production_u[:m]),
            confidence=level,
        )
        verdict = look_verdict(comparison, [], gate, last=i == len(plan.sizes) - 1)
        if verdict != "continue":
            return verdict, m
    raise AssertionError("the last look always settles")


@dataclass(frozen=True)
class Outcome:
    """Simulated gates at one true difference: how many blocked, the documents used."""

    blocked: int
    runs: int
    documents: float

    @property
    def rate(self) -> float:
        return self.blocked / self.runs

    def wilson(self, z: float = 1.96) -> tuple[float, float]:
        """The block rate's Wilson score interval."""
        p, n = self.rate, self.runs
        centre = (p + z * z / (2 * n)) / (1 + z * z / n)
        half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
        return max(0.0, centre - half), min(1.0, centre + half)


def simulate(
    difference: float,
    plan: Plan,
    noise: tuple[Noise, Noise],
    gate: GateSettings,
    runs: int,
    seed: int,
) -> Outcome:
    """`runs` simulated gates at one true consistency difference."""
    rng = np.random.default_rng(seed)
    results = [one_gate(rng, difference, plan, noise, gate) for _ in range(runs)]
    blocked = sum(verdict == "block" for verdict, _ in results)
    return Outcome(blocked, runs, float(np.mean([m for _, m in results])))


def plans(
    looks: Sequence[str], spendings: Sequence[str], documents: int, categories: int, level: float
) -> list[Plan]:
    """Every candidate look plan under every spending function, fitted to the corpus."""
    out = []
    for text in looks:
        configured = None if text == "auto" else [int(x) for x in text.split(",")]
        sizes = look_plan(documents, categories, configured).sizes
        out += [Plan(sizes, look_levels(level, sizes, s), s) for s in spendings]
    return out


def summaries_at(plan: Plan, documents: float, categories: int, versions: int) -> float:
    """Expected candidate summaries under facts first: one a document used, plus the first
    look's documents' perturbed versions (at least one document a category)."""
    hss = min(max(plan.sizes[0], categories), plan.sizes[-1])
    return documents + versions * hss


def table(args: argparse.Namespace, noise: tuple[Noise, Noise], gate: GateSettings) -> list[list]:
    """One row per plan and spending: levels, false blocks at the margin, the equal candidate,
    the power at each difference."""
    rows = []
    margin = gate.consistency_margin
    for plan in plans(args.looks, args.spending, args.documents, args.categories, args.level):
        at_margin = simulate(-margin, plan, noise, gate, args.runs, args.seed)
        equal = simulate(0.0, plan, noise, gate, args.runs, args.seed + 1)
        low, high = at_margin.wilson()
        row = [
            plan.name,
            plan.spending,
            " ".join(f"{level:.4f}" for level in plan.levels),
            f"{at_margin.rate:.1%} [{low:.1%}, {high:.1%}]",
            f"{equal.rate:.1%}",
            f"{equal.documents:.1f}",
            f"{summaries_at(plan, equal.documents, args.categories, args.versions):.0f}",
        ]
        for k, difference in enumerate(args.differences):
            power = simulate(difference, plan, noise, gate, args.runs, args.seed + 2 + k)
            row.append(f"{power.rate:.1%} ({power.documents:.1f})")
        rows.append(row)
    return rows


def render(header: list[str], rows: list[list], markdown: bool) -> str:
    """The table as aligned text, or as Markdown for docs/."""
    if markdown:
        lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        return "\n".join(lines + ["| " + " | ".join(map(str, r)) + " |" for r in rows])
    widths = [max(len(str(x)) for x in column) for column in zip(header, *rows, strict=True)]
    return "\n".join(
        "  ".join(str(x).ljust(w) for x, w in zip(line, widths, strict=True)).rstrip()
        for line in [header, *rows]
    )


def parse(argv: Sequence[str]) -> argparse.Namespace:
    """The command line; the margins and the confidence default to params.yaml's."""
    from hss_gate.settings import load_settings

    settings = load_settings("params.yaml")
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    source = p.add_mutually_exclusive_group(required=True)
    source.add_argument("--sd", type=float, help="per-document SD of the paired difference")
    source.add_argument("--tables", nargs=2, type=Path, metavar=("CANDIDATE", "PRODUCTION"))
    p.add_argument("--normal", action="store_true", help="--tables: normal noise, not resampled")
    p.add_argument("--looks", action="append", help="document counts, e.g. 24,48; or auto")
    p.add_argument("--spending", type=lambda s: s.split(","), default=["bonferroni"])
    p.add_argument("--differences", type=lambda s: [float(x) for x in s.split(",")], default=[])
    p.add_argument(
        "--margin",
        type=float,
        default=REFERENCE_MARGIN,
        help="in the checker's units (default: gate.consistency_margin's default on the "
        "reference corpus, 0.10)",
    )
    p.add_argument("--unsupported-margin", type=float, default=settings.gate.unsupported_margin)
    p.add_argument("--unsupported-sd", type=float, default=0.02)
    p.add_argument("--level", type=float, default=settings.score.confidence, help="1 - alpha")
    p.add_argument("--documents", type=int, default=48, help="the corpus (reference: 48)")
    p.add_argument("--categories", type=int, default=12)
    p.add_argument("--versions", type=int, default=3, help="perturbed summaries a document")
    p.add_argument("--runs", type=int, default=1000)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--markdown", action="store_true")
    args = p.parse_args(argv)
    args.looks = args.looks or ["auto"]
    return args


def noise_of(args: argparse.Namespace) -> tuple[tuple[Noise, Noise], str]:
    """The consistency and unsupported noise, and a line saying where it came from."""
    if args.sd is not None:
        text = f"normal noise: consistency SD {args.sd:.3f}, unsupported SD {args.unsupported_sd}"
        return (normal(args.sd), normal(args.unsupported_sd)), text
    found = paired_differences(*args.tables)
    c, u = found[CONSISTENCY_MARGIN.column], found["base_unsupported_share"]
    sd_c, sd_u = float(np.std(c, ddof=1)), float(np.std(u, ddof=1))
    text = (
        f"from {args.tables[0]} vs {args.tables[1]} ({len(c)} documents): paired difference "
        f"consistency mean {np.mean(c):+.3f} SD {sd_c:.3f}, unsupported mean {np.mean(u):+.3f} "
        f"SD {sd_u:.3f}; " + ("normal noise" if args.normal else "centered differences resampled")
    )
    if args.normal:
        return (normal(sd_c), normal(sd_u)), text
    return (resampled(c), resampled(u)), text


def main(argv: Sequence[str]) -> None:
    args = parse(argv)
    noise, source = noise_of(args)
    gate = GateSettings(
        consistency_margin=args.margin,
        consistency_margin_scale="checker",
        unsupported_margin=args.unsupported_margin,
    )
    print(
        f"{source}; consistency margin {args.margin}, unsupported margin "
        f"{args.unsupported_margin}, overall confidence {args.level:.0%}, {args.runs} gates a cell"
    )
    header = [
        "looks",
        "spending",
        "levels",
        f"false blocks at -{args.margin:g}",
        "blocks at 0",
        "E[documents] at 0",
        "E[candidate summaries] at 0",
        *(f"power at {d:+g} (E[documents])" for d in args.differences),
    ]
    print(render(header, table(args, noise, gate), args.markdown))


if __name__ == "__main__":
    main(sys.argv[1:])
