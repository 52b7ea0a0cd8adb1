"""Progress that people can see: rich bars in a terminal.

`progress_bars(console)` is a context manager yielding the workflows' progress reporter
(hss_gate.pipeline.Progress): `start(stage, total, done)` returns `advance(n)`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

Progress = Callable[[str, int, int], Callable[[int], None]]
"""A progress reporter: start(stage, total, done) -> advance(n)."""


def no_progress(stage: str, total: int, done: int) -> Callable[[int], None]:
    """A reporter that shows nothing."""
    return lambda n: None


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
