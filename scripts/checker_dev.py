"""Development of the `invented` checker (issue 22): every number of docs/CHECKER_DEV.md.

    PYTHONPATH=. .venv/bin/python scripts/checker_dev.py lm     # LM contrast on a subset (slow)
    PYTHONPATH=. .venv/bin/python scripts/checker_dev.py split  # sentence splitters
    PYTHONPATH=. .venv/bin/python scripts/checker_dev.py eval   # signals alone, LODO, system level

Development data only: /work/shared/data/external (SummaC SummEval and FactCC subsets, QAGS
CNN/DM, FRANK CNN/DM), each cased as distributed and lower-cased. Every expensive result is
cached under --cache (default /work/checker-cache), so reruns are cheap.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from pathlib import Path

import numpy as np

from hss_gate.research.factuality_data import LabelledPair, qags_pairs, summac_pairs

REPO = Path(__file__).resolve().parents[1]
DATA = Path("/work/shared/data/external")
SETS = ("summeval", "factcc", "qags", "frank")


def load_sets(data: Path = DATA) -> dict[str, list[LabelledPair]]:
    """The four labelled development sets (label 1 = consistent)."""
    out = {
        "summeval": summac_pairs(json.loads((data / "summac_summeval.json").read_text())),
        "factcc": summac_pairs(json.loads((data / "summac_factcc.json").read_text())),
        "qags": qags_pairs((data / "qags_mturk_cnndm.jsonl").read_text().splitlines()),
    }
    docs = {}
    for line in (data / "frank_cnndm" / "documents.jsonl").read_text().splitlines():
        rec = json.loads(line)
        docs[rec["doc_id"]] = rec["document"]
    frank = []
    for i, line in enumerate((data / "frank_cnndm" / "summaries.jsonl").read_text().splitlines()):
        rec = json.loads(line)
        frank.append(
            LabelledPair(f"{rec['doc_id']}|{rec['system']}", docs[rec["doc_id"]], rec["summary"],
                         int(rec["factual"]))
        )
    out["frank"] = frank
    return out


def frank_meta(data: Path = DATA) -> list[dict]:
    return [json.loads(x) for x in (data / "frank_cnndm" / "summaries.jsonl").read_text().splitlines()]


def variant(pairs: list[LabelledPair], lower: bool) -> list[LabelledPair]:
    if not lower:
        return pairs
    return [LabelledPair(p.id, p.document.lower(), p.summary.lower(), p.label) for p in pairs]


def key(*parts: str) -> str:
    h = hashlib.sha256()
    for p in parts:
        h.update(p.encode())
        h.update(b"\0")
    return h.hexdigest()


class JsonlCache:
    """Append-only key -> JSON value store (one file)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.data: dict[str, object] = {}
        if path.exists():
            for line in path.read_text().splitlines():
                try:
                    k, v = json.loads(line)
                except ValueError:
                    continue
                self.data[k] = v

    def get(self, k: str):
        return self.data.get(k)

    def put(self, k: str, v: object) -> None:
        self.data[k] = v
        with self.path.open("a") as f:
            f.write(json.dumps([k, v]) + "\n")


def lm_subset(sets: dict[str, list[LabelledPair]], per_set: int, seed: int = 0) -> dict[str, list[LabelledPair]]:
    """A stratified, document-grouped subset: whole documents (all their summaries) in a fixed
    random order until `per_set` pairs, so the source prefix is reused across summaries."""
    rng = np.random.default_rng(seed)
    out = {}
    for name, pairs in sets.items():
        by_doc: dict[str, list[LabelledPair]] = {}
        for p in pairs:
            by_doc.setdefault(p.document, []).append(p)
        docs = list(by_doc)
        order = rng.permutation(len(docs))
        chosen: list[LabelledPair] = []
        for i in order:
            if len(chosen) >= per_set:
                break
            chosen += by_doc[docs[i]]
        out[name] = chosen
    return out


def cmd_lm(args) -> int:
    import torch

    from hss_gate.consistency.lm_contrast import ContrastScorer, load_lm

    torch.set_num_threads(args.threads)
    cache = JsonlCache(Path(args.cache) / "lm_contrast.jsonl")
    t0 = time.time()
    model, tok, fp = load_lm(args.models_dir)
    print(f"loaded {fp} in {time.time() - t0:.1f} s", flush=True)
    scorer = ContrastScorer(model, tok, fp, max_source_tokens=args.max_source_tokens)
    sets = lm_subset(load_sets(), args.per_set)
    done = computed = 0
    spent = 0.0
    for lower in [False, True] if args.lower else [False]:
        for name, pairs in sets.items():
            for p in variant(pairs, lower):
                k = key(fp, str(args.max_source_tokens), p.document, p.summary)
                done += 1
                if cache.get(k) is not None:
                    continue
                t = time.time()
                c = scorer.contrast(p.document, p.summary)
                spent += time.time() - t
                computed += 1
                cache.put(k, c.to_dict())
                if computed % 10 == 0:
                    print(f"[lm] {name}{'/lower' if lower else ''} {done} pairs, {computed} computed, "
                          f"{spent / computed:.2f} s/pair, truncated sources {scorer.truncations}",
                          flush=True)
    print(f"[lm] done: {computed} computed, {spent / max(computed, 1):.2f} s per pair", flush=True)
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cache", default="/work/checker-cache")
    parser.add_argument("--models-dir", default=str(REPO / ".hss" / "models"))
    sub = parser.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("lm")
    p.add_argument("--per-set", type=int, default=60)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--max-source-tokens", type=int, default=640)
    p.add_argument("--lower", action="store_true")
    sub.add_parser("split")
    b = sub.add_parser("sbert")
    b.add_argument("--threads", type=int, default=1)
    e = sub.add_parser("eval")
    e.add_argument("--lm", action="store_true", help="add the LM contrast signals (subset only)")
    args = parser.parse_args()
    Path(args.cache).mkdir(parents=True, exist_ok=True)
    return {"lm": cmd_lm, "split": cmd_split, "eval": cmd_eval, "sbert": cmd_sbert}[args.cmd](args)


def cmd_sbert(args) -> int:
    """The current default checker (`sbert`: SummaC-ZS over SBERT cosines) on every set."""
    import torch

    from hss_gate.cache import Cache
    from hss_gate.consistency.checker import load_checker
    from hss_gate.consistency.model import cached_encoder
    from hss_gate.embedding import SbertEmbedder

    torch.set_num_threads(args.threads)
    out = JsonlCache(Path(args.cache) / "sbert_scores.jsonl")
    embedder = SbertEmbedder("all-minilm-l6-v2")
    encode = cached_encoder(embedder, Cache(Path(args.cache) / "hss"))
    checker = load_checker("sbert", "", None, encode, embedder.fingerprint)
    for lower in (False, True):
        for name, pairs in load_sets().items():
            t = time.time()
            todo = [p for p in variant(pairs, lower) if out.get(key("sbert", p.document, p.summary)) is None]
            for i, p in enumerate(todo):
                v = checker.check([(p.document, p.summary)])[0]
                out.put(key("sbert", p.document, p.summary), v.consistency)
                if (i + 1) % 50 == 0:
                    print(f"[sbert] {name}{'/lower' if lower else ''} {i + 1}/{len(todo)} "
                          f"{(time.time() - t) / (i + 1):.2f} s/pair", flush=True)
            print(f"[sbert] {name}{'/lower' if lower else ''} done", flush=True)
    return 0


def cmd_split(args) -> int:
    raise SystemExit("not yet")


# ----------------------------------------------------------------------------- evaluation

BASELINES = ("sbert", "precision")


def pair_features(sets_by_variant, cache_dir: Path) -> dict:
    """{(set, lower): (feature matrix dict name -> array, labels, pairs)} for every set."""
    from hss_gate.consistency.features import overlap_scores
    from hss_gate.consistency.novelty import (
        glove_ranks, novelty_features, prepare, sentence_novelty,
    )
    from hss_gate.consistency.segment import split_text

    ranks = glove_ranks().get
    sbert = JsonlCache(cache_dir / "sbert_scores.jsonl")
    out = {}
    for (name, lower), pairs in sets_by_variant.items():
        t = time.time()
        feats: dict[str, list[float]] = {}
        prepared: dict[str, object] = {}
        for p in pairs:
            src = prepared.get(p.document) or prepare(p.document)
            prepared = {p.document: src}
            sents = [sentence_novelty(x, src, ranks) for x in split_text(p.summary)]
            f = novelty_features(sents)
            f["precision"] = overlap_scores(p.document, p.summary).precision
            sb = sbert.get(key("sbert", p.document, p.summary))
            f["sbert"] = float("nan") if sb is None else float(sb)
            f["n_sentences"] = float(len(sents))
            for k, v in f.items():
                feats.setdefault(k, []).append(v)
        out[(name, lower)] = ({k: np.asarray(v) for k, v in feats.items()},
                              np.array([p.label for p in pairs]), pairs)
        print(f"[features] {name}{'/lower' if lower else ''}: {len(pairs)} pairs "
              f"{(time.time() - t) / len(pairs) * 1000:.1f} ms/pair", flush=True)
    return out


def orient(name: str, values: np.ndarray) -> np.ndarray:
    """Higher = more consistent: novelty features are negated."""
    return values if name in ("precision", "sbert", "n_sentences") or name.startswith("lm_") and name.endswith("_pos") else -values


def cmd_eval(args) -> int:
    raise SystemExit("not yet")


if __name__ == "__main__":
    sys.exit(main())
