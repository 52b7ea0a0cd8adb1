"""The `entail` checker's cross-encoder on a tiny random BERT built in the test (2 layers, 32
wide, a word-level vocabulary; nothing downloaded): the adapter's save / load round trip, its
sha256 pin, and long sources and hypotheses through the encoder's small window."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from hss_gate.common.errors import ModelError
from hss_gate.consistency import entail_release
from hss_gate.consistency.checker import load_checker
from hss_gate.consistency.entail_checker import (
    BASE_MODEL,
    ClaimChecker,
    LazyEntailmentModel,
    load_entailment_scorer,
)
from hss_gate.models.embedding import HashingEmbedder

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
    from hss_gate.models.model_store import sha256_file

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


def test_building_the_encoder_shows_no_report_of_its_unused_pooler_but_a_genuine_one(
    base_dir, tmp_path, monkeypatch
):
    """The tiny BERT carries a pooler the cross-encoder does not build: transformers' LOAD
    REPORT of it (UNEXPECTED pooler.dense.*) is dropped. A checkpoint with other unused weights
    (a masked-LM head) still gets its report, without ANSI codes off a terminal."""
    import logging

    from hss_gate.common import library_logs

    class Kept(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            reports.append(record.getMessage())

    reports: list[str] = []
    monkeypatch.setattr(library_logs, "stderr_is_terminal", lambda: False)
    logger, kept = logging.getLogger("transformers"), Kept(logging.WARNING)
    monkeypatch.setattr(logger, "level", logging.WARNING)
    logger.addHandler(kept)
    try:
        config = entailment.AdapterConfig(rank=2, alpha=4.0, max_length=WINDOW, base=BASE_MODEL)
        entailment.build_cross_encoder(base_dir, config)
        assert [r for r in reports if "LOAD REPORT" in r] == []
        other = tmp_path / "masked-lm"
        transformers.BertTokenizerFast(vocab_file=str(base_dir / "vocab.txt")).save_pretrained(
            other
        )
        bert_config = transformers.BertConfig.from_pretrained(base_dir)
        transformers.BertForMaskedLM(bert_config).save_pretrained(other)
        entailment.build_cross_encoder(other, config)
    finally:
        logger.removeHandler(kept)
    (report,) = [r for r in reports if "LOAD REPORT" in r]
    assert "cls.predictions" in report and "UNEXPECTED" in report and "\x1b[" not in report


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
def test_a_source_and_a_claim_beyond_the_window_have_defined_scores(base_dir, trained):
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
    assert len(source.split()) > 2 * WINDOW
    model = LazyEntailmentModel(path, _sha(path), base_dir, threads=1)
    checker = ClaimChecker(model, HashingEmbedder(128).encode, "test", 0.5, "mean", 2, 1)
    long_claim = " ".join(["the council approved a new budget"] * 10) + "."  # 60 words
    # (a claim the source quotes is 1.0 without the model: "went up" is read by it)
    read = checker.read([(source, f"the river went up. {long_claim}")])[0]
    assert len(read.claims) == 2 and all(0.0 < v < 1.0 for v in read.scores)
    for evidence in read.evidence:  # whole source sentences, in document order
        found = [s for s in sentences if s in evidence]
        assert found and " ".join(found) == evidence
        assert [sentences.index(s) for s in found] == sorted(sentences.index(s) for s in found)
    assert torch.get_num_threads() == 1
    verdict = checker.check([(source, f"the river rose. {long_claim}")])[0]
    assert 0.0 < verdict.consistency < 1.0


def test_load_checker_entail_runs_the_shipped_adapter_end_to_end(base_dir, trained, monkeypatch):
    path, _ = trained
    monkeypatch.setattr(entail_release, "ENTAIL_ADAPTER_PATH", path)
    monkeypatch.setattr(entail_release, "ENTAIL_ADAPTER_SHA256", _sha(path))
    monkeypatch.setattr(entailment, "embedded_base_dir", lambda: base_dir)
    encode = HashingEmbedder(64).encode
    checker = load_checker(
        "entail",
        "",
        1.0,
        encode,
        "hashing:64",
        evidence_top=1,
        evidence_neighbours=0,
        aggregate="mean",
    )
    assert checker.fingerprint.startswith(f"entail:{_sha(path)[:12]}:hashing:64:")
    assert checker.fingerprint.endswith(":t1n0:mean:t1")
    source = ". ".join(PREMISES) + "."
    verdicts = checker.check([(source, "The council approved a budget. The mayor sells roads.")])
    assert 0.0 < verdicts[0].consistency < 1.0
    assert {u.passage for u in verdicts[0].unsupported} <= {p + "." for p in PREMISES}
    assert len(verdicts[0].unsupported) == 2  # both below the threshold 1


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


def test_a_second_stage_starts_from_the_first_and_marks_reach_the_scores(
    base_dir: Path, tmp_path: Path
) -> None:
    """Training from an adapter (`init`) starts where it ended, and an adapter trained with
    marks scores the claim as marked (its config says so)."""
    from hss_gate.consistency.entailment_training import TrainSettings, train_adapter

    config = entailment.AdapterConfig(rank=4, alpha=8.0, max_length=WINDOW, base="tiny", marks=True)
    settings = TrainSettings(
        seed=3, batch_size=4, learning_rate=5e-2, threads=1, epochs=3, pair_margin=1.0
    )
    first = tmp_path / "first.safetensors"
    train_adapter(_pairs(), base_dir, config, settings, first, tmp_path / "ck1")
    zero = TrainSettings(seed=3, batch_size=4, learning_rate=1e-12, threads=1, epochs=1)
    second = tmp_path / "second.safetensors"
    train_adapter(_pairs(), base_dir, config, zero, second, tmp_path / "ck2", init=first)
    from safetensors.torch import load_file

    a, b = load_file(str(first)), load_file(str(second))
    assert a.keys() == b.keys()
    assert all(torch.allclose(a[k], b[k], atol=1e-6) for k in a)  # no step moved it: same start
    assert entailment.read_adapter_config(second).marks is True
    scorer = load_entailment_scorer(second, _sha(second), base_dir)
    marked = scorer.scores(["rain fell"], ["rain fell"]) != scorer.scores(["rain fell"], ["mayor"])
    assert bool(marked[0])


def test_full_fine_tuning_starts_from_a_lora_adapter_merged_and_scores_as_it(
    base_dir: Path, tmp_path: Path
) -> None:
    """Rank 0 trains every encoder weight: started from a LoRA adapter (merged into the base
    layers), a step-free run scores as that adapter, and the file holds the whole encoder."""
    from safetensors.torch import load_file

    from hss_gate.consistency.entailment_training import TrainSettings, train_adapter

    lora = entailment.AdapterConfig(rank=4, alpha=8.0, max_length=WINDOW, base="tiny")
    settings = TrainSettings(seed=3, batch_size=4, learning_rate=5e-2, threads=1, epochs=2)
    first = tmp_path / "lora.safetensors"
    train_adapter(_pairs(), base_dir, lora, settings, first, tmp_path / "ck1")
    full = entailment.AdapterConfig(rank=0, max_length=WINDOW, base="tiny")
    zero = TrainSettings(seed=3, batch_size=4, learning_rate=1e-12, threads=1, epochs=1)
    whole = tmp_path / "full.safetensors"
    train_adapter(_pairs(), base_dir, full, zero, whole, tmp_path / "ck2", init=first)
    tensors = load_file(str(whole))
    assert not any("lora" in name for name in tensors)
    assert any(name.endswith("word_embeddings.weight") for name in tensors)  # every weight
    started = load_entailment_scorer(first, _sha(first), base_dir).scores(PREMISES, HYPOTHESES)
    merged = load_entailment_scorer(whole, _sha(whole), base_dir).scores(PREMISES, HYPOTHESES)
    np.testing.assert_allclose(merged, started, rtol=0, atol=1e-5)
    moved = tmp_path / "moved.safetensors"
    train_adapter(_pairs(), base_dir, full, settings, moved, tmp_path / "ck3", init=first)
    after = load_entailment_scorer(moved, _sha(moved), base_dir).scores(PREMISES, HYPOTHESES)
    assert not np.allclose(after, started)  # and training moves it
