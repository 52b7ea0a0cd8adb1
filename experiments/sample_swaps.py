"""Print a random sample of swaps from a run's edit log, with context, for a manual audit.

usage: python experiments/sample_swaps.py RUN_DIR [N] [SEED]
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path

from hss_gate.common.inputs import load_corpus


def main() -> None:
    run = Path(sys.argv[1])
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 100
    rng = random.Random(int(sys.argv[3]) if len(sys.argv) > 3 else 0)
    meta = json.loads((run / "summary.json").read_text())
    texts = {d.doc_id: d.text for d in load_corpus(meta["corpus"])}
    edits = [json.loads(line) for line in (run / "edits.jsonl").read_text().splitlines()]
    unique = list({(e["doc_id"], e["char_start"]): e for e in edits}.values())
    for i, e in enumerate(rng.sample(unique, min(n, len(unique))), 1):
        text = texts[e["doc_id"]]
        start = max(0, e["char_start"] - 60)
        end = e["char_start"] + len(e["original"]) + 60
        context = (
            text[start : e["char_start"]]
            + "["
            + e["original"]
            + " -> "
            + e["replacement"]
            + "]"
            + text[e["char_start"] + len(e["original"]) : end]
        )
        print(
            f"{i:3d} {e['original']} -> {e['replacement']} "
            f"(cos {e['word_cosine']:.2f}, sent {e['sentence_similarity']:.3f}) | "
            + " ".join(context.split())
        )


if __name__ == "__main__":
    main()
