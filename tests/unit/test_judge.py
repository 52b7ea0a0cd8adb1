"""The `judge:` checker against fake OpenAI-compatible endpoints (httpx.MockTransport): P(yes)
from log-probabilities, the yes/no fallback, refusals, malformed answers, retries on timeouts and
server errors, the answer cache, the settings' URI check, and the verdicts. The real llama.cpp
server: tests/integration/test_judge_server.py."""

from __future__ import annotations

import json
import math
import re
import threading
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

from hss_gate.common.cache import Cache
from hss_gate.common.errors import InputError, ModelError
from hss_gate.consistency import judge
from hss_gate.consistency.checker import load_checker
from hss_gate.consistency.entail_checker import aggregate_scores
from hss_gate.consistency.judge import load_judge_checker, p_yes_from_logprobs
from hss_gate.models.embedding import HashingEmbedder
from hss_gate.settings import ConsistencySettings, load_settings

pytestmark = pytest.mark.unit

URL = "http://judge.test/v1"
URI = f"judge:openai:{URL}"
SOURCE = (
    "The council approved a new budget on Monday. The mayor said the city could not afford "
    "new roads. Heavy rain fell across the region overnight. The river rose by two metres."
)
SUPPORTED = "The river rose two metres."  # not a quote: a quote is supported unasked
CHANGED = "The river rose by five metres."


@pytest.fixture(autouse=True)
def _no_endpoint_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("HSS_JUDGE_MODEL", "HSS_JUDGE_API_KEY", "HSS_OPENAI_MODEL", "HSS_OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)


def completion(
    content: str | None = "Yes",
    top: list[tuple[str, float]] | None = None,
    refusal: str | None = None,
    **choice,
) -> dict:
    """A chat completion; `top`: the first position's (token, logprob) list."""
    out: dict = {"index": 0, "message": {"role": "assistant", "content": content}}
    if refusal is not None:
        out["message"]["refusal"] = refusal
    out["finish_reason"] = "stop"
    if top is not None:
        chosen = max(top, key=lambda t: t[1])
        position = {
            "token": chosen[0],
            "logprob": chosen[1],
            "top_logprobs": [{"token": t, "logprob": lp} for t, lp in top],
        }
        out["logprobs"] = {"content": [position]}
    out.update(choice)
    return {"object": "chat.completion", "choices": [out]}


class Endpoint:
    """A fake endpoint: `answer(request body) -> httpx.Response | Exception`; records bodies."""

    def __init__(self, answer: Callable[[dict], httpx.Response | Exception]) -> None:
        self.answer, self.bodies, self.headers = answer, [], []
        self._lock = threading.Lock()

    def __call__(self, request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        with self._lock:
            self.bodies.append(body)
            self.headers.append(dict(request.headers))
        assert request.url == f"{URL}/chat/completions"
        found = self.answer(body)
        if isinstance(found, Exception):
            raise found
        return found

    @property
    def transport(self) -> httpx.MockTransport:
        return httpx.MockTransport(self)


def by_claim(body: dict) -> httpx.Response:
    """Yes (logprob -0.1 against No -2.5) when the claim's words all occur in the source
    passage, else No (-0.1 against Yes -3.0)."""
    text = body["messages"][1]["content"]
    passage = text.split("Source:\n", 1)[1].split("\n\nClaim: ", 1)[0]
    claim = text.split("\n\nClaim: ", 1)[1].split("\n\n", 1)[0]
    words = lambda t: set(re.findall(r"[a-z0-9]+", t.lower()))  # noqa: E731
    if words(claim) <= words(passage):
        return httpx.Response(200, json=completion("Yes", [("Yes", -0.1), ("No", -2.5)]))
    return httpx.Response(200, json=completion("No", [("No", -0.1), (" yes", -3.0)]))


def checker(endpoint: Endpoint, cache: Cache | None = None, **options):
    options = {"sleep": lambda s: None, "workers": 1, **options}
    encode = HashingEmbedder(256).encode
    return load_judge_checker(
        URI, encode, "hashing:256", cache=cache, transport=endpoint.transport, **options
    )


def p(yes: float, no: float) -> float:
    return math.exp(yes) / (math.exp(yes) + math.exp(no))


# --- reading the answer -------------------------------------------------------------------


def test_p_yes_is_the_yes_mass_against_the_no_mass_of_the_first_position_that_lists_them():
    endpoint = Endpoint(
        lambda body: httpx.Response(
            200, json=completion("The", [("The", -0.5), ("Yes", -1.2), ("No", -2.0)])
        )
    )
    scores = checker(endpoint).judge([SOURCE], [SUPPORTED])
    assert scores.tolist() == pytest.approx([p(-1.2, -2.0)])
    body = endpoint.bodies[0]
    assert body["logprobs"] is True and body["top_logprobs"] == judge.TOP_LOGPROBS
    assert body["temperature"] == 0.0 and body["model"] == "default"
    assert SUPPORTED in body["messages"][1]["content"] and SOURCE in body["messages"][1]["content"]


def test_yes_and_no_variants_are_summed_and_a_later_position_is_read_when_the_first_lists_neither():
    variants = {"content": [{"token": "Yes", "logprob": -0.7, "top_logprobs": [
        {"token": "Yes", "logprob": -0.7}, {"token": " yes", "logprob": -1.6},
        {"token": "ĠNo", "logprob": -1.9}, {"token": "No.", "logprob": -3.0}]}]}  # fmt: skip
    want = (math.exp(-0.7) + math.exp(-1.6)) / sum(math.exp(v) for v in (-0.7, -1.6, -1.9, -3.0))
    assert p_yes_from_logprobs(variants) == pytest.approx(want)
    later = {"content": [
        {"token": "**", "logprob": -0.1, "top_logprobs": [{"token": "**", "logprob": -0.1}]},
        {"token": "No", "logprob": -0.2, "top_logprobs": [
            {"token": "No", "logprob": -0.2}, {"token": "Yes", "logprob": -1.7}]}]}  # fmt: skip
    assert p_yes_from_logprobs(later) == pytest.approx(p(-1.7, -0.2))


def test_a_missing_no_counts_as_the_least_listed_token_and_none_listed_falls_back_to_text():
    only_yes = {"content": [{"token": "Yes", "logprob": -0.05, "top_logprobs": [
        {"token": "Yes", "logprob": -0.05}, {"token": "The", "logprob": -4.0}]}]}  # fmt: skip
    assert p_yes_from_logprobs(only_yes) == pytest.approx(p(-0.05, -4.0))
    assert p_yes_from_logprobs({"content": [{"token": "No", "logprob": -0.3}]}) == 0.0
    neither = {"content": [{"token": "The", "logprob": -0.1, "top_logprobs": []}]}
    assert p_yes_from_logprobs(neither) is None
    assert p_yes_from_logprobs(None) is None


@pytest.mark.parametrize(("content", "want"), [("Yes.", 1.0), (" no, it does not", 0.0)])
def test_without_logprobs_the_yes_or_no_answer_is_parsed(content: str, want: float):
    endpoint = Endpoint(lambda body: httpx.Response(200, json=completion(content)))
    found = checker(endpoint)
    assert found.judge([SOURCE], [SUPPORTED]).tolist() == [want]
    assert found.judge.read_from == {"logprobs": 0, "text": 1}


# --- refusals and malformed answers: one line, no retry -----------------------------------


@pytest.mark.parametrize(
    ("response", "said"),
    [
        (
            httpx.Response(400, json={"error": {"code": "content_filter", "message": "filtered"}}),
            "refused the question: HTTP 400",
        ),
        (httpx.Response(401, text="bad key"), "refused the question: HTTP 401: bad key"),
        (
            httpx.Response(200, json=completion("", finish_reason="content_filter")),
            "content filter",
        ),
        (
            httpx.Response(200, json=completion(None, refusal="I can't help\nwith that.")),
            "the model refused: I can't help with that.",
        ),
    ],
)
def test_a_refusal_is_a_one_line_model_error_at_once(response: httpx.Response, said: str):
    endpoint = Endpoint(lambda body: response)
    with pytest.raises(ModelError) as error:
        checker(endpoint).check([(SOURCE, SUPPORTED)])
    message = str(error.value)
    assert said in message and URL in message and "\n" not in message
    assert len(endpoint.bodies) == 1  # not retried


@pytest.mark.parametrize(
    ("response", "said"),
    [
        (httpx.Response(200, text="<html>gateway</html>"), "malformed answer (not JSON"),
        (httpx.Response(200, json={"choices": []}), "malformed answer (no choice"),
        (httpx.Response(200, json=completion("Maybe.")), "neither yes nor no ('Maybe.')"),
        (
            httpx.Response(200, json=completion("x", logprobs={"content": [{"token": "x"}]})),
            "without token or logprob",
        ),
    ],
)
def test_a_malformed_answer_is_a_one_line_model_error_at_once(response, said: str):
    endpoint = Endpoint(lambda body: response)
    with pytest.raises(ModelError) as error:
        checker(endpoint).check([(SOURCE, SUPPORTED)])
    assert said in str(error.value) and "\n" not in str(error.value)
    assert len(endpoint.bodies) == 1


def test_the_key_comes_from_the_environment_and_an_echo_of_it_stays_out_of_the_error(
    monkeypatch: pytest.MonkeyPatch,
):
    secret = "sk-judge-0123456789"
    monkeypatch.setenv("HSS_JUDGE_API_KEY", secret)
    monkeypatch.setenv("HSS_JUDGE_MODEL", "big-judge")
    endpoint = Endpoint(lambda body: httpx.Response(401, text=f"invalid key {secret}"))
    found = checker(endpoint)
    with pytest.raises(ModelError) as error:
        found.check([(SOURCE, SUPPORTED)])
    assert endpoint.headers[0]["authorization"] == f"Bearer {secret}"
    assert endpoint.bodies[0]["model"] == "big-judge"
    assert secret not in str(error.value) and "***" in str(error.value)
    assert secret not in found.fingerprint and ":big-judge:" in found.fingerprint


# --- transient failures: retried with backoff ---------------------------------------------


def test_a_timeout_and_a_server_error_are_retried_with_backoff_then_answered():
    failures = [httpx.ReadTimeout("timed out"), httpx.Response(503, text="busy")]

    def answer(body: dict) -> httpx.Response | Exception:
        return failures.pop(0) if failures else by_claim(body)

    waits: list[float] = []
    endpoint = Endpoint(answer)
    found = checker(endpoint, sleep=waits.append)
    verdict = found.check([(SOURCE, SUPPORTED)])[0]
    assert len(endpoint.bodies) == 3 and waits == [0.5, 1.0]
    assert verdict.consistency == pytest.approx(p(-0.1, -2.5), abs=1e-6)


def test_retry_after_is_honoured_and_a_dead_endpoint_fails_once_with_the_last_reason():
    waits: list[float] = []
    endpoint = Endpoint(lambda body: httpx.Response(429, headers={"Retry-After": "3"}))
    found = checker(endpoint, sleep=waits.append, retries=2)
    with pytest.raises(ModelError) as error:
        found.check([(SOURCE, SUPPORTED)])
    assert waits == [3.0, 3.0] and len(endpoint.bodies) == 3
    assert "no answer after 3 tries (HTTP 429)" in str(error.value)
    down = Endpoint(lambda body: httpx.ConnectError("connection refused"))
    with pytest.raises(ModelError, match=r"no answer after 4 tries \(ConnectError"):
        checker(down).check([(SOURCE, f"{SUPPORTED} {CHANGED}")])
    assert len(down.bodies) == 4  # the second claim is not asked: the endpoint gave up


# --- the answer cache ---------------------------------------------------------------------


def test_answers_are_cached_on_disk_so_a_rerun_asks_nothing(tmp_path: Path):
    pairs = [(SOURCE, f"{SUPPORTED} {CHANGED}"), (SOURCE, SUPPORTED)]
    first = Endpoint(by_claim)
    verdicts = checker(first, Cache(tmp_path), workers=4).check(pairs)
    assert len(first.bodies) == 2  # two distinct claims: the repeated one asked once
    again = Endpoint(by_claim)
    rerun = checker(again, Cache(tmp_path))  # a new process on the same cache
    assert rerun.check(pairs) == verdicts
    assert again.bodies == [] and rerun.judge.asked == 0


def test_an_answer_is_kept_even_when_a_later_question_fails(tmp_path: Path):
    def answer(body: dict) -> httpx.Response:
        refused = CHANGED in body["messages"][1]["content"]
        return httpx.Response(400, text="no") if refused else by_claim(body)

    with pytest.raises(ModelError):
        checker(Endpoint(answer), Cache(tmp_path)).check([(SOURCE, f"{SUPPORTED} {CHANGED}")])
    endpoint = Endpoint(by_claim)
    checker(endpoint, Cache(tmp_path)).check([(SOURCE, f"{SUPPORTED} {CHANGED}")])
    assert [CHANGED in b["messages"][1]["content"] for b in endpoint.bodies] == [True]


def test_another_model_or_prompt_is_asked_again(tmp_path: Path, monkeypatch):
    checker(Endpoint(by_claim), Cache(tmp_path)).check([(SOURCE, SUPPORTED)])
    other_model = Endpoint(by_claim)
    checker(other_model, Cache(tmp_path), model="other").check([(SOURCE, SUPPORTED)])
    monkeypatch.setattr(judge, "PROMPT_VERSION", "p-changed")
    other_prompt = Endpoint(by_claim)
    checker(other_prompt, Cache(tmp_path)).check([(SOURCE, SUPPORTED)])
    assert len(other_model.bodies) == 1 and len(other_prompt.bodies) == 1


# --- verdicts and fingerprint -------------------------------------------------------------


def test_verdicts_aggregate_the_claims_and_list_the_unsupported_one_beside_its_evidence():
    found = checker(Endpoint(by_claim), aggregate="softmin")
    verdict = found.check([(SOURCE, f"{SUPPORTED} {CHANGED}")])[0]
    scores = [p(-0.1, -2.5), p(-3.0, -0.1)]
    assert verdict.consistency == pytest.approx(aggregate_scores(scores, "softmin"), abs=1e-6)
    [unsupported] = verdict.unsupported
    assert unsupported.sentence == CHANGED and unsupported.score == pytest.approx(
        scores[1], abs=1e-6
    )
    assert "two metres" in unsupported.passage and unsupported.words == ("five",)
    empty = found.check([(SOURCE, "...")])[0]
    assert empty.consistency == 1.0 and empty.unsupported == ()


def test_the_fingerprint_names_endpoint_model_prompt_evidence_aggregate_and_threshold():
    found = checker(Endpoint(by_claim), threshold=0.7, aggregate="min", top=2, neighbours=0)
    fingerprint = found.fingerprint
    assert fingerprint.startswith(f"judge:openai:{URL}:default:{judge.PROMPT_VERSION}:hashing:256")
    assert fingerprint.endswith(f":w{judge.CONTEXT}:t2n0:min:t0.7")
    assert found.threshold == 0.7
    assert checker(Endpoint(by_claim)).threshold == judge.JUDGE_THRESHOLD


def test_load_checker_builds_the_judge_and_sends_nothing_until_a_claim_is_judged():
    encode = HashingEmbedder(64).encode
    found = load_checker(f"{URI}/", "", None, encode, "hashing:64", cache=Cache(None))
    assert isinstance(found, judge.JudgeChecker)
    assert found.judge.client.base_url == URL and found.judge.client.requests == 0
    with pytest.raises(InputError, match=r"consistency\.aggregate"):
        load_checker(URI, "", None, encode, "hashing:64", aggregate="max")


# --- the settings -------------------------------------------------------------------------


def test_a_judge_uri_is_a_valid_consistency_model():
    assert ConsistencySettings(model=URI).model == URI
    assert ConsistencySettings(model="judge:openai:https://api.example.com/v1").model


@pytest.mark.parametrize(
    ("value", "said"),
    [
        ("judge:", "invalid judge URI 'judge:': expected judge:openai:<base url>"),
        ("judge:anthropic:http://x/v1", "invalid judge URI"),
        ("judge:openai:127.0.0.1:8080/v1", "is not an http(s) URL"),
        ("judge:openai:http://host:port/v1", "is not an http(s) URL"),
        ("judge:openai:http://u:pw@host/v1", "carries a credential"),
        ("judge:openai:http://host/v1?api_key=sk-1", "carries a credential"),
        ("gpt4", "unknown checker 'gpt4'; choose from entail"),
    ],
)
def test_a_malformed_judge_uri_is_a_clear_settings_error(tmp_path: Path, value: str, said: str):
    params = tmp_path / "params.yaml"
    params.write_text(f"schema_version: 2\nconsistency:\n  model: '{value}'\n")
    with pytest.raises(InputError) as error:
        load_settings(params)
    message = str(error.value)
    assert "invalid setting 'consistency.model'" in message and said in message
    assert "pw@" not in message and "sk-1" not in message and "\n" not in message
    with pytest.raises(InputError, match=r"invalid judge URI|not an http|credential|unknown"):
        load_checker(value, "", None, HashingEmbedder(64).encode, "hashing:64")


# --- the gate with a judge: decides, or fails closed -------------------------------------


def _gate_with_judge(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, endpoint: Endpoint):
    """`hss gate` of stored summaries (the invented ones against the faithful ones; no
    perturbations) with the judge behind `endpoint` as the checker: result and decision."""
    from typer.testing import CliRunner

    from hss_gate.cli import app
    from hss_gate.scoring.toolkit import Toolkit
    from tests.conftest import REPO, FakeTagger
    from tests.unit.test_not_measured import _corpus, _strict_json, _summaries
    from tests.unit.test_perturb import LEXICON, VECTORS

    cache = Cache(tmp_path / "judge-cache")

    def toolkit(settings):
        assert settings.consistency.model == URI  # the settings validated the URI
        judged = load_checker(
            settings.consistency.model, "", None, HashingEmbedder(256).encode, "hashing:256",
            cache=cache,
        )  # fmt: skip
        judged.judge.client._transport = endpoint.transport  # the fake endpoint
        judged.judge.client._sleep = lambda s: None
        return Toolkit(FakeTagger(), VECTORS, LEXICON, HashingEmbedder(), judged)

    monkeypatch.chdir(REPO)
    monkeypatch.setenv("HSS_RUN__CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("HSS_CONSISTENCY__MODEL", URI)
    monkeypatch.setattr("hss_gate.scoring.toolkit.real_toolkit", toolkit)
    file = _summaries(tmp_path)
    out = tmp_path / "gate"
    result = CliRunner().invoke(
        app,
        [
            "gate",
            "--candidate",
            f"summaries:{file}?system=bad",
            "--production",
            f"summaries:{file}?system=good",
            "--corpus",
            str(_corpus(tmp_path)),
            "--out",
            str(out),
        ],
    )
    return result, _strict_json((out / "decision.json").read_text())


def test_the_gate_decides_with_a_judge_and_blocks_the_summaries_it_finds_unsupported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    endpoint = Endpoint(by_claim)
    result, decision = _gate_with_judge(tmp_path, monkeypatch, endpoint)
    assert result.exit_code == 1, result.output
    assert decision["decision"] == "block" and "consistency" in decision["decided_by"]
    assert endpoint.bodies  # the judge was asked


def test_the_gate_fails_closed_with_one_line_when_the_judge_refuses(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    endpoint = Endpoint(lambda body: httpx.Response(400, text="content_filter: blocked"))
    result, decision = _gate_with_judge(tmp_path, monkeypatch, endpoint)
    assert result.exit_code == 2, result.output
    assert decision["decision"] == "error"
    (reason,) = decision["reasons"]
    assert f"judge {URL} (model default) refused the question: HTTP 400" in reason
    assert "\n" not in reason
    # the questions not yet sent when the refusal came are never sent: at most the ones in
    # flight, `WORKERS` a side (the gate may check both sides at once), of 48 claims
    assert 1 <= len(endpoint.bodies) <= 2 * judge.WORKERS
