"""The entailment checker beside the shipped ones (issue 33, item 3): every number of the
side-by-side table in docs/FACTUALITY.md.

    PYTHONPATH=. .venv/bin/python scripts/entail_dev.py score --checker entail
    PYTHONPATH=. .venv/bin/python scripts/entail_dev.py score --checker invented-sbert
    PYTHONPATH=. .venv/bin/python scripts/entail_dev.py score --checker sbert
    PYTHONPATH=. .venv/bin/python scripts/entail_dev.py claims   # LLM restatements of FRANK
    PYTHONPATH=. .venv/bin/python scripts/entail_dev.py table

`score` scores, with one checker, the four labelled development sets (cased and lower-cased),
the held-out synthetic checks (document-grounded pairs made by the training recipe from FRANK's
articles, a collection the adapter never saw; and the LLM-written one-sentence summaries with
their corruptions of scripts/llm_claims.py) and production's reference summaries
(data/baseline/reference). For `entail` it keeps each summary sentence's best chunk score, so
`table` can aggregate by mean and by min from one run. Results are cached in --cache by the
checker's fingerprint and the pair's text: a rerun scores only what is new.
"""

# ruff: noqa: E501  (a development script: wide tables)
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "scripts"))

from checker_dev import DATA, SETS, load_sets, variant  # noqa: E402
from checker_dev import key as _key  # noqa: E402

from hss_gate.consistency.calibration import roc_auc  # noqa: E402

CACHE = REPO / "outputs" / "checker-dev"


def synthetic_pairs(n_documents: int = 120, per_document: int = 6) -> list[dict]:
    """The training recipe's document-grounded pairs from FRANK's articles (held out)."""
    from hss_gate.consistency import entailment_data as ed

    documents = ed.read_documents(DATA / "frank_cnndm" / "documents.jsonl")[:n_documents]
    pairs = ed.document_pairs(documents, per_document, seed=101)
    return [
        {
            "id": f"syn{i}",
            "document": p.premise,
            "summary": p.hypothesis,
            "label": p.label,
            "kind": p.kind,
        }
        for i, p in enumerate(pairs)
    ]


def llm_pairs(path: Path) -> list[dict]:
    if not path.is_file():
        return []
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


def llm_passage_pairs(path: Path) -> list[dict]:
    """LLM restatements of FRANK passages (written as `hss checker claims` writes the training
    claims, scripts/entail_dev.py claims) against their corruptions: the abstractive check of the
    training recipe on held-out documents."""
    from hss_gate.consistency import entailment_data as ed

    if not path.is_file():
        return []
    rows = [json.loads(x) for x in path.read_text().splitlines() if x.strip()]
    return [
        {"id": f"llmp{i}", "document": p.premise, "summary": p.hypothesis, "label": p.label}
        for i, p in enumerate(ed.llm_pairs(rows, seed=101))
    ]


def production_pairs() -> list[dict]:
    corpus = {}
    for line in (REPO / "data" / "reference" / "corpus.jsonl").read_text().splitlines():
        rec = json.loads(line)
        corpus[rec["doc_id"]] = rec["text"]
    out = []
    for line in (
        (REPO / "data" / "baseline" / "reference" / "summaries.jsonl").read_text().splitlines()
    ):
        rec = json.loads(line)
        if rec["strength"] == "base":
            out.append(
                {
                    "id": rec["doc_id"],
                    "document": corpus[rec["doc_id"]],
                    "summary": rec["summary"],
                    "label": -1,
                }
            )
    return out


def groups(args) -> dict[str, list[dict]]:
    sets = load_sets()
    out: dict[str, list[dict]] = {}
    for name in SETS:
        for lower in (False, True):
            out[f"{name}{' lower' if lower else ''}"] = [
                {"id": p.id, "document": p.document, "summary": p.summary, "label": p.label}
                for p in variant(sets[name], lower)
            ]
    out["synthetic frank"] = synthetic_pairs()
    for path in sorted(Path(args.cache).glob("llm_claims_*.jsonl")):
        out[f"llm {path.stem.removeprefix('llm_claims_')}"] = llm_pairs(path)
    out["llm passages frank"] = llm_passage_pairs(Path(args.cache) / "llm_passages_frank.jsonl")
    out["production reference"] = production_pairs()
    return out


def cmd_claims(args) -> int:
    """LLM restatements of passages of FRANK's articles (held out of the checker's training)."""
    from hss_gate.settings import CheckerDocuments, load_settings
    from hss_gate.workflows.checker import write_llm_claims

    settings = load_settings(REPO / "params.yaml")
    settings.checker.documents = [
        CheckerDocuments(
            path=str(DATA / "frank_cnndm" / "documents.jsonl"),
            per_document=1,
            llm_per_document=args.per_document,
        )
    ]
    settings.checker.seed = 101
    settings.checker.llm_claims = str(Path(args.cache) / "llm_passages_frank.jsonl")
    write_llm_claims(settings)
    return 0


def build(checker_name: str):
    """(fingerprint, score(document, summary) -> list of per-sentence scores or one score)."""
    from hss_gate.cache import Cache
    from hss_gate.consistency.checker import load_checker
    from hss_gate.consistency.model import cached_encoder
    from hss_gate.embedding import SbertEmbedder
    from hss_gate.sentences import split_sentences

    embedder = SbertEmbedder("all-minilm-l6-v2")
    encode = cached_encoder(embedder, Cache(CACHE / "hss"))
    if checker_name == "entail":
        from hss_gate.consistency.entail_checker import load_entail_matrix

        matrix = load_entail_matrix(encode)
        checker = load_checker("entail", "", None, encode, embedder.fingerprint)

        def score(document: str, summary: str):
            sentences = split_sentences(summary)
            if not sentences:
                return []
            return [round(float(v), 6) for v in matrix(document, sentences).max(axis=1)]

        return checker.fingerprint.rsplit(":", 2)[0], score
    checker = load_checker(checker_name, "", None, encode, embedder.fingerprint)
    return checker.fingerprint, lambda d, s: checker.check([(d, s)])[0].consistency


def cmd_score(args) -> int:
    import torch

    torch.set_num_threads(args.threads)
    fingerprint, score = build(args.checker)
    path = Path(args.cache) / f"scores_{args.checker}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    seen = {}
    if path.is_file():
        for line in path.read_text().splitlines():
            k, v = json.loads(line)
            seen[k] = v
    wanted = args.groups.split(",") if args.groups else None
    with path.open("a") as f:
        for name, pairs in groups(args).items():
            if wanted and not any(name.startswith(w) for w in wanted):
                continue
            todo = [p for p in pairs if _key(fingerprint, p["document"], p["summary"]) not in seen]
            t = time.time()
            for i, p in enumerate(todo):
                k = _key(fingerprint, p["document"], p["summary"])
                seen[k] = score(p["document"], p["summary"])
                f.write(json.dumps([k, seen[k]]) + "\n")
                if (i + 1) % 100 == 0:
                    f.flush()
                    print(
                        f"[{args.checker}] {name} {i + 1}/{len(todo)} {(time.time() - t) / (i + 1):.3f} s/pair",
                        flush=True,
                    )
            if todo:
                print(
                    f"[{args.checker}] {name}: {len(todo)} pairs, {(time.time() - t) / len(todo):.3f} s/pair",
                    flush=True,
                )
    (Path(args.cache) / f"fingerprint_{args.checker}.txt").write_text(fingerprint + "\n")
    return 0


def _aggregate(value, how: str) -> float:
    if isinstance(value, list):
        if not value:
            return 1.0
        return float(np.mean(value) if how == "mean" else np.min(value))
    return float(value)


def load_scores(args, checker: str) -> tuple[str, dict] | None:
    """Cached scores of a checker; "entail-v1" reads entail's scores under the fingerprint kept
    in fingerprint_entail-v1.txt (an earlier adapter, compared side by side)."""
    path = Path(args.cache) / f"scores_{checker.split('-v')[0]}.jsonl"
    if not path.is_file() or not (Path(args.cache) / f"fingerprint_{checker}.txt").is_file():
        return None
    fingerprint = (Path(args.cache) / f"fingerprint_{checker}.txt").read_text().strip()
    seen = {}
    for line in path.read_text().splitlines():
        k, v = json.loads(line)
        seen[k] = v
    return fingerprint, seen


def cmd_table(args) -> int:
    data = groups(args)
    rows = []
    columns = [n for n in data if n != "production reference"]
    variants = [("entail", "mean"), ("entail", "min"), ("entail-v1", "mean"), ("entail-v1", "min")]
    variants += [("invented-sbert", ""), ("sbert", "")]
    thresholds = {"invented-sbert": 0.5648, "sbert": 0.818}
    for checker, how in variants:
        loaded = load_scores(args, checker)
        if loaded is None:
            continue
        fingerprint, seen = loaded
        cells, dev = [], []
        for name in columns:
            pairs = data[name]
            values = [seen.get(_key(fingerprint, p["document"], p["summary"])) for p in pairs]
            if any(v is None for v in values) or not pairs:
                cells.append("-")
                continue
            auc = roc_auc([p["label"] for p in pairs], [_aggregate(v, how) for v in values])
            cells.append(f"{auc:.3f}")
            if name.split()[0] in SETS:
                dev.append(auc)
        prod = data["production reference"]
        values = [seen.get(_key(fingerprint, p["document"], p["summary"])) for p in prod]
        flagged = "-"
        if all(v is not None for v in values):
            flagged = f"{np.mean([_aggregate(v, how) < thresholds.get(checker, args.entail_threshold) for v in values]):.0%}"
        worst = f"{min(dev):.3f}" if len(dev) == 2 * len(SETS) else "-"
        mean = f"{np.mean(dev):.3f}" if len(dev) == 2 * len(SETS) else "-"
        rows.append([f"{checker} {how}".strip(), *cells, worst, mean, flagged])
    header = ["checker", *columns, "worst dev", "mean dev", "production flagged"]
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for r in rows:
        print("| " + " | ".join(r) + " |")
    return 0


def cmd_systems(args) -> int:
    """FRANK's five systems, every ordered pair, through the gate's rule (research/systems.py)
    on the cached per-summary scores of `--checker` (entities not tagged, as `hss systems`)."""
    from hss_gate.research.systems import agreement, document_row, evaluate_pairs, read_judgements
    from hss_gate.settings import GateSettings

    fingerprint, seen = load_scores(args, args.checker)
    documents = {}
    for line in (DATA / "frank_cnndm" / "documents.jsonl").read_text().splitlines():
        rec = json.loads(line)
        documents[rec["doc_id"]] = rec["document"]
    rows: dict[str, list[dict]] = {}
    for line in (DATA / "frank_cnndm" / "summaries.jsonl").read_text().splitlines():
        rec = json.loads(line)
        value = seen[_key(fingerprint, documents[rec["doc_id"]], rec["summary"])]
        rows.setdefault(rec["system"], []).append(
            document_row(rec["doc_id"], _aggregate(value, args.aggregate), args.threshold, 0.0)
        )
    gate = GateSettings(consistency_margin=args.margin)
    judged = read_judgements(DATA / "frank_cnndm" / "summaries.jsonl")
    pairs = evaluate_pairs(rows, judged, gate)
    means = {
        s: round(float(np.mean([r["base_consistency"] for r in rs])), 3) for s, rs in rows.items()
    }
    humans = {s: round(float(np.mean(list(v.values()))), 3) for s, v in judged.items()}
    print(f"mean consistency per system: {means}; humans (share factual): {humans}")
    print(f"margin {args.margin}, threshold {args.threshold}: {agreement(pairs)}")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache", default=str(CACHE))
    sub = parser.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("score")
    s.add_argument("--checker", required=True, choices=("entail", "invented-sbert", "sbert"))
    s.add_argument("--groups", default="", help="comma-separated name prefixes (default: all)")
    s.add_argument("--threads", type=int, default=2)
    c = sub.add_parser("claims", help=cmd_claims.__doc__)
    c.add_argument("--per-document", type=int, default=1)
    t = sub.add_parser("table")
    t.add_argument("--entail-threshold", type=float, default=0.5)
    y = sub.add_parser("systems")
    y.add_argument("--checker", default="entail")
    y.add_argument("--aggregate", default="mean", choices=("mean", "min"))
    y.add_argument("--threshold", type=float, default=0.5)
    y.add_argument("--margin", type=float, default=0.07)
    args = parser.parse_args()
    commands = {
        "score": cmd_score,
        "claims": cmd_claims,
        "table": cmd_table,
        "systems": cmd_systems,
    }
    return commands[args.cmd](args)


if __name__ == "__main__":
    raise SystemExit(main())
