"""The `judge:` checker: an LLM behind an OpenAI-compatible endpoint (a hosted API, vLLM, TGI,
llama.cpp's server, Ollama) reads each claim of a summary against the claim's evidence and
answers whether the source supports it.

`consistency.model: judge:openai:<base url>` (the summarizers' URI of such a server); the model
name comes from HSS_JUDGE_MODEL (else HSS_OPENAI_MODEL, else "default", which a server with one
model serves), the key from HSS_JUDGE_API_KEY (else HSS_OPENAI_API_KEY).

The claims and their evidence are the `entail` checker's (`entail_checker.ClaimChecker`: each
summary sentence with the source sentences SBERT ranks closest to it and their neighbours, in
document order; `evidence.choose_evidence`), and so are the aggregation into the summary's
consistency and the unsupported sentences listed beside their evidence. Only the pair scorer
differs: one chat completion per (evidence, claim) with a short fixed prompt (`SYSTEM_PROMPT`,
`USER_PROMPT`, versioned by their digest in the fingerprint), greedy, a few tokens. P(yes) is
read from the answer's log-probabilities where the endpoint returns them (`logprobs`,
`top_logprobs`): the mass of "yes" against "no" at the first answer position that lists
either. An endpoint without log-probabilities gets its answer parsed: yes 1.0, no 0.0.

Every answer is cached (namespace `judge`) by content hash of the endpoint, its model, the
prompt version, the evidence and the claim, and stored as it arrives: a rerun, or a run killed
halfway and started again, asks nothing already answered. Transient failures (timeouts,
connection errors, HTTP 408, 429 and 5xx) are retried with exponential backoff; a refusal
(another 4xx, a content filter) or a malformed answer (not JSON, no choice, neither yes nor no)
is a one-line ModelError at once, and the gate fails closed.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import httpx
import numpy as np

from hss_gate.common.cache import Cache, content_key
from hss_gate.common.errors import InputError, ModelError
from hss_gate.consistency.entail_checker import ClaimChecker
from hss_gate.consistency.entail_release import EVIDENCE_VERSION
from hss_gate.consistency.evidence import DEFAULT_NEIGHBOURS, DEFAULT_TOP
from hss_gate.consistency.model import Encode
from hss_gate.models.summarizers.openai import MAX_BACKOFF_S as MAX_BACKOFF_S
from hss_gate.models.summarizers.openai import ChatEndpoint, Retry
from hss_gate.settings import TOKENS_PER_WORD, judge_endpoint
from hss_gate.text.sentences import SPLITTER_VERSION

SYSTEM_PROMPT = "You check claims against a source text. Answer with one word: yes or no."
USER_PROMPT = (
    "Source:\n{evidence}\n\nClaim: {claim}\n\n"
    "Does the source support every fact in the claim? Answer yes or no."
)
PROMPT_VERSION = "p" + hashlib.sha256(f"{SYSTEM_PROMPT}\0{USER_PROMPT}".encode()).hexdigest()[:8]
"""Goes into the fingerprint and every cached answer's key: a changed prompt asks again."""

JUDGE_THRESHOLD = 0.5
"""A claim (and a summary) below P(yes) = 0.5 is unsupported unless consistency.threshold says
otherwise: not calibrated (the judge is the user's model)."""
CONTEXT = 512
"""Estimated tokens (words x TOKENS_PER_WORD) of evidence and claim together: the evidence is
cut to fit (`ClaimChecker.evidence`); far below any chat model's context, and it bounds the
cost of a question."""
MAX_TOKENS = 3  # "Yes", "yes.", "**No": the answer's first word, not an explanation
TOP_LOGPROBS = 10
TIMEOUT_S = 120.0
RETRIES = 3
WORKERS = 4
"""Questions in flight at once; the server decides how many it answers together."""
CACHE_NAMESPACE = "judge"
ANSWER_VERSION = "judge-answer-v1"
TRANSIENT_STATUS = (408, 425, 429)
# MAX_BACKOFF_S, the longest wait between tries, comes with the retry loop from summarizers.openai
MAX_RETRY_AFTER_S = 30.0


class Refused(Exception):
    """The endpoint answered but would not judge (a content filter, a refusal)."""


class Malformed(ValueError):
    """The endpoint's answer is not a chat completion with a yes or a no in it."""


@dataclass(frozen=True)
class Answer:
    """The judge's P(the source supports the claim) and how it was read ("logprobs" or
    "text")."""

    p_yes: float
    read: str


def _word(token: str) -> str:
    """A token as a bare lower-case word ("ĠYes", "▁no", " No.", "**yes" -> yes / no)."""
    return token.replace("Ġ", " ").replace("▁", " ").strip().strip(".,!:;*\"'`()").lower()


def p_yes_from_logprobs(logprobs: Any) -> float | None:
    """P(yes) / (P(yes) + P(no)) at the first answer position whose listed tokens include a yes
    or a no (case, spaces and punctuation aside; the variants of each summed). When only one of
    the two is listed, the other's mass is taken as the least listed token's (an upper bound on
    it); a position listing only its chosen token gives the other none. None when no position
    lists either (the caller then parses the text). Malformed for entries without a token or a
    number."""
    if logprobs is None:
        return None
    content = logprobs.get("content") if isinstance(logprobs, dict) else None
    if content is None:
        return None
    if not isinstance(content, list):
        raise Malformed("logprobs.content is not a list")
    for position in content:
        if not isinstance(position, dict):
            raise Malformed("a logprobs entry is not an object")
        listed = position.get("top_logprobs") or [position]
        try:
            masses = [(_word(str(e["token"])), math.exp(float(e["logprob"]))) for e in listed]
        except (LookupError, TypeError, ValueError) as exc:
            raise Malformed(f"a logprobs entry without token or logprob ({exc})") from exc
        yes = sum(p for w, p in masses if w == "yes")
        no = sum(p for w, p in masses if w == "no")
        if yes == 0.0 and no == 0.0:
            continue
        floor = min(p for _, p in masses) if len(masses) > 1 else 0.0
        yes, no = (yes or floor), (no or floor)
        return float(yes / (yes + no))
    return None


def p_yes_from_text(content: str) -> float | None:
    """1.0 for an answer whose first word is yes, 0.0 for no, None otherwise."""
    words = re.findall(r"[a-z]+", content.lower())
    if not words or words[0] not in ("yes", "no"):
        return None
    return 1.0 if words[0] == "yes" else 0.0


def read_answer(payload: Any) -> Answer:
    """The judge's answer from a chat completion's JSON: Refused for a content filter or a
    refusal, Malformed for anything else that is not a yes or a no."""
    try:
        choice = payload["choices"][0]
        message = choice["message"]
    except (LookupError, TypeError) as exc:
        raise Malformed(f"no choice with a message ({type(exc).__name__})") from exc
    if not isinstance(choice, dict) or not isinstance(message, dict):
        raise Malformed("the choice or its message is not an object")
    if choice.get("finish_reason") == "content_filter":
        raise Refused("the endpoint's content filter stopped the answer")
    if message.get("refusal"):
        raise Refused(f"the model refused: {' '.join(str(message['refusal']).split())[:200]}")
    p = p_yes_from_logprobs(choice.get("logprobs"))
    if p is not None:
        return Answer(p, "logprobs")
    content = message.get("content")
    if content is not None and not isinstance(content, str):
        raise Malformed("the message's content is not text")
    p = p_yes_from_text(content or "")
    if p is None:
        shown = " ".join((content or "").split())[:80]
        raise Malformed(f"answered neither yes nor no ('{shown}')")
    return Answer(p, "text")


def question(evidence: str, claim: str) -> list[dict[str, str]]:
    """The chat messages that ask about one claim."""
    return [
        {"role": "system", "content": SYSTEM_PROMPT},
        {"role": "user", "content": USER_PROMPT.format(evidence=evidence, claim=claim)},
    ]


class JudgeClient(ChatEndpoint):
    """Chat completions against one OpenAI-compatible endpoint, one question a request, with
    bounded retries. Thread-safe: up to `workers` questions may be asked at once."""

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key: str | None = None,
        *,
        timeout_s: float = TIMEOUT_S,
        retries: int = RETRIES,
        transport: httpx.BaseTransport | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        super().__init__()
        self.base_url, self.model = base_url.rstrip("/"), model
        self._key = api_key or None
        self.timeout_s, self.retries = timeout_s, retries
        self._transport, self._sleep = transport, sleep
        self.requests = 0  # HTTP requests sent (retries included)

    def _http(self) -> httpx.Client:
        return self._pool(self.timeout_s, WORKERS, self._transport)

    def _where(self) -> str:
        return f"judge {self.base_url} (model {self.model})"

    def _hidden(self, text: str) -> str:
        """A server's text, one line, without the key (servers may echo a rejected key)."""
        if self._key:
            text = text.replace(self._key, "***")
        return " ".join(text.split())[:300]

    def ask(self, evidence: str, claim: str) -> Answer:
        """P(yes) for one claim against its evidence. ModelError after `retries` retries of
        transient failures, or at once on a refusal or a malformed answer."""
        if self._gave_up is not None:
            raise self._gave_up
        body = {
            "model": self.model,
            "messages": question(evidence, claim),
            "max_tokens": MAX_TOKENS,
            "temperature": 0.0,
            "seed": 0,
            "logprobs": True,
            "top_logprobs": TOP_LOGPROBS,
        }
        headers = {"Authorization": f"Bearer {self._key}"} if self._key else {}
        client = self._http()
        return self._tried(
            lambda: self._try(client, body, headers), self.retries, self._sleep, self._where()
        )

    def _try(
        self, client: httpx.Client, body: dict[str, Any], headers: dict[str, str]
    ) -> Answer | Retry:
        """One request: the answer, a `Retry` after a failed connection, a 408, 425, 429 or
        5xx (waiting as long as Retry-After asks), a ModelError for another 4xx."""
        try:
            self.requests += 1
            response = client.post(f"{self.base_url}/chat/completions", json=body, headers=headers)
        except httpx.TransportError as exc:  # timeouts, refused connections, resets
            return Retry(self._hidden(f"{type(exc).__name__}: {exc}"))
        status = response.status_code
        if status >= 500 or status in TRANSIENT_STATUS:
            return Retry(f"HTTP {status}", _retry_after(response))
        if status >= 400:
            reason = self._hidden(response.text)
            raise ModelError(
                f"{self._where()} refused the question: HTTP {status}"
                + (f": {reason}" if reason else "")
            )
        return self._answer(response)

    def _answer(self, response: httpx.Response) -> Answer:
        try:
            payload = response.json()
        except ValueError as exc:
            shown = self._hidden(response.text)[:80]
            raise ModelError(f"{self._where()}: malformed answer (not JSON: '{shown}')") from exc
        try:
            return read_answer(payload)
        except Refused as exc:
            raise ModelError(f"{self._where()} refused the question: {exc}") from exc
        except Malformed as exc:
            raise ModelError(f"{self._where()}: malformed answer ({exc})") from exc


def _retry_after(response: httpx.Response) -> float:
    """The seconds a 429 or 503 asks to wait (Retry-After in seconds), at most 30; else 0."""
    try:
        return min(max(float(response.headers.get("retry-after", "0")), 0.0), MAX_RETRY_AFTER_S)
    except ValueError:  # an HTTP date: the backoff decides
        return 0.0


class JudgeModel:
    """The judge as the claim checker's pair scorer (`entail_checker.PairModel`): P(yes) of each
    (evidence, claim), from the cache or from the endpoint, each new answer stored as it
    arrives."""

    def __init__(
        self, client: JudgeClient, cache: Cache, workers: int = WORKERS, context: int = CONTEXT
    ) -> None:
        self.client, self.cache = client, cache
        self.workers, self._context = max(1, workers), context
        self.asked = 0  # questions answered by the endpoint (not the cache)
        self.read_from: dict[str, int] = {"logprobs": 0, "text": 0}

    def key(self, evidence: str, claim: str) -> str:
        """The cache key of one question: endpoint, model, prompt, evidence, claim."""
        c = self.client
        return content_key(ANSWER_VERSION, c.base_url, c.model, PROMPT_VERSION, evidence, claim)

    def count_tokens(self, text: str) -> int:
        """Estimated tokens: words x TOKENS_PER_WORD (the endpoint's tokenizer is not known)."""
        return max(1, math.ceil(len(text.split()) * TOKENS_PER_WORD))

    @property
    def max_length(self) -> int:
        return self._context

    def __call__(self, premises: Sequence[str], hypotheses: Sequence[str]) -> np.ndarray:
        pairs = list(zip(premises, hypotheses, strict=True))
        keys = [self.key(e, c) for e, c in pairs]
        found = self.cache.get_many(CACHE_NAMESPACE, keys)
        todo = {k: pair for k, pair in zip(keys, pairs, strict=True) if k not in found}
        for key, answer in self._ask(todo):
            value = json.dumps({"p_yes": answer.p_yes, "read": answer.read}).encode()
            self.cache.put_many(CACHE_NAMESPACE, {key: value})  # kept if a later one fails
            found[key] = value
            self.asked += 1
            self.read_from[answer.read] += 1
        return np.array([float(json.loads(found[k])["p_yes"]) for k in keys], dtype=float)

    def _ask(self, todo: dict[str, tuple[str, str]]):
        """(key, answer) for each question, in order, up to `workers` in flight; the first
        failure raises and the questions not yet sent are not sent."""
        if not todo:
            return
        if self.workers == 1 or len(todo) == 1:
            for key, (evidence, claim) in todo.items():
                yield key, self.client.ask(evidence, claim)
            return
        with ThreadPoolExecutor(min(self.workers, len(todo)), "judge") as pool:
            futures = {k: pool.submit(self.client.ask, e, c) for k, (e, c) in todo.items()}
            try:
                for key, future in futures.items():
                    yield key, future.result()
            finally:
                for future in futures.values():
                    future.cancel()


def judge_fingerprint(
    base_url: str,
    model: str,
    embedder: str,
    top: int,
    neighbours: int,
    aggregate: str,
    threshold: float,
) -> str:
    """What the judge's verdicts depend on: endpoint and model, prompt, the SBERT that ranks
    the evidence, splitter, evidence and its context length, aggregation and threshold."""
    return (
        f"judge:openai:{base_url}:{model}:{PROMPT_VERSION}:{embedder}:{SPLITTER_VERSION}:"
        f"{EVIDENCE_VERSION}:w{CONTEXT}:t{top}n{neighbours}:{aggregate}:t{threshold:g}"
    )


class JudgeChecker(ClaimChecker):
    """The `judge:` Checker: the claim checker over `JudgeModel` (`judge` holds its client and
    its counts)."""

    def __init__(self, judge: JudgeModel, encode: Encode, fingerprint: str, **options: Any):
        super().__init__(judge, encode, fingerprint, **options)
        self.judge = judge

    def close(self) -> None:
        self.judge.client.close()


def endpoint_from_environment(environ: dict[str, str] | None = None) -> tuple[str, str | None]:
    """(model name, API key) of the judge: HSS_JUDGE_MODEL / HSS_JUDGE_API_KEY, else the
    openai: summarizer's HSS_OPENAI_MODEL / HSS_OPENAI_API_KEY; the model "default" (what a
    server with one model serves) and no key when neither is set."""
    env = os.environ if environ is None else environ
    model = env.get("HSS_JUDGE_MODEL") or env.get("HSS_OPENAI_MODEL") or "default"
    key = env.get("HSS_JUDGE_API_KEY") or env.get("HSS_OPENAI_API_KEY") or None
    return model, key


def load_judge_checker(
    uri: str,
    encode: Encode,
    embedder: str,
    threshold: float | None = None,
    aggregate: str = "min",
    top: int = DEFAULT_TOP,
    neighbours: int = DEFAULT_NEIGHBOURS,
    cache: Cache | None = None,
    *,
    model: str | None = None,
    api_key: str | None = None,
    workers: int = WORKERS,
    timeout_s: float = TIMEOUT_S,
    retries: int = RETRIES,
    transport: httpx.BaseTransport | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> JudgeChecker:
    """The judge a `judge:openai:<base url>` URI names (InputError for a malformed one), its
    answers kept in `cache` (None: in memory, for this process only). Model name and key from
    the environment unless given (`endpoint_from_environment`). Nothing is sent until the first
    claim is judged."""
    try:
        _, base_url = judge_endpoint(uri)
    except ValueError as exc:
        raise InputError(f"consistency.model: {exc}") from exc
    env_model, env_key = endpoint_from_environment()
    name = model or env_model
    client = JudgeClient(
        base_url,
        name,
        api_key if api_key is not None else env_key,
        timeout_s=timeout_s,
        retries=retries,
        transport=transport,
        sleep=sleep,
    )
    chosen = JUDGE_THRESHOLD if threshold is None else threshold
    judge = JudgeModel(client, cache if cache is not None else Cache(None), workers)
    fingerprint = judge_fingerprint(base_url, name, embedder, top, neighbours, aggregate, chosen)
    return JudgeChecker(
        judge,
        encode,
        fingerprint,
        threshold=chosen,
        aggregate=aggregate,
        top=top,
        neighbours=neighbours,
    )
