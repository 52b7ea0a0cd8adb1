"""The `judge:` checker against a real OpenAI-compatible server: llama.cpp's HTTP server (the one
in the xllamacpp wheel, started by scripts/serve_gguf.py in its own process) serving the
embedded SmolLM2 on 127.0.0.1 as the judge. Its judgement is not the point (a 135M model);
the point is that a real server's answers are read (log-probabilities), give scores in [0, 1]
and a verdict per pair, and are cached.

Marked slow (a real GGUF model). Outside CI a server that cannot start skips these tests with
the reason; under CI=true it fails them (tests/conftest.py `component_unavailable`).
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from hss_gate.common.cache import Cache
from hss_gate.consistency.checker import load_checker
from hss_gate.models import model_store
from hss_gate.models.embedding import HashingEmbedder
from tests.conftest import REPO, component_unavailable
from tests.integration.test_openai_server import START_TIMEOUT_S, _env, _wait_healthy, first_line

pytestmark = pytest.mark.slow

PAIRS = [
    (
        "The council approved a new budget on Monday. The mayor said the city could not "
        "afford new roads. Heavy rain fell across the region overnight.",
        "On Monday the council approved a new budget.",  # not a quote: the judge is asked
    ),
    (
        "The council approved a new budget on Monday. The mayor said the city could not "
        "afford new roads. Heavy rain fell across the region overnight.",
        "The council rejected the budget. The mayor promised new roads.",
    ),
    (
        "Anna moved to Lisbon in 2019 to study marine biology. She now works at the city "
        "aquarium, where she cares for the octopuses.",
        "Anna works at the aquarium in Lisbon.",
    ),
    (
        "Anna moved to Lisbon in 2019 to study marine biology. She now works at the city "
        "aquarium, where she cares for the octopuses.",
        "Anna moved to Madrid in 2015 to study law.",
    ),
]


@pytest.fixture(scope="module")
def judge_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A llama.cpp server with one slot serving SmolLM2: its /v1 base URL (stopped at the end of
    the module)."""
    if not model_store.is_installed(model_store.resolve_name("smollm2-135m-instruct")):
        component_unavailable("smollm2-135m-instruct is not installed (hss models install)")
    log = tmp_path_factory.mktemp("judge-server") / "server.log"
    command = [sys.executable, "scripts/serve_gguf.py", "smollm2", "--parallel", "1"]
    with log.open("w") as err:
        proc = subprocess.Popen(
            command, cwd=REPO, stdout=subprocess.PIPE, stderr=err, text=True, env=_env()
        )
    try:
        line = first_line(proc, START_TIMEOUT_S)
        try:
            url = json.loads(line)["url"]
        except (ValueError, KeyError):
            lines = [x for x in log.read_text(errors="replace").splitlines() if x.strip()]
            component_unavailable(
                f"llama.cpp server did not start: {' | '.join(lines[-2:]) or line}"
            )
        _wait_healthy(url, proc)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=15)


def _judge(url: str, cache: Cache):
    encode = HashingEmbedder(256).encode
    return load_checker(f"judge:openai:{url}", "", None, encode, "hashing:256", cache=cache)


def test_a_local_judge_scores_each_claim_in_unit_range_and_gives_a_verdict_per_pair(
    judge_server: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("HSS_JUDGE_MODEL", "HSS_JUDGE_API_KEY", "HSS_OPENAI_MODEL", "HSS_OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    checker = _judge(judge_server, Cache(tmp_path))
    assert checker.fingerprint.startswith(f"judge:openai:{judge_server}:default:p")
    read = checker.read(PAIRS)
    verdicts = checker.check(PAIRS)
    assert len(verdicts) == len(PAIRS)
    claims = {c for r in read for c in r.claims}
    assert len(claims) == 5 and checker.judge.asked == 5  # one question a distinct claim
    # llama.cpp returns log-probabilities: every P(yes) is read from them, none parsed
    assert checker.judge.read_from == {"logprobs": 5, "text": 0}
    scores = [s for r in read for s in r.scores]
    assert all(0.0 <= s <= 1.0 for s in scores)
    assert len(set(scores)) > 1  # probabilities, not a constant or a bare 0/1
    for verdict, r in zip(verdicts, read, strict=True):
        assert 0.0 <= verdict.consistency <= 1.0
        assert {u.sentence for u in verdict.unsupported} <= set(r.claims)
        assert all(u.passage for u in verdict.unsupported)  # each beside its evidence

    again = _judge(judge_server, Cache(tmp_path))  # a rerun on the same cache
    assert again.check(PAIRS) == verdicts
    assert again.judge.asked == 0 and again.judge.client.requests == 0
