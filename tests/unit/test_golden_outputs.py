"""The gate's and the monitor's outputs, byte for byte, on the fake toolkit (issue 36, step 0).

A refactor that changes no behaviour leaves every file here identical. The run's own clock and
identity are masked: timestamps written during the run, the monitor's run id and the output
folder's path. The pull-request comment is decision.md itself (.github/workflows/gate.yml posts
that file), so it is compared with it.

After a change that is meant to change an output, write the new files and review the diff:
    HSS_UPDATE_GOLDEN=1 .venv/bin/python -m pytest tests/unit/test_golden_outputs.py
"""

from __future__ import annotations

import json
import os
import re
import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from typer.testing import CliRunner

from hss_gate import cli as cli_module
from hss_gate.cli import app
from tests.conftest import REPO
from tests.integration.test_alerts_cli import _ingest
from tests.reliability.test_bad_input import _fake_toolkit

pytestmark = pytest.mark.unit

GOLDEN = REPO / "tests" / "golden"
GATE_FILES = ("decision.json", "decision.md", "decision.html", "junit.xml")
MONITOR_FILES = ("monitor.json", "monitor.md")
ISO = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:\d\d)?")


def _masked(text: str, out: Path, started: datetime, secrets: tuple[str, ...] = ()) -> str:
    """The run's folder, its own timestamps (at or after `started`) and ids replaced by marks."""
    text = text.replace(str(out), "<out>")
    for secret in secrets:
        text = text.replace(secret, "<run-id>")

    def stamp(match: re.Match[str]) -> str:
        value = datetime.fromisoformat(match.group(0).replace("Z", "+00:00"))
        value = value if value.tzinfo else value.replace(tzinfo=UTC)
        return "<now>" if value >= started else match.group(0)

    return ISO.sub(stamp, text)


def _compare(produced: Path, names: tuple[str, ...], golden: Path, **mask) -> None:
    update = os.environ.get("HSS_UPDATE_GOLDEN") == "1"
    for name in names:
        text = _masked((produced / name).read_text("utf-8"), **mask)
        if update:
            golden.mkdir(parents=True, exist_ok=True)
            (golden / name).write_text(text, "utf-8")
        assert (golden / name).exists(), f"no golden {name}: run with HSS_UPDATE_GOLDEN=1"
        expected = (golden / name).read_text("utf-8")
        assert text == expected, f"{name} differs from {golden / name}"


@pytest.fixture()
def fake_cli(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> CliRunner:
    monkeypatch.chdir(REPO)
    monkeypatch.setenv("HSS_RUN__CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("HSS_PERTURB__GAMMA", "0")  # the hashing embedder is no sentence model
    monkeypatch.setenv("HSS_SCORE__BOOTSTRAP_RESAMPLES", "100")
    for name in ("HSS_OPENAI_API_KEY", "HSS_OPENAI_MODEL", "HSS_DEBUG"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr("hss_gate.scoring.toolkit.real_toolkit", _fake_toolkit)
    for console in (cli_module.console, cli_module.out_console):
        monkeypatch.setattr(console, "_width", 1000)
    return CliRunner()


def test_the_gate_writes_the_same_decision_report_junit_and_comment(fake_cli, tmp_path):
    out, started = tmp_path / "gate", datetime.now(UTC) - timedelta(seconds=1)
    result = fake_cli.invoke(
        app,
        [
            *("gate", "--candidate", "fake:unstable", "--production", "extractive:lead-3"),
            *("--limit", "4", "-k", "1", "--out", str(out), "--junit", str(out / "junit.xml")),
        ],
    )
    assert result.exit_code == 1, result.output
    _compare(out, GATE_FILES, GOLDEN / "gate", out=out, started=started)


def test_the_served_monitor_writes_the_same_verdict_and_report(
    fake_cli, tmp_path, monkeypatch: pytest.MonkeyPatch
):
    reference = tmp_path / "production_scores.csv"
    shutil.copy(REPO / "data" / "baseline" / "production_scores.csv", reference)
    monkeypatch.setenv("HSS_MONITOR__REFERENCE", str(reference))
    monkeypatch.setenv("HSS_MONITOR__REFERENCE_WINDOW", "100")
    monkeypatch.setenv("HSS_MONITOR__SAMPLE_SIZE", "20")
    url, out = f"sqlite:///{tmp_path / 'store.sqlite'}", tmp_path / "monitor"
    _ingest(url, 0, 100, inventing=False)
    _ingest(url, 100, 20, inventing=True)
    started = datetime.now(UTC) - timedelta(seconds=1)
    result = fake_cli.invoke(app, ["monitor", "--served-only", "--samples", url, "--out", str(out)])
    assert result.exit_code == 1, result.output
    run_id = json.loads((out / "monitor.json").read_text())["run_id"]
    _compare(out, MONITOR_FILES, GOLDEN / "monitor", out=out, started=started, secrets=(run_id,))
