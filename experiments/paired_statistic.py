"""Which paired statistic decides soonest (issue 44, item 2): the gate's rule replayed on FRANK
CNN/DM's five systems with each candidate statistic of the claim checker's sentence scores.

    PYTHONPATH=. .venv/bin/python scripts/checker_benchmark.py score --label new4 --sets frank
    PYTHONPATH=. .venv/bin/python experiments/paired_statistic.py [--label new4] [--orders 30]
        [--looks auto|50,100,150,200,250] [--spending bonferroni] [--markdown]

Reads the per-sentence scores `checker_benchmark.py score` stored
(outputs/checker_benchmark/<label>.jsonl, set `frank`: every summary of the five systems) and
the humans' `factual` per summary. Statistics, per summary, higher = more consistent:

- `min`: its least supported sentence (the shipped `consistency.aggregate`);
- `mean`: the mean of its sentences' scores;
- `supported_share`: the share of its sentences at or above the sentence threshold;
- `per_claim`: every sentence a unit. A system's value is the mean over all its sentences
  (documents with more sentences weigh more); the per-document value fed to the paired test is
  its linearisation, R + (sum_i - R n_i) / mean(n), whose mean is R and whose variance is the
  ratio estimator's (clusters = documents).

Each statistic gets the margin the gate's rule for `consistency_margin` gives it: 0.08 (the
shipped margin of `min`) times the spread of its five system means over `min`'s spread, so a
margin is the same share of what separates real systems. Then, for every ordered pair of
systems and --orders random document orders, the gate's own rule (hss_gate.research.systems
gate_call: the looks, their levels, compare, judge_look, the facts checks at the last look)
decides; the humans' paired 95% CI on `factual` says which pairs must block (worse) or must
promote (better). Printed per statistic: the per-document sd of the paired difference
(mean over pairs), the standardized effect of the must-block pairs, the share of must-block
pairs blocked and must-promote pairs promoted, wrong decisions, and the mean documents read
to a decision on the settled pairs. FRANK chooses here: it is also in the issue's target.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
DATA = REPO.parent / "shared" / "data" / "external" / "frank_cnndm"
STATISTICS = ("min", "mean", "supported_share", "per_claim")
SHIPPED_MARGIN = 0.08  # gate.consistency_margin, in `min`'s units


def summary_scores(label: str) -> dict[str, dict[str, list[float]]]:
    """system -> doc_id -> the sentence scores of its summary."""
    path = REPO / "outputs" / "checker_benchmark" / f"{label}.jsonl"
    out: dict[str, dict[str, list[float]]] = defaultdict(dict)
    for line in path.read_text().splitlines():
        rec = json.loads(line)
        if rec["set"] == "frank":
            doc_id, system = rec["key"].removeprefix("frank/").split("|")
            out[system][doc_id] = [float(v) for v in rec["scores"]]
    return dict(out)


def statistic(name: str, scores: dict[str, list[float]], threshold: float) -> dict[str, float]:
    """doc_id -> the summary's value of statistic `name` (empty summaries: 0)."""
    if name == "per_claim":
        n = {d: len(s) for d, s in scores.items()}
        total = {d: float(sum(s)) for d, s in scores.items()}
        ratio = sum(total.values()) / max(1, sum(n.values()))
        mean_n = max(1e-9, float(np.mean(list(n.values()))))
        return {d: ratio + (total[d] - ratio * n[d]) / mean_n for d in scores}
    out = {}
    for d, s in scores.items():
        if not s:
            out[d] = 0.0
        elif name == "min":
            out[d] = min(s)
        elif name == "mean":
            out[d] = float(np.mean(s))
        else:
            out[d] = float(np.mean([v >= threshold for v in s]))
    return out


def main() -> int:
    from hss_gate.consistency import entail_release
    from hss_gate.research.systems import (
        CATEGORY,
        HSS_NOT_MEASURED,
        gate_call,
        human_differences,
    )
    from hss_gate.settings import GateSettings, load_settings

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--label", default="new4")
    parser.add_argument("--orders", type=int, default=30)
    parser.add_argument("--looks", default="auto")
    parser.add_argument("--spending", default="bonferroni")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    if not DATA.exists():
        print(f"{DATA} is absent: nothing to replay", file=sys.stderr)
        return 2

    threshold = entail_release.ENTAIL_THRESHOLD
    scores = summary_scores(args.label)
    humans: dict[str, dict[str, float]] = defaultdict(dict)
    for line in (DATA / "summaries.jsonl").read_text().splitlines():
        rec = json.loads(line)
        if rec["doc_id"] in scores.get(rec["system"], {}):
            humans[rec["system"]][rec["doc_id"]] = float(rec["factual"])
    counts = {s: len(v) for s, v in scores.items()}
    print(f"sentence scores per system: {counts}")
    settings = load_settings(str(REPO / "params.yaml"))
    looks = None if args.looks == "auto" else [int(n) for n in args.looks.split(",")]
    pairs = human_differences(humans)
    flags = {s: statistic("min", v, threshold) for s, v in scores.items()}
    documents = sorted(set.intersection(*(set(v) for v in scores.values())))
    rng = np.random.default_rng(args.seed)
    orders = [None] + [rng.permutation(len(documents)) for _ in range(args.orders - 1)]
    print(
        f"looks {args.looks}, spending {args.spending}, {args.orders} document orders, "
        f"{len(pairs)} ordered pairs ({sum(p.verdict == 'worse' for p in pairs)} must block, "
        f"{sum(p.verdict == 'better' for p in pairs)} must promote)"
    )
    print(
        "| statistic | margin | sd of the paired difference | effect (must-block) "
        "| must-block blocked | must-promote promoted | wrong | documents to a decision |"
    )
    print("|---|---|---|---|---|---|---|---|")
    min_spread = None
    for name in STATISTICS:
        values = {s: statistic(name, v, threshold) for s, v in scores.items()}
        means = [float(np.mean(list(v.values()))) for v in values.values()]
        spread = max(means) - min(means)
        min_spread = spread if name == "min" else min_spread
        margin = SHIPPED_MARGIN * spread / min_spread
        gate = GateSettings(
            **(settings.gate.model_dump() | {"consistency_margin": margin, "looks": looks})
            | {"alpha_spending": args.spending}
        )

        def rows(system: str, order, values=values) -> list[dict]:
            docs = documents if order is None else [documents[i] for i in order]
            # doc ids renamed by rank: the gate's fixed order is then this order
            return [
                {
                    "doc_id": f"{rank:05d}",
                    "category": CATEGORY,
                    "hss": HSS_NOT_MEASURED,
                    "base_consistency": values[system][d],
                    "base_low_consistency": float(flags[system][d] < threshold),
                    "base_unsupported_share": 0.0,
                }
                for rank, d in enumerate(docs)
            ]

        sds, effects, tally = [], [], defaultdict(int)
        used: list[int] = []
        for pair in pairs:
            shared = sorted(set(values[pair.candidate]) & set(values[pair.production]))
            diff = np.array(
                [values[pair.candidate][d] - values[pair.production][d] for d in shared]
            )
            sds.append(float(diff.std(ddof=1)))
            must = {"worse": "block", "better": "promote"}.get(pair.verdict)
            if must == "block":
                effects.append(float(diff.mean() / diff.std(ddof=1)))
            for order in orders:
                candidate, production = rows(pair.candidate, order), rows(pair.production, order)
                call = gate_call(candidate, production, gate, resamples=20)
                if must is None:
                    continue
                tally[must] += 1
                tally[f"{must}_right"] += call.decision == must
                tally["wrong"] += call.decision != must
                used.append(call.documents)
        print(
            f"| {name} | {margin:.3f} | {np.mean(sds):.3f} | {np.mean(effects):+.2f} "
            f"| {tally['block_right'] / max(1, tally['block']):.1%} "
            f"| {tally['promote_right'] / max(1, tally['promote']):.1%} "
            f"| {tally['wrong'] / max(1, tally['block'] + tally['promote']):.1%} "
            f"| {np.mean(used):.0f} |",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
