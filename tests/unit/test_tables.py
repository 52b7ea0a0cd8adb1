"""The score tables' columns are declared once (hss_gate/signals/tables.py): what the pipeline
writes,
what the settings and the checks name, and the declarations agree."""

from __future__ import annotations

import csv
import json
from datetime import UTC, datetime
from pathlib import Path
from types import SimpleNamespace

import pytest

from hss_gate.common.cache import Cache
from hss_gate.decision import suites as expectations
from hss_gate.decision.paired_comparison import compare
from hss_gate.models.summarizers.base import FakeSummarizer
from hss_gate.monitoring.rules import live_summary_signals
from hss_gate.scoring.normalization import compute_normalization
from hss_gate.scoring.pipeline import ScoreResult, score_documents
from hss_gate.scoring.run_files import write_outputs
from hss_gate.settings import GateSettings, MonitorSettings, PerturbSettings
from hss_gate.signals import row_builders as table_rows
from hss_gate.signals import tables
from hss_gate.signals.summary_flags import FLAGS, LengthPolicy
from hss_gate.signals.tables import (
    DOCUMENT_COLUMNS,
    EDIT_COLUMNS,
    PERTURBATION_COLUMNS,
    SUMMARY_COLUMNS,
    names,
    written,
)
from tests.conftest import FakeChecker
from tests.unit.test_pipeline_fakes import DOCS, _settings, _toolkit

pytestmark = pytest.mark.unit

PACKAGE = Path(tables.__file__).resolve().parents[1]


def _scored(tmp_path: Path, normalized: bool) -> ScoreResult:
    """A run with the fakes: summaries with an unsupported entity, edits, both tables."""
    settings, tools, cache = _settings(), _toolkit(), Cache(tmp_path / "cache")
    summarizer = FakeSummarizer(inject="Paris 1999.")
    if not normalized:
        return score_documents(DOCS, summarizer, settings, tools, cache, None)
    reference = score_documents(DOCS, summarizer, settings, tools, cache, None)
    norm = compute_normalization(
        ((r["category"], r["distance_aware"], r["distance_raw"]) for r in reference.perturbations),
        quantile=0.95,
        model="fake",
        settings_digest="x",
        created="now",
    )
    return score_documents(DOCS, summarizer, settings, tools, cache, norm)


def _differences(rows: list[dict], declared: tuple[str, ...]) -> list[str]:
    """What is wrong with each row's columns against the declared ones (empty: nothing)."""
    out = []
    for i, row in enumerate(rows):
        if tuple(row) != declared:
            extra, missing = set(row) - set(declared), set(declared) - set(row)
            out.append(
                f"row {i}: undeclared {sorted(extra)}, missing {sorted(missing)}"
                + ("" if extra or missing else ", in another order")
            )
    return out


@pytest.mark.parametrize("normalized", [False, True], ids=["reference-run", "normalized"])
def test_every_row_the_pipeline_writes_has_exactly_the_declared_columns(tmp_path, normalized):
    result = _scored(tmp_path, normalized)
    produced = {
        "documents": (result.documents, DOCUMENT_COLUMNS),
        "perturbations": (result.perturbations, PERTURBATION_COLUMNS),
        "summaries": (result.summaries, SUMMARY_COLUMNS),
        "edits": (result.edits, EDIT_COLUMNS),
    }
    for table, (rows, columns) in produced.items():
        assert rows, table  # the run wrote rows: the check below cannot pass on nothing
        assert _differences(rows, names(written(columns, normalized))) == [], table
    # and the files carry them in that order
    meta = {"model": "fake", "settings": _settings().model_dump(mode="json")}
    write_outputs(tmp_path / "out", result, meta)
    for table in ("documents", "perturbations"):
        with (tmp_path / "out" / f"{table}.csv").open(encoding="utf-8", newline="") as handle:
            header = tuple(next(csv.reader(handle)))
        assert header == names(written(tables.TABLES[table], normalized)), table
    for table in ("summaries", "edits"):
        lines = (tmp_path / "out" / f"{table}.jsonl").read_text(encoding="utf-8").splitlines()
        declared = names(written(tables.TABLES[table], normalized))
        assert {tuple(json.loads(line)) for line in lines} == {declared}, table
    summary = json.loads((tmp_path / "out" / "summary.json").read_text(encoding="utf-8"))
    assert summary["schema_version"] == tables.SCHEMA_VERSION


# The columns each setting that names one reads (the gate's suites, expectations.py, and the
# monitor). A threshold setting not listed here fails the test: say which column it reads.
SETTING_COLUMNS: dict[str, list[str]] = {
    "gate.margin": ["hss"],
    "gate.max_mean_hss": ["hss"],
    "gate.max_p95_hss": ["hss"],
    "gate.severity_level": ["hss"],
    "gate.max_share_above": ["hss"],
    "gate.category_margin": ["hss"],
    "gate.max_unsupported_share": ["base_unsupported_share"],
    "gate.unsupported_margin": ["base_unsupported_share"],
    "gate.max_truncated_share": ["base_truncated"],
    "gate.max_attribution_instability": ["attribution_instability"],
    "gate.consistency_margin": ["base_mean_support"],
    "gate.max_low_consistency_share": ["base_low_consistency"],
    "gate.max_not_summary_share": [f"base_{flag}" for flag in FLAGS],
    # the share of the corpus dropped from the pairing of stored summaries (decision.json's
    # metrics.pairing, hss_gate/workflows/gate.py): no score column
    "gate.max_dropped_share": [],
    "monitor.margin": ["hss"],
    # the served-summary table (live_*, hss_gate/monitoring/rules.py) is not a score table
    "monitor.served_margin": [],
    "monitor.served_unsupported_margin": [],
    "monitor.max_current_window": [],  # a count of samples, not a column's threshold
}


def _is_threshold(name: str) -> bool:
    return name.startswith("max_") or name.endswith(("_margin", "_level")) or name == "margin"


def _producer_exists(producer: str) -> bool:
    """A producer is a module path under hss_gate/ (`text.corpus`, `signals`)."""
    path = PACKAGE.joinpath(*producer.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def _check_column(name: str) -> str | None:
    """Why `name` is not a documents column something produces (None: it is)."""
    declared = {c.name: c for c in DOCUMENT_COLUMNS}
    if name not in declared:
        return f"{name}: not a declared documents column"
    column = declared[name]
    if column.optional and not _producer_exists(column.producer):
        return f"{name}: optional, and its producer {column.producer!r} is no module"
    return None


def test_every_setting_that_names_a_column_names_one_something_produces():
    thresholds = [f"gate.{n}" for n in GateSettings.model_fields if _is_threshold(n)] + [
        f"monitor.{n}" for n in MonitorSettings.model_fields if _is_threshold(n)
    ]
    assert "gate.max_attribution_instability" in thresholds  # the discovery finds them
    assert sorted(set(thresholds) - set(SETTING_COLUMNS)) == []  # each one is mapped below
    problems = [
        f"{setting} -> {why}"
        for setting, columns in SETTING_COLUMNS.items()
        for why in map(_check_column, columns)
        if why
    ]
    # monitor.drift_columns: documents columns, or the per-band mean distances the drift
    # check adds from the perturbations table (baseline.with_strength_distances)
    bands = {f"distance_{s}" for s in PerturbSettings().strengths}
    problems += [
        f"monitor.drift_columns -> {why}"
        for name in MonitorSettings().drift_columns
        if name not in bands and (why := _check_column(name))
    ]
    assert problems == []


def test_optional_columns_are_declared_with_a_producer():
    assert tables.OPTIONAL_COLUMNS == ("attribution_instability",)
    for column in (c for cols in tables.TABLES.values() for c in cols):
        assert _producer_exists(column.producer), (column.name, column.producer)


def test_the_columns_the_checks_require_are_declared():
    """expectations.py's column ranges name declared columns (of the same kind)."""
    declared = {c.name: c for c in DOCUMENT_COLUMNS}
    for name in expectations.DOCUMENT_RULES:
        assert name in declared and not declared[name].optional, name
    for name in expectations.OPTIONAL_DOCUMENT_RULES:
        assert name in declared and declared[name].optional, name
    assert set(expectations.PERTURBATION_RULES) <= set(names(PERTURBATION_COLUMNS))
    bools = {c.name for c in (*DOCUMENT_COLUMNS, *PERTURBATION_COLUMNS) if c.dtype == "bool"}
    checked = {**expectations.DOCUMENT_RULES, **expectations.PERTURBATION_RULES}
    assert {n for n, kind in checked.items() if kind == "bool"} <= bools


def test_the_tables_the_checks_read_beside_the_score_tables_are_the_declared_ones(tmp_path):
    """The gate's categories rows (gate.compare) and the monitor's served rows
    (monitor.live_summary_signals) have exactly the columns tables.py declares for them."""
    documents = _scored(tmp_path, normalized=True).documents
    categories = compare(documents, documents, resamples=100)["categories"]
    assert categories and {tuple(row) for row in categories} == {names(tables.CATEGORY_COLUMNS)}
    sample = SimpleNamespace(
        sample_id="s1",
        document=DOCS[0].text,
        summary="A short summary.",
        model_id="m",
        timestamp=datetime(2026, 1, 1, tzinfo=UTC),
    )
    verdicts = FakeChecker().check([(sample.document, sample.summary)])
    served = live_summary_signals([sample], [[]], verdicts, 3, LengthPolicy(60, 0.1, 3.0, 0.8), 0.5)
    assert tuple(served[0]) == names(tables.SERVED_COLUMNS)
    for checked, columns in (
        (tables.CHECKED_DOCUMENT_COLUMNS, DOCUMENT_COLUMNS),
        (tables.CHECKED_PERTURBATION_COLUMNS, PERTURBATION_COLUMNS),
        (tables.CHECKED_CATEGORY_COLUMNS, tables.CATEGORY_COLUMNS),
        (tables.CHECKED_SERVED_COLUMNS, tables.SERVED_COLUMNS),
    ):
        assert set(checked) <= set(names(columns)), set(checked) - set(names(columns))


def test_a_row_builder_refuses_a_row_that_is_not_the_declared_one():
    base = dict.fromkeys(names(tables.SIGNAL_COLUMNS), 0)
    with pytest.raises(ValueError, match=r"missing \['consistency'\]"):
        table_rows.document_row(
            doc_id="a",
            category="news",
            tier="t",
            normalized=None,
            mean_distance=0.0,
            mean_distance_aware=0.0,
            mean_distance_raw=0.0,
            n_perturbations=1,
            base={k: v for k, v in base.items() if k != "consistency"},
            consistency_drop_mean=0.0,
        )
