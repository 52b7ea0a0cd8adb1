"""Which signal follows the hand-counted factual errors within a model? (docs/evidence)

Spearman correlations, per model and pooled, of the errors counted by hand in
docs/evidence/handcheck_errors.csv with each document's HSS, its base summary's inconsistency
(1 - the checker's consistency), the consistency lost under perturbation (content-level
instability), the unsupported entity/number share and the rewriting share.

    .venv/bin/python experiments/handcheck_signals.py qwen=data/baseline/reference \
        smollm2=outputs/warm-gguf_smollm2-135m-instruct gemma3-270m=outputs/warm-gguf_gemma3-270m
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

REPO = Path(__file__).resolve().parents[1]
SIGNALS = {
    "HSS": lambda d: d["hss"],
    "inconsistency (1 - consistency)": lambda d: 1 - d["base_consistency"],
    "consistency drop under perturbation": lambda d: d["consistency_drop_mean"],
    "unsupported entities/numbers": lambda d: d["base_unsupported_share"],
    "rewriting (novel 4-grams)": lambda d: d["base_novel_ngram_share"],
}


def main(argv: list[str]) -> int:
    errors = pd.read_csv(REPO / "docs" / "evidence" / "handcheck_errors.csv")
    frames = []
    for arg in argv:
        alias, _, run = arg.partition("=")
        documents = pd.read_csv(Path(run) / "documents.csv")
        if "hss" not in documents:  # a reference run: HSS from the production scores
            scores = pd.read_csv(REPO / "data" / "baseline" / "production_scores.csv")
            documents = documents.merge(scores[["doc_id", "hss"]], on="doc_id")
        frames.append(documents.assign(model=alias))
    merged = pd.concat(frames).merge(errors[["doc_id", "model", "errors"]], on=["doc_id", "model"])
    print("| scope | n | errors | " + " | ".join(SIGNALS) + " |")
    print("|---|---|---|" + "---|" * len(SIGNALS))
    for scope, group in [("pooled", merged), *merged.groupby("model")]:
        cells = []
        for signal in SIGNALS.values():
            rho = stats.spearmanr(signal(group), group["errors"]).statistic
            cells.append("n/a" if np.isnan(rho) else f"{rho:+.2f}")
        print(
            f"| {scope} | {len(group)} | {int(group['errors'].sum())} | " + " | ".join(cells) + " |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
