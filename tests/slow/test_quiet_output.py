"""What a newcomer sees in a log: the gate with the real default checker (entail), run as a
subprocess with pipes (as in CI or `| tee`), prints nothing a user would take for an error and
breaks no line inside a path (issue 45: transformers' "BertModel LOAD REPORT" with "pooler
UNEXPECTED" and raw ANSI codes; paths wrapped at 80 columns)."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from hss_gate.models import model_store
from tests.conftest import REPO

pytestmark = pytest.mark.slow

NOISE = re.compile(r"UNEXPECTED|LOAD REPORT|\x1b\[|Traceback|Warning:|Loading weights")


def test_the_gate_with_the_default_checker_is_quiet_and_unwrapped_in_a_pipe(tmp_path):
    needed = ("qwen2.5-coder-0.5b-instruct", "all-minilm-l6-v2", "en-core-web-sm")
    if not all(model_store.is_installed(model_store.resolve_name(n)) for n in needed):
        pytest.skip("the embedded models are not installed (hss models install)")
    out = tmp_path / ("a-folder-whose-name-is-long-enough-that-80-columns-would-break-it" * 2)
    env = {k: v for k, v in os.environ.items() if not k.startswith("HSS_") and k != "COLUMNS"}
    env |= {
        "PYTHONPATH": str(REPO),
        "HSS_RUN__CACHE_DIR": str(tmp_path / "cold-cache"),  # the checker really loads
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
    }
    done = subprocess.run(
        [
            *(sys.executable, "-m", "hss_gate", "gate", "--candidate", "extractive:lead-3"),
            *("--limit", "2", "--out", str(out)),
        ],
        capture_output=True,
        text=True,
        cwd=REPO,
        env=env,
        stdin=subprocess.DEVNULL,
        timeout=1200,
    )
    text = done.stderr + done.stdout
    assert done.returncode in (0, 1), text
    assert NOISE.findall(text) == [], text
    lines = text.splitlines()
    assert f"report: {out / 'decision.html'}" in lines
    assert any(line.endswith("documents from data/baseline/reference") for line in lines), text
    broken = [line for line in lines if "a-folder-whose" in line and str(out) not in line]
    assert broken == []
    assert any(f"wrote {out / 'decision.json'}, decision.md, decision.html" in x for x in lines)
