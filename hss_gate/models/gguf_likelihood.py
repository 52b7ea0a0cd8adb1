"""Teacher-forced likelihood through llama.cpp: forced decoding (the gguf backend).

llama.cpp (xllamacpp, through the summarizer's client in hss_gate.models.summarizers.gguf) has
no prompt log-probabilities ("Only no echo is supported"), so the summary is *forced* through
generation with a token-level grammar and the raw (pre-sampling) log-probability of each forced
token is read from `n_probs`. The token path is fixed once per summary: the path the model takes
when the summary text is forced under the first (unmasked) document it is scored with (for a
greedy summary, the model's own generation path), then reused for every masked or perturbed
document. `hss_gate.models.likelihood.likelihood_scorer` picks this backend for gguf: models.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from hss_gate.common.errors import ModelError
from hss_gate.models.summarizers.gguf import (
    engine_build,
    first_choice,
    greedy_request,
    prompt_fields,
    resolve_gguf_model,
    start_server,
)
from hss_gate.settings import GenerateSettings


def _gbnf_literal(text: str) -> str:
    """A GBNF string literal matching `text` exactly (other control characters as \\xHH)."""
    named = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\r": "\\r", "\t": "\\t"}
    out = []
    for ch in text:
        if ch in named:
            out.append(named[ch])
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\x{ord(ch):02X}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


class GgufLikelihood:
    """Forced decoding through llama.cpp (xllamacpp): raw log-probabilities of given tokens.

    One evaluation = prompt processing + one decode step per summary token. `parallel` > 1
    decodes that many documents together in one batch; llama.cpp is not batch-invariant, so
    values then move by up to ~0.3 nats with the batch composition: the default is 1 (exactly
    reproducible). The prompt KV cache is never reused for the same reason.
    """

    engine = "llama.cpp/xllamacpp"

    def __init__(
        self,
        name_or_path: str,
        settings: GenerateSettings,
        models_dir: str,
        parallel: int = 1,
        server: Any = None,
        fingerprint: str | None = None,
        prompt_style: str = "chat",
    ) -> None:
        self.settings = settings
        self.parallel = parallel
        self.threads = settings.threads or (os.cpu_count() or 1)
        self.prompt_style = prompt_style
        if server is None:
            self.path, digest, self.prompt_style = resolve_gguf_model(name_or_path, models_dir)
            base = f"gguf:{digest[:16]}:{engine_build()}:t{self.threads}:{self.prompt_style}"
        else:
            self.path = name_or_path
            base = fingerprint or f"gguf:{name_or_path}"
        self.fingerprint = f"{base}:loglik"
        self._server = server
        self._paths: dict[str, list[int]] = {}
        self._known: dict[tuple[str, str], float] = {}
        self.evaluations = 0

    @classmethod
    def from_summarizer(cls, summarizer: Any, parallel: int = 1) -> GgufLikelihood:
        """Share the summarizer's llama.cpp server instead of loading the model again."""
        return cls(
            str(summarizer.path),
            summarizer.settings,
            "",
            parallel=min(parallel, summarizer.settings.parallel),
            server=summarizer._load(),
            fingerprint=summarizer.fingerprint,
            prompt_style=summarizer.prompt_style,
        )

    def _load(self) -> Any:
        if self._server is None:
            self._server = start_server(
                self.path, self.threads, self.parallel, self.settings.n_ctx, None, self.settings
            )
        return self._server

    def _request(self, document: str, grammar: str, max_tokens: int) -> list[dict[str, Any]]:
        request = greedy_request(
            max_tokens,
            **prompt_fields(document, self.settings, self.prompt_style),
            grammar=grammar,
            n_probs=1,
            post_sampling_probs=False,  # log-probs of the raw logits, before the grammar
            logprobs=True,
            top_logprobs=1,
        )
        logprobs = first_choice(self._load(), request).get("logprobs") or {}
        return list(logprobs.get("content") or [])

    def token_path(self, document: str, summary: str) -> list[int]:
        """The summary's token ids: forced as text under `document`, then fixed for reuse."""
        if summary in self._paths:
            return self._paths[summary]
        target = summary.encode("utf-8")
        budget = 4 * len(target) + 8
        entries = self._request(document, "root ::= " + _gbnf_literal(summary), budget)
        ids: list[int] = []
        spelled = b""
        for entry in entries:
            if spelled == target:
                break
            ids.append(int(entry["id"]))
            spelled += bytes(entry.get("bytes") or entry["token"].encode("utf-8"))
        if spelled != target:
            raise ModelError("llama.cpp could not force the summary text (tokenization mismatch)")
        self._paths[summary] = ids
        # the same request already scored this document on this path: keep it (one evaluation)
        self._known[(document, summary)] = float(sum(e["logprob"] for e in entries[: len(ids)]))
        self.evaluations += 1
        return ids

    def _forced(self, document: str, ids: list[int]) -> float:
        grammar = "root ::= " + " ".join(f"<[{i}]>" for i in ids)
        entries = self._request(document, grammar, len(ids))
        got = [int(e["id"]) for e in entries[: len(ids)]]
        if got != ids:
            raise ModelError("llama.cpp did not follow the forced token path")
        return float(sum(e["logprob"] for e in entries[: len(ids)]))

    def loglik(self, documents: Sequence[str], summary: str) -> np.ndarray:
        if not documents or not summary.strip():
            return np.zeros(len(documents), dtype=np.float64)
        ids = self.token_path(documents[0], summary)
        todo = [d for d in dict.fromkeys(documents) if (d, summary) not in self._known]
        if self.parallel == 1 or len(todo) <= 1:
            values = [self._forced(d, ids) for d in todo]
        else:
            with ThreadPoolExecutor(self.parallel) as pool:
                values = list(pool.map(lambda d: self._forced(d, ids), todo))
        self.evaluations += len(todo)
        fresh = dict(zip(todo, values, strict=True))
        out = [fresh[d] if d in fresh else self._known[(d, summary)] for d in documents]
        return np.asarray(out, dtype=np.float64)
