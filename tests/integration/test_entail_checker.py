"""The `entail` checker's cross-encoder on a tiny random BERT built in the test (2 layers, 32
wide, a word-level vocabulary; nothing downloaded): the adapter's save / load round trip, its
sha256 pin, and long sources and hypotheses through the encoder's small window."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from hss_gate.consistency import entail_release
from hss_gate.consistency.checker import MatrixChecker, load_checker
from hss_gate.consistency.entail_checker import (
    BASE_MODEL,
    EntailMatrix,
    LazyEntailmentModel,
    chunk_source,
    load_entailment_scorer,
)
from hss_gate.embedding import HashingEmbedder
from hss_gate.errors import ModelError

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
entailment = pytest.importorskip("hss_gate.consistency.entailment")

pytestmark = pytest.mark.integration

WORDS = """the council approved a new budget on monday mayor said city could not afford roads
rain fell river rose bakery sells bread team won final match in may by two metres heavy
across region overnight local fresh every morning""".split()  # noqa: SIM905
WINDOW = 32  # the adapter's max_length in tokens: most test sources are longer
PREMISES = ["the council approved a new budget on monday", "rain fell and the river rose"]
HYPOTHESES = ["the council approved a budget", "the mayor sells roads"]


@pytest.fixture(scope="module")
def base_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny random BERT saved as the base encoder (tokenizer, config, safetensors)."""
    directory = tmp_path_factory.mktemp("tiny-bert")
    vocab = directory / "vocab.txt"
    vocab.write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS]) + "\n")
    transformers.BertTokenizerFast(vocab_file=str(vocab)).save_pretrained(directory)
    config = transformers.BertConfig(
        vocab_size=5 + len(WORDS),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=64,
    )
    torch.manual_seed(1)
    transformers.BertModel(config).save_pretrained(directory)
    return directory


@pytest.fixture(scope="module")
def trained(base_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, np.ndarray]:
    """An adapter with random trained tensors, saved; and the scores of the model that saved it."""
    config = entailment.AdapterConfig(rank=4, alpha=8.0, max_length=WINDOW, base=BASE_MODEL)
    tokenizer, model = entailment.build_cross_encoder(base_dir, config)
    generator = torch.Generator().manual_seed(7)
    with torch.no_grad():
        for tensor in entailment.adapter_tensors(model):
            param = model.get_parameter(tensor)
            param.copy_(torch.randn(param.shape, generator=generator) * 0.5)
    path = tmp_path_factory.mktemp("adapter") / "entail_adapter.safetensors"
    entailment.save_adapter(model, config, path)
    scores = entailment.EntailmentModel(tokenizer, model, config, "saved").scores(
        PREMISES, HYPOTHESES
    )
    return path, scores


def _sha(path: Path) -> str:
    from hss_gate.model_store import sha256_file

    return sha256_file(path)


def test_a_loaded_adapter_scores_as_the_model_that_saved_it(base_dir, trained):
    path, saved = trained
    loaded = load_entailment_scorer(path, _sha(path), base_dir)
    # the adapters are folded into their layers for inference: the same scores up to rounding
    assert not any(hasattr(m, "lora_a") for m in loaded.model.modules())
    np.testing.assert_allclose(loaded.scores(PREMISES, HYPOTHESES), saved, rtol=0, atol=1e-5)
    assert entailment.read_adapter_config(path).max_length == WINDOW
    fresh = entailment.EntailmentModel(
        *entailment.build_cross_encoder(base_dir, loaded.config), loaded.config, "fresh"
    )
    assert not np.allclose(fresh.scores(PREMISES, HYPOTHESES), saved)  # the load did something
    assert ((saved > 0) & (saved < 1)).all()


def test_a_tampered_or_missing_adapter_is_refused_in_one_line_naming_it(
    base_dir, trained, tmp_path
):
    path, _ = trained
    tampered = tmp_path / "tampered.safetensors"
    data = bytearray(path.read_bytes())
    data[-1] ^= 0x01  # one byte of the last tensor
    tampered.write_bytes(bytes(data))
    for bad in (tampered, tmp_path / "missing.safetensors"):
        with pytest.raises(ModelError) as refused:
            load_entailment_scorer(bad, _sha(path), base_dir)
        message = str(refused.value)
        assert str(bad) in message and "\n" not in message
    lazy = LazyEntailmentModel(path, _sha(path), base_dir)
    path_copy = tmp_path / "swapped.safetensors"  # replaced after the checker was built
    path_copy.write_bytes(bytes(data))
    swapped = LazyEntailmentModel(path_copy, _sha(path), base_dir)
    assert lazy(PREMISES[:1], HYPOTHESES[:1]).shape == (1,)
    with pytest.raises(ModelError, match="sha256"):
        swapped(PREMISES[:1], HYPOTHESES[:1])


@pytest.fixture
def torch_threads_restored():
    before = torch.get_num_threads()
    yield
    torch.set_num_threads(before)


@pytest.mark.usefixtures("torch_threads_restored")
def test_a_source_beyond_the_window_is_chunked_and_every_chunk_is_scored(base_dir, trained):
    path, _ = trained
    sentences = [
        "the council approved a new budget on monday.",
        "the mayor said the city could not afford roads.",
        "heavy rain fell across the region overnight.",
        "the river rose by two metres.",
        "the local bakery sells fresh bread every morning.",
        "the team won the final match in may.",
        " ".join(["the river rose"] * 20) + ".",  # 60 words: beyond the window on its own
    ]
    source = " ".join(sentences)
    chunks = chunk_source(source, 16)
    assert len(chunks.texts) >= 4 and len(source.split()) > 2 * WINDOW
    scorer = LazyEntailmentModel(path, _sha(path), base_dir, threads=1)
    matrix = EntailMatrix(scorer, HashingEmbedder(128).encode, _sha(path), len(chunks.texts), 16)
    long_hypothesis = " ".join(["the council approved a new budget"] * 10) + "."  # 60 words
    summary = ["the river rose.", long_hypothesis]
    scores = matrix(source, summary)
    assert scores.shape == (2, len(chunks.texts))
    assert ((scores > 0) & (scores < 1)).all()  # every cell evaluated: top_k covers them all
    assert torch.get_num_threads() == 1
    checker = MatrixChecker(matrix, matrix.passages, "test", 0.5)
    verdict = checker.check([(source, " ".join(summary))])[0]
    assert 0.0 < verdict.consistency < 1.0


def test_load_checker_entail_runs_the_shipped_adapter_end_to_end(base_dir, trained, monkeypatch):
    path, _ = trained
    monkeypatch.setattr(entail_release, "ENTAIL_ADAPTER_PATH", path)
    monkeypatch.setattr(entail_release, "ENTAIL_ADAPTER_SHA256", _sha(path))
    monkeypatch.setattr(entailment, "embedded_base_dir", lambda: base_dir)
    encode = HashingEmbedder(64).encode
    checker = load_checker("entail", "", 0.99, encode, "hashing:64", top_k=1, chunk_words=8)
    assert checker.fingerprint.startswith(f"entail:{_sha(path)[:12]}:hashing:64:")
    assert checker.fingerprint.endswith(":k1:w8:mean:t0.99")
    source = " ".join(PREMISES) + "."
    verdicts = checker.check([(source, "The council approved a budget. The mayor sells roads.")])
    assert 0.0 < verdicts[0].consistency < 0.99
    assert {u.passage for u in verdicts[0].unsupported} <= set(chunk_source(source, 8).texts)
    assert len(verdicts[0].unsupported) == 2  # both below the 0.99 threshold


# ----------------------------------------------------------------------------- training


def _pairs() -> list:
    from hss_gate.consistency.entailment_data import Pair

    made = []
    for i in range(24):
        premise = PREMISES[i % 2]
        supported = i % 4 < 2
        hypothesis = premise.split(" and ")[0] if supported else HYPOTHESES[1]
        made.append(Pair(premise, hypothesis, int(supported), "test", f"d{i}"))
    return made


def test_training_resumes_to_the_same_bytes_and_learns(base_dir: Path, tmp_path: Path) -> None:
    from hss_gate.consistency.entailment_training import TrainSettings, train_adapter

    config = entailment.AdapterConfig(rank=4, alpha=8.0, max_length=WINDOW, base="tiny")
    settings = TrainSettings(
        seed=3, batch_size=4, learning_rate=5e-2, threads=1, checkpoint_every=2, epochs=10
    )
    pairs = _pairs()
    whole = tmp_path / "whole.safetensors"
    log = train_adapter(pairs, base_dir, config, settings, whole, tmp_path / "ck-whole")
    assert log["steps"] == 60  # 10 epochs x 6 batches
    from safetensors.torch import load_file

    tensors = load_file(str(whole))
    # the adapters start at B = 0 (the base model's output): training moved every one of them
    lora_b = [t for name, t in tensors.items() if name.endswith("lora_b")]
    assert lora_b and all(float(t.abs().sum()) > 0 for t in lora_b)

    # an interrupted run: a checkpoint at step 4 of a run with the same settings, then resumed
    class Stop(Exception):
        pass

    def stop_after(n: int):
        def start(stage: str, total: int, done: int):
            def advance(k: int) -> None:
                start.done += k
                if start.done >= n:
                    raise Stop

            start.done = done
            return advance

        return start

    resumed = tmp_path / "resumed.safetensors"
    with pytest.raises(Stop):
        train_adapter(pairs, base_dir, config, settings, resumed, tmp_path / "ck", stop_after(4))
    assert not resumed.exists() and (tmp_path / "ck" / "checkpoint.safetensors").exists()
    again = train_adapter(pairs, base_dir, config, settings, resumed, tmp_path / "ck")
    assert again["steps"] == 60
    assert resumed.read_bytes() == whole.read_bytes()


def test_llm_claims_are_written_in_batches_and_resume(tmp_path: Path) -> None:
    """`hss checker claims` on a fake LLM: one row per passage, and a run stopped after a batch
    resumes from its partial file instead of starting again."""
    from hss_gate.settings import CheckerDocuments, load_settings
    from hss_gate.workflows.checker import write_llm_claims

    corpus = tmp_path / "docs.jsonl"
    text = (
        "The council approved a new library on Tuesday. It will cost 4 million pounds. "
        "Councillor Ann Smith said work starts in May. The old library closed in 2019."
    )
    corpus.write_text(
        "".join(json.dumps({"id": i, "text": f"Item {i}. {text}"}) + "\n" for i in range(3))
    )
    settings = load_settings(tmp_path / "no-params.yaml")
    settings.checker.documents = [
        CheckerDocuments(path=str(corpus), per_document=2, llm_per_document=2)
    ]
    settings.checker.llm_model = "fake:lead"
    settings.checker.llm_claims = str(tmp_path / "claims.jsonl")
    out = write_llm_claims(settings, batch=2, say=lambda _: None)
    rows = [json.loads(x) for x in out.read_text().splitlines()]
    assert len(rows) == 6 and {r["model"] for r in rows} == {"fake:lead"}
    assert all(r["claim"] and r["claim"] in r["premise"] for r in rows)  # the lead restates
    partial = out.with_suffix(".jsonl.partial")
    partial.write_text("".join(json.dumps(r) + "\n" for r in rows[:4]))
    out.unlink()
    started_at: list[int] = []

    def progress(stage: str, total: int, done: int):
        started_at.append(done)
        return lambda n: None

    write_llm_claims(settings, progress, say=lambda _: None, batch=2)
    assert started_at == [4]
    assert [json.loads(x) for x in out.read_text().splitlines()] == rows
