"""SHAP / LIME / SMILE / attention attributions of the teacher-forced target.

On the additive fake scorer the right answer is known; on tiny transformers models built in
the test (as in test_hf_summarizer.py: a word-level tokenizer trained here, random Llama and
BART weights) the teacher-forced scorer is checked against transformers' own loss.
"""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
pytest.importorskip("tokenizers")
pytest.importorskip("shap")
pytest.importorskip("lime")

from hss_gate.common.errors import ModelError  # noqa: E402
from hss_gate.models.embedding import HashingEmbedder  # noqa: E402
from hss_gate.models.likelihood import HfLikelihood, reuse_plan  # noqa: E402
from hss_gate.models.summarizers import load_summarizer  # noqa: E402
from hss_gate.research.attribution import (  # noqa: E402
    AttributionSettings,
    attention_attribution,
    explain_document,
    lime_attribution,
    planned_evaluations,
    shap_attribution,
    smile_attribution,
    split_words,
)
from hss_gate.research.likelihood import (  # noqa: E402
    CountedLikelihood,
    OverlapLikelihood,
    load_scorer,
    scorer_for,
)
from hss_gate.settings import GenerateSettings, HssSettings  # noqa: E402

pytestmark = pytest.mark.integration

# --------------------------------------------------------------------------- the fake target

DOC = (
    "The council approved the new budget on Monday.\n\nRain fell across the valley for a week "
    "and the river rose. A small bakery sells bread."
)
SUMMARY = "The council approved a budget; the river rose."


def test_shap_recovers_an_additive_target_exactly() -> None:
    scorer = OverlapLikelihood()
    words = split_words(DOC)
    expected = scorer.word_weights(words, SUMMARY)
    settings = AttributionSettings(shap_max_evals=2 * len(words), shap_fixed_context=1)
    out = shap_attribution(scorer, DOC, SUMMARY, settings)
    assert out.words == words and out.values.shape == (len(words),)
    assert np.allclose(out.values, expected)
    assert out.full_value == pytest.approx(expected.sum())
    assert out.values.sum() == pytest.approx(out.full_value - out.base_value)  # efficiency
    assert out.evaluations <= settings.shap_max_evals


@pytest.mark.parametrize("fixed_context", [None, 0, 1])
def test_shap_budget_is_respected_and_keeps_efficiency(fixed_context: Any) -> None:
    scorer = OverlapLikelihood()
    for budget in (8, 16, 32):
        settings = AttributionSettings(shap_max_evals=budget, shap_fixed_context=fixed_context)
        out = shap_attribution(scorer, DOC, SUMMARY, settings)
        assert out.evaluations <= budget
        assert out.values.sum() == pytest.approx(out.full_value - out.base_value)


def test_lime_and_smile_rank_the_additive_words_first() -> None:
    scorer = OverlapLikelihood()
    words = split_words(DOC)
    hits = scorer.word_weights(words, SUMMARY) > 0
    settings = AttributionSettings(lime_num_samples=200, smile_num_samples=200)
    for method in (lime_attribution, smile_attribution):
        out = method(scorer, DOC, SUMMARY, settings)
        assert out.values.shape == (len(words),)
        assert out.evaluations <= 200
        assert out.values[hits].min() > out.values[~hits].max(), method.__name__
        again = method(scorer, DOC, SUMMARY, settings)
        assert np.array_equal(out.values, again.values)  # seeded
        other = method(scorer, DOC, SUMMARY, settings.model_copy(update={"seed": 1}))
        assert not np.array_equal(out.values, other.values)  # the seed is what fixes it


def test_smile_with_an_encoder_uses_embedding_distances() -> None:
    scorer = OverlapLikelihood()
    settings = AttributionSettings(smile_num_samples=64)
    out = smile_attribution(scorer, DOC, SUMMARY, settings, encode=HashingEmbedder().encode)
    plain = smile_attribution(scorer, DOC, SUMMARY, settings)
    assert out.values.shape == plain.values.shape
    assert not np.array_equal(out.values, plain.values)  # other weights, other fit


def test_explain_document_reports_instability_of_a_swap() -> None:
    scorer = OverlapLikelihood()
    words = split_words(DOC)
    swapped = DOC.replace("river", "stream")  # a summary word swapped out: its weight drops
    settings = AttributionSettings(shap_max_evals=64, shap_fixed_context=1, top_k=3)
    out = explain_document(scorer, DOC, SUMMARY, [DOC, swapped], settings, methods=["shap"])
    shap_run = out["shap"]
    same, moved = shap_run.per_perturbation
    assert same["rank"] == 0.0 and same["topk"] == 0.0 and same["mass"] == 0.0
    assert moved["rank"] > 0 and moved["mass"] > 0 and moved["swaps"] == 1
    assert shap_run.summary["n"] == 2
    assert shap_run.summary["rank"] == pytest.approx(moved["rank"] / 2)
    river = words.index("river")
    change = shap_run.words[river]
    assert change["word"] == "river" and change["times_swapped"] == 1
    assert change["mean_abs_change"] == max(w["mean_abs_change"] for w in shap_run.words)
    assert "attention" not in explain_document(
        scorer, DOC, SUMMARY, [swapped], settings, methods=["attention"]
    )  # the fake exposes no attention
    limited = explain_document(
        scorer, DOC, SUMMARY, [swapped, DOC], settings, methods=["shap", "lime"], limits={"lime": 1}
    )
    assert len(limited["shap"].perturbed) == 2 and len(limited["lime"].perturbed) == 1
    assert limited["lime"].per_perturbation[0]["swaps"] == 1  # the first perturbation is kept


def test_explain_document_reports_its_evaluations_as_they_happen() -> None:
    """Progress within a document: evaluations done of those planned, in several steps, the
    unspent rest of the plan at the end (repeated masks are evaluated once)."""
    scorer = OverlapLikelihood()
    swapped = DOC.replace("river", "stream")
    settings = AttributionSettings(methods=["shap", "lime"], shap_max_evals=16, lime_num_samples=16)
    limits = {"lime": 1}
    planned = planned_evaluations(settings, 2, limits=limits)
    assert planned == 3 * 16 + 2 * 16  # SHAP on the original + 2, LIME on the original + 1
    steps: list[int] = []
    out = explain_document(
        scorer, DOC, SUMMARY, [swapped, DOC], settings, limits=limits, advance=steps.append
    )
    assert sum(steps) == planned
    spent = sum(r.evaluations for r in out.values())
    assert spent == scorer.evaluations  # every model call counted, as it returned
    assert spent in set(itertools.accumulate(steps))  # then the unspent rest of the plan, if any
    short: list[int] = []  # three words: LIME draws repeated masks, evaluated once
    few = explain_document(OverlapLikelihood(), "a b c.", "a", [], settings, advance=short.append)
    spent = sum(r.evaluations for r in few.values())
    assert spent < 32 and sum(short) == 32 and short[-1] == 32 - spent
    assert len(steps) > 6  # it moved within each explanation, not once per explanation
    assert planned_evaluations(settings, 5, methods=["shap"]) == 6 * 16
    assert planned_evaluations(AttributionSettings(methods=["attention"]), 2) == 3
    # no progress asked: the same explanation
    again = explain_document(
        OverlapLikelihood(), DOC, SUMMARY, [swapped, DOC], settings, limits=limits
    )
    assert np.array_equal(again["shap"].original.values, out["shap"].original.values)


def test_counted_likelihood_counts_what_it_scores() -> None:
    steps: list[int] = []
    counted = CountedLikelihood(OverlapLikelihood(), steps.append)
    assert counted.loglik(["a b", "b"], "a").shape == (2,)
    counted.add(3)
    assert steps == [2, 3] and counted.count == 5
    assert counted.evaluations == 2  # the wrapped scorer's own attributes show through


def test_reuse_plan_follows_one_by_one_scoring() -> None:
    full = list(range(100))
    masked_late = full[:80] + full[81:]  # shares 80 tokens with the full prompt
    masked_early = full[:5] + full[6:]  # shares 5: below a quarter, computed whole
    plan = reuse_plan([], [full, masked_late, masked_early, [*masked_early[:50], 7]], limit=4)
    assert plan.steps == [(None, 0), (0, 80), (None, 0), (1, 50)]
    assert plan.new == [0, 2] and plan.final == [1, 0]  # newest first
    # the kept anchors are the first sources; the limit drops the oldest: at limit 1 the full
    # prompt (60 tokens in common with the last) is gone by then, so it is computed whole
    later = reuse_plan([full], [masked_early, [*full[:60], 1, 2]], limit=1)
    assert later.steps == [(None, 0), (None, 0)] and later.new == [0, 1] and later.final == [2]
    assert reuse_plan([full], [[*full[:60], 1, 2]], limit=1).steps == [(0, 60)]


def test_scorers_exist_only_for_backends_with_token_probabilities() -> None:
    settings = HssSettings()
    assert isinstance(load_scorer("fake:overlap", settings), OverlapLikelihood)
    with pytest.raises(ModelError, match="no teacher-forced likelihood"):
        load_scorer("extractive:lead-3", settings)
    with pytest.raises(ModelError, match="no token probabilities"):
        scorer_for(load_summarizer("extractive:lead-3", settings))


# --------------------------------------------------------------------------- tiny hf models

SPECIALS = ["<pad>", "<s>", "</s>", "<unk>"]
PAD, BOS, EOS = 0, 1, 2
DOCS = [
    "The council approved the new budget on Monday after a long debate.",
    "Rain fell across the northern valley for a whole week and the river rose.",
    "A small bakery in the old town sells bread every morning.",
]
CHAT_TEMPLATE = (
    "{{ bos_token }}{% for m in messages %}{{ m['role'] }} : {{ m['content'] }} "
    "{% endfor %}{% if add_generation_prompt %}assistant :{% endif %}"
)


def _tokenizer(causal: bool) -> Any:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers

    generate = GenerateSettings()
    corpus = [*DOCS, generate.prompt, generate.system_prompt, "system user assistant :"]
    corpus.append(" ".join(f"w{i}" for i in range(200)))
    raw = Tokenizer(models.WordLevel(unk_token="<unk>"))
    raw.pre_tokenizer = pre_tokenizers.Whitespace()
    raw.train_from_iterator(corpus, trainers.WordLevelTrainer(special_tokens=SPECIALS))
    raw.post_processor = processors.TemplateProcessing(
        single="<s> $A" if causal else "<s> $A </s>", special_tokens=[("<s>", BOS), ("</s>", EOS)]
    )
    raw.decoder = decoders.WordPiece(prefix="##")
    fast = transformers.PreTrainedTokenizerFast(
        tokenizer_object=raw,
        bos_token="<s>",
        eos_token="</s>",
        pad_token="<pad>",
        unk_token="<unk>",
    )
    if causal:
        fast.chat_template = CHAT_TEMPLATE
    return fast


@pytest.fixture(scope="module")
def causal_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tok = _tokenizer(causal=True)
    torch.manual_seed(0)
    config = transformers.LlamaConfig(
        vocab_size=len(tok),
        hidden_size=16,
        intermediate_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=2,
        max_position_embeddings=2048,
        pad_token_id=PAD,
        bos_token_id=BOS,
        eos_token_id=EOS,
        tie_word_embeddings=False,
        initializer_range=0.5,
    )
    directory = tmp_path_factory.mktemp("llama-chat")
    transformers.LlamaForCausalLM(config).eval().save_pretrained(directory)
    tok.save_pretrained(directory)
    return directory


@pytest.fixture(scope="module")
def seq2seq_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tok = _tokenizer(causal=False)
    torch.manual_seed(0)
    config = transformers.BartConfig(
        vocab_size=len(tok),
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
        init_std=0.5,
    )
    directory = tmp_path_factory.mktemp("bart")
    transformers.BartForConditionalGeneration(config).eval().save_pretrained(directory)
    tok.save_pretrained(directory)
    return directory


def _settings(batch_size: int = 2) -> HssSettings:
    return HssSettings(generate=GenerateSettings(max_new_tokens=8, batch_size=batch_size))


def _summary(model_dir: Path, document: str) -> tuple[Any, str]:
    summarizer = load_summarizer("hf:" + str(model_dir), _settings())
    summary = summarizer.summarize([document])[0]
    assert summary, "the random model should write some words"
    return summarizer, summary


@pytest.mark.parametrize("fixture", ["causal_dir", "seq2seq_dir"])
def test_loglik_equals_transformers_loss(fixture: str, request: pytest.FixtureRequest) -> None:
    model_dir = request.getfixturevalue(fixture)
    summarizer, summary = _summary(model_dir, DOCS[0])
    scorer = scorer_for(summarizer)
    values = scorer.loglik(DOCS, summary)
    assert values.shape == (3,) and np.all(values < 0)
    model, tok = summarizer._model, summarizer._tokenizer
    for doc, value in zip(DOCS, values, strict=True):
        prompt = scorer._prompt_ids([doc])[0]
        with torch.no_grad():
            if summarizer.is_seq2seq:
                labels = tok(text_target=summary)["input_ids"]
                masked = [t if t not in tok.all_special_ids else -100 for t in labels]
                # the decoder reads the unmasked labels shifted right (as in generation)
                start = torch.tensor([[model.config.decoder_start_token_id]])
                decoder_ids = torch.cat([start, torch.tensor([labels[:-1]])], dim=1)
                out = model(
                    input_ids=torch.tensor([prompt]),
                    decoder_input_ids=decoder_ids,
                    labels=torch.tensor([masked]),
                )
                count = sum(t != -100 for t in masked)
            else:
                target = tok(summary, add_special_tokens=False)["input_ids"]
                ids = torch.tensor([prompt + target])
                labels = torch.tensor([[-100] * len(prompt) + target])
                out = model(input_ids=ids, labels=labels)
                count = len(target)
        assert np.allclose(value, -float(out.loss) * count, atol=1e-4)


@pytest.mark.parametrize("fixture", ["causal_dir", "seq2seq_dir"])
def test_batched_loglik_equals_one_at_a_time(fixture: str, request: pytest.FixtureRequest) -> None:
    model_dir = request.getfixturevalue(fixture)
    _, summary = _summary(model_dir, DOCS[1])
    batched = load_scorer("hf:" + str(model_dir), _settings(batch_size=3))
    single = load_scorer("hf:" + str(model_dir), _settings(batch_size=1))
    together = batched.loglik(DOCS, summary)
    alone = single.loglik(DOCS, summary)
    assert np.allclose(together, alone, atol=1e-4)  # padding and position ids are right
    assert len(set(np.round(alone, 4))) == 3, "different documents, different likelihoods"
    assert batched.evaluations == 3


@pytest.mark.parametrize("fixture", ["causal_dir", "seq2seq_dir"])
def test_segment_logliks_split_the_summary_loglik(
    fixture: str, request: pytest.FixtureRequest
) -> None:
    """Per-segment sums (summary sentences, for sentence-level localization) add up to loglik."""
    model_dir = request.getfixturevalue(fixture)
    _, summary = _summary(model_dir, DOCS[0])
    words = summary.split()
    assert len(words) >= 2
    half = len(words) // 2
    segments = [" ".join(words[:half]), " ".join(words[half:])]
    scorer = load_scorer("hf:" + str(model_dir), _settings(batch_size=2))
    parts = scorer.loglik_segments(DOCS, summary, segments)
    assert parts.shape == (3, 2) and np.all(parts < 0)
    assert np.allclose(parts.sum(axis=1), scorer.loglik(DOCS, summary), atol=1e-6)
    with pytest.raises(ValueError):
        scorer.loglik_segments(DOCS, summary, segments[:1])


def test_prefix_reuse_equals_full_forward_and_computes_fewer_tokens(causal_dir: Path) -> None:
    """Masked documents reuse the unmasked prompt's cache up to their first masked word."""
    _, summary = _summary(causal_dir, DOCS[0])
    words = split_words(DOCS[0])
    variants = [DOCS[0]] + [" ".join(words[:i] + words[i + 1 :]) for i in (1, 5, len(words) - 2)]
    reused = load_scorer("hf:" + str(causal_dir), _settings(batch_size=1))
    full = load_scorer("hf:" + str(causal_dir), _settings(batch_size=4))
    full.prefix_anchors = 0
    together = full.loglik(variants, summary)
    alone = np.concatenate([reused.loglik([v], summary) for v in variants])
    assert np.allclose(alone, together, atol=1e-4)
    assert len(set(np.round(alone, 4))) == len(variants), "each masked word moves the value"
    assert reused.tokens_computed < 0.7 * full.tokens_computed


def test_parallel_workers_compute_what_one_by_one_scoring_computes(causal_dir: Path) -> None:
    """workers=2: one-thread forward passes two at a time, the same anchors and prefixes as
    one by one (the same tokens computed, the same values); torch's threads restored."""
    _, summary = _summary(causal_dir, DOCS[0])
    words = split_words(DOCS[0])
    variants = [DOCS[0]] + [" ".join(words[:i] + words[i + 1 :]) for i in (0, 1, 5, 8, 3)]
    variants += [DOCS[1], DOCS[2]]
    serial = load_scorer("hf:" + str(causal_dir), _settings(batch_size=1))
    parallel = HfLikelihood("hf:" + str(causal_dir), _settings(batch_size=1).generate, workers=2)
    parallel._summarizer = serial._summarizer  # the same weights
    threads = torch.get_num_threads()
    one_by_one = np.concatenate(
        [serial.loglik(variants[:3], summary), serial.loglik(variants[3:], summary)]
    )
    together = np.concatenate(
        [parallel.loglik(variants[:3], summary), parallel.loglik(variants[3:], summary)]
    )
    assert torch.get_num_threads() == threads
    assert np.allclose(together, one_by_one, atol=1e-5)
    assert parallel.tokens_computed == serial.tokens_computed  # the same reuse, prefix by prefix
    assert parallel.evaluations == serial.evaluations == len(variants)
    assert [ids for ids, _ in parallel._anchors] == [ids for ids, _ in serial._anchors]


def test_cached_scorer_stores_every_evaluation_and_resumes(tmp_path: Path) -> None:
    from hss_gate.common.cache import Cache
    from hss_gate.research.likelihood import CachedLikelihood

    docs = ["a b c", "a b", "b c"]
    first = CachedLikelihood(OverlapLikelihood(), Cache(tmp_path))
    values = first.loglik(docs[:2], "a c")
    assert first.scorer.evaluations == 2
    again = CachedLikelihood(OverlapLikelihood(), Cache(tmp_path))  # a new process, same cache
    assert np.array_equal(again.loglik(docs, "a c")[:2], values)
    assert again.scorer.evaluations == 1 and again.hits == 2  # only "b c" was computed
    assert again.loglik(docs, "b")[0] != values[0]  # another summary is another evaluation


def test_causal_prompt_is_the_generation_prompt(causal_dir: Path) -> None:
    """A greedy summary is the argmax at every teacher-forced step: same prompt, same tokens."""
    summarizer, summary = _summary(causal_dir, DOCS[2])
    scorer = HfLikelihood.from_summarizer(summarizer)
    target = summarizer._tokenizer(summary, add_special_tokens=False)["input_ids"]
    inputs = scorer._causal_inputs(scorer._prompt_ids([DOCS[2]]), target)
    with torch.no_grad():
        logits = summarizer._model(**inputs).logits[0]
    predicted = logits[-len(target) - 1 : -1].argmax(-1).tolist()
    assert predicted == target


@pytest.mark.parametrize("fixture", ["causal_dir", "seq2seq_dir"])
def test_attention_gives_one_score_per_word(fixture: str, request: pytest.FixtureRequest) -> None:
    model_dir = request.getfixturevalue(fixture)
    summarizer, summary = _summary(model_dir, DOCS[0])
    scorer = scorer_for(summarizer)
    out = attention_attribution(scorer, DOCS[0], summary, AttributionSettings())
    assert out is not None and out.method == "attention"
    assert out.words == split_words(DOCS[0])
    assert out.values.shape == (len(out.words),)
    assert np.all(out.values >= 0) and out.values.sum() <= 1.0 + 1e-6
    assert np.count_nonzero(out.values) == len(out.words)  # every word holds a token
    # generation still works afterwards (the attention implementation was restored)
    assert summarizer.summarize([DOCS[0]]) == [summary]


@pytest.mark.parametrize("fixture", ["causal_dir", "seq2seq_dir"])
def test_shap_and_lime_on_a_tiny_model(fixture: str, request: pytest.FixtureRequest) -> None:
    model_dir = request.getfixturevalue(fixture)
    summarizer, summary = _summary(model_dir, DOCS[1])
    scorer = scorer_for(summarizer)
    words = split_words(DOCS[1])
    settings = AttributionSettings(shap_max_evals=24, lime_num_samples=24, seed=3)
    shap_out = shap_attribution(scorer, DOCS[1], summary, settings)
    lime_out = lime_attribution(scorer, DOCS[1], summary, settings)
    for out in (shap_out, lime_out):
        assert out.words == words and out.values.shape == (len(words),)
        assert np.all(np.isfinite(out.values)) and np.any(out.values != 0)
        assert 1 < out.evaluations <= 24
        assert out.full_value == pytest.approx(float(scorer.loglik([DOCS[1]], summary)[0]))
    assert shap_out.values.sum() == pytest.approx(shap_out.full_value - shap_out.base_value)
    again = load_scorer("hf:" + str(model_dir), _settings())
    assert np.allclose(shap_attribution(again, DOCS[1], summary, settings).values, shap_out.values)
    assert np.allclose(lime_attribution(again, DOCS[1], summary, settings).values, lime_out.values)


def test_attribution_instability_across_a_swap_on_a_tiny_model(causal_dir: Path) -> None:
    summarizer, summary = _summary(causal_dir, DOCS[0])
    scorer = scorer_for(summarizer)
    swapped = DOCS[0].replace("long", "whole")  # one word for one word, both in the vocabulary
    settings = AttributionSettings(shap_max_evals=24, lime_num_samples=24, top_k=3)
    out = explain_document(
        scorer,
        DOCS[0],
        summary,
        [DOCS[0], swapped],
        settings,
        methods=["shap", "lime", "attention"],
    )
    assert set(out) == {"shap", "lime", "attention"}
    for result in out.values():
        same, moved = result.per_perturbation
        assert same["rank"] == 0.0 and same["mass"] == 0.0  # deterministic: same document
        assert moved["swaps"] == 1
        assert 0 <= moved["topk"] <= 1 and 0 <= moved["mass"] <= 1 and 0 <= moved["rank"] <= 2
        assert len(result.words) == len(split_words(DOCS[0]))
    assert out["shap"].per_perturbation[1]["mass"] > 0  # the swap moved the explanation


def test_gbnf_literal_escapes_what_the_grammar_parser_reads() -> None:
    from hss_gate.models.gguf_likelihood import _gbnf_literal

    assert _gbnf_literal('say "hi"\\ now\n\tok') == '"say \\"hi\\"\\\\ now\\n\\tok"'
    assert _gbnf_literal("bell\x07 é") == '"bell\\x07 é"'
