"""transformers checkpoints: seq2seq (BART, T5, Pegasus) and causal chat models.

Hub ids load from the local HF cache or a hub connection; a directory loads offline.
Only safetensors weights are accepted and remote code is never run.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from hss_gate.common.errors import ModelError
from hss_gate.common.library_logs import TRANSFORMERS_LOADING, known_messages
from hss_gate.models.model_store import sha256_file
from hss_gate.models.summarizers.base import chat_messages, generation_key, truncate_words
from hss_gate.settings import GenerateSettings

# Small files that change what a checkpoint writes: config, generation config, tokenizer,
# chat template (transformers 5 saves it as chat_template.jinja), vocab/merges.
_TEXT_SUFFIXES = (".json", ".jinja", ".model", ".txt", ".tiktoken")


def _weights_digest(source: str) -> str:
    """Digest of a local checkpoint: its safetensors weights plus its config/tokenizer files."""
    path = Path(source)
    if path.is_dir():
        files = sorted(path.glob("*.safetensors"))
        if not files:
            raise ModelError(f"{path}: no .safetensors weights (pickle checkpoints are refused)")
        weights = "-".join(sha256_file(f)[:12] for f in files)
        meta = hashlib.sha256()
        for f in sorted(p for p in path.iterdir() if p.is_file() and p.suffix in _TEXT_SUFFIXES):
            meta.update(f"{f.name}\0{sha256_file(f)}\0".encode())
        return f"{weights}-{meta.hexdigest()[:12]}"
    return source  # a hub id: the revision is pinned by the hub cache


class StopAtText:
    """A transformers stopping criterion: a sequence is done once its new text holds a stop
    string (transformers' own StopStringCriteria needs a byte-level or sentencepiece vocabulary)."""

    def __init__(self, tokenizer: Any, stops: Sequence[str], start: int) -> None:
        self.tokenizer = tokenizer
        self.stops = list(stops)
        self.start = start

    def __call__(self, input_ids: Any, scores: Any, **kwargs: Any) -> Any:
        import torch

        texts = self.tokenizer.batch_decode(input_ids[:, self.start :], skip_special_tokens=True)
        done = [any(stop in text for stop in self.stops) for text in texts]
        return torch.tensor(done, dtype=torch.bool, device=input_ids.device)


class HfSummarizer:
    """Greedy summaries from a transformers model, batched."""

    engine = "transformers"

    def __init__(
        self,
        source: str,
        settings: GenerateSettings,
        *,
        gguf_file: str | None = None,
        completion_template: str | None = None,
        fingerprint: str | None = None,
    ) -> None:
        """`gguf_file` (a file in the `source` directory) loads GGUF weights dequantized to
        fp32; `completion_template` ("...{document}...") replaces the chat template for base
        models. Callers passing a GGUF file verify it and give the `fingerprint`."""
        self.source = source
        self.settings = settings
        self.gguf_file = gguf_file
        self.completion_template = completion_template
        self.fingerprint = fingerprint or f"hf:{_weights_digest(source)}:{generation_key(settings)}"
        self._model: Any = None
        self._tokenizer: Any = None
        self.is_seq2seq = False

    def _load(self) -> None:
        if self._model is not None:
            return
        import torch
        from transformers import (
            AutoConfig,
            AutoModelForCausalLM,
            AutoModelForSeq2SeqLM,
            AutoTokenizer,
        )

        local = Path(self.source).is_dir()
        kwargs: dict[str, Any] = {"trust_remote_code": False, "local_files_only": local}
        # GGUF is a plain tensor format (no pickle); otherwise only safetensors are read
        gguf = {"gguf_file": self.gguf_file} if self.gguf_file else {}
        weights = gguf or {"use_safetensors": True}
        try:
            config = AutoConfig.from_pretrained(self.source, **kwargs, **gguf)
            self._tokenizer = AutoTokenizer.from_pretrained(self.source, **kwargs, **gguf)
            self.is_seq2seq = bool(getattr(config, "is_encoder_decoder", False))
            auto = AutoModelForSeq2SeqLM if self.is_seq2seq else AutoModelForCausalLM
            with known_messages(TRANSFORMERS_LOADING):  # its load report without ANSI codes
                self._model = auto.from_pretrained(
                    self.source, dtype=torch.float32, **kwargs, **weights
                )
        except Exception as exc:
            raise ModelError(f"cannot load hf model '{self.source}': {exc}") from exc
        self._model.eval()
        if not self.is_seq2seq:
            self._tokenizer.padding_side = "left"
            # if a prompt must still be cut, keep its end: the generation cue ("Summary:")
            self._tokenizer.truncation_side = "left"
        if self._tokenizer.pad_token is None:
            self._tokenizer.pad_token = self._tokenizer.eos_token

    def _chat(self) -> bool:
        if self.is_seq2seq or self.completion_template is not None:
            return False
        return bool(getattr(self._tokenizer, "chat_template", None))

    def _budget(self) -> int:
        """Most prompt tokens: a causal model's new tokens share its context window."""
        model_max = getattr(self._tokenizer, "model_max_length", None) or 10**6
        limit = min(self.settings.n_ctx, model_max)
        if self.is_seq2seq:
            return limit
        if self.settings.token_budget >= limit:
            raise ModelError(
                f"generate.max_new_tokens ({self.settings.token_budget}) leaves no "
                f"room for the prompt in a context of {limit} tokens"
            )
        return limit - self.settings.token_budget

    def _render(self, document: str) -> str:
        if self._chat():
            return self._tokenizer.apply_chat_template(
                chat_messages(document, self.settings), tokenize=False, add_generation_prompt=True
            )
        if self.completion_template:
            return self.completion_template.format(document=document)
        return self.settings.user_prompt(document)

    def _causal_prompt(self, text: str, budget: int) -> str:
        """The prompt, with the document cut at its end until instruction + document fit."""
        document = truncate_words(text, self.settings.max_input_words)
        words = document.split()
        while True:
            prompt = self._render(document)
            count = len(self._tokenizer(prompt, add_special_tokens=not self._chat())["input_ids"])
            if count <= budget or not words:
                return prompt
            words = words[: min(len(words) - 1, len(words) * budget // count)]
            document = " ".join(words)

    def _prompts(self, texts: Sequence[str], budget: int) -> list[str]:
        if self.is_seq2seq:
            return [truncate_words(t, self.settings.max_input_words) for t in texts]
        return [self._causal_prompt(t, budget) for t in texts]

    def _generate_options(self, start: int) -> dict[str, Any]:
        """Greedy generation within the token budget; stop strings and prompt-lookup
        speculation (`generate.speculative`) as the settings ask (`start`: where the new tokens
        begin in the sequences generate() sees)."""
        options: dict[str, Any] = {
            "max_new_tokens": self.settings.token_budget,
            "do_sample": False,
            "num_beams": 1,
        }
        if self.settings.stop:
            options["stopping_criteria"] = [StopAtText(self._tokenizer, self.settings.stop, start)]
        if self.settings.speculative == "ngram":
            options.update(
                prompt_lookup_num_tokens=self.settings.speculative_draft,
                max_matching_ngram_size=self.settings.speculative_ngram,
            )
        return options

    def _before_stop(self, text: str) -> str:
        """The text up to the first stop string (transformers keeps the stop string and, in a
        batch, can run on past it until every sequence stopped)."""
        for stop in self.settings.stop:
            text = text.split(stop, 1)[0]
        return text

    def summarize(
        self,
        texts: Sequence[str],
        progress: Callable[[int], None] | None = None,
    ) -> list[str]:
        import torch

        self._load()
        out: list[str] = []
        # transformers drafts from the prompt (prompt lookup) one sequence at a time
        size = 1 if self.settings.speculative == "ngram" else self.settings.batch_size
        budget = self._budget()
        for start in range(0, len(texts), size):
            batch = self._prompts(texts[start : start + size], budget)
            # a chat template writes its own BOS: adding special tokens again would double it
            enc = self._tokenizer(
                batch,
                return_tensors="pt",
                padding=True,
                truncation=True,
                max_length=budget,
                add_special_tokens=not self._chat(),
            )
            with torch.no_grad():
                start = 0 if self.is_seq2seq else enc["input_ids"].shape[1]
                generated = self._model.generate(
                    **enc,
                    **self._generate_options(start),
                    pad_token_id=self._tokenizer.pad_token_id,
                )
            if not self.is_seq2seq:
                generated = generated[:, enc["input_ids"].shape[1] :]
            decoded = self._tokenizer.batch_decode(generated, skip_special_tokens=True)
            out.extend(self._before_stop(text).strip() for text in decoded)
            if progress:
                progress(len(batch))
        return out
