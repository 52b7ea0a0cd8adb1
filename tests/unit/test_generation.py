"""Background generation: same summaries and cache contents as the sequential path."""

import threading
import time

import pytest

from hss_gate.cache import Cache
from hss_gate.generation import BackgroundSummaries, summary_key
from hss_gate.pipeline import score_documents
from hss_gate.summarizers.base import FakeSummarizer
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
