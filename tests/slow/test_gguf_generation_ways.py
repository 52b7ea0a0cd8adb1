"""Prefix reuse and n-gram speculation on the real SmolLM2 (slow tier, runs in CI): two reference
documents, each original then its perturbed versions, as the gate sends them."""

from __future__ import annotations

import pytest

from hss_gate.models import model_store
from tests.conftest import REPO

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def texts():
    from hss_gate.common.inputs import load_corpus
    from hss_gate.research.generation_bench import stored_texts

    if not model_store.is_installed(model_store.resolve_name("smollm2")):
        pytest.skip("smollm2 not installed (hss models install smollm2)")
    corpus = load_corpus(REPO / "data" / "reference" / "corpus.jsonl")
    return [text for _, text, _ in stored_texts(REPO / "data" / "baseline", corpus, 2)]


def _summaries(texts, **ways):
    from hss_gate.models.summarizers.gguf import GgufSummarizer
    from hss_gate.settings import GenerateSettings

    settings = GenerateSettings(workers=1, **ways)
    summarizer = GgufSummarizer("smollm2-135m-instruct", settings, str(REPO / ".hss" / "models"))
    return summarizer.summarize(texts), summarizer.timings


@pytest.fixture(scope="module")
def plain(texts):
    return _summaries(texts)[0]


def test_ngram_speculation_writes_the_plain_greedy_summaries(texts, plain):
    drafted, timings = _summaries(texts, speculative="ngram")
    assert sum(t.get("draft_n_accepted") or 0 for t in timings) > 0, "nothing was drafted"
    # measured on this engine build: every summary byte-identical (8 of 8)
    assert drafted == plain


def test_prefix_reuse_reuses_the_shared_prompt_and_only_reused_requests_can_differ(texts, plain):
    """A reused KV prefix is computed in other batch shapes than a fresh prompt, which can flip
    a greedy near-tie (BENCHMARKS.md, "Prefix reuse": why it is off by default): a request
    that reused nothing is the fresh summary, and the differences are stated, not hidden."""
    reused, timings = _summaries(texts, prefix_reuse=True)
    reuse = [t.get("cache_n") or 0 for t in timings]
    assert reuse[0] == 0 and all(n > 0 for n in reuse[1:]), reuse
    same = [a == b for a, b in zip(reused, plain, strict=True)]
    assert same[0], "the first request had nothing to reuse: it must be the fresh summary"
    print(f"prefix reuse: {sum(same)} of {len(same)} summaries identical to fresh; reused {reuse}")
