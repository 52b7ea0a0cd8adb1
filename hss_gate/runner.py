"""Score one model on a set of documents with the configured models and cache."""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Sequence
from typing import Any

from hss_gate import __version__
from hss_gate.cache import Cache
from hss_gate.corpus import Document
from hss_gate.normalization import Normalization
from hss_gate.pipeline import Progress, ScoreResult, Toolkit, no_progress, score_documents
from hss_gate.settings import HssSettings


def score_model(
    uri: str,
    docs: Sequence[Document],
    settings: HssSettings,
    normalization: Normalization | None,
    *,
    tools: Toolkit | None = None,
    progress: Progress = no_progress,
) -> tuple[ScoreResult, dict[str, Any]]:
    """Score the model a URI names on the documents; return the result and its run metadata."""
    from hss_gate.summarizers import load_summarizer
    from hss_gate.toolkit import real_toolkit

    tools = tools or real_toolkit(settings)
    summarizer = load_summarizer(uri, settings, tools.embedder)
    cache = Cache(settings.run.cache_dir)
    started = time.perf_counter()
    try:
        result = score_documents(docs, summarizer, settings, tools, cache, normalization, progress)
    finally:
        cache.close()
    meta = {
        "hss_gate_version": __version__,
        "model": uri,
        "fingerprint": summarizer.fingerprint,
        "documents": len(docs),
        "created": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "wall_time_s": round(time.perf_counter() - started, 1),
        "normalization": None
        if normalization is None
        else {
            "model": normalization.model,
            "created": normalization.created,
            "settings_digest": normalization.settings_digest,
        },
        "settings": settings.model_dump(mode="json"),
    }
    return result, meta
