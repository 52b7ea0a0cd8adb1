"""Calibrate the consistency checker's threshold on SummaC's SummEval subset and measure it on
every labelled set (docs/FACTUALITY.md).

The threshold is the one with the best balanced accuracy on SummEval (SummaC's validation cut,
SummaC's own calibration convention); FactCC and QAGS CNN/DM are held out: their balanced
accuracy at that threshold is an honest estimate. Prints the table and the threshold to put in
hss_gate/consistency/checker.py (SBERT_THRESHOLD).

    .venv/bin/python experiments/calibrate_checker.py [--data ../shared/data/external] \
        [--model sbert]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

from hss_gate.common.cache import Cache
from hss_gate.consistency.calibration import balanced_accuracy, best_threshold, roc_auc
from hss_gate.consistency.checker import load_checker
from hss_gate.consistency.model import cached_encoder
from hss_gate.models.embedding import SbertEmbedder
from hss_gate.research.factuality_data import qags_pairs, summac_pairs
from hss_gate.settings import load_settings

REPO = Path(__file__).resolve().parents[1]
DATASETS = {
    "summeval": "summac_summeval.json",
    "factcc": "summac_factcc.json",
    "qags_cnndm": "qags_mturk_cnndm.jsonl",
}
CALIBRATION = "summeval"


def load(path: Path):
    if path.suffix == ".jsonl":
        return qags_pairs(path.read_text(encoding="utf-8").splitlines())
    return summac_pairs(json.loads(path.read_text(encoding="utf-8")))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", default=str(REPO.parent / "shared" / "data" / "external"))
    parser.add_argument(
        "--model", default=None, help="sbert, factcc or entail (default: params.yaml)"
    )
    args = parser.parse_args()
    data = Path(args.data)
    missing = [f for f in DATASETS.values() if not (data / f).exists()]
    if missing:
        print(f"error: {data}: missing {', '.join(missing)}", file=sys.stderr)
        return 2
    settings = load_settings(REPO / "params.yaml")
    c = settings.consistency
    embedder = SbertEmbedder(settings.score.embedder)
    encode = cached_encoder(embedder, Cache(settings.run.cache_dir))
    model = args.model or c.model
    options = c.entail_options()
    checker = load_checker(model, c.weights_dir, 0.5, encode, embedder.fingerprint, **options)
    scores, labels = {}, {}
    for name, file in DATASETS.items():
        started = time.perf_counter()
        pairs = load(data / file)
        verdicts = checker.check([(p.document, p.summary) for p in pairs])
        scores[name] = np.array([v.consistency for v in verdicts])
        labels[name] = np.array([p.label for p in pairs])
        seconds = (time.perf_counter() - started) / len(pairs)
        print(f"{name}: {len(pairs)} pairs, {seconds:.3f} s per pair", file=sys.stderr)
    threshold = round(best_threshold(labels[CALIBRATION], scores[CALIBRATION]), 4)
    print(f"\nthreshold (best balanced accuracy on {CALIBRATION}): {threshold}\n")
    print("| dataset | n | inconsistent | ROC AUC | balanced accuracy at the threshold | role |")
    print("|---|---|---|---|---|---|")
    for name in DATASETS:
        y, s = labels[name], scores[name]
        bacc = balanced_accuracy(y, s >= threshold)
        role = "calibration (in-sample)" if name == CALIBRATION else "held out"
        print(
            f"| {name} | {len(y)} | {int((y == 0).sum())} | {roc_auc(y, s):.3f} | "
            f"{bacc:.3f} | {role} |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
