"""HfSummarizer on tiny randomly initialised checkpoints built offline in the test.

Nothing is downloaded: the tokenizer is trained with the `tokenizers` library on a few
sentences and the models are random BART / Llama configurations a few kilobytes large.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
tokenizers = pytest.importorskip("tokenizers")

from hss_gate.common.errors import ModelError  # noqa: E402
from hss_gate.models.summarizers import load_summarizer  # noqa: E402
from hss_gate.models.summarizers.base import chat_messages  # noqa: E402
from hss_gate.settings import GenerateSettings, HssSettings  # noqa: E402

pytestmark = pytest.mark.integration

SPECIALS = ["<pad>", "<s>", "</s>", "<unk>"]
PAD, BOS, EOS = 0, 1, 2

DOCS = [
    "The council approved the new budget on Monday after a long debate.",
    "Rain fell across the northern valley for a whole week and the river rose.",
    "A small bakery in the old town sells bread every morning.",
    "The team won the final match in extra time.",
    "Engineers repaired the bridge over the river in two months.",
]

CHAT_TEMPLATE = (
    "{{ bos_token }}{% for m in messages %}{{ m['role'] }} : {{ m['content'] }} "
    "{% endfor %}{% if add_generation_prompt %}assistant :{% endif %}"
)


def _corpus() -> list[str]:
    generate = GenerateSettings()
    filler = " ".join(f"w{i}" for i in range(250))  # a vocabulary of a few hundred words
    return [*DOCS, generate.prompt, generate.system_prompt, "system user assistant :", filler]


def _tokenizer(chat_template: str | None = None, *, causal: bool = True) -> Any:
    """A word-level tokenizer; causal ones add only <s> (like Llama), seq2seq ones <s> ... </s>."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers

    raw = Tokenizer(models.WordLevel(unk_token="<unk>"))
    raw.pre_tokenizer = pre_tokenizers.Whitespace()
    raw.train_from_iterator(_corpus(), trainers.WordLevelTrainer(special_tokens=SPECIALS))
    assert [raw.token_to_id(t) for t in SPECIALS[:3]] == [PAD, BOS, EOS]
    raw.post_processor = processors.TemplateProcessing(
        single="<s> $A" if causal else "<s> $A </s>", special_tokens=[("<s>", BOS), ("</s>", EOS)]
    )
    raw.decoder = decoders.WordPiece(prefix="##")  # joins words with single spaces
    fast = transformers.PreTrainedTokenizerFast(
        tokenizer_object=raw,
        bos_token="<s>",
        eos_token="</s>",
        pad_token="<pad>",
        unk_token="<unk>",
    )
    if chat_template is not None:
        fast.chat_template = chat_template
    return fast


def _save(model: Any, tokenizer: Any, directory: Path) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(directory)  # safetensors
    tokenizer.save_pretrained(directory)
    assert list(directory.glob("*.safetensors"))
    return directory


@pytest.fixture(scope="module")
def vocab_size() -> int:
    return len(_tokenizer())


@pytest.fixture(scope="module")
def seq2seq_dir(tmp_path_factory: pytest.TempPathFactory, vocab_size: int) -> Path:
    torch.manual_seed(0)
    config = transformers.BartConfig(
        vocab_size=vocab_size,
        d_model=16,
        encoder_layers=1,
        decoder_layers=1,
        encoder_attention_heads=2,
        decoder_attention_heads=2,
        encoder_ffn_dim=32,
        decoder_ffn_dim=32,
        max_position_embeddings=1024,
        pad_token_id=PAD,
        bos_token_id=BOS,
        eos_token_id=EOS,
        decoder_start_token_id=EOS,
        forced_bos_token_id=None,
        forced_eos_token_id=None,
        init_std=0.5,  # large random weights: summaries that depend on the input
    )
    model = transformers.BartForConditionalGeneration(config).eval()
    return _save(model, _tokenizer(causal=False), tmp_path_factory.mktemp("bart"))


def _llama(vocab_size: int, seed: int = 0) -> Any:
    torch.manual_seed(seed)
    config = transformers.LlamaConfig(
        vocab_size=vocab_size,
        hidden_size=16,
        intermediate_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=2,
        max_position_embeddings=2048,
        pad_token_id=PAD,
        bos_token_id=BOS,
        eos_token_id=EOS,
        tie_word_embeddings=False,
        initializer_range=0.5,
    )
    return transformers.LlamaForCausalLM(config).eval()


@pytest.fixture(scope="module")
def causal_dir(tmp_path_factory: pytest.TempPathFactory, vocab_size: int) -> Path:
    return _save(_llama(vocab_size), _tokenizer(), tmp_path_factory.mktemp("llama"))


@pytest.fixture(scope="module")
def causal_chat_dir(tmp_path_factory: pytest.TempPathFactory, causal_dir: Path) -> Path:
    """The same weights as causal_dir, with a chat template on the tokenizer."""
    directory = tmp_path_factory.mktemp("llama-chat") / "model"
    shutil.copytree(causal_dir, directory)
    _tokenizer(CHAT_TEMPLATE).save_pretrained(directory)
    return directory


def _settings(**generate: Any) -> HssSettings:
    values = {"max_new_tokens": 8, "batch_size": 2, **generate}
    return HssSettings(generate=GenerateSettings(**values))


def _spy_generate(summarizer: Any, monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Record the input ids each generate() call receives (the model must be loaded)."""
    calls: list[Any] = []
    original = summarizer._model.generate

    def spy(*args: Any, **kwargs: Any) -> Any:
        calls.append(kwargs["input_ids"].clone())
        return original(*args, **kwargs)

    monkeypatch.setattr(summarizer._model, "generate", spy)
    return calls


def _unpadded(row: Any) -> list[int]:
    return [int(t) for t in row if int(t) != PAD]


@pytest.mark.parametrize("fixture", ["seq2seq_dir", "causal_dir", "causal_chat_dir"])
def test_one_deterministic_string_per_input(fixture: str, request: pytest.FixtureRequest) -> None:
    model_dir = request.getfixturevalue(fixture)
    summarizer = load_summarizer("hf:" + str(model_dir), _settings())
    seen: list[int] = []

    first = summarizer.summarize(DOCS, progress=seen.append)
    second = summarizer.summarize(DOCS)

    assert len(first) == len(DOCS)
    assert all(isinstance(s, str) for s in first)
    assert any(s for s in first), "a random model should still emit some words"
    assert first == second
    assert sum(seen) == len(DOCS) and seen == [2, 2, 1]  # batch_size 2
    # a fresh instance (fresh load) writes the same summaries: greedy decoding
    assert load_summarizer("hf:" + str(model_dir), _settings()).summarize(DOCS) == first
    for summary in first:  # at most max_new_tokens words (one token per word here)
        assert len(summary.split()) <= 8
        assert "<pad>" not in summary and "</s>" not in summary


def test_is_seq2seq_detected(seq2seq_dir: Path, causal_dir: Path) -> None:
    seq2seq = load_summarizer("hf:" + str(seq2seq_dir), _settings())
    causal = load_summarizer("hf:" + str(causal_dir), _settings())
    seq2seq.summarize(DOCS[:1])
    causal.summarize(DOCS[:1])
    assert seq2seq.is_seq2seq is True
    assert causal.is_seq2seq is False
    assert seq2seq._tokenizer.padding_side == "right"
    assert causal._tokenizer.padding_side == "left"


@pytest.mark.parametrize("fixture", ["causal_dir", "causal_chat_dir", "seq2seq_dir"])
def test_batched_equals_one_at_a_time(fixture: str, request: pytest.FixtureRequest) -> None:
    model_dir = request.getfixturevalue(fixture)
    batched = load_summarizer("hf:" + str(model_dir), _settings(batch_size=len(DOCS)))
    single = load_summarizer("hf:" + str(model_dir), _settings(batch_size=1))

    together = batched.summarize(DOCS)
    alone = single.summarize(DOCS)

    assert together == alone
    assert len(set(alone)) > 1, "different documents should give different summaries"


def test_causal_prompt_without_chat_template(
    causal_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = _settings()
    summarizer = load_summarizer("hf:" + str(causal_dir), settings)
    summarizer.summarize(DOCS[:1])  # loads the model
    calls = _spy_generate(summarizer, monkeypatch)
    summarizer.summarize(DOCS[:2])

    tokenizer = summarizer._tokenizer
    assert tokenizer.chat_template is None
    expected = [tokenizer(settings.generate.user_prompt(d))["input_ids"] for d in DOCS[:2]]
    assert [_unpadded(row) for row in calls[0]] == expected
    assert expected[0][0] == BOS and expected[0][1] != BOS
    # left padding: every row ends with the prompt's last token, pads come first
    assert all(int(row[-1]) == expected[0][-1] for row in calls[0])
    assert int(calls[0][0][0]) == PAD or int(calls[0][1][0]) == PAD


def test_causal_prompt_uses_chat_template_once(
    causal_chat_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = _settings()
    summarizer = load_summarizer("hf:" + str(causal_chat_dir), settings)
    summarizer.summarize(DOCS[:1])
    calls = _spy_generate(summarizer, monkeypatch)
    summarizer.summarize(DOCS[:2])

    tokenizer = summarizer._tokenizer
    expected = []
    for doc in DOCS[:2]:
        ids = tokenizer.apply_chat_template(
            chat_messages(doc, settings.generate), tokenize=True, add_generation_prompt=True
        )
        expected.append(list(ids["input_ids"] if hasattr(ids, "keys") else ids))
    # the template already writes <s>: the prompt must not get a second BOS (nor an EOS)
    assert expected[0][:2] == [BOS, tokenizer.convert_tokens_to_ids("system")]
    assert [_unpadded(row) for row in calls[0]] == expected
    assert tokenizer.decode(calls[0][0], skip_special_tokens=True).rstrip().endswith("assistant :")


def test_chat_template_changes_the_summaries_and_fingerprint(
    causal_dir: Path, causal_chat_dir: Path
) -> None:
    plain = load_summarizer("hf:" + str(causal_dir), _settings())
    chat = load_summarizer("hf:" + str(causal_chat_dir), _settings())
    # same weights, different prompt format: cached summaries must not be shared
    assert plain.fingerprint != chat.fingerprint
    assert plain.summarize(DOCS) != chat.summarize(DOCS)


def test_long_causal_prompt_keeps_instruction_and_generation_cue(
    causal_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    n_ctx = 512
    settings = _settings(n_ctx=n_ctx, max_input_words=5000)
    summarizer = load_summarizer("hf:" + str(causal_dir), settings)
    summarizer.summarize(DOCS[:1])
    calls = _spy_generate(summarizer, monkeypatch)
    long_doc = " ".join(DOCS * 60)  # about 4000 words
    short_doc = DOCS[0]

    out = summarizer.summarize([long_doc, short_doc])

    assert len(out) == 2
    tokenizer = summarizer._tokenizer
    long_ids = _unpadded(calls[0][0])
    # prompt and new tokens share the context window
    assert len(long_ids) <= n_ctx - settings.generate.max_new_tokens
    assert len(long_ids) > 0.8 * (n_ctx - settings.generate.max_new_tokens)  # not over-cut
    prompt = settings.generate.prompt_template
    head = tokenizer(prompt.split("{document}")[0], add_special_tokens=False)["input_ids"]
    tail = tokenizer(prompt.split("{document}")[1], add_special_tokens=False)["input_ids"]
    assert long_ids[1 : 1 + len(head)] == head  # the instruction survives
    assert long_ids[-len(tail) :] == tail  # so does "Summary:"
    # the document is cut at its end, keeping its beginning
    first_words = tokenizer(DOCS[0], add_special_tokens=False)["input_ids"]
    assert long_ids[1 + len(head) : 1 + len(head) + len(first_words)] == first_words
    # the short document in the same batch is untouched
    assert _unpadded(calls[0][1]) == tokenizer(prompt.format(document=short_doc))["input_ids"]


def test_fingerprint_follows_generation_settings(seq2seq_dir: Path) -> None:
    def fingerprint(**generate: Any) -> str:
        return load_summarizer("hf:" + str(seq2seq_dir), _settings(**generate)).fingerprint

    base = fingerprint()
    assert base.startswith("hf:")
    assert fingerprint() == base
    assert fingerprint(max_new_tokens=9) != base
    assert fingerprint(prompt="Summary of {document}") != base
    assert fingerprint(max_input_words=60) != base
    assert fingerprint(n_ctx=1024) != base
    # batch_size only changes speed (batched == one at a time, tested above)
    assert fingerprint(batch_size=3) == base


def test_fingerprint_follows_weights(causal_dir: Path, tmp_path: Path, vocab_size: int) -> None:
    copy = tmp_path / "copy"
    shutil.copytree(causal_dir, copy)
    original = load_summarizer("hf:" + str(causal_dir), _settings()).fingerprint
    assert load_summarizer("hf:" + str(copy), _settings()).fingerprint == original

    model = _llama(vocab_size)
    with torch.no_grad():
        model.lm_head.weight[0, 0] += 1.0
    model.save_pretrained(copy)
    changed = load_summarizer("hf:" + str(copy), _settings())

    assert changed.fingerprint != original
    assert load_summarizer("hf:" + str(causal_dir), _settings()).fingerprint == original


def test_pickle_only_checkpoint_is_refused(
    causal_dir: Path, tmp_path: Path, vocab_size: int
) -> None:
    directory = tmp_path / "pickle"
    directory.mkdir()
    model = _llama(vocab_size)
    model.config.save_pretrained(directory)
    _tokenizer().save_pretrained(directory)
    torch.save(model.state_dict(), directory / "pytorch_model.bin")
    assert not list(directory.glob("*.safetensors"))

    with pytest.raises(ModelError, match="safetensors"):
        load_summarizer("hf:" + str(directory), _settings())


def test_broken_checkpoint_raises_model_error(causal_dir: Path, tmp_path: Path) -> None:
    directory = tmp_path / "broken"
    shutil.copytree(causal_dir, directory)
    (directory / "config.json").write_text("{ not json", encoding="utf-8")
    summarizer = load_summarizer("hf:" + str(directory), _settings())

    with pytest.raises(ModelError, match="cannot load hf model"):
        summarizer.summarize(DOCS[:1])


def test_prompt_lookup_speculation_writes_the_greedy_summaries(causal_dir: Path) -> None:
    """generate.speculative=ngram drafts from the prompt (transformers' prompt lookup, one
    sequence at a time); the model verifies every drafted token, so the summaries are the
    greedy ones here (fp32 on a tiny model: no near-ties)."""
    plain = load_summarizer("hf:" + str(causal_dir), _settings(max_new_tokens=12))
    drafted = load_summarizer(
        "hf:" + str(causal_dir), _settings(max_new_tokens=12, speculative="ngram")
    )
    seen: list[int] = []
    assert drafted.summarize(DOCS, progress=seen.append) == plain.summarize(DOCS)
    assert seen == [1] * len(DOCS)  # prompt lookup takes one sequence at a time
    assert drafted.fingerprint != plain.fingerprint


def test_a_stop_string_ends_the_summary_before_it(causal_dir: Path) -> None:
    free = load_summarizer("hf:" + str(causal_dir), _settings(max_new_tokens=12, stop=[]))
    (text,) = free.summarize(DOCS[:1])
    words = text.split()
    assert len(words) >= 3, "the tiny model should write a few words"
    stop = words[2]
    stopped = load_summarizer(
        "hf:" + str(causal_dir), _settings(max_new_tokens=12, stop=[stop], batch_size=1)
    )
    (summary,) = stopped.summarize(DOCS[:1])
    assert summary == text.split(stop, 1)[0].strip()
    assert stop not in summary
