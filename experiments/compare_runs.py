"""Compare `hss score` runs of several models on the same corpus.

usage: python experiments/compare_runs.py NAME=DIR [NAME=DIR ...] [--errors errors.csv]

Prints, per model: HSS (aware and raw) with CIs, unsupported entity/number share, rewriting
(novel 4-gram share), truncation; paired bootstrap differences of HSS between models; and
Spearman correlations across all (model, document) pairs between HSS and the direct signals,
plus the same with rewriting held fixed (partial correlation on ranks). With --errors (a CSV of
doc_id, model, errors from a hand check) it adds HSS against hand-counted errors.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.stats import rankdata, spearmanr

from hss_gate.scoring.severity import bootstrap_ci, paired_bootstrap_ci


def _fmt(values) -> str:
    low, high = bootstrap_ci(values, resamples=1000, seed=0)
    return f"{np.mean(values):.3f} [{low:.3f}, {high:.3f}]"


def _partial_spearman(x, y, control) -> float:
    rx, ry, rc = (rankdata(v) for v in (x, y, control))
    resid = [r - np.polyval(np.polyfit(rc, r, 1), rc) for r in (rx, ry)]
    return float(np.corrcoef(*resid)[0, 1])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("runs", nargs="+", help="NAME=DIR")
    parser.add_argument("--errors", help="CSV doc_id,model,errors (hand check)")
    args = parser.parse_args()
    frames = []
    for item in args.runs:
        name, _, directory = item.partition("=")
        docs = pd.read_csv(Path(directory) / "documents.csv")
        meta = json.loads((Path(directory) / "summary.json").read_text())
        docs["model"] = name
        docs["wall_time_s"] = meta.get("wall_time_s")
        frames.append(docs)
    data = pd.concat(frames, ignore_index=True)

    print(
        "| model | HSS (aware) | HSS (raw) | unsupported ent/num | rewriting (novel 4-grams) "
        "| truncated | wall s |"
    )
    print("|---|---|---|---|---|---|---|")
    for name, g in data.groupby("model", sort=False):
        print(
            f"| {name} | {_fmt(g.hss_aware)} | {_fmt(g.hss_raw)} | "
            f"{_fmt(g.base_unsupported_share)} | {_fmt(g.base_novel_ngram_share)} | "
            f"{g.base_truncated.mean():.0%} | {g.wall_time_s.iloc[0]} |"
        )

    print("\nHSS (aware) by category, mean [95% bootstrap CI]:")
    cats = sorted(data.category.unique())
    models = list(dict.fromkeys(data.model))
    print("| category | " + " | ".join(models) + " |")
    print("|---|" + "---|" * len(models))
    for cat in cats:
        cells = [_fmt(data[(data.model == m) & (data.category == cat)].hss_aware) for m in models]
        print(f"| {cat} | " + " | ".join(cells) + " |")

    names = list(dict.fromkeys(data.model))
    print("\nPaired differences of HSS (row - column), mean [95% CI] over shared documents:")
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            pa = data[data.model == a].set_index("doc_id")
            pb = data[data.model == b].set_index("doc_id")
            shared = pa.index.intersection(pb.index)
            for col in ("hss_aware", "hss_raw"):
                mean, low, high = paired_bootstrap_ci(pa.loc[shared, col], pb.loc[shared, col])
                print(f"  {a} - {b} ({col}): {mean:+.3f} [{low:+.3f}, {high:+.3f}]")

    print("\nSpearman over all (model, document) pairs:")
    for col in ("hss_aware", "hss_raw"):
        for signal in ("base_unsupported_share", "base_novel_ngram_share"):
            rho, p = spearmanr(data[col], data[signal])
            print(f"  {col} vs {signal}: rho={rho:+.3f} (p={p:.3g})")
        partial = _partial_spearman(
            data[col], data.base_unsupported_share, data.base_novel_ngram_share
        )
        print(
            f"  {col} vs unsupported share, rewriting held fixed (partial rank r): {partial:+.3f}"
        )
    print("\nWithin each model (Spearman across documents):")
    for name, g in data.groupby("model", sort=False):
        if g.base_unsupported_share.nunique() > 1:
            rho, _ = spearmanr(g.hss_aware, g.base_unsupported_share)
            print(f"  {name}: hss_aware vs unsupported share rho={rho:+.3f}")
        if g.base_novel_ngram_share.nunique() > 1:
            rho, _ = spearmanr(g.hss_aware, g.base_novel_ngram_share)
            print(f"  {name}: hss_aware vs rewriting rho={rho:+.3f}")

    if args.errors:
        errors = pd.read_csv(args.errors)
        merged = data.merge(errors, on=["doc_id", "model"])
        print(f"\nHand check ({len(merged)} summaries):")
        for name, g in merged.groupby("model", sort=False):
            print(
                f"  {name}: {g.errors.sum()} errors in {len(g)} summaries "
                f"({g.errors.mean():.2f} per summary); mean HSS aware {g.hss_aware.mean():.3f}"
            )
        for col in ("hss_aware", "hss_raw", "base_unsupported_share", "base_novel_ngram_share"):
            rho, p = spearmanr(merged[col], merged.errors)
            print(f"  errors vs {col}: rho={rho:+.3f} (p={p:.3g})")
        for name, g in merged.groupby("model", sort=False):
            if g.errors.nunique() > 1:
                rho, p = spearmanr(g.hss_aware, g.errors)
                print(f"  within {name}: errors vs hss_aware rho={rho:+.3f} (p={p:.3g})")
        partial = _partial_spearman(merged.hss_aware, merged.errors, merged.base_novel_ngram_share)
        print(f"  partial (rewriting held fixed): errors vs hss_aware {partial:+.3f}")


if __name__ == "__main__":
    main()
