"""Teacher-forced likelihood: log p(summary | document) under the summarizer that wrote it.

Every backend builds the prompt exactly as its summarizer does (hss_gate.models.summarizers.base.
chat_messages / HfSummarizer's prompt code) and sums the log-probabilities of the summary tokens;
the end-of-sequence token is not counted.

- hf: one batched forward pass per batch (seq2seq: labels = summary; causal: prompt + summary
  tokens, left-padded with explicit position ids); a causal model reuses the key/value cache of
  a recently scored prompt that shares a prefix. Also exposes word-level attention.
- gguf: llama.cpp has no prompt log-probabilities, so the summary is *forced* through generation
  (hss_gate.models.gguf_likelihood, GgufLikelihood); or the same weights through transformers
  (`gguf_transformers_scorer`).

An adapter: the research wing's attribution (hss_gate.research) and the checkers use it.
"""

from __future__ import annotations

import bisect
import os
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from hss_gate.common.errors import ModelError
from hss_gate.models.gguf_likelihood import GgufLikelihood
from hss_gate.models.summarizers.base import truncate_words
from hss_gate.models.summarizers.gguf import COMPLETION_PROMPT, resolve_gguf_model
from hss_gate.settings import GenerateSettings

_COUNTING = threading.Lock()  # HfLikelihood.tokens_computed, added to by parallel workers


def usable_cores() -> int:
    """The cores this process may run on (its CPU affinity, else the machine's count)."""
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return os.cpu_count() or 1


class LikelihoodModel(Protocol):
    """Scores one summary against many documents (teacher forcing)."""

    fingerprint: str

    def loglik(self, documents: Sequence[str], summary: str) -> np.ndarray:
        """Sum of the summary tokens' log-probabilities given each document, shape (n,)."""
        ...


# --------------------------------------------------------------------------- hf


def _word_of_token(starts: list[int], ends: list[int], begin: int, end: int) -> int:
    """Index of the word a token's last character falls in, or -1."""
    if end <= begin:
        return -1
    pos = end - 1
    i = bisect.bisect_right(starts, pos) - 1
    return i if i >= 0 and pos < ends[i] else -1


def _common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    """Length of the common prefix of two id sequences."""
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


class HfLikelihood:
    """Teacher forcing on a transformers checkpoint.

    Causal models reuse the key/value cache of a recently scored prompt (`prefix_anchors`
    kept): a masked document shares its prompt with the unmasked one up to the first masked
    word, so only the tokens after it and the summary are computed (exact up to float
    rounding; tested). Without a useful shared prefix, or for seq2seq models, documents are
    scored in batches of settings.batch_size. `dtype="bfloat16"` halves the cost on CPUs with
    bf16 instructions at ~1 nat of rounding in a 200-token summary's log-likelihood.

    `workers` > 1 (0: one per core this process may use) scores the documents of one call that
    many at a time, each forward pass on one torch thread (torch's intra-op threads are set to
    1 meanwhile): first the prompts that become anchors, then the ones reusing them, with exactly
    the anchors and shared prefixes that one-by-one scoring picks (`reuse_plan`). Torch's own
    way, one forward pass on every core, runs its threads in lockstep: when another process
    holds a core, each parallel region waits for the descheduled thread, and a SmolLM2
    evaluation took 5.3 s instead of 0.4 s beside a training job (BENCHMARKS.md, "Word-level
    attribution under load"). Independent one-thread passes take the cores as they come.
    """

    def __init__(
        self,
        source: str,
        settings: GenerateSettings,
        summarizer: Any = None,
        *,
        dtype: str = "float32",
        prefix_anchors: int = 4,
        workers: int = 1,
    ) -> None:
        if summarizer is None:
            from hss_gate.models.summarizers.hf import HfSummarizer

            summarizer = HfSummarizer(source, settings)
        self._summarizer = summarizer
        self.settings = summarizer.settings
        self.dtype = dtype
        self.prefix_anchors = prefix_anchors
        self.workers = workers or usable_cores()
        self._anchors: list[tuple[list[int], Any]] = []  # (prompt ids, per-layer key/values)
        self._anchor_target: list[int] | None = None  # the summary the anchors were scored with
        suffix = "" if dtype == "float32" else f":{dtype}"
        self.fingerprint = f"{summarizer.fingerprint}:loglik{suffix}"
        self.evaluations = 0
        self.tokens_computed = 0  # prompt + summary tokens actually run through the model

    @classmethod
    def from_summarizer(cls, summarizer: Any) -> HfLikelihood:
        return cls(summarizer.source, summarizer.settings, summarizer)

    @property
    def is_seq2seq(self) -> bool:
        self._summarizer._load()
        return bool(self._summarizer.is_seq2seq)

    def _parts(self) -> tuple[Any, Any]:
        summ = self._summarizer
        summ._load()
        if self.dtype != "float32" and str(summ._model.dtype) != f"torch.{self.dtype}":
            import torch

            summ._model = summ._model.to(getattr(torch, self.dtype))
        return summ._model, summ._tokenizer

    def _summary_ids(self, summary: str) -> list[int]:
        _, tok = self._parts()
        if self._summarizer.is_seq2seq:
            return list(tok(text_target=summary)["input_ids"])
        return list(tok(summary, add_special_tokens=False)["input_ids"])

    def summary_token_count(self, summary: str) -> int:
        """The summary's tokens, the ones every evaluation scores (hss bench records it)."""
        return len(self._summary_ids(summary))

    def _prompt_ids(self, documents: Sequence[str]) -> list[list[int]]:
        """Token ids of each prompt, built and cut exactly as HfSummarizer.summarize does."""
        _, tok = self._parts()
        summ = self._summarizer
        budget = summ._budget()
        prompts = summ._prompts(list(documents), budget)
        enc = tok(
            prompts,
            truncation=True,
            max_length=budget,
            add_special_tokens=not summ._chat(),
        )
        return [list(ids) for ids in enc["input_ids"]]

    def loglik(self, documents: Sequence[str], summary: str) -> np.ndarray:
        return self._grouped(documents, summary, None)[:, 0]

    def loglik_segments(
        self, documents: Sequence[str], summary: str, segments: Sequence[str]
    ) -> np.ndarray:
        """Per summary segment (consecutive sentences of the summary, whitespace-normalized
        allowed), the sum of its tokens' log-probabilities, shape (n, len(segments)); a token
        belongs to the segment its last character falls in. Rows sum to `loglik`."""
        _, tok = self._parts()
        if self._summarizer.is_seq2seq:
            enc = tok(text_target=summary, return_offsets_mapping=True)
        else:
            enc = tok(summary, add_special_tokens=False, return_offsets_mapping=True)
        starts = segment_starts(summary, segments)
        owner = [
            max(0, bisect.bisect_right(starts, max(b - 1, a)) - 1) for a, b in enc["offset_mapping"]
        ]
        return self._grouped(documents, summary, (owner, len(segments)))

    def _grouped(
        self, documents: Sequence[str], summary: str, groups: tuple[list[int], int] | None
    ) -> np.ndarray:
        """Summed summary-token log-probabilities per document, one column per group."""
        import torch

        model, tok = self._parts()
        width = 1 if groups is None else groups[1]
        out = np.zeros((len(documents), width), dtype=np.float64)
        target = self._summary_ids(summary)
        special = set(tok.all_special_ids)
        counted = np.array([t not in special for t in target], dtype=bool)
        onehot = np.zeros((len(target), width))
        if groups is None:
            onehot[:, 0] = 1.0
        else:
            onehot[np.arange(len(target)), groups[0][: len(target)]] = 1.0
        onehot[~counted] = 0.0
        if not documents or not counted.any():
            return out
        if target != self._anchor_target:
            self._anchors, self._anchor_target = [], target
        if self.prefix_anchors and self.workers > 1 and not self._summarizer.is_seq2seq:
            logp = self._reused_in_parallel(model, self._prompt_ids(documents), target)
            if groups is None:
                out[:, 0] = logp[:, counted].sum(axis=1)
            else:
                out[:] = np.asarray(logp, dtype=np.float64) @ onehot
            self.evaluations += len(documents)
            return out
        size = self.settings.batch_size
        for start in range(0, len(documents), size):
            batch = list(documents[start : start + size])
            prompts = self._prompt_ids(batch)
            with torch.no_grad():
                if self._summarizer.is_seq2seq:
                    logp = self._seq2seq_logprobs(model, prompts, target)
                    self.tokens_computed += sum(len(p) + len(target) for p in prompts)
                elif self.prefix_anchors:
                    logp = np.stack([self._reused_logprobs(model, p, target) for p in prompts])
                else:
                    logp = self._causal_logprobs(model, prompts, target)
                    self.tokens_computed += sum(len(p) + len(target) for p in prompts)
            if groups is None:  # the plain sum, exactly as before segments existed
                out[start : start + len(batch), 0] = logp[:, counted].sum(axis=1)
            else:
                out[start : start + len(batch)] = np.asarray(logp, dtype=np.float64) @ onehot
            self.evaluations += len(batch)
        return out

    def _reused_logprobs(self, model: Any, prompt: list[int], target: list[int]) -> Any:
        """Log-probabilities of the summary tokens after one prompt, computing only the
        tokens past its longest shared prefix with a kept prompt (whose cache is reused)."""
        plan = reuse_plan([ids for ids, _ in self._anchors], [prompt], self.prefix_anchors)
        source, shared = plan.steps[0]
        anchor = None if source is None else self._anchors[source][1]
        logp, layers = self._forward_after(model, prompt, target, shared, anchor)
        if source is None:
            self._anchors = [(prompt, layers), *self._anchors][: self.prefix_anchors]
        return logp

    def _forward_after(
        self, model: Any, prompt: list[int], target: list[int], shared: int, anchor: Any
    ) -> tuple[Any, Any]:
        """The summary tokens' log-probabilities after `prompt`, its first `shared` tokens
        taken from `anchor`'s key/value cache (None: the whole prompt computed), and the
        per-layer key/values of this prompt when it was computed whole (else None)."""
        import torch
        from transformers import DynamicCache

        n = len(target)
        ids = torch.tensor([prompt[shared:] + target])
        cache = DynamicCache(
            [(k[:, :, :shared], v[:, :, :shared]) for k, v in anchor] if anchor else None
        )
        out = model(input_ids=ids, cache=cache, use_cache=True, logits_to_keep=n + 1)
        with _COUNTING:  # workers add at once
            self.tokens_computed += ids.shape[1]
        layers = None
        if anchor is None:
            layers = [(layer.keys, layer.values) for layer in cache.layers]  # filled in place
        logp = torch.log_softmax(out.logits[:, -(n + 1) : -1, :].float(), dim=-1)
        labels = torch.tensor([target], dtype=torch.long)
        logp = logp.gather(-1, labels.unsqueeze(-1)).squeeze(-1)[0].numpy()
        return logp.astype(np.float64), layers

    def _reused_in_parallel(self, model: Any, prompts: list[list[int]], target: list[int]) -> Any:
        """`_reused_logprobs` of every prompt, `workers` one-thread forward passes at a time:
        the new anchors first, then the prompts reusing them (the same plan, hence the same
        computation, as one by one). Returns an array (len(prompts), len(target))."""
        import torch

        kept = list(self._anchors)
        plan = reuse_plan([ids for ids, _ in kept], prompts, self.prefix_anchors)
        logps: list[Any] = [None] * len(prompts)
        layers: dict[int, Any] = {}

        def run(i: int) -> None:
            source, shared = plan.steps[i]
            if source is None:
                anchor = None
            elif source < len(kept):
                anchor = kept[source][1]
            else:
                anchor = layers[plan.new[source - len(kept)]]
            with torch.no_grad():  # grad mode is per thread: each worker sets its own
                logps[i], computed = self._forward_after(model, prompts[i], target, shared, anchor)
            if computed is not None:
                layers[i] = computed

        anchors = [i for i, (source, _) in enumerate(plan.steps) if source is None]
        reusing = [i for i, (source, _) in enumerate(plan.steps) if source is not None]
        threads = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            with ThreadPoolExecutor(self.workers) as pool:
                for wave in (anchors, reusing):
                    list(pool.map(run, wave))  # re-raises a worker's error
        finally:
            torch.set_num_threads(threads)
        sources = kept + [(prompts[i], layers[i]) for i in plan.new]
        self._anchors = [sources[k] for k in plan.final]
        return np.stack(logps)

    def _pad_id(self) -> int:
        _, tok = self._parts()
        return int(tok.pad_token_id if tok.pad_token_id is not None else 0)

    def _seq2seq_logprobs(self, model: Any, prompts: list[list[int]], target: list[int]) -> Any:
        import torch

        width = max(len(p) for p in prompts)
        ids = torch.full((len(prompts), width), self._pad_id(), dtype=torch.long)
        mask = torch.zeros((len(prompts), width), dtype=torch.long)
        for row, p in enumerate(prompts):
            ids[row, : len(p)] = torch.tensor(p)
            mask[row, : len(p)] = 1
        labels = torch.tensor([target] * len(prompts), dtype=torch.long)
        logits = model(input_ids=ids, attention_mask=mask, labels=labels).logits
        logp = torch.log_softmax(logits.float(), dim=-1)
        return logp.gather(-1, labels.unsqueeze(-1)).squeeze(-1).numpy().astype(np.float64)

    def _causal_inputs(self, prompts: list[list[int]], target: list[int]) -> dict[str, Any]:
        """Left-padded prompt + summary rows with explicit position ids."""
        import torch

        rows = [p + target for p in prompts]
        width = max(len(r) for r in rows)
        ids = torch.full((len(rows), width), self._pad_id(), dtype=torch.long)
        mask = torch.zeros((len(rows), width), dtype=torch.long)
        for i, r in enumerate(rows):
            ids[i, width - len(r) :] = torch.tensor(r)
            mask[i, width - len(r) :] = 1
        positions = (mask.cumsum(-1) - 1).clamp(min=0)
        return {"input_ids": ids, "attention_mask": mask, "position_ids": positions}

    def _causal_logprobs(self, model: Any, prompts: list[list[int]], target: list[int]) -> Any:
        import torch

        n = len(target)
        inputs = self._causal_inputs(prompts, target)
        try:  # only the last n + 1 positions are needed: skip the vocabulary projection elsewhere
            logits = model(**inputs, logits_to_keep=n + 1).logits
        except TypeError:
            logits = model(**inputs).logits
        logits = logits[:, -(n + 1) : -1, :]
        logp = torch.log_softmax(logits.float(), dim=-1)
        labels = torch.tensor([target] * len(prompts), dtype=torch.long)
        return logp.gather(-1, labels.unsqueeze(-1)).squeeze(-1).numpy().astype(np.float64)

    def _attentions(
        self, model: Any, prompt: list[int], target: list[int]
    ) -> tuple[Any, slice, slice]:
        """Per-layer attention weights of one eager forward pass of `prompt` and the summary,
        with the rows (summary tokens) and columns (prompt tokens) to read: cross-attention
        for seq2seq models, each (1, heads, summary, source); else self-attention, each
        (1, heads, query, key)."""
        import torch

        previous = getattr(model.config, "_attn_implementation", None)
        try:
            if hasattr(model, "set_attn_implementation"):
                model.set_attn_implementation("eager")  # sdpa kernels return no weights
            with torch.no_grad():
                if self._summarizer.is_seq2seq:
                    out = model(
                        input_ids=torch.tensor([prompt]),
                        labels=torch.tensor([target]),
                        output_attentions=True,
                    )
                    return out.cross_attentions, slice(None), slice(None)
                out = model(**self._causal_inputs([prompt], target), output_attentions=True)
                p = len(prompt)
                return out.attentions, slice(p, p + len(target)), slice(0, p)
        finally:
            if previous and hasattr(model, "set_attn_implementation"):
                model.set_attn_implementation(previous)

    def word_attention(
        self, document: str, summary: str, spans: Sequence[tuple[int, int]]
    ) -> np.ndarray | None:
        """Mean attention from the summary tokens to each word of `document` (word spans).

        Averaged over layers, heads and summary tokens; a word's score is the sum over its
        subword tokens. Words the model does not see (truncated) get 0. None when the document
        cannot be located in the prompt (a prompt cut to fit the context).
        """
        import torch

        model, tok = self._parts()
        summ = self._summarizer
        seen = truncate_words(document, self.settings.max_input_words)
        budget = summ._budget()
        prompt = summ._prompts([document], budget)[0]
        offset = prompt.find(seen)
        if offset < 0:
            return None
        enc = tok(
            prompt,
            truncation=True,
            max_length=budget,
            add_special_tokens=not summ._chat(),
            return_offsets_mapping=True,
        )
        starts = [offset + s for s, _ in spans]
        ends = [offset + e for _, e in spans]
        token_word = [_word_of_token(starts, ends, a, b) for a, b in enc["offset_mapping"]]
        target = self._summary_ids(summary)
        if not target:
            return None
        layers, rows, cols = self._attentions(model, list(enc["input_ids"]), target)
        if not layers or any(a is None for a in layers):
            return None
        stacked = torch.stack([a[0] for a in layers]).float()
        per_token = stacked[:, :, rows, cols].mean(dim=(0, 1, 2))
        scores = np.zeros(len(spans), dtype=np.float64)
        weights = per_token.numpy()
        for i, w in enumerate(token_word):
            if w >= 0:
                scores[w] += float(weights[i])
        return scores


@dataclass
class ReusePlan:
    """Which cache each prompt of a call starts from, as one-by-one scoring picks it.

    Sources are indices into the kept anchors followed by this call's new anchors (`new`: the
    prompt index of each, in order). `steps[i]` is (source, shared tokens), or (None, 0) for a
    prompt computed whole (it becomes a new anchor); `final` lists the sources kept after the
    call, newest first."""

    steps: list[tuple[int | None, int]]
    new: list[int]
    final: list[int]


def reuse_plan(
    kept: Sequence[Sequence[int]], prompts: Sequence[Sequence[int]], limit: int
) -> ReusePlan:
    """The prefix reuse of `prompts` scored in order after the `kept` anchor prompts (newest
    first, at most `limit` kept): each reuses the anchor with the longest common prefix (the
    first of equals) when it covers at least a quarter of the prompt, short of its last token
    (which predicts the summary); otherwise it is computed whole and kept as the newest anchor."""
    order = list(range(len(kept)))  # sources, newest first
    ids: list[Sequence[int]] = list(kept)
    steps: list[tuple[int | None, int]] = []
    new: list[int] = []
    for i, prompt in enumerate(prompts):
        shared, source = 0, None
        for k in order:
            common = _common_prefix(ids[k], prompt)
            if common > shared:
                shared, source = common, k
        shared = min(shared, len(prompt) - 1)
        if source is None or shared < len(prompt) // 4:  # nothing worth reusing: a new anchor
            steps.append((None, 0))
            new.append(i)
            ids.append(prompt)
            order = [len(ids) - 1, *order][:limit]
        else:
            steps.append((source, shared))
    return ReusePlan(steps, new, order)


def segment_starts(summary: str, segments: Sequence[str]) -> list[int]:
    """Character offset in `summary` where each segment starts; segments are consecutive
    pieces of it whose words are the summary's words in order (whitespace may differ)."""
    import re

    words = [m.start() for m in re.finditer(r"\S+", summary)]
    starts, index = [], 0
    for segment in segments:
        if index >= len(words):
            raise ValueError("the segments have more words than the summary")
        starts.append(words[index])
        index += len(segment.split())
    if index != len(words):
        raise ValueError(f"the segments cover {index} of the summary's {len(words)} words")
    return starts


def gguf_transformers_scorer(
    name_or_path: str,
    settings: GenerateSettings,
    models_dir: str,
    dtype: str = "float32",
    workers: int = 1,
) -> HfLikelihood:
    """Teacher forcing of a verified GGUF file with transformers (weights dequantized), with
    the prompt its GgufSummarizer uses (chat template, or the completion prompt of base models);
    `workers`: HfLikelihood's forward passes at once."""
    from hss_gate.models.summarizers.hf import HfSummarizer

    path, digest, style = resolve_gguf_model(name_or_path, models_dir)
    summarizer = HfSummarizer(
        str(path.parent),
        settings,
        gguf_file=path.name,
        completion_template=COMPLETION_PROMPT if style == "completion" else None,
        fingerprint=f"gguf:{digest[:16]}:transformers:{style}",
    )
    return HfLikelihood(str(path), settings, summarizer, dtype=dtype, workers=workers)


def likelihood_scorer(
    uri: str,
    settings: GenerateSettings,
    models_dir: str,
    backend: str = "llama.cpp",
    dtype: str = "float32",
    workers: int = 1,
) -> LikelihoodModel:
    """The teacher-forced scorer of a summarizer's model URI (gguf: through llama.cpp or
    transformers, hf:), with the prompt settings it generates with; ModelError for a model
    without token probabilities (stored summaries, openai:, extractive). `workers`: forward
    passes at once on the transformers backend (HfLikelihood; llama.cpp's scorer ignores it)."""
    scheme, _, target = uri.partition(":")
    if scheme == "gguf" and target and backend == "transformers":
        return gguf_transformers_scorer(target, settings, models_dir, dtype=dtype, workers=workers)
    if scheme == "gguf" and target:
        return GgufLikelihood(target, settings, models_dir)
    if scheme == "hf" and target:
        return HfLikelihood(target, settings, dtype=dtype, workers=workers)
    raise ModelError(
        f"no teacher-forced likelihood for '{scheme}:' models: attribution needs a gguf: or hf: "
        "model (stored summaries, extractive and openai: summarizers expose no token "
        "probabilities)"
    )
