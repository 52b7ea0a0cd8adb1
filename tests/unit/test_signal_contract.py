"""The signal contract (issue 36, step 1): every registered signal's declarations name real
columns and settings, and the workflows name no signal column themselves: they iterate over
the registry (hss_gate.signals). The rules and renderers still name some: their count
per module may only fall."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from hss_gate import signals as summary_signals
from hss_gate.decision.checks import severity_checks
from hss_gate.settings import GateSettings
from hss_gate.signals import tables

pytestmark = pytest.mark.unit

PACKAGE = Path(__file__).resolve().parents[2] / "hss_gate"
SIGNAL_FIELDS = {c.name for c in tables.SIGNAL_COLUMNS}
DOCUMENT_FIELDS = set(tables.names(tables.DOCUMENT_COLUMNS))
PREFIXES = ("base_", "summary_", "live_")
SIGNAL_ONLY = {"hss_raw", "hss_aware", "consistency_drop_mean", "attribution_instability"}
"""Documents columns that are signals without a prefix (`hss` itself is also the name of the
signal, a check kind and a finding signal: not told apart here)."""

# how many signal column names the modules outside hss_gate/signals/ (the one table module and
# the signals' own declarations) still write as string literals, all modules counted: the
# number may only fall (2026-12-06: 94, most in scoring/pipeline.py and monitoring/rules.py).
# One sum over every module, so that a module that moves or is renamed keeps its count.
STILL_NAMED = 94
DECLARING = PACKAGE / "signals"


def _signal_column(text: str) -> bool:
    if text in SIGNAL_ONLY:
        return True
    return any(text.startswith(p) and text[len(p) :] in SIGNAL_FIELDS for p in PREFIXES)


def _named_columns(path: Path) -> list[str]:
    """String constants of a module that are signal columns (docstrings are prose: skipped)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef)
        and node.body
        and isinstance(node.body[0], ast.Expr)
    }
    return [
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and id(node) not in docstrings
        and _signal_column(node.value)
    ]


def test_the_check_sees_a_column_name():
    assert _signal_column("base_consistency") and _signal_column("live_n_words")
    assert not _signal_column("consistency") and not _signal_column("doc_id")


def test_the_workflows_name_no_signal_column():
    named = {
        str(path.relative_to(PACKAGE)): found
        for path in sorted((PACKAGE / "workflows").glob("*.py"))
        if (found := _named_columns(path))
    }
    assert named == {}


def test_the_decision_rule_and_the_paired_comparison_name_no_signal_column():
    assert _named_columns(PACKAGE / "decision" / "rule.py") == []
    assert _named_columns(PACKAGE / "decision" / "paired_comparison.py") == []


def named_outside_the_signals() -> dict[str, int]:
    """Module (relative to hss_gate/) -> how many signal column literals it writes."""
    return {
        path.relative_to(PACKAGE).as_posix(): len(found)
        for path in sorted(PACKAGE.rglob("*.py"))
        if DECLARING not in path.parents and (found := _named_columns(path))
    }


def test_the_modules_outside_the_signals_name_no_more_columns_than_before():
    named = named_outside_the_signals()
    assert len(named) > 3  # every module read, not an empty glob
    assert sum(named.values()) <= STILL_NAMED, named


def test_every_declaration_names_a_real_column_or_setting():
    gate_fields = set(GateSettings.model_fields)
    for signal in summary_signals.REGISTERED:
        for paired in signal.paired:
            assert paired.column in DOCUMENT_FIELDS or paired.column.removeprefix("base_") in {
                c.name for c in signal.columns
            }, (signal.name, paired.column)
        for margin in signal.margins:
            assert margin.setting in gate_fields and (margin.switch or "") in {"", *gate_fields}
            assert margin.column in {p.column for p in signal.paired}, (signal.name, margin)
        for bound in signal.bounds:
            assert bound.setting in gate_fields and bound.column in DOCUMENT_FIELDS
        for column in signal.columns:
            assert column in tables.SIGNAL_COLUMNS, (signal.name, column.name)
        for window in signal.window:
            assert window.column.removeprefix("live_") in SIGNAL_FIELDS, window.column
        assert (signal.compute is None) == (signal.columns == ()), signal.name


def test_the_signals_have_unique_names_and_columns():
    names = [s.name for s in summary_signals.REGISTERED]
    columns = [p.column for p in summary_signals.paired()]
    assert len(set(names)) == len(names) and len(set(columns)) == len(columns)


def test_each_relative_bound_is_the_one_declaration_of_its_check():
    """The facts checks are built from the signals' `RelativeBound`s: change the setting and
    the check follows; no check of the same code is written by hand beside it."""
    gate = GateSettings(max_unsupported_share=0.123, max_low_consistency_share=0.456)
    checks = severity_checks(gate)
    for bound in summary_signals.relative_bounds():
        (check,) = [c for c in checks if c.code == bound.code]
        assert (check.name, check.where) == (bound.check, ("bound", bound.check))
        assert (check.table, check.column) == ("facts_bounds", "ci_low")
        assert check.high == getattr(gate, bound.setting)
        assert check.description.startswith(bound.text)
