"""Any OpenAI-compatible chat-completions server (vLLM, TGI, llama.cpp server, Ollama)."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import NamedTuple, TypeVar

import httpx

from hss_gate.common.errors import ModelError
from hss_gate.models.summarizers.base import chat_messages, each_with_progress, generation_key
from hss_gate.settings import GenerateSettings

MAX_BACKOFF_S = 8.0
"""The longest wait between two tries of a request (the summarizer's and the judge's)."""

_Answer = TypeVar("_Answer")


class Retry(NamedTuple):
    """One try's transient failure: what went wrong, and the least wait before the next try."""

    reason: str
    wait_s: float = 0.0


class ChatEndpoint:
    """What the clients of an OpenAI-compatible endpoint share (this summarizer and the judge,
    `consistency/judge.py`): one connection pool for every thread, opened on first use, and
    tries with exponential backoff that stop for good once a request has used them all."""

    def __init__(self) -> None:
        self._client: httpx.Client | None = None
        self._opening = threading.Lock()
        self._gave_up: ModelError | None = None  # the endpoint did not answer: fail fast

    def _pool(
        self, timeout_s: float, workers: int, transport: httpx.BaseTransport | None = None
    ) -> httpx.Client:
        """The connection pool every request shares (httpx.Client is thread-safe), opened on
        first use with room for `workers` connections."""
        with self._opening:
            if self._client is None:
                self._client = httpx.Client(
                    timeout=timeout_s,
                    transport=transport,
                    limits=httpx.Limits(max_connections=max(workers, 10)),
                )
            return self._client

    def close(self) -> None:
        """Close the connections (a later request opens new ones and tries again)."""
        with self._opening:
            client, self._client = self._client, None
            self._gave_up = None
        if client is not None:
            client.close()

    def _tried(
        self,
        attempt: Callable[[], _Answer | Retry],
        retries: int,
        sleep: Callable[[float], None],
        where: str,
    ) -> _Answer:
        """`attempt`'s answer, tried again after each `Retry` it returns, `retries` times at
        most, 0.5 s, 1 s, 2 s ... (at most MAX_BACKOFF_S, or longer when the `Retry` asks)
        apart. Then a ModelError that every later request raises at once, as it does at once
        when another request has already used all its tries."""
        last = ""
        for number in range(retries + 1):
            outcome = attempt()
            if not isinstance(outcome, Retry):
                return outcome
            last = outcome.reason
            if self._gave_up is not None:  # another request already used all its tries
                raise self._gave_up
            if number < retries:
                sleep(max(min(0.5 * 2**number, MAX_BACKOFF_S), outcome.wait_s))
        self._gave_up = ModelError(f"{where}: no answer after {retries + 1} tries ({last})")
        raise self._gave_up


def _content(response: httpx.Response) -> str:
    """The first choice's message text; ValueError for any answer not shaped like one."""
    try:
        content = response.json()["choices"][0]["message"].get("content")
    except (ValueError, LookupError, TypeError, AttributeError) as exc:
        raise ValueError(f"malformed chat completion ({type(exc).__name__})") from exc
    if content is not None and not isinstance(content, str):
        raise ValueError("malformed chat completion (content is not text)")
    return (content or "").strip()


class OpenAISummarizer(ChatEndpoint):
    """Greedy chat completions over HTTP with bounded retries. Key from HSS_OPENAI_API_KEY.

    Up to `generate.openai_concurrency` requests are in flight at once (`workers`), each
    retried on its own; the server decides how many it decodes together (llama.cpp's parallel
    slots, vLLM's batch). The number of requests in flight is not part of the fingerprint: it
    does not change what a deterministic server answers (a server that batches requests may
    answer differently, which is the server's setting, not the client's).
    """

    engine = "openai-compatible"

    def __init__(self, base_url: str, settings: GenerateSettings, model: str | None = None) -> None:
        super().__init__()
        self.base_url = base_url.rstrip("/")
        self.model = model or os.environ.get("HSS_OPENAI_MODEL", "default")
        self.settings = settings
        self.workers = settings.openai_concurrency
        self.fingerprint = f"openai:{self.base_url}:{self.model}:{generation_key(settings)}"

    def _http(self) -> httpx.Client:
        return self._pool(self.settings.timeout_s, self.workers)

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
        return self._tried(
            lambda: self._try(client, body), self.settings.retries, time.sleep, self.base_url
        )

    def _try(self, client: httpx.Client, body: dict[str, object]) -> str | Retry:
        """One request: the summary, a `Retry` after a 5xx, a 429, a failed connection or a
        malformed answer, a ModelError for any other HTTP error."""
        try:
            response = client.post(
                f"{self.base_url}/chat/completions", json=body, headers=self._headers()
            )
            if response.status_code >= 500 or response.status_code == 429:
                return Retry(f"HTTP {response.status_code}")
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
            return Retry(f"{type(exc).__name__}: {exc}"[:200])

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
