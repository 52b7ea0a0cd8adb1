"""`hss bench` checker section: what the configured consistency checker costs per (document,
summary) pair, as the gate checks them.

The production model's stored base summaries of the reference corpus (one per document) are
checked one pair per call: the checker's load (built, then the first pair), the other pairs
cold (each source new, the cache empty), then every pair again warm, on a new checker over the
cache the first filled, as a second run sees it. Wall seconds, and the cold pairs' CPU seconds.
The stage is registered in hss_gate.research.bench (STAGES["checker"]).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np


def checker_pairs(summaries: Path, documents: Sequence[Any], n: int) -> list[tuple[str, str, str]]:
    """(doc_id, source, summary) of the first n documents (0 = all) that have a stored base
    summary (strength "base"; the first one per document), in corpus order."""
    from hss_gate.common.jsonl import read_jsonl

    base: dict[str, str] = {}
    for _, row in read_jsonl(summaries):
        if row.get("strength") == "base":
            base.setdefault(str(row["doc_id"]), str(row["summary"]))
    pairs = [(d.doc_id, d.text, base[d.doc_id]) for d in documents if d.doc_id in base]
    return pairs[:n] if n else pairs


def time_checker(
    make_checker: Callable[[], Any],
    pairs: Sequence[tuple[str, str]],
    clock: Callable[[], float] = time.perf_counter,
    cpu: Callable[[], float] = time.process_time,
) -> dict[str, Any]:
    """The checker's cost on (source, summary) pairs, one pair per call as the gate checks them:
    its load (built, then the first call on the first pair), the other pairs cold (each source
    new, the cache empty), then every pair warm: a new checker on the cache the first filled,
    as a second run sees it. Wall seconds, and the cold pairs' CPU seconds (every thread of
    this process: less sensitive than wall time to other jobs on the machine)."""
    if not pairs:
        raise ValueError("no (source, summary) pairs to time the checker on")
    started = clock()
    checker = make_checker()
    checker.check([pairs[0]])
    load = clock() - started
    cold, cold_cpu = [], 0.0
    for pair in pairs[1:]:
        started, started_cpu = clock(), cpu()
        checker.check([pair])
        cold.append(clock() - started)
        cold_cpu += cpu() - started_cpu
    warm_checker = make_checker()
    _ = warm_checker.fingerprint  # built outside the timing (weights read; SBERT already loaded)
    warm = []
    for pair in pairs:
        started = clock()
        warm_checker.check([pair])
        warm.append(clock() - started)
    return {
        "fingerprint": checker.fingerprint,
        "pairs": len(pairs),
        "load_s": round(load, 3),
        "cold_pairs": len(cold),
        "cold_s_per_pair": round(float(np.mean(cold)), 4) if cold else None,
        "cold_max_s": round(max(cold), 4) if cold else None,
        "cold_cpu_s_per_pair": round(cold_cpu / len(cold), 4) if cold else None,
        "amortized_s_per_pair": round((load + sum(cold)) / len(pairs), 4),
        "warm_s_per_pair": round(float(np.mean(warm)), 4),
        "mean_source_words": round(float(np.mean([len(s.split()) for s, _ in pairs])), 1),
        "mean_summary_words": round(float(np.mean([len(m.split()) for _, m in pairs])), 1),
    }


def checker_stage(config: dict[str, Any]) -> dict[str, Any]:
    """The configured consistency checker (settings consistency.model, built as the toolkit
    builds it, on this stage's own empty cache) timed on the production model's stored base
    summaries of the reference corpus (`time_checker`); skipped without the stored summaries
    (an installed package has no data/baseline)."""
    from hss_gate.common.inputs import load_corpus
    from hss_gate.models.embedding import SbertEmbedder
    from hss_gate.scoring.toolkit import LazyChecker
    from hss_gate.settings import load_settings

    settings = load_settings(config["params"], run__cache_dir=config["cache"])
    summaries = Path(
        config.get("summaries") or Path(settings.run.baseline_dir) / "reference" / "summaries.jsonl"
    )
    model = settings.consistency.model
    if not summaries.exists():
        return {"model": model, "skipped": f"{summaries}: no stored production summaries"}
    docs = load_corpus(config.get("corpus") or settings.run.corpus)
    chosen = checker_pairs(summaries, docs, config.get("documents", 48))
    embedder = SbertEmbedder(settings.score.embedder)
    timed = time_checker(
        lambda: LazyChecker(settings.consistency, embedder, config["cache"]),
        [(source, summary) for _, source, summary in chosen],
    )
    return {"model": model, "summaries": str(summaries), **timed, "target_s_per_pair": 0.3}
