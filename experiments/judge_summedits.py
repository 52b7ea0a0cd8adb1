"""The `judge:` checker on the SummEdits development domains (issue 43, item 7): ROC AUC per
domain and the cost per pair, with whatever model an OpenAI-compatible endpoint serves.

    PYTHONPATH=. .venv/bin/python scripts/serve_gguf.py smollm2 --port 8090 &   # the judge
    PYTHONPATH=. .venv/bin/python experiments/judge_summedits.py --url http://127.0.0.1:8090/v1 \\
        --label smollm2 --per-domain 30 --out outputs/judge/smollm2.json

Pairs: the `evaluation` rows of each domain (never its `test` rows), `--per-domain` of them
drawn with `random.Random(seed).sample` (seed 5, as the issue's figures). Each pair is judged
with the checker `consistency.model: judge:openai:<url>` as the gate builds it (real SBERT for
the evidence, params.yaml's aggregate and evidence settings), on an empty answer cache in
--cache unless --reuse: the seconds are those of a first run (SBERT's load excluded, its
encoding included). AUC is hss_gate.consistency.calibration.roc_auc of the summary's
consistency against the human label (1 consistent); balanced accuracy at the judge's default
threshold (0.5) is printed beside it (not tuned: the figures a user gets out of the box).
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DOMAINS = ("podcast", "sales_call", "samsum", "scitldr")
DATA = REPO.parent / "shared" / "data" / "external" / "summedits"


def draw(domain: str, n: int, seed: int, data: Path = DATA) -> list[dict]:
    """`n` evaluation rows of the domain, drawn with `seed`."""
    rows = json.loads((data / f"summedits_{domain}.json").read_text(encoding="utf-8"))
    evaluation = [r for r in rows if r["split"] == "evaluation"]
    return random.Random(seed).sample(evaluation, min(n, len(evaluation)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", required=True, help="the endpoint's base URL (…/v1)")
    parser.add_argument("--label", required=True, help="the judge's name in the output")
    parser.add_argument("--per-domain", type=int, default=30)
    parser.add_argument("--seed", type=int, default=5)
    parser.add_argument("--domains", default=",".join(DOMAINS))
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--cache", type=Path, default=REPO / "outputs" / "judge" / "cache")
    parser.add_argument("--reuse", action="store_true", help="keep the answer cache")
    parser.add_argument("--out", type=Path)
    parser.add_argument("--params", default=str(REPO / "params.yaml"))
    args = parser.parse_args()

    import numpy as np

    from hss_gate.common.cache import Cache
    from hss_gate.consistency.calibration import balanced_accuracy, roc_auc
    from hss_gate.consistency.checker import load_checker
    from hss_gate.consistency.model import cached_encoder
    from hss_gate.models.embedding import SbertEmbedder
    from hss_gate.settings import load_settings

    settings = load_settings(args.params)
    if args.cache.exists() and not args.reuse:
        shutil.rmtree(args.cache)
    cache = Cache(args.cache)
    embedder = SbertEmbedder(settings.score.embedder)
    embedder.encode(["warm up"])  # SBERT's load is not the judge's cost
    encode = cached_encoder(embedder, cache)
    options = settings.consistency.entail_options()
    checker = load_checker(
        f"judge:openai:{args.url}", "", None, encode, embedder.fingerprint, **options, cache=cache
    )
    print(f"judge {args.label}: {checker.fingerprint}", flush=True)
    result: dict = {
        "judge": args.label,
        "fingerprint": checker.fingerprint,
        "per_domain": args.per_domain,
        "seed": args.seed,
        "domains": {},
    }
    total_s, total_pairs = 0.0, 0
    for domain in args.domains.split(","):
        rows = draw(domain, args.per_domain, args.seed, args.data)
        labels = [int(r["label"]) for r in rows]
        asked_before = checker.judge.asked
        start = time.perf_counter()
        verdicts = []
        for i, row in enumerate(rows, 1):
            verdicts.extend(checker.check([(row["doc"], row["summary"])]))
            if i % 10 == 0:
                print(f"  {domain}: {i}/{len(rows)} {time.perf_counter() - start:.0f}s", flush=True)
        seconds = time.perf_counter() - start
        scores = [v.consistency for v in verdicts]
        threshold = checker.threshold
        bacc = balanced_accuracy(labels, [int(s >= threshold) for s in scores])
        found = {
            "pairs": len(rows),
            "consistent": int(sum(labels)),
            "auc": round(roc_auc(labels, scores), 3),
            "balanced_accuracy_at_default": round(bacc, 3),
            "questions": checker.judge.asked - asked_before,
            "s_per_pair": round(seconds / len(rows), 2),
            "mean_consistency": round(float(np.mean(scores)), 3),
        }
        result["domains"][domain] = found
        total_s, total_pairs = total_s + seconds, total_pairs + len(rows)
        print(f"{domain}: {json.dumps(found)}", flush=True)
    aucs = [d["auc"] for d in result["domains"].values()]
    result["mean_auc"] = round(float(np.mean(aucs)), 3)
    result["s_per_pair"] = round(total_s / max(total_pairs, 1), 2)
    result["read_from"] = dict(checker.judge.read_from)
    result["requests"] = checker.judge.client.requests
    print(json.dumps(result, indent=1), flush=True)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    sys.exit(main())
