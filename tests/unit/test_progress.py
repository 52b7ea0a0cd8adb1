"""Plain progress lines where there is no terminal: stage, done/total, rate and ETA, at least
every interval."""

from __future__ import annotations

import pytest

from hss_gate.progress import PlainProgress, plain_progress

pytestmark = pytest.mark.unit


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_lines_at_the_start_every_interval_and_at_the_end():
    lines: list[str] = []
    clock = Clock()
    reporter = PlainProgress(lines.append, interval=30, clock=clock)
    advance = reporter.start("summarize", 10, 0)
    assert lines == ["progress: summarize 0/10 (0%), 0s in this stage"]
    clock.now += 10
    advance(1)  # 10 s after the last line: quiet
    assert len(lines) == 1
    clock.now += 25
    advance(1)  # 35 s: a line with the rate and the ETA
    assert lines[-1] == "progress: summarize 2/10 (20%), 0.06/s, ETA 2m20s"
    clock.now += 1
    advance(8)  # the stage ends: always said
    assert lines[-1].startswith("progress: summarize 10/10 (100%)") and "ETA 0s" in lines[-1]


def test_the_heartbeat_repeats_a_stage_that_does_not_advance():
    lines: list[str] = []
    clock = Clock()
    reporter = PlainProgress(lines.append, interval=30, clock=clock)
    reporter.start("perturb", 48, 12)  # resumed: 12 already cached
    clock.now += 20
    reporter.heartbeat()
    assert len(lines) == 1
    clock.now += 15
    reporter.heartbeat()
    assert lines[-1] == "progress: perturb 12/48 (25%), 35s in this stage"
    reporter.start("perturb", 48, 48)  # finished stages are not repeated
    clock.now += 60
    reporter.heartbeat()
    assert len(lines) == 3


def test_the_context_manager_beats_on_its_own():
    lines: list[str] = []
    with plain_progress(lines.append, interval=0.05) as start:
        start("load", 1, 0)
        import time

        time.sleep(0.3)
    assert len(lines) >= 2 and all(line.startswith("progress: load 0/1") for line in lines)
