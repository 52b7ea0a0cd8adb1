"""The gguf: backend's completion style on the real embedded Gemma 3 270M base model (slow)."""

from __future__ import annotations

import pytest

from hss_gate.models import model_store

pytestmark = pytest.mark.slow

DOCUMENT = (
    "The city council of Leeds approved a new central library on Tuesday, 3 May 2024. "
    "The building will cost 2 million pounds and open in 2026. Councillor Ann Price said "
    "the old library on Albion Street was too small for the 40,000 people who visit it "
    "every month. Work will start in September."
)


@pytest.fixture(scope="module")
def gemma():
    model = model_store.resolve_name("gemma3-270m")
    if not model_store.is_installed(model):
        pytest.skip("gemma3-270m not installed (hss models install gemma3-270m)")
    return model


def test_gemma_base_model_summarizes_by_completion(gemma, tmp_path):
    from hss_gate.models.summarizers.gguf import GgufSummarizer, engine_build
    from hss_gate.settings import GenerateSettings

    settings = GenerateSettings(max_new_tokens=48, threads=1)
    summarizer = GgufSummarizer("gemma3", settings, str(tmp_path))
    assert summarizer.prompt_style == "completion"
    assert summarizer.fingerprint.startswith(
        f"gguf:{gemma.assembled_sha256[:16]}:{engine_build()}:t1:completion:"
    )
    # assembled once into models_dir and verified
    assert summarizer.path == tmp_path / "gemma3-270m.gguf"
    assert model_store.sha256_file(summarizer.path) == gemma.assembled_sha256

    first = summarizer.summarize([DOCUMENT])
    assert first == summarizer.summarize([DOCUMENT])  # greedy, no prompt cache: repeatable
    summary = first[0]
    assert summary and summary == summary.strip()
    assert "\n\n" not in summary  # stopped at the first blank line (or the token budget)
    assert "TL;DR" not in summary  # the continuation only, not the prompt
