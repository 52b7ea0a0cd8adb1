"""Any OpenAI-compatible chat-completions server (vLLM, TGI, llama.cpp server, Ollama)."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence

import httpx

from hss_gate.errors import ModelError
from hss_gate.settings import GenerateSettings
from hss_gate.summarizers.base import chat_messages, each_with_progress, generation_key


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
    """Greedy chat completions over HTTP with bounded retries. Key from HSS_OPENAI_API_KEY."""

    engine = "openai-compatible"

    def __init__(self, base_url: str, settings: GenerateSettings, model: str | None = None) -> None:
        self.base_url = base_url.rstrip("/")
        self.model = model or os.environ.get("HSS_OPENAI_MODEL", "default")
        self.settings = settings
        self.fingerprint = f"openai:{self.base_url}:{self.model}:{generation_key(settings)}"

    def _headers(self) -> dict[str, str]:
        key = os.environ.get("HSS_OPENAI_API_KEY")
        return {"Authorization": f"Bearer {key}"} if key else {}

    def _one(self, client: httpx.Client, text: str) -> str:
        body = {
            "model": self.model,
            "messages": chat_messages(text, self.settings),
            "max_tokens": self.settings.max_new_tokens,
            "temperature": 0.0,
            "seed": 0,
        }
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
            if attempt < self.settings.retries:
                time.sleep(min(0.5 * 2**attempt, 8.0))
        raise ModelError(
            f"{self.base_url}: no answer after {self.settings.retries + 1} tries ({last})"
        )

    def summarize(
        self,
        texts: Sequence[str],
        progress: Callable[[int], None] | None = None,
    ) -> list[str]:
        with httpx.Client(timeout=self.settings.timeout_s) as client:
            return each_with_progress(lambda text: self._one(client, text), texts, progress)
