"""Progress that people can see wherever the work runs.

The workflows report progress through a `Progress` callable: `start(stage, total, done)`
returns `advance(n)`. `progress_reporter(console)` chooses how it is shown: rich bars in a
terminal; without one (CI logs, `| tee`, `| cat`, Prefect workers) plain lines

    progress: summarize 12/192 (6%), 0.41/s, ETA 7m19s

at every stage's start and end and at least every `interval` seconds while it runs (a heartbeat
thread repeats the line when nothing advanced, so a long model load or generation still shows
that the run is alive).
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

Progress = Callable[[str, int, int], Callable[[int], None]]
"""A progress reporter: start(stage, total, done) -> advance(n)."""

PLAIN_INTERVAL_S = 30.0
PREFIX = "progress:"


def no_progress(stage: str, total: int, done: int) -> Callable[[int], None]:
    """A reporter that shows nothing."""
    return lambda n: None


def _duration(seconds: float) -> str:
    seconds = round(seconds)
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"


@dataclass
class _Stage:
    name: str
    total: int
    done: int
    started: float
    first_done: int
    finished: bool = False

    def line(self, now: float) -> str:
        share = f" ({self.done / self.total:.0%})" if self.total else ""
        made = self.done - self.first_done
        elapsed = max(now - self.started, 1e-9)
        text = f"{PREFIX} {self.name} {self.done}/{self.total}{share}"
        if made > 0:
            rate = made / elapsed
            left = max(self.total - self.done, 0)
            text += f", {rate:.2f}/s, ETA {_duration(left / rate) if left else '0s'}"
        else:
            text += f", {_duration(elapsed)} in this stage"
        return text


@dataclass
class PlainProgress:
    """Plain progress lines through `say`, at least every `interval` seconds per running stage."""

    say: Callable[[str], None]
    interval: float = PLAIN_INTERVAL_S
    clock: Callable[[], float] = time.monotonic
    _stages: dict[str, _Stage] = field(default_factory=dict)
    _last: float = 0.0
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def start(self, name: str, total: int, done: int) -> Callable[[int], None]:
        with self._lock:
            now = self.clock()
            stage = _Stage(name, total, done, now, done, finished=done >= total)
            self._stages[name] = stage
            self._emit(stage.line(now), now)

        def advance(n: int) -> None:
            with self._lock:
                now = self.clock()
                stage.done += n
                ended = not stage.finished and stage.done >= stage.total
                stage.finished = stage.finished or ended
                if ended or now - self._last >= self.interval:
                    self._emit(stage.line(now), now)

        return advance

    def heartbeat(self) -> None:
        """Repeat the running stages' lines when none was said for `interval` seconds."""
        with self._lock:
            now = self.clock()
            if now - self._last < self.interval:
                return
            running = [s for s in self._stages.values() if not s.finished]
            for stage in running:
                self._emit(stage.line(now), now)

    def _emit(self, line: str, now: float) -> None:
        self._last = now
        self.say(line)


@contextlib.contextmanager
def plain_progress(
    say: Callable[[str], None], interval: float = PLAIN_INTERVAL_S
) -> Iterator[Progress]:
    """Plain lines, with a heartbeat thread while the block runs."""
    reporter = PlainProgress(say, interval)
    stop = threading.Event()

    def beat() -> None:
        while not stop.wait(min(interval, 5.0)):
            reporter.heartbeat()

    thread = threading.Thread(target=beat, name="progress-heartbeat", daemon=True)
    thread.start()
    try:
        yield reporter.start
    finally:
        stop.set()
        thread.join(timeout=5)


@contextlib.contextmanager
def progress_bars(console: Any) -> Iterator[Progress]:
    """One rich bar per stage on `console`; a stage started again reuses its bar."""
    from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn
    from rich.progress import Progress as Bars

    bars = Bars(
        TextColumn("{task.description:<10}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        transient=False,
    )
    tasks: dict[str, Any] = {}

    def start(name: str, total: int, done: int) -> Callable[[int], None]:
        if name in tasks:  # a new model or stage reuses its bar
            bars.reset(tasks[name], total=total, completed=done)
        else:
            tasks[name] = bars.add_task(name, total=total, completed=done)
        task = tasks[name]
        return lambda n: bars.advance(task, n)

    with bars:
        yield start


@contextlib.contextmanager
def progress_reporter(console: Any) -> Iterator[Progress]:
    """Rich bars when `console` is a terminal, plain timed lines otherwise."""
    if console.is_terminal:
        with progress_bars(console) as start:
            yield start
    else:

        def say(line: str) -> None:
            console.print(line, highlight=False, markup=False, soft_wrap=True)

        with plain_progress(say) as start:
            yield start
