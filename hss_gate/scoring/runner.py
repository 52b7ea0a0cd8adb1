"""Score one model on a set of documents with the configured models and cache."""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Collection, Sequence
from typing import Any

from hss_gate import __version__
from hss_gate.common.cache import Cache
from hss_gate.common.progress import Progress, no_progress
from hss_gate.scoring.normalization import Normalization
from hss_gate.scoring.pipeline import ScoreResult, score_documents
from hss_gate.scoring.toolkit import Toolkit
from hss_gate.settings import HssSettings
from hss_gate.text.corpus import Document


def score_model(
    uri: str,
    docs: Sequence[Document],
    settings: HssSettings,
    normalization: Normalization | None,
    *,
    tools: Toolkit | None = None,
    progress: Progress = no_progress,
    hss_documents: Collection[str] | None = None,
) -> tuple[ScoreResult, dict[str, Any]]:
    """Score the model a URI names on the documents; return the result and its run metadata.
    `hss_documents`: the doc_ids whose HSS is measured (None: all; the others facts only)."""
    from hss_gate.models.summarizers import load_summarizer
    from hss_gate.scoring.toolkit import real_toolkit

    tools = tools or real_toolkit(settings)
    summarizer = load_summarizer(uri, settings, tools.embedder)
    if hasattr(summarizer, "attach"):  # stored summaries are looked up by the corpus's doc_ids
        summarizer.attach({d.doc_id: d.text for d in docs})
    cache = Cache(settings.run.cache_dir)
    started = time.perf_counter()
    cached_before = cache.count("summaries")
    try:
        result = score_documents(
            docs, summarizer, settings, tools, cache, normalization, progress, hss_documents
        )
        generated = cache.count("summaries") - cached_before
    finally:
        cache.close()
    meta = {
        "hss_gate_version": __version__,
        "model": uri,
        "fingerprint": summarizer.fingerprint,
        "checker": tools.checker.fingerprint,
        "perturb_fingerprint": tools.perturb_fingerprint,
        "documents": len(docs),
        **({} if hss_documents is None else {"hss_documents": len(set(hss_documents))}),
        "summaries_generated": generated,
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


def toolkit_key(settings: HssSettings) -> str:
    """The settings that select the toolkit's models (word vectors, vocabulary, embedder,
    consistency checker)."""
    return settings.model_dump_json(
        include={
            "perturb": {"word_vectors", "vocab_limit"},
            "score": {"embedder"},
            "consistency": {"model", "weights_dir", "threshold"},
        }
    )


class LocalRunner:
    """`score_model` in this process, with the real models built once (per toolkit settings)
    and shared by every call: the model runner the command line gives the workflows."""

    def __init__(self) -> None:
        self._toolkits: dict[str, Toolkit] = {}

    def toolkit(self, settings: HssSettings) -> Toolkit:
        """spaCy, word vectors, WordNet and SBERT as configured (lazy: loaded on first use)."""
        from hss_gate.scoring import toolkit

        key = toolkit_key(settings)
        if key not in self._toolkits:
            self._toolkits[key] = toolkit.real_toolkit(settings)
        return self._toolkits[key]

    def __call__(
        self,
        uri: str,
        docs: Sequence[Document],
        settings: HssSettings,
        normalization: Normalization | None,
        progress: Progress = no_progress,
        hss_documents: Collection[str] | None = None,
    ) -> tuple[ScoreResult, dict[str, Any]]:
        return score_model(
            uri,
            docs,
            settings,
            normalization,
            tools=self.toolkit(settings),
            progress=progress,
            hss_documents=hss_documents,
        )
