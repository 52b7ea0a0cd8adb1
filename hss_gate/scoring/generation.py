"""Summaries generated in the background while the engine prepares the next inputs.

The engine submits each document's texts as soon as they exist (the originals at once, the
perturbed versions as each document's perturbations are found), so generation, which is most of
the cost, starts before the perturbation search has finished. Finished summaries are stored in
the cache by the caller's thread each time it calls `store_finished`, so an interrupted run
keeps what it generated.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from typing import Protocol

from hss_gate.common.cache import Cache, content_key


class ConcurrentSummarizer(Protocol):
    """A summarizer that can generate one text at a time from up to `workers` threads."""

    fingerprint: str
    workers: int

    def summarize_one(self, text: str) -> str: ...


def summary_key(summarizer_fingerprint: str, text: str) -> str:
    """The cache key of one summary."""
    return content_key("summary-v1", summarizer_fingerprint, text)


class BackgroundSummaries:
    """Generate submitted texts on `summarizer.workers` threads; store results in the cache."""

    def __init__(
        self,
        summarizer: ConcurrentSummarizer,
        cache: Cache,
        advance: Callable[[int], None] = lambda n: None,
    ) -> None:
        self.summarizer = summarizer
        self.cache = cache
        self.advance = advance
        self.done: dict[str, str] = {}
        self.running: dict[str, Future[str]] = {}
        self._pool = ThreadPoolExecutor(max(1, summarizer.workers), thread_name_prefix="generate")

    def __enter__(self) -> BackgroundSummaries:
        return self

    def __exit__(self, *exc: object) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)

    def submit(self, texts: Iterable[str], count: bool = True) -> None:
        """Queue the texts not already cached, generated or queued. With count, every text
        advances the progress once: now if it needs no generation, else when it is done."""
        texts = list(texts)
        keys = {summary_key(self.summarizer.fingerprint, t): t for t in texts}
        new = {k: t for k, t in keys.items() if k not in self.done and k not in self.running}
        for key, value in self.cache.get_many("summaries", new).items():
            self.done[key] = value.decode()
            del new[key]
        for key, text in new.items():
            self.running[key] = self._pool.submit(self.summarizer.summarize_one, text)
        if count:
            self.advance(len(texts) - len(new))
        self.store_finished()

    def store_finished(self, block: bool = False) -> None:
        """Cache the summaries finished so far (block: wait for at least one); a failed
        generation raises here."""
        if block and self.running:
            wait(self.running.values(), return_when=FIRST_COMPLETED)
        finished = {k: f for k, f in self.running.items() if f.done()}
        made = {k: f.result() for k, f in finished.items()}
        for key in finished:
            del self.running[key]
        if made:
            self.cache.put_many("summaries", {k: s.encode() for k, s in made.items()})
            self.done.update(made)
            self.advance(len(made))

    def results(self, texts: Sequence[str]) -> list[str]:
        """The summaries of the texts, waiting for the ones still generating."""
        self.submit(texts, count=False)
        while self.running:
            self.store_finished(block=True)
        return [self.done[summary_key(self.summarizer.fingerprint, t)] for t in texts]
