"""One-sentence, headline-style summaries written by a local LLM, and their corruptions: the
synthetic abstractive check of the entailment checker (docs/FACTUALITY.md).

    PYTHONPATH=. .venv/bin/python scripts/llm_claims.py --documents FILE --n 40 \
        --out outputs/checker-dev/llm_claims.jsonl [--model gguf:qwen]

Each document gets the model's one-sentence summary (label 1, assumed faithful: the hand check
in docs/FACTUALITY.md measures how often it is not) and, where one applies, a corruption of it
with a name, number or year of the same document swapped in, a negation added or removed, or
two names exchanged (label 0; entailment_data's functions). Use documents the checker was not
trained on (FRANK's articles are left out of params.yaml `checker.documents`).
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path

from hss_gate.consistency import entailment_data as ed
from hss_gate.settings import load_settings
from hss_gate.summarizers import load_summarizer

PROMPT = (
    "Read the article and write a one-sentence summary of it, at most {summary_words} words, "
    "like the summary line under a news headline.\n\nArticle:\n{document}\n\n"
    "Write the one-sentence summary now."
)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--documents", required=True)
    parser.add_argument("--n", type=int, default=40)
    parser.add_argument("--seed", type=int, default=5)
    parser.add_argument("--model", default="gguf:qwen2.5-coder-0.5b-instruct")
    parser.add_argument("--words", type=int, default=25)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()

    documents = ed.read_documents(args.documents)
    rng = random.Random(args.seed)
    chosen = rng.sample(documents, min(args.n, len(documents)))
    settings = load_settings("params.yaml")
    settings.generate.prompt = PROMPT
    settings.generate.summary_words = args.words
    settings.generate.max_new_tokens = 80
    summarizer = load_summarizer(args.model, settings)
    texts = [" ".join(text.split()[:700]) for _, text in chosen]
    done = [0]

    def progress(n: int) -> None:
        done[0] += n
        print(f"progress: summarize {done[0]}/{len(texts)}", flush=True)

    summaries = summarizer.summarize(texts, progress)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("w", encoding="utf-8") as f:
        for (doc_id, text), summary in zip(chosen, summaries, strict=True):
            claim = " ".join(summary.split())
            if not claim:
                continue
            row = {"id": doc_id, "document": text, "model": args.model}
            f.write(json.dumps(row | {"summary": claim, "label": 1, "kind": "llm"}) + "\n")
            wrong = ed.corrupt(claim, text, rng)
            if wrong:
                f.write(
                    json.dumps(row | {"summary": wrong[1], "label": 0, "kind": wrong[0]}) + "\n"
                )
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
