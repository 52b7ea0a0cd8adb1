"""Likelihood contrast of summary tokens with and without the source (pointwise mutual
information under a small causal LM; the idea of CoP, FFLM and HaRiM).

For each summary token y_t: pmi_t = log p(y_t | source, y_<t) - log p(y_t | y_<t), both
teacher-forced through the same chat template (the source in the user turn, or no source). A
token the source makes *less* likely than no source at all (pmi < 0) is one the source does not
back up; invented names and numbers tend to get low or negative contrast.

Measured and left out of the shipped checker (docs/CHECKER_DEV.md: 3-4x over the 1 s a pair
budget on 2 cores, +0.02 AUC within noise); `load_lm(models_dir)` loads the model.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

log = logging.getLogger(__name__)

DEFAULT_LM = "smollm2-135m-instruct"
MAX_SOURCE_TOKENS = 640  # ~480 words; longer sources are cut (with a warning)
_CONDITIONED = "Article:\n{document}\n\nSummarize the article."
_UNCONDITIONED = "Summarize the article."


@dataclass(frozen=True)
class TokenContrast:
    """Per summary token: its character span in the summary and the two log-probabilities."""

    spans: list[tuple[int, int]]
    with_source: np.ndarray
    without_source: np.ndarray
    truncated: bool = False

    @property
    def pmi(self) -> np.ndarray:
        return self.with_source - self.without_source

    def to_dict(self) -> dict[str, Any]:
        return {
            "spans": [list(s) for s in self.spans],
            "with": [round(float(x), 4) for x in self.with_source],
            "without": [round(float(x), 4) for x in self.without_source],
            "truncated": self.truncated,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TokenContrast:
        return cls(
            [tuple(s) for s in data["spans"]],  # type: ignore[misc]
            np.asarray(data["with"], dtype=float),
            np.asarray(data["without"], dtype=float),
            bool(data.get("truncated", False)),
        )


def load_lm(
    models_dir: str, name: str = DEFAULT_LM, dtype: str = "float32"
) -> tuple[Any, Any, str]:
    """(model, tokenizer, fingerprint) of an embedded GGUF model, dequantized into transformers
    (hss_gate.models.likelihood)."""
    from hss_gate.models.likelihood import gguf_transformers_scorer
    from hss_gate.settings import GenerateSettings

    scorer = gguf_transformers_scorer(name, GenerateSettings(), models_dir, dtype=dtype)
    model, tokenizer = scorer._parts()
    model.eval()
    return model, tokenizer, f"{scorer.fingerprint}:pmi-v1:{MAX_SOURCE_TOKENS}"


class ContrastModel:
    """Teacher-forced token contrast; the source's prompt key/values are computed once per
    source and reused (cropped back) for each of its summaries."""

    def __init__(
        self,
        model: Any,
        tokenizer: Any,
        fingerprint: str,
        max_source_tokens: int = MAX_SOURCE_TOKENS,
    ) -> None:
        self.model, self.tok, self.fingerprint = model, tokenizer, fingerprint
        self.max_source_tokens = max_source_tokens
        self._prefix: dict[str, tuple[Any, int, bool]] = {}  # one source kept at a time
        self.truncations = 0

    def _prompt_ids(self, user: str) -> list[int]:
        text = self.tok.apply_chat_template(
            [{"role": "user", "content": user}], tokenize=False, add_generation_prompt=True
        )
        return list(self.tok(text, add_special_tokens=False)["input_ids"])

    def _cut(self, document: str) -> tuple[str, bool]:
        ids = self.tok(document, add_special_tokens=False, return_offsets_mapping=True)
        if len(ids["input_ids"]) <= self.max_source_tokens:
            return document, False
        end = ids["offset_mapping"][self.max_source_tokens - 1][1]
        return document[:end], True

    def _prefix_cache(self, key: str, user: str, truncated: bool) -> tuple[Any, int, bool]:
        import torch
        from transformers import DynamicCache

        if key in self._prefix:
            return self._prefix[key]
        ids = self._prompt_ids(user)
        cache = DynamicCache()
        with torch.no_grad():
            out = self.model(input_ids=torch.tensor([ids]), past_key_values=cache, use_cache=True)
        # keep the last prompt logits with the cache: they predict the first summary token
        entry = (out.past_key_values, len(ids), truncated, out.logits[0, -1].float())
        if key != "":
            self._prefix = {k: v for k, v in self._prefix.items() if k == ""}
        self._prefix[key] = entry  # type: ignore[assignment]
        return entry  # type: ignore[return-value]

    def _logprobs(self, entry: Any, target: list[int]) -> np.ndarray:
        import torch

        cache, n_prompt, _, last = entry
        with torch.no_grad():
            out = self.model(
                input_ids=torch.tensor([target]),
                past_key_values=cache,
                use_cache=True,
                position_ids=torch.arange(n_prompt, n_prompt + len(target))[None],
            )
        cache.crop(-len(target))  # back to the prompt (transformers 5: tokens to remove)
        logits = torch.cat([last[None], out.logits[0, :-1].float()], dim=0)
        logp = torch.log_softmax(logits, dim=-1)
        return logp[torch.arange(len(target)), torch.tensor(target)].numpy().astype(float)

    def contrast(self, document: str, summary: str) -> TokenContrast:
        enc = self.tok(summary, add_special_tokens=False, return_offsets_mapping=True)
        target = list(enc["input_ids"])
        spans = [tuple(s) for s in enc["offset_mapping"]]
        if not target:
            return TokenContrast([], np.zeros(0), np.zeros(0))
        seen, truncated = self._cut(document)
        if truncated and document not in self._prefix:
            self.truncations += 1
            log.warning(
                "source cut to %d tokens for the likelihood contrast", self.max_source_tokens
            )
        cond = self._prefix_cache(document, _CONDITIONED.format(document=seen), truncated)
        free = self._prefix_cache("", _UNCONDITIONED, False)
        return TokenContrast(
            spans,
            self._logprobs(cond, target),
            self._logprobs(free, target),
            truncated,  # type: ignore[arg-type]
        )

    def many(self, pairs: Sequence[tuple[str, str]]) -> list[TokenContrast]:
        return [self.contrast(d, s) for d, s in pairs]
