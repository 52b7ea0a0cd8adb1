"""Measure the factuality comparators against human labels (docs/FACTUALITY.md).

Data (never copied into the repo): the SummaC benchmark's summeval and factcc subsets
(summac_*.json: key -> record with document, claim, label 1 = consistent) and QAGS CNN/DM
(qags_mturk_cnndm.jsonl: a summary is inconsistent if any sentence has a majority of "no").

    .venv/bin/python scripts/factuality_benchmark.py --data ../shared/data/external

prints the table and writes OUT/benchmark.csv (one row per dataset and candidate) and
OUT/scores.csv (per item: dataset, id, label and every candidate's score; no text).

Thresholds for balanced accuracy are never chosen on the labels they are scored on:
- bacc_cv: 5-fold stratified cross-fitting within the dataset (threshold picked on the other
  four folds), averaged over 10 random fold assignments;
- bacc_0.5: a fixed threshold of 0.5, for the candidates whose score is a probability;
- bacc_summeval_thr: the threshold that is best on summeval (SummaC's val cut), applied to the
  other datasets.
SummaC-Conv is fitted twice, never on the data it is scored on: on synthetic summaries of the
reference corpus (summac_conv) and on summeval (summac_conv_summeval, scored on the others).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

from hss_gate.common import io as hss_io
from hss_gate.consistency import aggregation, calibration, features, training
from hss_gate.consistency import model as consistency_model
from hss_gate.consistency import scorer as pair_scorer
from hss_gate.research import factuality_data
from hss_gate.settings import load_settings

REPO = Path(__file__).resolve().parents[1]

DATASETS = {
    "summeval": "summac_summeval.json",
    "factcc": "summac_factcc.json",
    "qags_cnndm": "qags_mturk_cnndm.jsonl",
}
# probability-valued candidates (a fixed 0.5 threshold is meaningful for them)
PROBABILITIES = (
    "summac_zs",
    "factcc",
    "summac_conv",
    "summac_conv_summeval",
    "factcc_lexical_zs",
    "factcc_sbert_only_zs",
)
SUMMAC_PUBLISHED = {"summac_zs": 0.721, "summac_conv": 0.744}  # full benchmark, balanced acc.
ABLATIONS = {
    "factcc_lexical_zs": [f for f in features.FEATURES if not f.startswith("cos_")],
    "factcc_sbert_only_zs": ["cos_max", "cos_second"],
}


def load_dataset(path: Path) -> list[factuality_data.LabelledPair]:
    if path.suffix == ".jsonl":
        return factuality_data.qags_pairs(path.read_text(encoding="utf-8").splitlines())
    return factuality_data.summac_pairs(json.loads(path.read_text(encoding="utf-8")))


def bootstrap_auc(labels: np.ndarray, scores: np.ndarray, n: int = 1000, seed: int = 0):
    rng = np.random.default_rng(seed)
    values = []
    for _ in range(n):
        idx = rng.integers(0, len(labels), len(labels))
        if 0 < labels[idx].sum() < len(idx):
            values.append(calibration.roc_auc(labels[idx], scores[idx]))
    return float(np.percentile(values, 2.5)), float(np.percentile(values, 97.5))


def ablation_models(
    tagged, encode, seed: int
) -> dict[str, tuple[list[int], consistency_model.LogisticModel]]:
    """The pair classifier refitted on feature subsets (same synthetic training documents)."""
    data = training.synthetic_training_set(tagged, seed)
    placeholder = consistency_model.LogisticModel(
        features.FEATURES,
        (0.0,) * len(features.FEATURES),
        (1.0,) * len(features.FEATURES),
        (0.0,) * len(features.FEATURES),
        0.0,
    )
    model = consistency_model.FactccModel(placeholder, encode, "features")
    encode([c.text for c in data.claims])
    x = model.features([data.documents[o] for o in data.owner], [c.text for c in data.claims])
    y = np.array([c.label for c in data.claims])
    train = ~np.isin(np.array(data.owner), sorted(data.dev))
    out = {}
    for name, names in ABLATIONS.items():
        idx = [features.FEATURES.index(f) for f in names]
        out[name] = (idx, training.fit_logistic(x[train][:, idx], y[train], names))
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", default=str(REPO.parent / "shared" / "data" / "external"))
    parser.add_argument("--out", default="outputs/factuality_benchmark")
    parser.add_argument("--weights", default=None, help="default consistency.weights_dir")
    parser.add_argument("--corpus", default=None, help="training documents (default run.corpus)")
    parser.add_argument("--cache", default=None, help="SBERT embedding cache (run.cache_dir)")
    parser.add_argument("--limit", type=int, default=None, help="first N items per dataset")
    parser.add_argument("--seed", type=int, default=13)
    args = parser.parse_args()
    settings = load_settings("params.yaml")
    args.weights = args.weights or settings.consistency.weights_dir
    args.corpus = args.corpus or settings.run.corpus
    args.cache = args.cache or settings.run.cache_dir

    from hss_gate.common.cache import Cache
    from hss_gate.common.inputs import load_corpus
    from hss_gate.models.embedding import SbertEmbedder
    from hss_gate.models.language import SpacyTagger
    from hss_gate.text.mentions import unsupported_share

    data_dir = Path(args.data)
    missing = [f for f in DATASETS.values() if not (data_dir / f).exists()]
    if missing:
        print(f"error: {data_dir}: missing {', '.join(missing)}", file=sys.stderr)
        return 2
    started = time.time()
    encode = consistency_model.VectorCache(
        consistency_model.cached_encoder(SbertEmbedder(), Cache(args.cache))
    )
    tagger = SpacyTagger()
    tagged = training.tag_documents(tagger.nlp, [d.text for d in load_corpus(args.corpus)])
    if consistency_model.weights_path(args.weights).exists():
        weights = consistency_model.load_factcc_weights(args.weights)
    else:
        weights = training.train_factcc(tagged, encode, seed=args.seed, progress=print)
        consistency_model.save_factcc_weights(args.weights, weights)
    print(f"weights {weights.fingerprint}: {json.dumps(weights.provenance)}")
    ablations = ablation_models(tagged, encode, args.seed)
    scorer = pair_scorer.FactualityComparators(weights, encode)

    items: dict[str, list[dict]] = {}
    feature_cache: dict[str, list[np.ndarray]] = {}
    for name, file in DATASETS.items():
        pairs = load_dataset(data_dir / file)[: args.limit]
        t0 = time.time()
        encode(
            [
                s
                for p in pairs
                for s in (
                    *features.split_sentences(p.document),
                    *features.split_sentences(p.summary),
                )
            ]
        )
        mentions = tagger.mentions([features.truecase(p.summary, p.document) for p in pairs])
        rows, feats = [], []
        for pair, ment in zip(pairs, mentions, strict=True):
            row = scorer.score(pair.document, pair.summary)
            sentences = features.split_sentences(pair.summary)
            x = scorer.factcc.sentence_features(pair.document, sentences)
            feats.append(x)
            for ab, (idx, model) in ablations.items():
                m = model.predict_proba(x[..., idx].reshape(-1, len(idx))).reshape(x.shape[:2])
                row[ab] = aggregation.summac_zs(m)
            row["entity_support"] = 1.0 - unsupported_share(ment, pair.document)
            rows.append({"dataset": name, "id": pair.id, "label": pair.label} | row)
        items[name], feature_cache[name] = rows, feats
        print(f"{name}: {len(rows)} pairs scored in {time.time() - t0:.0f} s")

    # SummaC-Conv fitted on summeval (SummaC's val cut), applied to the other datasets
    def matrices(name: str) -> list[np.ndarray]:
        logistic = weights.logistic
        return [
            logistic.predict_proba(x.reshape(-1, len(features.FEATURES))).reshape(x.shape[:2])
            if x.size
            else np.zeros(x.shape[:2])
            for x in feature_cache[name]
        ]

    conv_se = aggregation.fit_conv(
        matrices("summeval"),
        [r["label"] for r in items["summeval"]],
        bins=weights.conv.bins if weights.conv else 20,
        l2=1e-4,
    )
    for name in DATASETS:
        for row, m in zip(items[name], matrices(name), strict=True):
            row["summac_conv_summeval"] = conv_se.score(m) if name != "summeval" else np.nan

    candidates = [
        "summac_zs",
        "summac_conv",
        "summac_conv_summeval",
        "factcc",
        "sbert_zs",
        *ABLATIONS,
        "entity_support",
        "precision",
        "recall",
        "f1",
    ]
    thresholds = {}
    se_labels = np.array([r["label"] for r in items["summeval"]])
    for c in candidates:
        s = np.array([r[c] for r in items["summeval"]], dtype=float)
        if np.isfinite(s).all():
            thresholds[c] = calibration.best_threshold(se_labels, s)
    table = []
    for name in DATASETS:
        labels = np.array([r["label"] for r in items[name]])
        for c in candidates:
            s = np.array([r[c] for r in items[name]], dtype=float)
            if not np.isfinite(s).all():
                continue
            lo, hi = bootstrap_auc(labels, s)
            table.append(
                {
                    "dataset": name,
                    "candidate": c,
                    "n": len(labels),
                    "n_inconsistent": int((labels == 0).sum()),
                    "auc": calibration.roc_auc(labels, s),
                    "auc_ci_low": lo,
                    "auc_ci_high": hi,
                    "bacc_cv": calibration.cross_fit_balanced_accuracy(labels, s, seed=args.seed),
                    "bacc_0.5": calibration.balanced_accuracy(labels, s >= 0.5)
                    if c in PROBABILITIES or c == "consistency"
                    else np.nan,
                    "bacc_summeval_thr": calibration.balanced_accuracy(labels, s >= thresholds[c])
                    if name != "summeval" and c in thresholds
                    else np.nan,
                    "summac_published_bacc": SUMMAC_PUBLISHED.get(c, np.nan),
                }
            )
    out = Path(args.out)
    hss_io.write_rows_csv_atomic(out / "benchmark.csv", table, list(table[0]))
    score_cols = ["dataset", "id", "label", *candidates]
    hss_io.write_rows_csv_atomic(
        out / "scores.csv", [r for n in DATASETS for r in items[n]], score_cols
    )

    print(
        f"\n{'dataset':<11} {'candidate':<22} {'AUC':>6} {'95% CI':>13} {'bacc_cv':>8} "
        f"{'bacc.5':>7} {'bacc_se':>8}"
    )
    for r in table:

        def f(v: float) -> str:
            return "" if v != v else f"{v:.3f}"

        print(
            f"{r['dataset']:<11} {r['candidate']:<22} {f(r['auc']):>6} "
            f"{f(r['auc_ci_low']) + '-' + f(r['auc_ci_high']):>13} {f(r['bacc_cv']):>8} "
            f"{f(r['bacc_0.5']):>7} {f(r['bacc_summeval_thr']):>8}"
        )
    print(
        f"\nSummaC published balanced accuracy (their full 6-dataset benchmark): "
        f"ZS {SUMMAC_PUBLISHED['summac_zs']}, Conv {SUMMAC_PUBLISHED['summac_conv']}"
    )
    print(f"wrote {out}/benchmark.csv and {out}/scores.csv in {time.time() - started:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
