"""GGUF LLMs through llama.cpp (the xllamacpp prebuilt wheel), in-process.

Two prompt styles, fixed per model by the registry (hss_gate.models.model_store):
- chat: instruction-tuned models get generate.system_prompt + generate.prompt through their
  chat template (the default, and always the case for a `gguf:/path/file.gguf`);
- completion: base models have no usable chat behaviour, so they continue a plain-text
  prompt (COMPLETION_PROMPT) greedily and stop at the first blank line after some text, or
  at the end (a continuation that opens with a blank line is resumed after it: the blank
  line is appended to the prompt, at most COMPLETION_RESUMES times).
The style and its template are part of the fingerprint, so cached summaries never mix.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import threading
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Literal

from hss_gate.common.errors import ModelError
from hss_gate.models import model_store
from hss_gate.models.model_store import sha256_file
from hss_gate.models.summarizers.base import (
    chat_messages,
    each_with_progress,
    engine_fields,
    generation_key,
    sentences_grammar,
    truncate_words,
)
from hss_gate.settings import GenerateSettings

PromptStyle = Literal["chat", "completion"]

# Base-model prompt: the "TL;DR:" cue that base LMs learned from web text (GPT-2's zero-shot
# summarization prompt). Changing it or the stop strings changes completion fingerprints.
COMPLETION_PROMPT = "{document}\n\nTL;DR:"
COMPLETION_STOP = ("\n\n",)
COMPLETION_RESUMES = 2
TIMINGS_KEPT = 4096


def completion_prompt(text: str, settings: GenerateSettings) -> str:
    """The plain-text prompt a base model continues (document truncated like chat prompts)."""
    return COMPLETION_PROMPT.format(document=truncate_words(text, settings.max_input_words))


def completion_key(settings: GenerateSettings) -> str:
    """Digest of what changes a completion-style summary (the chat prompts do not)."""
    fields = engine_fields(settings)
    fields["template"] = COMPLETION_PROMPT
    fields["stop"] = list(COMPLETION_STOP)
    fields["resumes"] = COMPLETION_RESUMES
    return hashlib.sha256(json.dumps(fields, sort_keys=True).encode()).hexdigest()[:16]


def cpu_features(system_info: str) -> list[str]:
    """The CPU features a llama.cpp build's kernels use, from its system info line
    ("CPU : SSE3 = 1 | AVX2 = 1 | ... |")."""
    return [
        part.split("=")[0].split(":")[-1].strip().lower()
        for part in system_info.split("|")
        if part.replace(" ", "").endswith("=1")
    ]


@functools.cache
def engine_build() -> str:
    """The engine that computes the summaries: the xllamacpp release and the CPU features its
    kernels were built for, e.g. `llama.cpp/xllamacpp-2026.10.11549/sse3+...+avx2+fma+...`.

    The wheel is one build per platform (x86_64: AVX2, FMA, F16C; no variant chosen at run
    time), so the same release computes the same greedy summaries on every CPU that runs it,
    whatever else that CPU has (AVX-512 included). A source build with native flags or another
    release is a different engine: its fingerprint differs and a stored baseline is regenerated,
    never silently reused."""
    import xllamacpp

    features = "+".join(cpu_features(xllamacpp.get_system_info()))
    return f"{GgufSummarizer.engine}-{xllamacpp.__version__}/{features}"


def gguf_fingerprint(
    digest: str, threads: int, settings: GenerateSettings, prompt_style: PromptStyle = "chat"
) -> str:
    """Cache identity of a GGUF summarizer: weights, engine build (release and CPU features),
    threads, prompt and settings. Completion style appends its own marker and key."""
    head = f"gguf:{digest[:16]}:{engine_build()}:t{threads}"
    if prompt_style == "chat":
        return f"{head}:{generation_key(settings)}"
    if prompt_style == "completion":
        return f"{head}:completion:{completion_key(settings)}"
    raise ModelError(f"unknown prompt style '{prompt_style}' (chat or completion)")


def resolve_gguf(name_or_path: str, models_dir: str) -> tuple[Path, str]:
    """A verified GGUF file and its sha256, from an embedded name or a local path."""
    path, digest, _ = resolve_gguf_model(name_or_path, models_dir)
    return path, digest


def resolve_gguf_model(name_or_path: str, models_dir: str) -> tuple[Path, str, PromptStyle]:
    """A verified GGUF file, its sha256 and its prompt style (local files: chat)."""
    path = Path(name_or_path).expanduser()
    if path.suffix == ".gguf" or path.exists():
        if not path.is_file():
            raise ModelError(f"{path}: GGUF file not found")
        with path.open("rb") as handle:
            if handle.read(4) != b"GGUF":
                raise ModelError(f"{path}: not a GGUF file")
        return path, sha256_file(path), "chat"
    model = model_store.resolve_name(name_or_path)
    if model.kind != "gguf":
        raise ModelError(f"'{name_or_path}' is a {model.kind} model, not a GGUF summarizer")
    weight = model_store.verified_weight(model, models_dir)
    digest = model.assembled_sha256 or model.weights[0].sha256
    return weight, digest, model.prompt_style


def start_server(
    path: str | Path,
    threads: int,
    parallel: int,
    n_ctx: int,
    draft: tuple[int, int] | None = None,
    settings: GenerateSettings | None = None,
) -> Any:
    """An in-process llama.cpp server (xllamacpp) with `parallel` slots of `n_ctx` tokens;
    `draft` (n-gram size, most drafted tokens) turns on llama.cpp's ngram-simple speculation
    (`--spec-type ngram-simple --spec-ngram-size-n N --spec-ngram-size-m M`); `settings`: the
    prefill levers (flash attention, ubatch, KV cache type; None: llama.cpp's defaults)."""
    import xllamacpp

    params = xllamacpp.CommonParams()
    params.model.path = str(path)
    params.n_parallel = parallel
    params.n_ctx = n_ctx * parallel
    params.cpuparams.n_threads = threads
    params.cpuparams_batch.n_threads = threads
    params.warmup = False
    params.verbosity = -1
    if settings is not None:
        flash = xllamacpp.llama_flash_attn_type
        params.flash_attn_type = {
            "auto": flash.LLAMA_FLASH_ATTN_TYPE_AUTO,
            "on": flash.LLAMA_FLASH_ATTN_TYPE_ENABLED,
            "off": flash.LLAMA_FLASH_ATTN_TYPE_DISABLED,
        }[settings.flash_attention]
        params.n_ubatch = settings.ubatch
        params.n_batch = max(params.n_batch, settings.ubatch)
        kv = {"f16": xllamacpp.ggml_type.GGML_TYPE_F16, "q8_0": xllamacpp.ggml_type.GGML_TYPE_Q8_0}
        params.cache_type_k = params.cache_type_v = kv[settings.kv_cache]
    if draft is not None:
        params.speculative.types = [
            xllamacpp.common_speculative_type.COMMON_SPECULATIVE_TYPE_NGRAM_SIMPLE
        ]
        params.speculative.ngram_simple.size_n, params.speculative.ngram_simple.size_m = draft
    try:
        return xllamacpp.Server(params)
    except Exception as exc:
        raise ModelError(f"{path}: llama.cpp could not load the model ({exc})") from exc


def speculative_draft(settings: GenerateSettings) -> tuple[int, int] | None:
    """The (n-gram, draft) sizes of `generate.speculative`, None when it is off."""
    if settings.speculative == "off":
        return None
    return settings.speculative_ngram, settings.speculative_draft


def greedy_request(max_tokens: int, cache_prompt: bool = False, **fields: Any) -> dict[str, Any]:
    """The llama.cpp request of every summary: greedy, seeded; the prompt cache only when
    asked (a reused KV prefix is computed in other batch shapes, which can change greedy
    ties: measured in BENCHMARKS.md, "Prefix reuse")."""
    return {
        "max_tokens": max_tokens,
        "temperature": 0.0,
        "top_k": 1,
        "seed": 0,
        "cache_prompt": cache_prompt,
        **fields,
    }


def shared_prefix(a: str, b: str) -> int:
    """Length of the common prefix of two strings, in characters."""
    return next(
        (i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b))
    )


def prompt_fields(text: str, settings: GenerateSettings, style: str) -> dict[str, Any]:
    """The prompt part of a request about `text`: the plain completion prompt of base models,
    the chat messages otherwise."""
    if style == "completion":
        return {"prompt": completion_prompt(text, settings)}
    return {"messages": chat_messages(text, settings)}


def first_choice(server: Any, request: dict[str, Any]) -> dict[str, Any]:
    """Send one request to a llama.cpp server (a completion when it has a prompt, a chat
    otherwise) and return its first choice; an error response raises ModelError."""
    if "prompt" in request:
        response = server.handle_completions(request)
    else:
        response = server.handle_chat_completions(request)
    if not isinstance(response, dict) or "choices" not in response:
        raise ModelError(f"llama.cpp returned an error: {str(response)[:200]}")
    return response["choices"][0] | {"timings": response.get("timings") or {}}


class GgufSummarizer:
    """Greedy summaries from a GGUF model (llama.cpp engine): chat or plain completion.

    `workers` independent copies of the model (each `threads` threads, lazily started) generate
    at once: every summary is computed exactly as by a single copy, so the outputs, and the
    cache keys, do not depend on the number of workers (unlike llama.cpp's parallel slots).
    """

    engine = "llama.cpp/xllamacpp"

    def __init__(self, name_or_path: str, settings: GenerateSettings, models_dir: str) -> None:
        self.path, digest, self.prompt_style = resolve_gguf_model(name_or_path, models_dir)
        self.settings = settings
        self.threads = settings.threads or (os.cpu_count() or 1)
        self.workers = settings.workers or max(1, (os.cpu_count() or 1) // self.threads)
        self.local_threads = self.threads * self.workers  # cores busy while it generates
        # the thread count changes llama.cpp's reductions, hence greedy outputs: part of the key
        self.fingerprint = gguf_fingerprint(digest, self.threads, settings, self.prompt_style)
        # llama.cpp's timings of the latest requests (hss bench reads them)
        self.timings: deque[dict[str, Any]] = deque(maxlen=TIMINGS_KEPT)
        self._server: Any = None
        self._idle: list[tuple[Any, str]] = []  # idle copies and the text each saw last
        self._pool = threading.Lock()
        self._pooled = False  # the first copy is in _idle
        self._loading = threading.Lock()

    def _start(self) -> Any:
        return start_server(
            self.path,
            self.threads,
            self.settings.parallel,
            self.settings.n_ctx,
            speculative_draft(self.settings),
            self.settings,
        )

    def _load(self) -> Any:
        """The first copy of the model (shared with the likelihood scorer)."""
        with self._loading:
            if self._server is None:
                self._server = self._start()
            if not self._pooled:
                with self._pool:
                    self._idle.append((self._server, ""))
                self._pooled = True
        return self._server

    @contextmanager
    def _copy(self, text: str) -> Iterator[Any]:
        """An idle copy of the model for one request about `text`: the one whose last text
        shares the longest prefix with it (its KV cache holds that prefix); a new copy when
        all are busy (callers run at most `workers` requests at once). Parallel slots share
        the one copy."""
        if self.settings.parallel > 1:
            yield self._load()
            return
        self._load()
        with self._pool:
            if self._idle:
                best = max(self._idle, key=lambda idle: shared_prefix(idle[1], text))
                self._idle.remove(best)
                server = best[0]
            else:
                server = None
        if server is None:
            server = self._start()
        try:
            yield server
        finally:
            with self._pool:
                self._idle.append((server, text))

    def _request(self, text: str, **fields: Any) -> dict[str, Any]:
        if self.settings.sentence_limit:
            fields["grammar"] = sentences_grammar(
                self.settings.summary_sentences, self.settings.sentence_grammar
            )
        request = greedy_request(
            self.settings.token_budget, cache_prompt=self.settings.prefix_reuse, **fields
        )
        with self._copy(text) as server:
            choice = first_choice(server, request)
        self.timings.append(choice["timings"])
        return choice

    def _complete(self, text: str) -> str:
        prompt = completion_prompt(text, self.settings)
        for _ in range(1 + COMPLETION_RESUMES):
            choice = self._request(text, prompt=prompt, stop=list(COMPLETION_STOP))
            out = choice.get("text") or ""
            if out.strip() or choice.get("finish_reason") != "stop":
                return out.strip()
            # nothing but a blank line so far: resume after it
            prompt += out + COMPLETION_STOP[0]
        return ""

    def _one(self, text: str) -> str:
        if self.prompt_style == "completion":
            return self._complete(text)
        fields = prompt_fields(text, self.settings, self.prompt_style)
        if self.settings.stop:
            fields["stop"] = list(self.settings.stop)
        choice = self._request(text, **fields)
        return (choice["message"].get("content") or "").strip()

    def summarize_one(self, text: str) -> str:
        """One summary; safe to call from up to `workers` threads at once."""
        return self._one(text)

    def summarize(
        self,
        texts: Sequence[str],
        progress: Callable[[int], None] | None = None,
    ) -> list[str]:
        self._load()
        concurrent = min(len(texts), self.workers * self.settings.parallel)
        if concurrent <= 1:
            return each_with_progress(self._one, texts, progress)
        with ThreadPoolExecutor(concurrent) as pool:
            futures = [pool.submit(self._one, t) for t in texts]
            results = []
            for future in futures:
                results.append(future.result())
                if progress:
                    progress(1)
            return results
