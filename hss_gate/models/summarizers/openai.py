"""Any OpenAI-compatible chat-completions server (vLLM, TGI, llama.cpp server, Ollama)."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor

import httpx

from hss_gate.common.errors import ModelError
from hss_gate.models.summarizers.base import chat_messages, each_with_progress, generation_key
from hss_gate.settings import GenerateSettings


def _content(response: httpx.Response) -> str:
    """The first choice's message text; ValueError for any answer not shaped like one."""
    try:
        content = response.json()["choices"][0]["message"].get("content")
    except (ValueError, LookupError, TypeError, AttributeError) as exc:
        raise ValueError(f"malformed chat completion ({type(exc).__name__})") from exc
    if content is not None and not isinstance(content, str):
        raise ValueError("malformed chat completion (content is not text)")
    return (content or "").strip()


class OpenAISummarizer:
    """Greedy chat completions over HTTP with bounded retries. Key from HSS_OPENAI_API_KEY.

    Up to `generate.openai_concurrency` requests are in flight at once (`workers`), each
    retried on its own; the server decides how many it decodes together (llama.cpp's parallel
    slots, vLLM's batch). The number of requests in flight is not part of the fingerprint: it
    does not change what a deterministic server answers (a server that batches requests may
    answer differently, which is the server's setting, not the client's).
    """

    engine = "openai-compatible"

    def __init__(self, base_url: str, settings: GenerateSettings, model: str | None = None) -> None:
        self.base_url = base_url.rstrip("/")
        self.model = model or os.environ.get("HSS_OPENAI_MODEL", "default")
        self.settings = settings
        self.workers = settings.openai_concurrency
        self.fingerprint = f"openai:{self.base_url}:{self.model}:{generation_key(settings)}"
        self._client: httpx.Client | None = None
        self._opening = threading.Lock()
        self._gave_up: ModelError | None = None  # the endpoint did not answer: fail fast

    def _http(self) -> httpx.Client:
        """The connection pool every request shares (httpx.Client is thread-safe), opened on
        first use with room for `workers` connections."""
        with self._opening:
            if self._client is None:
                limits = httpx.Limits(max_connections=max(self.workers, 10))
                self._client = httpx.Client(timeout=self.settings.timeout_s, limits=limits)
            return self._client

    def close(self) -> None:
        """Close the connections (a later request opens new ones and tries again)."""
        with self._opening:
            client, self._client = self._client, None
            self._gave_up = None
        if client is not None:
            client.close()

    def _headers(self) -> dict[str, str]:
        key = os.environ.get("HSS_OPENAI_API_KEY")
        return {"Authorization": f"Bearer {key}"} if key else {}

    def _one(self, client: httpx.Client, text: str) -> str:
        body = {
            "model": self.model,
            "messages": chat_messages(text, self.settings),
            "max_tokens": self.settings.token_budget,
            "temperature": 0.0,
            "seed": 0,
        }
        if self.settings.stop:
            body["stop"] = list(self.settings.stop)
        last = ""
        for attempt in range(self.settings.retries + 1):
            try:
                response = client.post(
                    f"{self.base_url}/chat/completions", json=body, headers=self._headers()
                )
                if response.status_code >= 500 or response.status_code == 429:
                    last = f"HTTP {response.status_code}"
                else:
                    response.raise_for_status()
                    return _content(response)
            except httpx.HTTPStatusError as exc:
                reason = exc.response.text.strip()
                key = os.environ.get("HSS_OPENAI_API_KEY")
                if key:  # servers may echo the key they rejected
                    reason = reason.replace(key, "***")
                reason = reason[:300]
                raise ModelError(
                    f"{self.base_url}: HTTP {exc.response.status_code}"
                    + (f": {reason}" if reason else "")
                ) from exc
            except (httpx.TransportError, ValueError) as exc:
                last = f"{type(exc).__name__}: {exc}"[:200]
            if self._gave_up is not None:  # another request already exhausted its tries
                raise self._gave_up
            if attempt < self.settings.retries:
                time.sleep(min(0.5 * 2**attempt, 8.0))
        self._gave_up = ModelError(
            f"{self.base_url}: no answer after {self.settings.retries + 1} tries ({last})"
        )
        raise self._gave_up

    def summarize_one(self, text: str) -> str:
        """One summary; safe to call from up to `workers` threads at once. Once a request has
        used all its tries without an answer, every later one fails at once with the same
        error (the background generator queues the whole corpus: retrying each text against a
        dead endpoint would multiply the wait)."""
        if self._gave_up is not None:
            raise self._gave_up
        return self._one(self._http(), text)

    def summarize(
        self,
        texts: Sequence[str],
        progress: Callable[[int], None] | None = None,
    ) -> list[str]:
        """Summaries in the order of `texts`, up to `workers` requests at once. The first
        failure (in order) raises; requests not yet sent are then not sent."""
        concurrent = min(len(texts), self.workers)
        if concurrent <= 1:
            return each_with_progress(self.summarize_one, texts, progress)
        with ThreadPoolExecutor(concurrent, thread_name_prefix="openai") as pool:
            futures = [pool.submit(self.summarize_one, t) for t in texts]
            results = []
            try:
                for future in futures:
                    results.append(future.result())
                    if progress:
                        progress(1)
            except BaseException:
                for future in futures:
                    future.cancel()
                raise
            return results
