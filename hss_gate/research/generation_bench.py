"""`hss bench` generation section: where a summary's time goes in llama.cpp, and what prefix
reuse, n-gram speculation and the prefill levers change.

For each GGUF model, the first documents' original and perturbed texts (rebuilt from the
versioned reference run's edit log, so every model summarizes the same texts) are summarized
eight ways: plain, with prefix reuse, with n-gram speculation, with both, with flash attention
off, with a 2048-token prefill step, with an int8 KV cache, and plain again (the noise). Two
single-thread copies run two of the ways at once, as the gate's two workers do. From
llama.cpp's own timings: prefill and decode tokens per second and their share of the engine's
time, prompt tokens reused, drafted and accepted tokens, and how many summaries are
byte-identical to the plain way's (and, for the production model, to the stored reference
run's).
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

WAYS = {
    "plain": {},
    "prefix_reuse": {"prefix_reuse": True},
    "ngram": {"speculative": "ngram"},
    "prefix_reuse+ngram": {"prefix_reuse": True, "speculative": "ngram"},
    # the prefill levers (issue 44): flash attention off, a prefill step of 2048 tokens (a
    # whole prompt at once), an int8 KV cache
    "flash_off": {"flash_attention": "off"},
    "ubatch_2048": {"ubatch": 2048},
    "kv_q8": {"kv_cache": "q8_0"},
    "plain_again": {},  # plain's time on the other copy: how far two runs of one way differ
}
PAIRS = (  # run side by side
    ("plain", "prefix_reuse"),
    ("ngram", "prefix_reuse+ngram"),
    ("flash_off", "ubatch_2048"),
    ("kv_q8", "plain_again"),
)


def stored_texts(baseline_dir: str | Path, corpus: Sequence[Any], documents: int) -> list[Any]:
    """(key, text, stored summary) of the first `documents` documents of the stored run: each
    document's original first, then its perturbed versions."""
    from hss_gate.scoring.stored_run import load_stored_run

    run = load_stored_run(Path(baseline_dir) / "reference")
    rows = []
    for doc in corpus[:documents]:
        texts = run.texts(doc)
        for key in sorted(texts, key=lambda k: (k[1] != "base", k)):
            rows.append((key, texts[key], run.summaries[key]))
    return rows


def timed_summaries(model: str, settings: Any, texts: Sequence[str]) -> dict[str, Any]:
    """Summaries of the texts, in order, on one single-thread copy, with llama.cpp's timings."""
    from hss_gate.models.summarizers.gguf import GgufSummarizer

    generate = settings.generate.model_copy(update={"threads": 1, "workers": 1})
    summarizer = GgufSummarizer(model.removeprefix("gguf:"), generate, settings.run.models_dir)
    started = time.perf_counter()
    summaries = [summarizer.summarize_one(text) for text in texts]
    wall = time.perf_counter() - started  # the model's load included
    timings = summarizer.timings
    return {"summaries": summaries, "wall_s": wall} | engine_totals(timings)


def engine_totals(timings: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Sums of llama.cpp's per-request timings, and the rates and shares they give."""

    def total(key: str) -> float:
        return float(sum(t.get(key) or 0 for t in timings))

    prefill_s, decode_s = total("prompt_ms") / 1000, total("predicted_ms") / 1000
    engine_s = prefill_s + decode_s
    return {
        "requests": len(timings),
        "prompt_tokens": int(total("prompt_n") + total("cache_n")),
        "prefill_tokens": int(total("prompt_n")),
        "reused_tokens": int(total("cache_n")),
        "decode_tokens": int(total("predicted_n")),
        "prefill_s": round(prefill_s, 2),
        "decode_s": round(decode_s, 2),
        "prefill_tok_s": round(total("prompt_n") / prefill_s, 1) if prefill_s else None,
        "decode_tok_s": round(total("predicted_n") / decode_s, 1) if decode_s else None,
        "prefill_share": round(prefill_s / engine_s, 3) if engine_s else None,
        "drafted": int(total("draft_n")),
        "accepted": int(total("draft_n_accepted")),
    }


def same_share(a: Sequence[str], b: Sequence[str]) -> float:
    return round(sum(x == y for x, y in zip(a, b, strict=True)) / len(a), 3) if a else 0.0


def model_section(model: str, settings: Any, rows: Sequence[Any], production: bool) -> dict:
    """The ways for one model, two at a time on two single-thread copies."""
    texts = [text for _, text, _ in rows]
    results: dict[str, dict[str, Any]] = {}
    for pair in PAIRS:
        with ThreadPoolExecutor(len(pair)) as pool:
            futures = {
                way: pool.submit(
                    timed_summaries,
                    model,
                    settings.model_copy(
                        update={"generate": settings.generate.model_copy(update=WAYS[way])}
                    ),
                    texts,
                )
                for way in pair
            }
            results |= {way: future.result() for way, future in futures.items()}
    plain = results["plain"]["summaries"]
    section: dict[str, Any] = {"texts": len(texts), "ways": {}}
    for way, result in results.items():
        summaries = result.pop("summaries")
        result["same_as_plain"] = same_share(summaries, plain)
        if production:
            result["same_as_stored_run"] = same_share(summaries, [s for *_, s in rows])
        section["ways"][way] = result
    words = [len(s.split()) for s in plain]
    section["plain_mean_words"] = round(statistics.fmean(words), 1) if words else None
    return section


def generation_stage(config: dict[str, Any]) -> dict[str, Any]:
    """The bench stage: every model of config["models"] on config["documents"] documents."""
    from hss_gate.common.inputs import load_corpus
    from hss_gate.settings import load_settings

    settings = load_settings(config["params"], run__cache_dir=config["cache"])
    corpus = load_corpus(settings.run.corpus)
    rows = stored_texts(settings.run.baseline_dir, corpus, config["documents"])
    production = settings.run.production_model
    return {
        "documents": config["documents"],
        "settings": settings.generate.model_dump(
            include={"speculative_ngram", "speculative_draft"}
        ),
        "models": {
            model: model_section(model, settings, rows, model == production)
            for model in config["models"]
        },
    }


def production_lengths(baseline_dir: str | Path, summary_words: int) -> dict[str, Any]:
    """Cut-mid-sentence share and mean words of the stored reference run's summaries (every
    row, and the originals' alone), against the length asked for."""
    from hss_gate.common.jsonl import read_jsonl
    from hss_gate.text.sentences import ends_mid_sentence

    rows = [row for _, row in read_jsonl(Path(baseline_dir) / "reference" / "summaries.jsonl")]

    def stats(summaries: list[str]) -> dict[str, Any]:
        words = [len(s.split()) for s in summaries]
        return {
            "summaries": len(summaries),
            "cut_mid_sentence_share": round(
                sum(ends_mid_sentence(s) for s in summaries) / len(summaries), 3
            ),
            "mean_words": round(statistics.fmean(words), 1),
            "mean_over_asked": round(statistics.fmean(words) / summary_words, 2),
            "overlong_share": round(sum(w > 3 * summary_words for w in words) / len(words), 3),
        }

    return {
        "summary_words": summary_words,
        "all": stats([r["summary"] for r in rows]),
        "originals": stats([r["summary"] for r in rows if r["strength"] == "base"]),
    }


def markdown(generation: dict[str, Any], lengths: dict[str, Any] | None) -> list[str]:
    """bench.md's generation section."""
    lines = [
        "",
        f"## Generation ({generation['documents']} documents, their originals and perturbed "
        "versions; two single-thread copies, two ways side by side)",
        "",
        "| model | way | prefill tok/s | decode tok/s | prefill share | reused prompt tokens "
        "| drafted / accepted | engine s | same as plain | same as stored run |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for model, section in generation["models"].items():
        for way, r in section["ways"].items():
            reused = f"{r['reused_tokens']} of {r['prompt_tokens']}"
            stored = r.get("same_as_stored_run")
            lines.append(
                f"| {model} | {way} | {r['prefill_tok_s']} | {r['decode_tok_s']} "
                f"| {r['prefill_share']} | {reused} | {r['drafted']} / {r['accepted']} "
                f"| {r['prefill_s'] + r['decode_s']:.1f} | {r['same_as_plain']:.0%} "
                f"| {'-' if stored is None else f'{stored:.0%}'} |"
            )
    if lengths:
        asked = lengths["summary_words"]
        lines += ["", f"Production's stored reference summaries ({asked} words asked for):", ""]
        lines += ["| summaries | cut mid-sentence | mean words | x asked | over 3x |"]
        lines += ["|---|---|---|---|---|"]
        for name in ("all", "originals"):
            s = lengths[name]
            lines.append(
                f"| {name} ({s['summaries']}) | {s['cut_mid_sentence_share']:.1%} "
                f"| {s['mean_words']} | {s['mean_over_asked']} | {s['overlong_share']:.1%} |"
            )
    return lines
