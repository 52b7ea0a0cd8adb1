"""Teacher-forced scoring and attribution on the real embedded SmolLM2 GGUF (slow tier).

Small budgets: one evaluation forces the whole summary through llama.cpp token by token.
"""

from __future__ import annotations

import time

import numpy as np
import pytest

from hss_gate.models import model_store
from hss_gate.research.attribution import (
    AttributionSettings,
    lime_attribution,
    shap_attribution,
    split_words,
)
from hss_gate.text.masked_text import render, word_spans

pytestmark = pytest.mark.slow

DOC = (
    "The council of Leeds approved a new central library on Tuesday. The building will cost "
    "2 million pounds and should open in 2026. Council leader Mary Smith said it would serve "
    "students and older residents. Opponents wanted the money spent on repairing roads."
)


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory):
    smollm2 = model_store.resolve_name("smollm2")
    if not model_store.is_installed(smollm2):
        pytest.skip("smollm2 not installed (hss models install smollm2)")
    from hss_gate.models.summarizers.gguf import GgufSummarizer
    from hss_gate.research.likelihood import scorer_for
    from hss_gate.settings import GenerateSettings

    settings = GenerateSettings(max_new_tokens=32)
    summarizer = GgufSummarizer(
        "smollm2-135m-instruct", settings, str(tmp_path_factory.mktemp("models"))
    )
    summary = summarizer.summarize([DOC])[0]
    assert summary.strip()
    return summarizer, scorer_for(summarizer), summary


def test_forced_path_is_the_models_greedy_path(model) -> None:
    summarizer, scorer, summary = model
    ids = scorer.token_path(DOC, summary)
    assert 0 < len(ids) <= 32
    grammar = "root ::= " + " ".join(f"<[{i}]>" for i in ids)
    entries = scorer._request(DOC, grammar, len(ids))
    assert [e["id"] for e in entries] == ids
    spelled = b"".join(bytes(e["bytes"]) for e in entries)
    assert spelled.decode("utf-8") == summary
    # the summary is greedy under the same prompt: the forced token is the argmax almost always
    agreement = np.mean([e["top_logprobs"][0]["id"] == e["id"] for e in entries])
    assert agreement >= 0.9
    assert scorer.fingerprint.startswith(summarizer.fingerprint)


def test_loglik_is_deterministic_and_moves_with_the_input(model) -> None:
    _, scorer, summary = model
    spans = word_spans(DOC)
    keep = np.arange(len(spans)) % 2 == 0  # every other word removed
    masked = render(DOC, spans, keep)
    first = scorer.loglik([DOC, masked], summary)
    second = scorer.loglik([masked, DOC], summary)
    assert np.all(np.isfinite(first)) and np.all(first < 0)
    assert first[1] == second[0] and first[0] == second[1]
    assert first[0] > first[1]  # the summary is far likelier given the whole document


def test_shap_and_lime_on_smollm2_with_a_small_budget(model) -> None:
    _, scorer, summary = model
    words = split_words(DOC)
    settings = AttributionSettings(shap_max_evals=12, lime_num_samples=12)
    started = time.perf_counter()
    shap_out = shap_attribution(scorer, DOC, summary, settings)
    lime_out = lime_attribution(scorer, DOC, summary, settings)
    seconds = time.perf_counter() - started
    for out in (shap_out, lime_out):
        assert out.words == words and out.values.shape == (len(words),)
        assert np.all(np.isfinite(out.values)) and np.any(out.values != 0)
        assert out.evaluations <= 12
    assert shap_out.values.sum() == pytest.approx(shap_out.full_value - shap_out.base_value)
    print(
        f"\nSmolLM2 {len(words)} words, {len(scorer.token_path(DOC, summary))} summary tokens: "
        f"shap {shap_out.evaluations} evals {shap_out.seconds:.1f}s, "
        f"lime {lime_out.evaluations} evals {lime_out.seconds:.1f}s, total {seconds:.1f}s"
    )


def test_transformers_backend_agrees_with_llama_cpp_on_the_same_gguf(model) -> None:
    """The dequantized fp32 weights teacher-forced by transformers give the same ordering and
    nearly the same values as llama.cpp's forced decoding (different kernels, not a new model)."""
    from hss_gate.models.likelihood import gguf_transformers_scorer

    summarizer, scorer, summary = model
    spans = word_spans(DOC)
    masked = render(DOC, spans, np.arange(len(spans)) % 2 == 0)
    truncated = render(DOC, spans, np.arange(len(spans)) < len(spans) // 3)
    docs = [DOC, masked, truncated]
    fast = gguf_transformers_scorer(str(summarizer.path), summarizer.settings, "")
    reference = scorer.loglik(docs, summary)
    got = fast.loglik(docs, summary)
    assert fast.fingerprint.startswith("gguf:") and "transformers" in fast.fingerprint
    assert np.all(np.isfinite(got)) and np.all(got < 0)
    assert list(np.argsort(got)) == list(np.argsort(reference))
    # within 5% of the total (measured: -50.0 vs -50.9 nats on a 60-token summary)
    assert np.allclose(got, reference, rtol=0.05, atol=1.0)


def test_completion_style_models_are_scored_with_their_own_prompt(tmp_path) -> None:
    """Gemma 3 270M (a base model) is prompted with the completion prompt, not a chat template,
    by both the summarizer and the teacher-forced scorer."""
    gemma = model_store.resolve_name("gemma3-270m")
    if not model_store.is_installed(gemma):
        pytest.skip("gemma3-270m not installed (hss models install gemma3-270m)")
    from hss_gate.models.summarizers.gguf import GgufSummarizer
    from hss_gate.research.likelihood import scorer_for
    from hss_gate.settings import GenerateSettings

    summarizer = GgufSummarizer("gemma3-270m", GenerateSettings(max_new_tokens=32), str(tmp_path))
    summary = summarizer.summarize([DOC])[0]
    assert summary.strip()
    scorer = scorer_for(summarizer)
    assert scorer.prompt_style == "completion"
    ids = scorer.token_path(DOC, summary)
    entries = scorer._request(DOC, "root ::= " + " ".join(f"<[{i}]>" for i in ids), len(ids))
    # greedy under the same (completion) prompt: the forced token is almost always the argmax
    agreement = np.mean([e["top_logprobs"][0]["id"] == e["id"] for e in entries])
    assert agreement >= 0.9
