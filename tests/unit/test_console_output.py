"""Output to a pipe or a CI log is not wrapped: a long line, a wide table's cell and a progress
line each come out whole, so no path or number breaks across lines (issue 45: `make setup`
printed "consistency checker: " and the checker's fingerprint on a line of its own)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.conftest import REPO

pytestmark = pytest.mark.unit

PATH = "/" + "/".join(f"folder-{i:02d}-with-a-long-name" for i in range(8)) + "/decision.html"
FINGERPRINT = "entail:adapter=" + "0123456789abcdef" * 4 + ";top_k=2;chunk_words=120;mean"

SCRIPT = f"""
from hss_gate.cli.common import console, out_console, print_table, say
from hss_gate.common.progress import progress_reporter

say("consistency checker: {FINGERPRINT}")
console.print("[bold]report:[/] {PATH}", highlight=False)
print_table(("model", "path", "n"), [("qwen2.5-coder-0.5b-instruct", "{PATH}", "12345.678")])
out_console.print("unsupported entities/numbers: " + "0.000   rewriting: 0.820   " * 4)
with progress_reporter(console) as start:
    start("summarize {PATH}", 8, 0)(8)
"""


def _piped() -> subprocess.CompletedProcess[str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("COLUMNS", "FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE")
    }
    env["PYTHONPATH"] = str(REPO)
    return subprocess.run(
        [sys.executable, "-c", SCRIPT],
        capture_output=True,
        text=True,
        env=env,
        stdin=subprocess.DEVNULL,
        timeout=120,
        check=True,
    )


def test_long_lines_tables_and_progress_are_not_wrapped_in_a_pipe():
    done = _piped()
    err, out = done.stderr.splitlines(), done.stdout.splitlines()
    assert f"consistency checker: {FINGERPRINT}" in err
    assert f"report: {PATH}" in err
    assert any(line.startswith(f"progress: summarize {PATH} 8/8 (100%)") for line in err)
    (row,) = [line for line in out if "qwen2.5" in line]
    assert PATH in row and "12345.678" in row and "…" not in row
    (signals,) = [line for line in out if line.startswith("unsupported")]
    assert signals.rstrip().endswith("rewriting: 0.820")
    assert "\x1b[" not in done.stderr + done.stdout
    assert max(len(line) for line in err) > 200  # the lines really are longer than 80 columns
