"""`make test` ends with a line naming every skipped tier and why, and the command that runs them
as CI does; under CI=true a skipped server tier fails the run (tests/conftest.py's
pytest_sessionfinish, tests/skipped_tiers.py). The hook runs in a pytest subprocess on a tiny
test file."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.skipped_tiers import CI_COMMAND, ci_failures, group, reason_of, summary_line

pytestmark = pytest.mark.unit

TINY = """
import pytest

def test_runs():
    assert True

def test_postgres():
    pytest.skip("HSS_TEST_POSTGRES_URL is not set (.ci/run starts a throwaway PostgreSQL)")

@pytest.mark.parametrize("n", [1, 2])
def test_browser(n):
    pytest.skip("/usr/bin/chromium is not installed (apt-get install chromium)")

@pytest.mark.skipif(True, reason="../shared/data/external is not present")
def test_external():
    pass

def test_odd():
    pytest.skip("a reason no tier claims")
"""
EXTERNAL_ONLY = """
import pytest

@pytest.mark.skipif(True, reason="../shared/data/external is not present")
def test_external():
    pass

def test_runs():
    assert True
"""


def _pytest(folder: Path, tests: str, ci: bool) -> subprocess.CompletedProcess[str]:
    """pytest on `tests` in `folder`, with the project's hook (its conftest imports it)."""
    (folder / "conftest.py").write_text("from tests.conftest import pytest_sessionfinish\n")
    (folder / "test_tiny.py").write_text(tests)
    env = {k: v for k, v in os.environ.items() if k not in ("CI", "PYTEST_ADDOPTS")}
    env |= {"PYTHONPATH": str(REPO), "NO_COLOR": "1"} | ({"CI": "true"} if ci else {})
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(folder)],
        capture_output=True,
        text=True,
        cwd=folder,
        env=env,
        timeout=300,
    )


def test_the_run_ends_with_the_skipped_tiers_and_the_command_that_runs_them(tmp_path):
    done = _pytest(tmp_path, TINY, ci=False)
    assert done.returncode == 0, done.stdout + done.stderr
    last = done.stdout.strip().splitlines()[-1]
    assert last.startswith("not run here: PostgreSQL (1 test: HSS_TEST_POSTGRES_URL is not set")
    assert "Chromium (2 tests: /usr/bin/chromium is not installed" in last
    assert "the external data (1 test: ../shared/data/external is not present)" in last
    assert "other (1 test: a reason no tier claims)" in last
    assert f"`{CI_COMMAND}` runs PostgreSQL, Chromium as CI does." in last
    assert "CI does not run the external data either (set HSS_EXTERNAL_DATA" in last
    assert "1 passed, 5 skipped" in done.stdout  # pytest's own summary stays


def test_under_ci_a_skipped_server_tier_fails_the_run(tmp_path):
    done = _pytest(tmp_path, TINY, ci=True)
    assert done.returncode == pytest.ExitCode.TESTS_FAILED, done.stdout + done.stderr
    lines = done.stdout.strip().splitlines()
    assert lines[-2].startswith("CI: the PostgreSQL tier was skipped (1 test: ")
    assert lines[-1].startswith("CI: the Chromium tier was skipped (2 tests: ")
    assert "every server tier must run" in lines[-1]


def test_under_ci_a_skip_of_no_server_tier_passes(tmp_path):
    done = _pytest(tmp_path, EXTERNAL_ONLY, ci=True)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.strip().splitlines()[-1].startswith("not run here: the external data")


def test_the_tiers_of_the_projects_own_skip_reasons():
    reasons = [
        'HSS_TEST_POSTGRES_URL is not set: no PostgreSQL server to test against (start one with `eval "$(scripts/postgres.sh start)"`; .ci/run does this)',  # noqa: E501
        "/usr/bin/chromium is not installed (apt-get install chromium; .ci/run installs it)",
        "shellcheck not installed",
        "frank_cnndm is not on this machine",
        "/x/qags.jsonl not present (set HSS_EXTERNAL_DATA)",
        "embedded models not installed: ['glove-6b-50d'] (run `hss models install`)",
        "prefect server not healthy after 120 s: log\nmore log",
        "llama.cpp server did not start: no port",
        "dask scheduler did not start within 60 s:\nlog",
    ]
    names = [s.name for s in group(reasons)]
    assert names == [
        "PostgreSQL",
        "Chromium",
        "llama.cpp server",
        "Prefect server",
        "Dask cluster",
        "shellcheck",
        "the external data",
        "the embedded models",
    ]
    (prefect,) = [s for s in group(reasons) if s.name == "Prefect server"]
    assert prefect.why == "prefect server not healthy after 120 s: log"  # its first line
    servers = ci_failures(group(reasons), {"CI": "true"})
    assert len(servers) == 5 and ci_failures(group(reasons), {}) == []
    assert summary_line([]) == "every tier ran: nothing was skipped"
    assert reason_of(("t.py", 3, "Skipped: why")) == "why"
