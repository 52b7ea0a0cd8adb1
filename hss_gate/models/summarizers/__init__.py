"""Summarizers chosen by model URI: gguf:, hf:, extractive:, openai:, and summaries: (outputs a
user already has)."""

from __future__ import annotations

from hss_gate.common.errors import ModelError
from hss_gate.common.redact import redacted_uri
from hss_gate.models.embedding import Embedder
from hss_gate.models.summarizers.base import FakeSummarizer, Summarizer
from hss_gate.settings import HssSettings

SCHEMES = ("gguf", "hf", "extractive", "openai", "summaries")


def load_summarizer(
    uri: str, settings: HssSettings, embedder: Embedder | None = None
) -> Summarizer:
    """Build (lazily loading) the summarizer a model URI names."""
    if redacted_uri(uri) != uri:  # URIs are written into reports, decisions and logs
        raise ModelError(
            f"model URI '{redacted_uri(uri)}' carries a credential; model URIs are written into "
            "reports and logs, so pass secrets through the environment (HSS_OPENAI_API_KEY)"
        )
    scheme, sep, target = uri.partition(":")
    if not sep or not target or scheme not in (*SCHEMES, "fake"):
        raise ModelError(
            f"invalid model URI '{redacted_uri(uri)}': expected one of "
            + ", ".join(f"{s}:<...>" for s in SCHEMES)
        )
    if scheme == "gguf":
        from hss_gate.models.summarizers.gguf import GgufSummarizer

        return GgufSummarizer(target, settings.generate, settings.run.models_dir)
    if scheme == "hf":
        from hss_gate.models.summarizers.hf import HfSummarizer

        return HfSummarizer(target, settings.generate)
    if scheme == "summaries":
        from hss_gate.models.summarizers.stored import StoredSummarizer

        return StoredSummarizer.from_target(target)
    if scheme == "openai":
        from hss_gate.models.summarizers.openai import OpenAISummarizer

        return OpenAISummarizer(target, settings.generate)
    if scheme == "fake":  # test doubles: fake:lead, fake:unstable (worse by construction),
        # fake:empty, fake:copy, fake:foreign (not summarizing), fake:invent
        if target in (*FakeSummarizer.NOT_SUMMARIZING, "invent"):
            return FakeSummarizer(mode=target)
        return FakeSummarizer(unstable=target == "unstable")
    from hss_gate.models.summarizers.extractive import CentroidSummarizer, LeadSummarizer

    method, _, n = target.partition("-")
    count = int(n) if n.isdigit() else 3
    if method == "lead":
        return LeadSummarizer(count)
    if method == "centroid":
        if embedder is None:
            raise ModelError("extractive:centroid needs a sentence embedder")
        return CentroidSummarizer(embedder, count)
    raise ModelError(f"unknown extractive method '{target}' (use lead-N or centroid-N)")
