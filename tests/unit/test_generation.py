"""Background generation: same summaries and cache contents as the sequential path."""

import threading
import time

import pytest

from hss_gate.common.cache import Cache
from hss_gate.models.summarizers.base import FakeSummarizer
from hss_gate.scoring.generation import BackgroundSummaries, summary_key
from hss_gate.scoring.pipeline import score_documents
from tests.integration import test_openai_summarizer as fake_http
from tests.unit.test_pipeline_fakes import DOCS, _settings, _toolkit

pytestmark = pytest.mark.unit


class ConcurrentFake(FakeSummarizer):
    """FakeSummarizer with the concurrent interface; records how many calls overlap."""

    def __init__(self, workers: int = 2, fail_on: str | None = None, **kwargs) -> None:
        super().__init__(**kwargs)
        self.workers = workers
        self.fail_on = fail_on
        self.active = self.most_active = 0
        self._lock = threading.Lock()

    def summarize_one(self, text: str) -> str:
        with self._lock:
            self.active += 1
            self.most_active = max(self.most_active, self.active)
        try:
            time.sleep(0.01)
            if self.fail_on and self.fail_on in text:
                raise RuntimeError("generation failed")
            return self.summarize([text])[0]
        finally:
            with self._lock:
                self.active -= 1


def test_results_are_in_order_cached_and_counted_once_per_text(tmp_path):
    fake, cache, advanced = ConcurrentFake(), Cache(tmp_path), []
    texts = [f"Sentence {i} here. Another {i}." for i in range(6)]
    with BackgroundSummaries(fake, cache, advanced.append) as jobs:
        jobs.submit(texts[:3])
        jobs.submit([*texts[2:], texts[0]])  # two texts already queued
        out = jobs.results(texts)
    assert out == FakeSummarizer().summarize(texts)
    assert sum(advanced) == 3 + 5  # every submitted text once, duplicates included
    assert fake.calls == 6 and fake.most_active == 2
    keys = [summary_key(fake.fingerprint, t) for t in texts]
    assert len(cache.get_many("summaries", keys)) == 6


def test_cached_texts_are_not_generated_again(tmp_path):
    cache = Cache(tmp_path)
    texts = ["One. Two.", "Three. Four."]
    with BackgroundSummaries(ConcurrentFake(), cache) as jobs:
        first = jobs.results(texts)
    again = ConcurrentFake()
    with BackgroundSummaries(again, cache) as jobs:
        jobs.submit(texts)
        assert jobs.results(texts) == first
    assert again.calls == 0


def test_a_failed_generation_raises_and_keeps_the_finished_ones(tmp_path):
    cache = Cache(tmp_path)
    fake = ConcurrentFake(workers=1, fail_on="broken")
    texts = ["Fine text. Yes.", "A broken text. No."]
    with (
        pytest.raises(RuntimeError, match="generation failed"),
        BackgroundSummaries(fake, cache) as jobs,
    ):
        jobs.results(texts)
    stored = cache.get_many("summaries", [summary_key(fake.fingerprint, texts[0])])
    assert len(stored) == 1


def test_the_background_path_scores_exactly_like_the_sequential_one(tmp_path):
    settings, tools = _settings(), _toolkit()
    sequential = score_documents(
        DOCS, FakeSummarizer(unstable=True), settings, tools, Cache(tmp_path / "a"), None
    )
    concurrent = ConcurrentFake(unstable=True)
    background = score_documents(DOCS, concurrent, settings, tools, Cache(tmp_path / "b"), None)
    assert background.documents == sequential.documents
    assert background.summaries == sequential.summaries
    assert background.perturbations == sequential.perturbations
    assert concurrent.calls == len(background.summaries)


# The openai: client's own concurrency (generate.openai_concurrency), against the loopback fake
# OpenAI-compatible server of the integration tests.

openai_fake = fake_http.serve  # the fixture, under this name here


class InFlight:
    """Answers each chat request with the document it was about, holding every request until
    `hold` requests (or all of the `total` still unanswered) are in flight at once, or a
    timeout, and records the most seen. `fail`: a document's first answer is that status."""

    def __init__(self, hold: int, total: int = 6, fail: dict[str, int] | None = None) -> None:
        self.hold, self.fail = hold, fail or {}
        self.total = total + len(self.fail)
        self.active = self.most = self.answered = 0
        self.seen: dict[str, int] = {}
        self.cond = threading.Condition()

    def __call__(self, number: int, request: dict) -> tuple[int, object]:
        import json

        document = json.loads(request["body"])["messages"][-1]["content"].split("Article:\n")[1]
        document = document.split("\n")[0]
        with self.cond:
            self.active += 1
            self.most = max(self.most, self.active)
            self.seen[document] = self.seen.get(document, 0) + 1
            self.cond.notify_all()
            self.cond.wait_for(
                lambda: self.active >= min(self.hold, self.total - self.answered), timeout=5.0
            )
        # later documents answer sooner: the client must restore the order
        time.sleep(0.02 * (9 - int(document.split()[-1])))
        with self.cond:
            self.active -= 1
            self.answered += 1
        status = self.fail.get(document, 0)
        if status and self.seen[document] == 1:
            return status, {"error": "busy"}
        return fake_http.ok(f"summary of {document}")


def _openai(url: str, concurrency: int, **generate):
    from hss_gate.models.summarizers.openai import OpenAISummarizer
    from hss_gate.settings import GenerateSettings

    values = {"max_new_tokens": 8, "retries": 1, "timeout_s": 10.0, **generate}
    settings = GenerateSettings(openai_concurrency=concurrency, **values)
    return OpenAISummarizer(url, settings)


OPENAI_DOCS = [f"Document number {i}" for i in range(6)]


@pytest.fixture
def no_backoff(monkeypatch):
    from hss_gate.models.summarizers import openai as openai_module

    monkeypatch.setattr(openai_module.time, "sleep", lambda s: None)


@pytest.mark.parametrize("concurrency", [1, 3])
def test_openai_requests_overlap_up_to_the_setting_in_order(openai_fake, no_backoff, concurrency):
    server = InFlight(hold=concurrency)
    fake = openai_fake(server)
    summarizer = _openai(fake.url, concurrency)
    steps: list[int] = []

    out = summarizer.summarize(OPENAI_DOCS, progress=steps.append)

    assert out == [f"summary of {d}" for d in OPENAI_DOCS]
    assert server.most == concurrency  # never more in flight than the setting
    assert sum(steps) == len(OPENAI_DOCS) and len(fake.requests) == len(OPENAI_DOCS)


def test_openai_retries_each_request_on_its_own_while_others_run(openai_fake, no_backoff):
    server = InFlight(hold=2, fail={"Document number 2": 503, "Document number 4": 429})
    fake = openai_fake(server)

    out = _openai(fake.url, 2).summarize(OPENAI_DOCS)

    assert out == [f"summary of {d}" for d in OPENAI_DOCS]
    assert server.most == 2
    assert server.seen == {d: 2 if d[-1] in "24" else 1 for d in OPENAI_DOCS}


def test_openai_concurrent_failure_raises_the_model_error(openai_fake, no_backoff):
    from hss_gate.common.errors import ModelError

    # the first two are held together; those the client still sends after the failure are not
    fake = openai_fake(InFlight(hold=2, total=1, fail={"Document number 1": 400}))
    with pytest.raises(ModelError, match="HTTP 400"):
        _openai(fake.url, 2).summarize(OPENAI_DOCS)


def test_openai_background_generation_uses_the_concurrency_setting(
    openai_fake, no_backoff, tmp_path
):
    server = InFlight(hold=3)
    fake = openai_fake(server)
    summarizer = _openai(fake.url, 3, workers=7)  # workers (GGUF copies) is not the client's
    assert summarizer.workers == 3
    with BackgroundSummaries(summarizer, Cache(tmp_path)) as jobs:
        jobs.submit(OPENAI_DOCS[:4])
        out = jobs.results(OPENAI_DOCS)
    assert out == [f"summary of {d}" for d in OPENAI_DOCS]
    assert server.most == 3


def test_openai_concurrency_is_not_part_of_the_cache_key():
    url = "http://127.0.0.1:9/v1"
    assert _openai(url, 1).fingerprint == _openai(url, 8).fingerprint


def test_after_a_request_gives_up_every_later_one_fails_at_once(monkeypatch):
    import socket

    from hss_gate.common.errors import ModelError
    from hss_gate.models.summarizers import openai as openai_module

    waits: list[float] = []
    monkeypatch.setattr(openai_module.time, "sleep", waits.append)
    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    summarizer = _openai(f"http://127.0.0.1:{port}/v1", 2, retries=2)
    with pytest.raises(ModelError, match="no answer after 3 tries") as first:
        summarizer.summarize_one("one")
    assert waits == [0.5, 1.0]
    with pytest.raises(ModelError) as second:  # the endpoint is dead: no more tries, no waits
        summarizer.summarize_one("two")
    assert second.value is first.value and waits == [0.5, 1.0]
    summarizer.close()  # closing forgets it: the next request tries again
    with pytest.raises(ModelError):
        summarizer.summarize_one("three")
    assert waits == [0.5, 1.0, 0.5, 1.0]
