"""Progress that people can see wherever the work runs.

The workflows report progress through a `Progress` callable: `start(stage, total, done)`
returns `advance(n)`. `progress_reporter(console)` chooses how it is shown: rich bars in a
terminal; without one (CI logs, `| tee`, `| cat`, Prefect workers) plain lines

    progress: summarize 12/192 (6%), 0.41/s, ETA 7m19s

at every stage's start and end and at least every `interval` seconds while it runs (a heartbeat
thread repeats the line when nothing advanced, so a long model load or generation still shows
that the run is alive).

Work planned in steps (the gate's looks, each model in turn) goes through `PlanProgress`: each
step's summaries are a stage named for the step, and `status` says the summaries done of those
planned and the time left at the pace so far:

    look 2 of 3: 24 of 48 documents; 96 of 144 planned summaries done, about 1m40s left ...
    progress: look 2/3 candidate summaries 5/12 (42%), 0.33/s, ETA 21s
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


@dataclass
class PlanProgress:
    """Progress of work planned in steps, counted in units (the gate's looks and models, in
    summaries). `step` gives the Progress to hand one step's work: its `unit` stage is shown
    under the step's label and counts towards the plan; `status` says the units done of
    those planned and the time left at the pace of the steps so far."""

    progress: Progress
    planned: int
    unit: str = "summarize"
    noun: str = "summaries"
    clock: Callable[[], float] = time.monotonic
    done: int = 0
    _started: float | None = None
    _step_left: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def step(self, label: str, planned: int) -> Progress:
        """The Progress of one step of `planned` units: its unit stage shown as `label`."""
        if self._started is None:
            self._started = self.clock()
        self.end_step()
        self._step_left = planned

        def start(stage: str, total: int, done: int) -> Callable[[int], None]:
            if stage != self.unit:
                return self.progress(stage, total, done)
            inner = self.progress(label, total, done)
            self._count(done)

            def advance(n: int) -> None:
                inner(n)
                self._count(n)

            return advance

        return start

    def _count(self, n: int) -> None:
        with self._lock:
            n = min(n, self._step_left)
            self._step_left -= n
            self.done += n

    def end_step(self) -> None:
        """The step is over: all its planned units count as done (a text summarized twice, or
        a summary found in the cache twice, is counted once by the work's own stage)."""
        self._count(self._step_left)

    def status(self, of_what: str = "if every step runs") -> str:
        """ "96 of 144 planned summaries done, about 1m40s left <of_what>"."""
        text = f"{self.done} of {self.planned} planned {self.noun} done"
        elapsed = 0.0 if self._started is None else self.clock() - self._started
        if self.done <= 0 or elapsed <= 0:
            return text + ", time left not known yet"
        left = (self.planned - self.done) * elapsed / self.done
        return text + f", about {_duration(left)} left {of_what}"


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
    """One rich bar per stage on `console` (done of total, time elapsed and left); a stage
    started again reuses its bar."""
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )
    from rich.progress import Progress as Bars

    bars = Bars(
        TextColumn("{task.description:<10}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
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
