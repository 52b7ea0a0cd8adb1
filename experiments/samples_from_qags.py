"""Write production-style samples (JSONL for `hss samples ingest`) from QAGS CNN/DM.

The QAGS summaries come from a real abstractive summarizer, with human yes/no support labels per
sentence; they stand in for live traffic. The data stays in ../shared (never copied into git).

    python experiments/samples_from_qags.py --n 10 --out outputs/live_samples.jsonl
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
from pathlib import Path

DEFAULT = Path(__file__).resolve().parents[2] / "shared/data/external/qags_mturk_cnndm.jsonl"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", type=Path, default=DEFAULT)
    parser.add_argument("--n", type=int, default=10)
    parser.add_argument(
        "--label",
        choices=("any", "consistent", "inconsistent"),
        default="any",
        help="only summaries the raters judged consistent (every sentence supported by a "
        "majority) or inconsistent (some sentence not)",
    )
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    if not args.source.exists():
        raise SystemExit(f"{args.source}: not found (the shared QAGS data is not on this machine)")
    start = dt.datetime(2026, 11, 1, tzinfo=dt.UTC)
    from hss_gate.research.factuality_data import qags_label

    wanted = {"any": None, "consistent": 1, "inconsistent": 0}[args.label]
    rows = []
    for i, line in enumerate(args.source.read_text(encoding="utf-8").splitlines()):
        if len(rows) == args.n:
            break
        record = json.loads(line)
        sentences = record["summary_sentences"]
        if wanted is not None and qags_label(sentences) != wanted:
            continue
        rows.append(
            {
                "sample_id": f"qags-{i:03d}",
                "document": record["article"],
                "summary": " ".join(s["sentence"] for s in sentences),
                "model_id": "qags-cnndm-summarizer",
                "timestamp": (start + dt.timedelta(hours=i)).isoformat(),
                "category": "news",
            }
        )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with args.out.open("w", encoding="utf-8") as handle:
        for row in rows:
            handle.write(json.dumps(row, ensure_ascii=False) + "\n")
    print(f"wrote {len(rows)} samples to {args.out}")


if __name__ == "__main__":
    main()
