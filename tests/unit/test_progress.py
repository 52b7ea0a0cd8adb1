"""Plain progress lines where there is no terminal: stage, done/total, rate and ETA, at least
every interval."""

from __future__ import annotations

import pytest

from hss_gate.common.progress import PlainProgress, plain_progress

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


def test_a_plan_of_steps_says_each_steps_summaries_and_the_time_left():
    """The gate's looks (hss_gate.workflows.gate_looks): each step's summarize stage is shown
    under the step's name, and `status` counts the summaries done of those planned, with the
    time left at the pace of the steps so far."""
    from hss_gate.common.progress import PlanProgress

    lines: list[str] = []
    clock = Clock()
    plain = PlainProgress(lines.append, interval=30, clock=clock)
    plan = PlanProgress(plain.start, planned=40, clock=clock)
    assert plan.status() == "0 of 40 planned summaries done, time left not known yet"
    work = plan.step("look 1/2 candidate summaries", 16)
    perturb = work("perturb", 4, 0)  # other stages pass through, not counted
    perturb(4)
    advance = work("summarize", 16, 0)
    clock.now += 40
    advance(6)  # 40 s after the last line: said, under the look's name
    assert lines[-1] == "progress: look 1/2 candidate summaries 6/16 (38%), 0.15/s, ETA 1m07s"
    advance(10)
    # production's summaries restored from the cache: done at once, counted
    plan.step("look 1/2 production summaries", 16)("summarize", 16, 16)
    assert lines[-1] == "progress: look 1/2 production summaries 16/16 (100%), 0s in this stage"
    plan.end_step()
    assert plan.done == 32
    assert plan.status("if every look runs") == (
        "32 of 40 planned summaries done, about 10s left if every look runs"
    )
    # a step whose work summarized fewer texts than planned (a text twice) still ends complete
    plan.step("look 2/2 candidate summaries", 4)("summarize", 3, 0)(3)
    plan.end_step()
    assert plan.done == 36


def test_the_gate_says_the_look_the_summaries_done_and_the_time_left(tmp_path, monkeypatch):
    """The quickstart's plain log: a line at every look with the documents, the summaries done
    of those planned and the time left, and the progress lines of each look's summaries."""
    from hss_gate.common.progress import PlainProgress
    from hss_gate.settings import load_settings
    from hss_gate.workflows import gate_looks
    from hss_gate.workflows.gate import GateRequest, Where, prepare
    from hss_gate.workflows.steps import DIRECT
    from tests.conftest import REPO
    from tests.reliability.test_bad_input import _fake_toolkit
    from tests.unit.test_facts_first import continuing_looks

    monkeypatch.chdir(REPO)
    monkeypatch.setattr("hss_gate.scoring.toolkit.real_toolkit", _fake_toolkit)
    continuing_looks(monkeypatch)
    from hss_gate.scoring.runner import LocalRunner

    settings = load_settings(
        REPO / "params.yaml",
        run__cache_dir=str(tmp_path / "cache"),
        perturb__gamma=0.0,
        perturb__k=1,
        score__bootstrap_resamples=100,
    )
    request = GateRequest(
        candidate="fake:lead", production="extractive:lead-3", limit=16, out=str(tmp_path)
    )
    where = Where(request.candidate or "", request.production, tmp_path)
    runner = LocalRunner()
    run = prepare(lambda: settings, request, where, runner, DIRECT)
    said: list[str] = []
    plain = PlainProgress(said.append, interval=1e9)
    looks = gate_looks.score_looks(run, False, runner, DIRECT, plain.start, said.append)
    assert len(looks.taken) == 2
    assert said[0] == (
        "HSS measured on 8 of 16 documents (the first look's documents, gate.hss_documents); "
        "the other documents were summarized from their originals only (facts first)"
    )
    assert said[1] == (
        "look 1 of 2: 8 of 16 documents, HSS on 8 of the 8 new; "
        "0 of 80 planned summaries done, time left not known yet"
    )
    look_2 = next(line for line in said if line.startswith("look 2 of 2"))
    assert look_2.startswith("look 2 of 2: 16 of 16 documents, HSS on 0 of the 8 new; ")
    assert "64 of 80 planned summaries done, about " in look_2
    assert look_2.endswith(" left if every look runs")
    # each look's summaries, per model, from 0 to all of them (the distinct texts: the fake
    # toolkit's perturbed versions repeat each other)
    progress = [line for line in said if line.startswith("progress: look ")]
    assert progress[0].startswith("progress: look 1/2 candidate summaries 0/")
    for stage in ("1/2 candidate", "1/2 production", "2/2 candidate", "2/2 production"):
        ends = [line for line in progress if line.startswith(f"progress: look {stage} summaries")]
        done, total = ends[-1].split()[5].split("/")
        assert done == total and "(100%)" in ends[-1], ends
    assert ends[-1].startswith("progress: look 2/2 production summaries 8/8 (100%)")
