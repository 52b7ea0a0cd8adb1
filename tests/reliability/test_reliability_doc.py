"""RELIABILITY.md names a test for every case: each named test must exist under tests/."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]


def _defined_tests() -> set[str]:
    names = set()
    for path in (ROOT / "tests").rglob("test_*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef) and node.name.startswith("test_"):
                names.add(node.name)
    return names


def test_every_case_in_reliability_md_names_an_existing_test() -> None:
    text = (ROOT / "RELIABILITY.md").read_text(encoding="utf-8")
    rows = [line for line in text.splitlines() if line.startswith("| ") and "---" not in line]
    cases = [row for row in rows if not row.startswith("| case")]
    assert len(cases) >= 25
    defined = _defined_tests()
    for row in cases:
        named = re.findall(r"`(?:\w+\.py::)?(test_\w+)(?:\[[^\]]*\])?`", row.rsplit("|", 2)[-2])
        assert named, f"a case without a test: {row[:80]}"
        missing = [name for name in named if name not in defined]
        assert not missing, f"RELIABILITY.md names missing tests {missing}: {row[:80]}"
