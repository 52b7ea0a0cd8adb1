"""The absolute floors replayed on served traffic of other domains (issue 55, item 2).

Two settings compare a model's summaries with a fixed level rather than with production on the
same documents:

- `monitor.served_margin`: the monitor's floor against the production reference corpus
  (`monitor.reference`): unhealthy when the bootstrap CI of the served share the checker flags,
  minus the reference's share, lies entirely above the margin (hss_gate.monitoring.rules);
- `gate.max_low_consistency_share`: the ceiling on that share, held on the lower end of a
  one-sample Student-t CI where nothing pairs (the monitor's rescored samples), and the floor of
  the gate's relative bound.

Each `--served NAME=DOCUMENTS_CSV` is one documents.csv (an `hss score` or gate side) read as
served traffic, with what the floor must say (`--expect NAME=healthy|unhealthy`): production on
another domain's documents must be healthy, a worse model on the reference's may not be.
For each value in the grid it prints what the floor says (figures, not assertions):

    PYTHONPATH=. python scripts/floor_replay.py \\
        --served reference=data/baseline/reference/documents.csv --expect reference=healthy \\
        --served smollm2=outputs/quickstart/candidate/documents.csv --expect smollm2=unhealthy
"""

from __future__ import annotations

import argparse
import sys

import pandas as pd

from hss_gate.monitoring.rules import served_rises
from hss_gate.scoring.severity import paired_t_ci
from hss_gate.settings import load_settings

SERVED_MARGINS = (0.05, 0.10, 0.15, 0.20, 0.25, 0.30)
CEILINGS = (0.19, 0.24, 0.29, 0.34, 0.39, 0.44)


def served_frame(path: str) -> pd.DataFrame:
    """A documents.csv as the monitor's live columns."""
    frame = pd.read_csv(path)
    return pd.DataFrame(
        {
            "live_low_consistency": frame["base_low_consistency"].astype(float),
            "live_unsupported_share": frame["base_unsupported_share"].astype(float),
        }
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--served", action="append", default=[], required=True)
    parser.add_argument("--expect", action="append", default=[])
    args = parser.parse_args(argv)
    settings = load_settings()
    reference = pd.read_csv(settings.monitor.reference)
    served = {
        name: served_frame(path) for name, _, path in (spec.partition("=") for spec in args.served)
    }
    expect = dict(spec.partition("=")[::2] for spec in args.expect)
    level = settings.score.confidence
    print(
        f"reference: {settings.monitor.reference}, flagged share "
        f"{reference['base_low_consistency'].astype(float).mean():.3f} "
        f"({len(reference)} documents); intervals at {level:.0%}\n"
    )
    print("| served | expected | documents | flagged share | one-sample CI |")
    print("|---|---|---|---|---|")
    intervals = {}  # the one-sample Student-t CI of each served flagged share
    for name, frame in served.items():
        values = frame["live_low_consistency"].tolist()
        intervals[name] = mean, low, high = paired_t_ci(values, [0.0] * len(values), level=level)
        print(
            f"| {name} | {expect.get(name, '?')} | {len(values)} | {mean:.3f} | "
            f"[{low:.3f}, {high:.3f}] |"
        )
    names = list(served)
    print("\n`monitor.served_margin` (unhealthy: the difference's CI above it)\n")
    print("| served_margin | " + " | ".join(names) + " |")
    print("|" + "---|" * (len(names) + 1))
    for margin in SERVED_MARGINS:
        cells = []
        for name in names:
            rise = served_rises(
                served[name],
                reference,
                {"live_low_consistency": margin, "live_unsupported_share": 1.0},
                resamples=settings.score.bootstrap_resamples,
                confidence=level,
                seed=settings.perturb.seed,
            )[0]
            verdict = "unhealthy" if rise["rise"] else "healthy"
            cells.append(
                f"{verdict} ({rise['difference']:+.3f} [{rise['ci_low']:+.3f}, "
                f"{rise['ci_high']:+.3f}])"
            )
        print(f"| {margin:g} | " + " | ".join(cells) + " |")
    print("\n`gate.max_low_consistency_share` held one-sample (fails: the CI's lower end above)\n")
    print("| max_low_consistency_share | " + " | ".join(names) + " |")
    print("|" + "---|" * (len(names) + 1))
    for ceiling in CEILINGS:
        cells = ["fails" if intervals[name][1] > ceiling else "passes" for name in names]
        print(f"| {ceiling:g} | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
