"""The `entail` checker on every labelled development set (docs/FACTUALITY.md, issue 43).

    PYTHONPATH=. .venv/bin/python scripts/checker_benchmark.py score [--adapter FILE] [--label L]
    PYTHONPATH=. .venv/bin/python scripts/checker_benchmark.py table [--label L ...]
    PYTHONPATH=. .venv/bin/python scripts/checker_benchmark.py lodo [--prefix fold_]
    PYTHONPATH=. .venv/bin/python scripts/checker_benchmark.py handcheck [--label L]

`score` reads each pair's summary sentences against their evidence with the claim checker as
the gate builds it (params.yaml's evidence settings; the shipped adapter unless --adapter) and
stores the per-sentence scores (--per-set N: N pairs a set drawn with seed 0) in
outputs/checker_benchmark/<label>.jsonl (resumable). `table`
aggregates them (mean, min, softmin) and prints ROC AUC per set, the share of production's
reference summaries below the threshold and each set's balanced accuracy at it (`score` prints
seconds per pair). Sets (never copied into the
repository): SummEdits' four development domains (all rows; `--splits evaluation` for the
earlier protocol), the SummaC SummEval
and FactCC subsets, QAGS CNN/DM and FRANK CNN/DM from ../shared/data/external.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
DATA = REPO.parent / "shared" / "data" / "external"
OUT = REPO / "outputs" / "checker_benchmark"
DOMAINS = ("podcast", "sales_call", "samsum", "scitldr")


def labelled_sets(
    data: Path, splits: tuple[str, ...] = ("evaluation", "test")
) -> dict[str, list[tuple[str, str, str, int]]]:
    """Set name -> (id, document, summary, label 1 = consistent); SummEdits' rows of `splits`
    (all of them by default)."""
    from hss_gate.research.factuality_data import qags_pairs, summac_pairs

    out: dict[str, list[tuple[str, str, str, int]]] = {}
    for domain in DOMAINS:
        rows = json.loads((data / "summedits" / f"summedits_{domain}.json").read_text())
        out[domain] = [
            (f"{domain}-{i}", r["doc"], r["summary"], int(r["label"]))
            for i, r in enumerate(rows)
            if r["split"] in splits
        ]
    for name in ("summeval", "factcc"):
        pairs = summac_pairs(json.loads((data / f"summac_{name}.json").read_text()))
        out[name] = [(p.id, p.document, p.summary, p.label) for p in pairs]
    qags = qags_pairs((data / "qags_mturk_cnndm.jsonl").read_text().splitlines())
    out["qags"] = [(p.id, p.document, p.summary, p.label) for p in qags]
    documents = {}
    for line in (data / "frank_cnndm" / "documents.jsonl").read_text().splitlines():
        rec = json.loads(line)
        documents[rec["doc_id"]] = rec["document"]
    out["frank"] = []
    for line in (data / "frank_cnndm" / "summaries.jsonl").read_text().splitlines():
        rec = json.loads(line)
        out["frank"].append(
            (
                f"{rec['doc_id']}|{rec['system']}",
                documents[rec["doc_id"]],
                rec["summary"],
                int(rec["factual"]),
            )
        )
    return out


def production_pairs(run: Path = REPO / "data" / "baseline" / "reference") -> list[tuple]:
    """The base summaries of a scored run (production's reference run unless `run`; label -1:
    no human label), with their documents from the reference corpus."""
    corpus = {}
    for line in (REPO / "data" / "reference" / "corpus.jsonl").read_text().splitlines():
        rec = json.loads(line)
        corpus[rec["doc_id"]] = rec["text"]
    rows = [json.loads(line) for line in (run / "summaries.jsonl").read_text().splitlines()]
    return [
        (r["doc_id"], corpus[r["doc_id"]], r["summary"], -1)
        for r in rows
        if r["strength"] == "base" and r["doc_id"] in corpus
    ]


def cmd_score(args) -> int:
    from hss_gate.common.cache import Cache
    from hss_gate.consistency.checker import load_checker
    from hss_gate.consistency.model import cached_encoder
    from hss_gate.models.embedding import SbertEmbedder
    from hss_gate.settings import load_settings

    settings = load_settings(str(REPO / "params.yaml"))
    embedder = SbertEmbedder(settings.score.embedder)
    encode = cached_encoder(embedder, Cache(REPO / ".hss" / "cache"))
    options = settings.consistency.entail_options()
    if args.adapter:
        options["adapter"] = args.adapter
    if args.top:
        options["evidence_top"], options["evidence_neighbours"] = args.top, args.neighbours
    checker = load_checker("entail", "", None, encode, embedder.fingerprint, **options)
    OUT.mkdir(parents=True, exist_ok=True)
    path = OUT / f"{args.label}.jsonl"
    done = set()
    if path.exists():
        done = {json.loads(line)["key"] for line in path.read_text().splitlines()}
    sets = labelled_sets(args.data, tuple(args.splits.split(",")))
    sets["production"] = production_pairs()
    if args.candidate:
        sets["candidate"] = production_pairs(Path(args.candidate))
    with path.open("a", encoding="utf-8") as out:
        for name in args.sets.split(","):
            chosen = sets[name]
            if args.per_set and len(chosen) > args.per_set:
                chosen = random.Random(0).sample(chosen, args.per_set)
            todo = [p for p in chosen if f"{name}/{p[0]}" not in done]
            start = time.perf_counter()
            for i in range(0, len(todo), args.batch):
                chunk = todo[i : i + args.batch]
                for (pid, _, _, label), read in zip(
                    chunk, checker.read([(d, s) for _, d, s, _ in chunk]), strict=True
                ):
                    record = {"key": f"{name}/{pid}", "set": name, "label": label}
                    out.write(json.dumps(record | {"scores": read.scores}) + "\n")
                out.flush()
                took = time.perf_counter() - start
                print(f"{name}: {i + len(chunk)}/{len(todo)} {took:.0f}s", flush=True)
            if todo:
                rate = (time.perf_counter() - start) / len(todo)
                print(f"{name}: {rate:.3f} s/pair", flush=True)
    return 0


def read_rows(label: str) -> list[dict]:
    """The stored per-sentence scores of a label, one row per pair (the last one kept)."""
    rows = [json.loads(x) for x in (OUT / f"{label}.jsonl").read_text().splitlines()]
    return list({r["key"]: r for r in rows}.values())


def production_threshold(scores: list[float], share: float) -> float:
    """The score below which `share` of production's reference summaries fall (no labels)."""
    return float(np.sort(scores)[int(share * len(scores))])


def cmd_lodo(args) -> int:
    """Leave one SummEdits domain out: the adapter `<prefix><domain>` (trained without it),
    scored on the left-out domain (AUC, balanced accuracy) and on production (flagged share).
    The threshold: `--rule labels`, the aggregate and threshold of the best mean balanced
    accuracy on the other three domains; `--rule production`, for each aggregate the score
    below which `--share` of production's summaries fall, the aggregate chosen on the other
    three domains' balanced accuracy (or fixed: `--aggregate`)."""
    from hss_gate.consistency.calibration import balanced_accuracy, roc_auc
    from hss_gate.consistency.entail_checker import AGGREGATES, aggregate_scores

    grid = np.round(np.arange(0.01, 0.99, 0.01), 2)
    found = []
    for held in DOMAINS:
        if not (OUT / f"{args.prefix}{held}.jsonl").exists():
            print(f"{args.prefix}{held}: not scored yet, left out of the table", file=sys.stderr)
            continue
        rows = read_rows(f"{args.prefix}{held}")
        by_set = {name: [r for r in rows if r["set"] == name] for name in (*DOMAINS, "production")}

        def scored(name: str, how: str) -> list[float]:
            return [aggregate_scores(r["scores"], how) for r in by_set[name]]  # noqa: B023

        def accuracy(name: str, how: str, threshold: float) -> float:
            labels = [r["label"] for r in by_set[name]]  # noqa: B023
            return balanced_accuracy(labels, [int(x >= threshold) for x in scored(name, how)])

        others = [d for d in DOMAINS if d != held and by_set[d]]
        if not others and not (args.aggregate and args.rule == "production"):
            raise SystemExit(f"{args.prefix}{held}: no other domain scored; pass --aggregate")
        best = (-1.0, "", 0.0)
        for how in [args.aggregate] if args.aggregate else AGGREGATES:
            if args.rule == "production":
                thresholds = [production_threshold(scored("production", how), args.share)]
            else:
                thresholds = list(grid)
            for threshold in thresholds:
                mean = np.mean([accuracy(d, how, threshold) for d in others]) if others else 0.0
                best = max(best, (float(mean), how, float(threshold)))
        train_bacc, how, threshold = best
        labels = [r["label"] for r in by_set[held]]
        production = scored("production", how)
        row = {
            "held_out": held,
            "aggregate": how,
            "threshold": round(threshold, 4),
            "train_bacc": round(train_bacc, 3),
            "auc": round(roc_auc(labels, scored(held, how)), 3),
            "auc_evaluation_rows": _auc_of_split(args.data, held, by_set[held], how, "evaluation"),
            "auc_test_rows": _auc_of_split(args.data, held, by_set[held], how, "test"),
            "bacc": round(accuracy(held, how, threshold), 3),
            "production_flagged": round(float(np.mean([x < threshold for x in production])), 3),
        }
        found.append(row)
        print(json.dumps(row))
    _oof_thresholds(args.prefix, args.aggregate or "min", found)
    for key in ("auc", "bacc", "production_flagged", "oof_bacc", "oof_production_flagged"):
        values = [r[key] for r in found if r.get(key) is not None]
        if not values:
            continue
        worst = max(values) if key.endswith("production_flagged") else min(values)
        print(f"{key}: mean {np.mean(values):.3f}, worst {worst:.3f}")
    return 0


def _oof_thresholds(prefix: str, how: str, found: list[dict]) -> None:
    """Beside each fold's production-quantile threshold, one chosen on labels: the threshold
    of the best balanced accuracy on the other folds' left-out rows (each scored by its own
    fold adapter, which did train on this fold's domain: a second-order leak, no row of this
    domain is read), with this fold's balanced accuracy and production flagged at it."""
    from hss_gate.consistency.calibration import balanced_accuracy, best_threshold
    from hss_gate.consistency.entail_checker import aggregate_scores

    held_rows = {}
    for row in found:
        rows = read_rows(f"{prefix}{row['held_out']}")
        held_rows[row["held_out"]] = rows
    for row in found:
        held = row["held_out"]
        others = [r for d, rows in held_rows.items() if d != held for r in rows if r["set"] == d]
        if not others:
            continue
        threshold = best_threshold(
            [r["label"] for r in others], [aggregate_scores(r["scores"], how) for r in others]
        )
        mine = [r for r in held_rows[held] if r["set"] == held]
        production = [r for r in held_rows[held] if r["set"] == "production"]
        predicted = [int(aggregate_scores(r["scores"], how) >= threshold) for r in mine]
        row["oof_threshold"] = round(threshold, 4)
        row["oof_bacc"] = round(balanced_accuracy([r["label"] for r in mine], predicted), 3)
        flagged = [aggregate_scores(r["scores"], how) < threshold for r in production]
        row["oof_production_flagged"] = round(float(np.mean(flagged)), 3)
        print(
            json.dumps(
                {
                    k: row[k]
                    for k in ("held_out", "oof_threshold", "oof_bacc", "oof_production_flagged")
                }
            )
        )


def _auc_of_split(data: Path, domain: str, rows: list[dict], how: str, split: str) -> float | None:
    """ROC AUC on the rows of one SummEdits split (keys `<domain>/<domain>-<row index>`)."""
    from hss_gate.consistency.calibration import roc_auc
    from hss_gate.consistency.entail_checker import aggregate_scores

    splits = [
        r["split"]
        for r in json.loads((data / "summedits" / f"summedits_{domain}.json").read_text())
    ]
    chosen = [r for r in rows if splits[int(r["key"].rsplit("-", 1)[1])] == split]
    if len({r["label"] for r in chosen}) < 2:
        return None
    scores = [aggregate_scores(r["scores"], how) for r in chosen]
    return round(roc_auc([r["label"] for r in chosen], scores), 3)


def cmd_handcheck(args) -> int:
    """`--per-group` sentences below the threshold and as many above it (drawn with seed 0) of
    production's reference summaries and, with --candidate, a candidate's, each with its score
    and document, as JSON lines: the hand check's sample (docs/FACTUALITY.md)."""
    from hss_gate.consistency.entail_checker import claims_of
    from hss_gate.consistency.entail_release import ENTAIL_THRESHOLD

    runs = {"production": production_pairs()}
    if args.candidate:
        runs["candidate"] = production_pairs(Path(args.candidate))
    summaries = {(name, p[0]): p[2] for name, pairs in runs.items() for p in pairs}
    sentences = []
    for row in read_rows(args.label):
        if row["set"] not in runs:
            continue
        doc_id = row["key"].split("/", 1)[1]
        summary = summaries[(row["set"], doc_id)]
        for claim, score in zip(claims_of(summary), row["scores"], strict=True):
            found = {"run": row["set"], "doc_id": doc_id, "sentence": claim}
            sentences.append(found | {"score": round(score, 4)})
    threshold = args.threshold if args.threshold is not None else ENTAIL_THRESHOLD
    flagged = [s for s in sentences if s["score"] < threshold]
    passed = [s for s in sentences if s["score"] >= threshold]
    print(f"{len(sentences)} sentences, {len(flagged)} below {threshold}", file=sys.stderr)
    draw = random.Random(0)
    for group, items in (("flagged", flagged), ("passed", passed)):
        for item in draw.sample(items, min(args.per_group, len(items))):
            print(json.dumps({"group": group} | item))
    return 0


def cmd_table(args) -> int:
    from hss_gate.consistency.calibration import balanced_accuracy, roc_auc
    from hss_gate.consistency.entail_checker import AGGREGATES, aggregate_scores
    from hss_gate.consistency.entail_release import ENTAIL_THRESHOLD

    for label in args.label.split(","):
        rows = read_rows(label)
        print(f"## {label}")
        for how in AGGREGATES:
            cells = []
            for name in (*DOMAINS, "summeval", "factcc", "qags", "frank", "production"):
                found = [r for r in rows if r["set"] == name]
                if not found:
                    continue
                scores = [aggregate_scores(r["scores"], how) for r in found]
                if name == "production":
                    flagged = np.mean([s < ENTAIL_THRESHOLD for s in scores])
                    cells.append(f"production flagged {flagged:.1%}")
                else:
                    labels = [r["label"] for r in found]
                    auc = roc_auc(labels, scores)
                    bacc = balanced_accuracy(labels, [int(x >= ENTAIL_THRESHOLD) for x in scores])
                    cells.append(f"{name} {auc:.3f} (bacc {bacc:.3f}, n {len(found)})")
            print(f"{how}: " + " | ".join(cells))
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    score = sub.add_parser("score")
    score.add_argument("--adapter", help="an adapter file instead of the shipped one")
    score.add_argument("--label", default="shipped")
    score.add_argument(
        "--sets", default=",".join((*DOMAINS, "summeval", "factcc", "qags", "frank", "production"))
    )
    score.add_argument("--batch", type=int, default=16)
    score.add_argument(
        "--candidate", help="a scored run's folder (its base summaries: set candidate)"
    )
    score.add_argument("--top", type=int, default=0, help="evidence_top (0: params.yaml's)")
    score.add_argument("--neighbours", type=int, default=1, help="evidence_neighbours with --top")
    score.add_argument(
        "--per-set", type=int, default=0, help="at most this many pairs a set (seed 0)"
    )
    score.add_argument("--data", type=Path, default=DATA)
    score.add_argument(
        "--splits",
        default="evaluation,test",
        help="SummEdits rows scored (until 2026-12-07: evaluation)",
    )
    table = sub.add_parser("table")
    table.add_argument("--label", default="shipped")
    lodo = sub.add_parser("lodo")
    lodo.add_argument("--prefix", default="fold_", help="labels <prefix><domain>")
    lodo.add_argument("--rule", choices=("labels", "production"), default="production")
    lodo.add_argument("--share", type=float, default=0.2, help="--rule production's share")
    lodo.add_argument("--aggregate", help="this aggregate only (default: chosen per fold)")
    lodo.add_argument("--data", type=Path, default=DATA)
    handcheck = sub.add_parser("handcheck")
    handcheck.add_argument("--label", default="shipped")
    handcheck.add_argument("--threshold", type=float, help="default: ENTAIL_THRESHOLD")
    handcheck.add_argument("--per-group", type=int, default=20)
    handcheck.add_argument("--candidate", help="the scored run `score --candidate` read")
    args = parser.parse_args()
    commands = {
        "score": cmd_score,
        "table": cmd_table,
        "lodo": cmd_lodo,
        "handcheck": cmd_handcheck,
    }
    return commands[args.command](args)


if __name__ == "__main__":
    sys.exit(main())
