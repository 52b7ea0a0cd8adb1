"""The generation settings reach llama.cpp: a fake xllamacpp records what the engine is given."""

import sys
import types
from pathlib import Path

import pytest

from hss_gate.settings import GenerateSettings

pytestmark = pytest.mark.unit


class FakeServer:
    """Records the load parameters and every request; answers with the prompt's last words."""

    def __init__(self, params) -> None:
        self.params = params
        self.requests: list[dict] = []

    def handle_chat_completions(self, request: dict) -> dict:
        self.requests.append(request)
        text = request["messages"][-1]["content"]
        choice = {"message": {"content": f" {text[-12:]} "}, "finish_reason": "stop"}
        return {"choices": [choice], "timings": {"prompt_n": len(text), "predicted_n": 3}}


def _fake_xllamacpp() -> types.ModuleType:
    module = types.ModuleType("xllamacpp")
    module.__version__ = "0.0-fake"
    module.get_system_info = lambda: "CPU : AVX2 = 1 | FMA = 1 |"

    def namespace(**fields):
        return types.SimpleNamespace(**fields)

    def common_params():
        ngram = namespace(size_n=12, size_m=48, min_hits=1)
        return namespace(
            model=namespace(path=""),
            cpuparams=namespace(n_threads=0),
            cpuparams_batch=namespace(n_threads=0),
            speculative=namespace(types=["none"], ngram_simple=ngram),
            flash_attn_type="auto",
            n_batch=2048,
            n_ubatch=512,
            cache_type_k="f16",
            cache_type_v="f16",
        )

    module.CommonParams = common_params
    module.common_speculative_type = namespace(COMMON_SPECULATIVE_TYPE_NGRAM_SIMPLE="ngram-simple")
    module.llama_flash_attn_type = namespace(
        LLAMA_FLASH_ATTN_TYPE_AUTO="auto",
        LLAMA_FLASH_ATTN_TYPE_ENABLED="on",
        LLAMA_FLASH_ATTN_TYPE_DISABLED="off",
    )
    module.ggml_type = namespace(GGML_TYPE_F16="f16", GGML_TYPE_Q8_0="q8_0")
    module.Server = FakeServer
    return module


@pytest.fixture()
def engine(monkeypatch, tmp_path):
    """Build a GgufSummarizer on a fake GGUF file and the fake engine."""
    from hss_gate.models.summarizers import gguf

    monkeypatch.setitem(sys.modules, "xllamacpp", _fake_xllamacpp())
    gguf.engine_build.cache_clear()
    weights = Path(tmp_path / "tiny.gguf")
    weights.write_bytes(b"GGUF" + bytes(16))

    def build(**settings):
        return gguf.GgufSummarizer(str(weights), GenerateSettings(**settings), str(tmp_path))

    yield build
    gguf.engine_build.cache_clear()


def test_speculation_and_its_sizes_reach_the_engine(engine):
    summarizer = engine(speculative="ngram", speculative_ngram=4, speculative_draft=10, workers=1)
    summarizer.summarize(["One document about a bakery."])
    speculative = summarizer._server.params.speculative
    assert speculative.types == ["ngram-simple"]
    assert (speculative.ngram_simple.size_n, speculative.ngram_simple.size_m) == (4, 10)

    plain = engine(workers=1)
    plain.summarize(["One document about a bakery."])
    assert plain._server.params.speculative.types == ["none"]


def test_the_prefill_levers_reach_the_engine(engine):
    summarizer = engine(flash_attention="off", ubatch=4096, kv_cache="q8_0", workers=1)
    summarizer.summarize(["One document about a bakery."])
    params = summarizer._server.params
    assert params.flash_attn_type == "off"
    assert (params.n_ubatch, params.n_batch) == (4096, 4096)  # a batch holds its ubatches
    assert (params.cache_type_k, params.cache_type_v) == ("q8_0", "q8_0")

    plain = engine(workers=1)
    plain.summarize(["One document about a bakery."])
    params = plain._server.params
    assert (params.flash_attn_type, params.n_ubatch, params.n_batch) == ("auto", 512, 2048)
    assert params.cache_type_k == "f16"


def test_requests_carry_the_derived_budget_the_stops_and_the_prefix_setting(engine):
    summarizer = engine(summary_words=40, length_headroom=2.0, prefix_reuse=True, workers=1)
    summarizer.summarize(["A document."])
    (request,) = summarizer._server.requests
    assert request["max_tokens"] == 108  # ceil(40 words x 2.0 x 1.35 tokens a word)
    assert request["stop"] == ["\n\n"]
    assert request["cache_prompt"] is True
    assert "at most 2 sentences (40 words or fewer)" in request["messages"][-1]["content"]

    fresh = engine(max_new_tokens=64, stop=[], workers=1)
    fresh.summarize(["A document."])
    (request,) = fresh._server.requests
    assert request["max_tokens"] == 64
    assert "stop" not in request
    assert request["cache_prompt"] is False


def test_each_generation_setting_is_part_of_the_fingerprint(engine):
    """A stored summary is reused only under the settings that wrote it."""
    base = engine().fingerprint
    changed = {
        "speculative": engine(speculative="ngram").fingerprint,
        "draft size": engine(speculative="ngram", speculative_draft=4).fingerprint,
        "prefix reuse": engine(prefix_reuse=True).fingerprint,
        "stop": engine(stop=[]).fingerprint,
        "budget": engine(length_headroom=2.0).fingerprint,
        "length": engine(summary_words=30).fingerprint,
        "flash attention": engine(flash_attention="off").fingerprint,
        "ubatch": engine(ubatch=2048).fingerprint,
        "kv cache": engine(kv_cache="q8_0").fingerprint,
    }
    assert len({base, *changed.values()}) == len(changed) + 1
    # sizes of a speculation that is off change nothing
    assert engine(speculative_draft=4).fingerprint == base
    # an explicit budget equal to the derived one is the same budget
    assert engine(max_new_tokens=GenerateSettings().token_budget).fingerprint == base
    # the levers at llama.cpp's own defaults keep the stored baselines' fingerprints
    assert engine(flash_attention="auto", ubatch=512, kv_cache="f16").fingerprint == base


def test_a_text_goes_to_the_copy_whose_cache_shares_its_longest_prefix(engine):
    summarizer = engine(prefix_reuse=True, workers=2)
    first, second = summarizer._load(), summarizer._start()
    summarizer._idle[:] = [(first, "Alpha document, version one."), (second, "Beta document.")]
    summarizer.summarize_one("Beta document, perturbed.")
    summarizer.summarize_one("Alpha document, version two.")
    assert (
        len(second.requests) == 1 and "perturbed" in second.requests[0]["messages"][-1]["content"]
    )
    assert len(first.requests) == 1 and "two" in first.requests[0]["messages"][-1]["content"]


def test_yaml_off_reads_as_off():
    assert GenerateSettings(speculative=False).speculative == "off"
    assert GenerateSettings(flash_attention=False).flash_attention == "off"
    assert GenerateSettings(flash_attention=True).flash_attention == "on"
    with pytest.raises(ValueError):
        GenerateSettings(speculative="medusa")


def test_llama_cpp_timings_of_each_request_are_kept(engine):
    """`hss bench` reads prefill and decode from them."""
    summarizer = engine(workers=1)
    summarizer.summarize(["First text.", "Second, longer text."])
    assert [t["predicted_n"] for t in summarizer.timings] == [3, 3]
    assert summarizer.timings[0]["prompt_n"] < summarizer.timings[1]["prompt_n"]
