"""GGUF instruction LLMs through llama.cpp (the xllamacpp prebuilt wheel), in-process."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from hss_gate import model_store
from hss_gate.errors import ModelError
from hss_gate.model_store import sha256_file
from hss_gate.settings import GenerateSettings
from hss_gate.summarizers.base import chat_messages, each_with_progress, generation_key


def resolve_gguf(name_or_path: str, models_dir: str) -> tuple[Path, str]:
    """A verified GGUF file and its sha256, from an embedded name or a local path."""
    path = Path(name_or_path).expanduser()
    if path.suffix == ".gguf" or path.exists():
        if not path.is_file():
            raise ModelError(f"{path}: GGUF file not found")
        with path.open("rb") as handle:
            if handle.read(4) != b"GGUF":
                raise ModelError(f"{path}: not a GGUF file")
        return path, sha256_file(path)
    model = model_store.resolve_name(name_or_path)
    if model.kind != "gguf":
        raise ModelError(f"'{name_or_path}' is a {model.kind} model, not a GGUF summarizer")
    weight = model_store.verified_weight(model, models_dir)
    digest = model.assembled_sha256 or model.weights[0].sha256
    return weight, digest


class GgufSummarizer:
    """Greedy chat-completion summaries from a GGUF model (llama.cpp engine)."""

    engine = "llama.cpp/xllamacpp"

    def __init__(self, name_or_path: str, settings: GenerateSettings, models_dir: str) -> None:
        self.path, digest = resolve_gguf(name_or_path, models_dir)
        self.settings = settings
        self.threads = settings.threads or (os.cpu_count() or 1)
        # the thread count changes llama.cpp's reductions, hence greedy outputs: part of the key
        self.fingerprint = (
            f"gguf:{digest[:16]}:{self.engine}:t{self.threads}:{generation_key(settings)}"
        )
        self._server: Any = None

    def _load(self) -> Any:
        if self._server is None:
            import xllamacpp

            params = xllamacpp.CommonParams()
            params.model.path = str(self.path)
            params.n_parallel = self.settings.parallel
            params.n_ctx = self.settings.n_ctx * self.settings.parallel
            params.cpuparams.n_threads = self.threads
            params.cpuparams_batch.n_threads = params.cpuparams.n_threads
            params.warmup = False
            params.verbosity = -1
            try:
                self._server = xllamacpp.Server(params)
            except Exception as exc:
                raise ModelError(
                    f"{self.path}: llama.cpp could not load the model ({exc})"
                ) from exc
        return self._server

    def _one(self, text: str) -> str:
        request = {
            "messages": chat_messages(text, self.settings),
            "max_tokens": self.settings.max_new_tokens,
            "temperature": 0.0,
            "top_k": 1,
            "seed": 0,
            # a reused KV prefix changes the floating point and so greedy ties: keep runs
            # independent of what was generated before
            "cache_prompt": False,
        }
        response = self._load().handle_chat_completions(request)
        if not isinstance(response, dict) or "choices" not in response:
            raise ModelError(f"llama.cpp returned an error: {str(response)[:200]}")
        return (response["choices"][0]["message"].get("content") or "").strip()

    def summarize(
        self,
        texts: Sequence[str],
        progress: Callable[[int], None] | None = None,
    ) -> list[str]:
        self._load()
        if self.settings.parallel == 1:
            return each_with_progress(self._one, texts, progress)
        with ThreadPoolExecutor(self.settings.parallel) as pool:
            futures = [pool.submit(self._one, t) for t in texts]
            results = []
            for future in futures:
                results.append(future.result())
                if progress:
                    progress(1)
            return results
