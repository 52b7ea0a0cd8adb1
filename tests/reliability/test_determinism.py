"""Determinism: the same inputs, settings and seed give byte-identical score tables.

Each backend is scored twice by `hss score` in fresh processes with different hash seeds
(PYTHONHASHSEED) and a fresh cache directory each, so the second run recomputes every
perturbation, summary and embedding instead of reading the first run's.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from hss_gate.models import model_store
from hss_gate.settings import GenerateSettings
from tests.conftest import CORPUS, REPO
from tests.reliability.test_faults import OUTPUTS, mini_corpus

SAFETY_S = 3000  # generous upper bound per run; never a timing assertion


def _score(model: str, corpus: Path, out: Path, hash_seed: str, *extra: str) -> None:
    cache = out.parent / f"{out.name}-cache"
    assert not cache.exists()  # nothing to read: this run computes everything itself
    env = {
        **os.environ,
        "HSS_RUN__CACHE_DIR": str(cache),
        "PYTHONHASHSEED": hash_seed,
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
    }
    command = [
        sys.executable,
        "-m",
        "hss_gate",
        "score",
        "--model",
        model,
        "--corpus",
        str(corpus),
        "-k",
        "1",
        "--seed",
        "13",
        "--out",
        str(out),
        *extra,
    ]
    proc = subprocess.run(
        command, cwd=REPO, env=env, capture_output=True, text=True, timeout=SAFETY_S
    )
    assert proc.returncode == 0, proc.stderr[-3000:]


def _assert_reproducible(model: str, corpus: Path, tmp_path: Path, *extra: str) -> list[dict]:
    """Score twice; every score table byte-identical. Returns the summaries written."""
    first, second = tmp_path / "first", tmp_path / "second"
    _score(model, corpus, first, "1", *extra)
    _score(model, corpus, second, "2", *extra)
    for name in OUTPUTS:
        assert (first / name).read_bytes() == (second / name).read_bytes(), name
    aggregates = [
        json.loads((d / "summary.json").read_text())["aggregates"] for d in (first, second)
    ]
    assert aggregates[0] == aggregates[1]
    lines = (first / "summaries.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return mini_corpus(tmp_path_factory.mktemp("corpus") / "mini.jsonl", 2)


@pytest.fixture(scope="module")
def core_models() -> None:
    missing = [
        n
        for n in model_store.CORE_MODELS
        if not model_store.is_installed(model_store.resolve_name(n))
    ]
    if missing:
        pytest.skip(f"embedded models not installed: {missing} (run `hss models install`)")


@pytest.mark.integration
@pytest.mark.parametrize("model", ["fake:lead", "extractive:lead-3"])
def test_cheap_backends_are_reproducible(model, corpus, tmp_path, core_models):
    summaries = _assert_reproducible(model, corpus, tmp_path)
    assert len(summaries) == 2 * 4 and all(s["summary"].strip() for s in summaries)


def _tiny_llama(directory: Path, texts: list[str]) -> Path:
    """A random 1-layer Llama with a word-level tokenizer trained on the texts (no download)."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    tokenizers = pytest.importorskip("tokenizers")

    raw = tokenizers.Tokenizer(tokenizers.models.WordLevel(unk_token="<unk>"))
    raw.pre_tokenizer = tokenizers.pre_tokenizers.Whitespace()
    specials = ["<pad>", "<s>", "</s>", "<unk>"]
    raw.train_from_iterator(texts, tokenizers.trainers.WordLevelTrainer(special_tokens=specials))
    raw.post_processor = tokenizers.processors.TemplateProcessing(
        single="<s> $A", special_tokens=[("<s>", 1), ("</s>", 2)]
    )
    raw.decoder = tokenizers.decoders.WordPiece(prefix="##")
    tokenizer = transformers.PreTrainedTokenizerFast(
        tokenizer_object=raw,
        bos_token="<s>",
        eos_token="</s>",
        pad_token="<pad>",
        unk_token="<unk>",
    )
    torch.manual_seed(0)
    config = transformers.LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=16,
        intermediate_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=2,
        max_position_embeddings=2048,
        pad_token_id=0,
        bos_token_id=1,
        eos_token_id=2,
        tie_word_embeddings=False,
        initializer_range=0.5,  # large random weights: the output follows the input
    )
    transformers.LlamaForCausalLM(config).eval().save_pretrained(directory)  # safetensors
    tokenizer.save_pretrained(directory)
    return directory


@pytest.mark.integration
def test_hf_backend_is_reproducible(corpus, tmp_path, core_models, monkeypatch):
    generate = GenerateSettings()
    texts = [json.loads(line)["text"] for line in corpus.read_text().splitlines()]
    model_dir = _tiny_llama(tmp_path / "llama", [*texts, generate.prompt, generate.system_prompt])
    monkeypatch.setenv("HSS_GENERATE__MAX_NEW_TOKENS", "24")
    monkeypatch.setenv("HSS_GENERATE__BATCH_SIZE", "4")

    summaries = _assert_reproducible(f"hf:{model_dir}", corpus, tmp_path)

    assert any(s["summary"].strip() for s in summaries)


@pytest.mark.slow
def test_gguf_backend_is_reproducible(tmp_path, core_models):
    if not model_store.is_installed(model_store.resolve_name("smollm2")):
        pytest.skip("smollm2 not installed (hss models install smollm2)")
    summaries = _assert_reproducible("gguf:smollm2-135m-instruct", CORPUS, tmp_path, "--limit", "1")
    assert len(summaries) == 4 and summaries[0]["summary"].strip()
