"""Great Expectations suites from the gate thresholds: spec builders (pure) and run_suites (GX)."""

from __future__ import annotations

import contextlib
import io
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from hss_gate.decision.checks import FACTS_BOUNDS
from hss_gate.decision.paired_comparison import one_sample_bound_intervals
from hss_gate.decision.suites import (
    CheckResult,
    ExpectationSpec,
    gate_expectations,
    monitor_expectations,
    run_suites,
)
from hss_gate.settings import GateSettings

pytestmark = pytest.mark.unit

CATS = ["business", "science", "sport"]
N = 20
STRENGTHS = ["low", "high"]
PER_STRENGTH = 2
GATE = GateSettings()  # max_mean 0.70, p95 0.99, severity 0.9 / 25%, category 0.15, ...


def clean_documents(n: int = N) -> pd.DataFrame:
    hss = np.linspace(0.3, 0.6, n)  # mean 0.45, p95 0.585, none above 0.9
    return pd.DataFrame(
        {
            "doc_id": [f"doc-{i:02d}" for i in range(n)],
            "category": [CATS[i % len(CATS)] for i in range(n)],
            "tier": "simple",
            "hss": hss,
            "hss_aware": hss,
            "hss_raw": np.clip(hss + 0.05, 0, 1),
            "mean_distance": hss / 4,
            "mean_distance_aware": hss / 4,
            "mean_distance_raw": hss / 3,
            "n_perturbations": len(STRENGTHS) * PER_STRENGTH,
            "base_unsupported_share": 0.01,
            "base_novel_ngram_share": 0.3,
            "base_truncated": [i % 4 == 0 for i in range(n)],  # 25% <= 50%
            "base_empty": False,
            "base_n_words": 55,
            "base_n_sentences": 3,
            "base_consistency": 0.9,
            "base_low_consistency": [i % 10 == 0 for i in range(n)],  # 10% <= 33%
            "base_near_empty": False,
            "base_copies_source": False,
            "base_overlong": False,
            "base_other_language": False,
        }
    )


def clean_tables() -> dict[str, pd.DataFrame]:
    docs = clean_documents()
    perturbations = pd.DataFrame(
        [
            {
                "doc_id": d,
                "category": c,
                "strength": s,
                "index": k,
                "distance": 0.1,
                "distance_aware": 0.1,
                "distance_raw": 0.12,
                "share": 0.1 if s == "low" else 0.3,
                "n_edits": 4,
                "reached": True,
            }
            for d, c in zip(docs["doc_id"], docs["category"], strict=True)
            for s in STRENGTHS
            for k in range(PER_STRENGTH)
        ]
    )
    categories = pd.DataFrame(
        {
            "category": CATS,
            "candidate_hss": [0.45, 0.46, 0.44],
            "production_hss": [0.40, 0.40, 0.45],
            "delta": [0.05, 0.06, -0.01],
            "n": [7, 7, 6],
        }
    )
    return {"perturbations": perturbations, "categories": categories} | document_tables(docs)


def document_tables(docs: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """The documents table and the one-sample intervals of its facts bounds (as the monitor
    builds them)."""
    bounds = one_sample_bound_intervals(docs.to_dict("records"), 0.95)
    return {"documents": docs, FACTS_BOUNDS: pd.DataFrame(bounds)}


def specs_for(gate: GateSettings = GATE, **kw) -> list[ExpectationSpec]:
    args = {"categories": CATS, "n_documents": N, "n_perturbations": N * 4}
    args.update(kw)
    return gate_expectations(gate, **args)


def failed(results: list[CheckResult]) -> set[tuple[str, str]]:
    return {(r.table, r.name) for r in results if not r.success}


def run_documents(docs: pd.DataFrame, specs: list[ExpectationSpec] | None = None):
    """Validate the documents table and its facts bounds against their specs only."""
    specs = [s for s in (specs or specs_for()) if s.table in ("documents", FACTS_BOUNDS)]
    results = run_suites(document_tables(docs), specs)
    assert len(results) == len(specs)
    return results


def run_table(table: str, df: pd.DataFrame, specs: list[ExpectationSpec] | None = None):
    """Validate one table against its specs only (tables are validated independently)."""
    specs = [s for s in (specs or specs_for()) if s.table == table]
    results = run_suites({table: df}, specs)
    assert len(results) == len(specs)
    return results


# ---------------------------------------------------------------------------------------------
# pure spec builders
# ---------------------------------------------------------------------------------------------


def test_spec_builders_do_not_import_great_expectations():
    code = (
        "import sys\n"
        "from hss_gate.decision.suites import gate_expectations, monitor_expectations\n"
        "from hss_gate.settings import GateSettings\n"
        "g = GateSettings()\n"
        "gate_expectations(g, categories=['a'], n_documents=1, n_perturbations=1)\n"
        "monitor_expectations(g, n_documents=1)\n"
        "assert 'great_expectations' not in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


def test_severity_specs_carry_the_thresholds():
    gate = GateSettings(
        max_mean_hss=0.61,
        max_p95_hss=0.93,
        severity_level=0.8,
        max_share_above=0.3,
        category_margin=0.12,
        max_unsupported_share=0.04,
        max_truncated_share=0.4,
        max_low_consistency_share=0.35,
        max_not_summary_share=0.1,
    )
    specs = specs_for(gate)
    by_name = {s.name: s for s in specs if s.kind != "data"}
    kinds = {s.name: s.kind for s in specs}
    assert {kinds["mean_hss"], kinds["p95_hss"], kinds["share_above_severity"]} == {"hss"}
    assert kinds["category_delta[business]"] == "hss"
    assert {kinds["mean_unsupported_share"], kinds["low_consistency_share"]} == {"facts"}
    assert kinds["truncated_share"] == "output"
    not_summary = [s for s in specs if s.kind == "summarizes"]
    assert {s.kwargs["column"] for s in not_summary} == {
        "base_near_empty",
        "base_copies_source",
        "base_overlong",
        "base_other_language",
    }
    assert all(s.kwargs["max_value"] == 0.1 for s in not_summary)
    for name, high in (("low_consistency_share", 0.35), ("mean_unsupported_share", 0.04)):
        facts = by_name[name]  # held on the lower end of the bound's interval, not on a mean
        assert facts.table == "facts_bounds"
        assert facts.expectation == "ExpectColumnMaxToBeBetween"
        assert facts.kwargs["column"] == "ci_low" and facts.kwargs["max_value"] == high
        assert facts.kwargs["row_condition"]["parameter"] == name
        assert "lower end of its interval" in facts.description
    assert by_name["mean_hss"].kwargs == {"column": "hss", "min_value": None, "max_value": 0.61}
    assert by_name["mean_hss"].description == "mean HSS <= 0.61"
    p95 = by_name["p95_hss"]
    assert p95.expectation == "ExpectColumnQuantileValuesToBeBetween"
    assert p95.kwargs["quantile_ranges"] == {"quantiles": [0.95], "value_ranges": [[None, 0.93]]}
    share = by_name["share_above_severity"]
    assert share.kwargs["max_value"] == 0.8
    assert share.kwargs["mostly"] == 0.7  # exactly, not 0.7000000000000001
    assert "30%" in share.description and "0.80" in share.description
    assert by_name["truncated_share"].kwargs["column"] == "base_truncated"
    assert by_name["truncated_share"].kwargs["max_value"] == 0.4
    deltas = [s for s in by_name.values() if s.name.startswith("category_delta")]
    assert [s.name for s in deltas] == [f"category_delta[{c}]" for c in CATS]
    assert all(s.table == "categories" and s.kwargs["max_value"] == 0.12 for s in deltas)
    assert "0.12" in deltas[0].description


def test_data_specs_cover_every_table():
    specs = specs_for()
    names = {(s.table, s.name) for s in specs if s.kind == "data"}
    for expected in [
        ("documents", "hss_exists"),
        ("documents", "hss_not_null"),
        ("documents", "hss_range"),
        ("documents", "base_truncated_bool"),
        ("documents", "doc_id_unique"),
        ("documents", "categories_present"),
        ("documents", "row_count"),
        ("perturbations", "distance_range"),
        ("perturbations", "row_count"),
        ("categories", "categories_present"),
        ("categories", "row_count"),
    ]:
        assert expected in names
    counts = {s.table: s.kwargs["value"] for s in specs if s.name == "row_count"}
    assert counts == {"documents": N, "perturbations": N * 4, "categories": len(CATS)}
    assert len({(s.table, s.name) for s in specs}) == len(specs)  # stable, unique ids
    json.dumps([s.kwargs for s in specs])  # plain data


def test_optional_columns_add_checks_only_when_present_and_configured():
    plain = {s.name for s in specs_for()}
    assert not any("attribution" in n for n in plain)
    unset = {s.name for s in specs_for(optional_columns=["attribution_instability"])}
    assert "attribution_instability_range" in unset
    assert "mean_attribution_instability" not in unset
    gate = GateSettings(max_attribution_instability=0.3)
    both = {s.name: s for s in specs_for(gate, optional_columns=["attribution_instability"])}
    assert both["mean_attribution_instability"].kwargs["max_value"] == 0.3
    assert both["mean_attribution_instability"].kind == "attribution"  # blocks when declared
    with pytest.raises(ValueError):
        specs_for(optional_columns=["made_up"])


def test_monitor_specs_are_documents_and_facts_bounds_without_category_checks():
    specs = monitor_expectations(GATE, n_documents=7)
    assert {s.table for s in specs} == {"documents", FACTS_BOUNDS}
    assert {s.name for s in specs if s.table == FACTS_BOUNDS} == {
        "mean_unsupported_share",
        "low_consistency_share",
    }
    names = {s.name for s in specs}
    assert {"mean_hss", "p95_hss", "share_above_severity", "truncated_share"} <= names
    assert "categories_present" not in names and "category_exists" not in names
    assert not any(n.startswith("category_delta") for n in names)
    assert next(s for s in specs if s.name == "row_count").kwargs["value"] == 7


# ---------------------------------------------------------------------------------------------
# run_suites
# ---------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def clean_run(tmp_path_factory):
    """One full run on clean tables, with Data Docs, from an empty cwd, with sockets watched."""
    workdir = tmp_path_factory.mktemp("cwd")
    docs_dir = tmp_path_factory.mktemp("out") / "data_docs"
    docs_dir.mkdir()  # run_suites builds the site into a folder it is given
    connects: list = []
    real_connect = socket.socket.connect

    def spy(self, address):
        connects.append(address)
        return real_connect(self, address)

    out, err = io.StringIO(), io.StringIO()
    old_cwd = os.getcwd()
    mp = pytest.MonkeyPatch()
    mp.setattr(socket.socket, "connect", spy)
    try:
        os.chdir(workdir)
        import great_expectations  # noqa: F401  (import time is not what is measured)

        start = time.perf_counter()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            results = run_suites(clean_tables(), specs_for(), docs_dir=docs_dir)
        seconds = time.perf_counter() - start
    finally:
        os.chdir(old_cwd)
        mp.undo()
    return {
        "results": results,
        "docs_dir": docs_dir,
        "cwd_after": sorted(p.name for p in workdir.iterdir()),
        "connects": connects,
        "stdout": out.getvalue(),
        "stderr": err.getvalue(),
        "seconds": seconds,
    }


def test_clean_tables_pass_every_check(clean_run):
    results = clean_run["results"]
    specs = specs_for()
    assert [(r.table, r.name) for r in results] == [(s.table, s.name) for s in specs]
    assert failed(results) == set()
    by_name = {(r.table, r.name): r for r in results}
    assert by_name["documents", "mean_hss"].observed == pytest.approx(0.45)
    assert by_name["documents", "p95_hss"].observed == pytest.approx(
        np.quantile(clean_documents()["hss"], 0.95)
    )
    assert by_name["documents", "truncated_share"].observed == pytest.approx(0.25)
    assert by_name["documents", "row_count"].observed == N
    assert by_name["categories", "category_delta[science]"].observed == pytest.approx(0.06)
    json.dumps([r.to_dict() for r in results])


def test_run_is_quiet_offline_and_leaves_the_cwd_alone(clean_run):
    assert clean_run["connects"] == []
    assert clean_run["cwd_after"] == []  # no gx/ or great_expectations/ directory
    assert "Calculating Metrics" not in clean_run["stderr"] + clean_run["stdout"]
    assert clean_run["stdout"] == ""


def test_data_docs_are_built_into_docs_dir(clean_run):
    docs_dir: Path = clean_run["docs_dir"]
    index = docs_dir / "index.html"
    assert index.is_file()
    html = index.read_text()
    for table in ("documents", "perturbations", "categories"):
        assert f"hss_gate.{table}" in html


def test_the_workflow_replaces_the_docs_dir_whole(tmp_path):
    from hss_gate.workflows.shared import validate_tables

    docs_dir = tmp_path / "docs"
    docs_dir.mkdir()
    (docs_dir / "stale.html").write_text("old")
    tables = {"categories": clean_tables()["categories"]}
    specs = [s for s in specs_for() if s.table == "categories"]
    results = validate_tables(tables, specs, docs_dir)
    assert [r for r in results if not r["success"]] == []
    assert (docs_dir / "index.html").is_file()
    assert not (docs_dir / "stale.html").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["docs"]  # temp build dirs cleaned up


KINDS = {
    "mean_hss": "hss",
    "p95_hss": "hss",
    "share_above_severity": "hss",
    "mean_unsupported_share": "facts",
    "low_consistency_share": "facts",
    "truncated_share": "output",
    "near_empty_share": "summarizes",
    "copies_source_share": "summarizes",
}


@pytest.mark.parametrize(
    ("case", "expected"),
    [
        ("mean", "mean_hss"),
        ("p95", "p95_hss"),
        ("share_above", "share_above_severity"),
        ("unsupported", "mean_unsupported_share"),
        ("truncated", "truncated_share"),
        ("low_consistency", "low_consistency_share"),
        ("near_empty", "near_empty_share"),
        ("copies_source", "copies_source_share"),
    ],
)
def test_each_document_threshold_fails_alone(case, expected):
    docs = clean_documents()
    if case == "mean":
        docs["hss"] = np.linspace(0.72, 0.85, N)  # mean 0.785; p95 < 0.99; none above 0.9
    elif case == "p95":
        docs.loc[[0, 1], "hss"] = 1.0  # p95 = 1.0 > 0.99; mean 0.5; 10% above 0.9
    elif case == "share_above":
        docs.loc[:5, "hss"] = 0.95  # 30% above 0.9 > 25%; p95 0.95; mean 0.5
    elif case == "unsupported":
        docs["base_unsupported_share"] = 0.08
    elif case == "truncated":
        docs["base_truncated"] = [i < 12 for i in range(N)]  # 60% > 50%
    elif case == "low_consistency":
        docs["base_low_consistency"] = [i < 14 for i in range(N)]  # 70% > 33%
    elif case == "near_empty":
        docs["base_near_empty"] = [i < 5 for i in range(N)]  # 25% > 20%
    elif case == "copies_source":
        docs["base_copies_source"] = True
    results = run_documents(docs)
    table = FACTS_BOUNDS if KINDS[expected] == "facts" else "documents"
    assert failed(results) == {(table, expected)}
    bad = next(r for r in results if not r.success)
    assert bad.kind == KINDS[expected]
    if case == "share_above":
        assert bad.observed == pytest.approx(0.30)  # GX's unexpected percent, as a share
        assert sorted(bad.unexpected) == [0.95] * 6


def test_share_exactly_at_the_ceiling_passes():
    docs = clean_documents()
    docs.loc[:5, "hss"] = 0.95  # 6/20 = 30%, exactly max_share_above
    results = run_table("documents", docs, specs_for(GateSettings(max_share_above=0.3)))
    assert failed(results) == set()


def test_a_category_delta_above_the_margin_fails_only_that_category():
    categories = clean_tables()["categories"]
    categories.loc[1, ["candidate_hss", "delta"]] = [0.62, 0.22]
    results = run_table("categories", categories)
    assert failed(results) == {("categories", "category_delta[science]")}
    bad = next(r for r in results if not r.success)
    assert bad.observed == pytest.approx(0.22)


def test_a_missing_category_row_fails_closed():
    categories = clean_tables()["categories"].iloc[[0, 2]]
    results = run_table("categories", categories)
    assert failed(results) == {
        ("categories", "categories_present"),
        ("categories", "row_count"),
        ("categories", "category_delta[science]"),
    }
    present = next(r for r in results if r.name == "categories_present")
    assert present.observed == {"missing": ["science"]}


@pytest.mark.parametrize(
    ("case", "expected"),
    [
        ("null_hss", "hss_not_null"),
        ("hss_too_high", "hss_range"),
        ("missing_category", "categories_present"),
        ("duplicate_doc_id", "doc_id_unique"),
        ("bad_bool", "base_empty_bool"),
    ],
)
def test_data_quality_problems_are_caught(case, expected):
    docs = clean_documents()
    if case == "null_hss":
        docs.loc[3, "hss"] = np.nan
    elif case == "hss_too_high":
        docs.loc[3, "hss"] = 1.3
    elif case == "missing_category":
        docs.loc[docs["category"] == "sport", "category"] = "business"
    elif case == "duplicate_doc_id":
        docs.loc[1, "doc_id"] = docs.loc[0, "doc_id"]
    elif case == "bad_bool":
        docs["base_empty"] = 0.0
        docs.loc[2, "base_empty"] = 2.0
    results = run_documents(docs)
    assert failed(results) == {("documents", expected)}
    bad = next(r for r in results if not r.success)
    assert bad.kind == "data"
    if case == "missing_category":
        assert bad.observed == {"missing": ["sport"]}
    if case == "duplicate_doc_id":
        assert bad.unexpected == ["doc-00", "doc-00"]
    if case == "hss_too_high":
        assert bad.unexpected == [1.3]


def test_wrong_row_counts_fail():
    tables = clean_tables()
    specs = specs_for(n_documents=N + 1)
    docs_results = run_table("documents", tables["documents"], specs)
    assert failed(docs_results) == {("documents", "row_count")}
    assert next(r for r in docs_results if r.name == "row_count").observed == N
    pert_results = run_table("perturbations", tables["perturbations"].iloc[1:])
    assert failed(pert_results) == {("perturbations", "row_count")}


def test_a_missing_column_gives_failed_checks_not_an_exception():
    docs = clean_documents().drop(columns=["base_truncated"])
    results = run_table("documents", docs)
    assert failed(results) == {
        ("documents", "base_truncated_exists"),
        ("documents", "base_truncated_not_null"),
        ("documents", "base_truncated_bool"),
        ("documents", "truncated_share"),
    }
    for r in results:
        if not r.success:
            assert "base_truncated" in r.observed and "missing" in r.observed


def test_missing_tables_and_bad_specs_fail_closed():
    docs = clean_documents()
    bogus = [
        ExpectationSpec("documents", "data", "bogus", "ExpectNothingAtAll", {}, "bogus"),
        ExpectationSpec(
            "documents", "data", "bad_kwargs", "ExpectColumnMeanToBeBetween", {"col": "x"}, "bad"
        ),
    ]
    specs = specs_for() + bogus
    results = run_suites({"documents": docs}, specs)
    assert [(r.table, r.name) for r in results] == [(s.table, s.name) for s in specs]
    not_provided = {(s.table, s.name) for s in specs if s.table != "documents"}
    assert failed(results) == not_provided | {("documents", "bogus"), ("documents", "bad_kwargs")}
    by_name = {(r.table, r.name): r for r in results}
    assert "not provided" in by_name["categories", "category_delta[sport]"].observed
    assert "unknown GX expectation" in by_name["documents", "bogus"].observed
    assert "invalid expectation" in by_name["documents", "bad_kwargs"].observed


def test_optional_column_thresholds_are_enforced():
    gate = GateSettings(max_attribution_instability=0.3)
    optional = ["attribution_instability"]
    docs = clean_documents()
    docs["attribution_instability"] = 0.4  # mean 0.4 > 0.3
    results = run_table("documents", docs, specs_for(gate, optional_columns=optional))
    assert failed(results) == {("documents", "mean_attribution_instability")}


def test_monitor_suite_passes_live_rows_without_category_and_fails_severity():
    docs = clean_documents(8).drop(columns=["category", "tier"])
    specs = monitor_expectations(GATE, n_documents=8)
    assert failed(run_suites(document_tables(docs), specs)) == set()
    docs["hss"] = 0.8
    assert failed(run_suites(document_tables(docs), specs)) == {("documents", "mean_hss")}
    docs["base_unsupported_share"] = 0.08  # every sample above the 0.05 ceiling
    assert ("facts_bounds", "mean_unsupported_share") in failed(
        run_suites(document_tables(docs), specs)
    )


def test_duplicate_specs_each_get_a_result():
    """GX's suite treats equal expectations as one; every spec must still be answered."""
    spec = next(s for s in specs_for() if s.name == "mean_hss")
    twin = ExpectationSpec(**{**spec.__dict__, "name": "mean_hss_again"})
    results = run_suites({"documents": clean_documents()}, [spec, twin, spec])
    assert [r.name for r in results] == ["mean_hss", "mean_hss_again", "mean_hss"]
    assert all(r.success for r in results)
    assert len({r.observed for r in results}) == 1


def test_a_facts_share_above_its_ceiling_blocks_only_when_its_interval_is_above():
    """The point estimate alone never fails a facts bound: 8 of 20 unsupported (0.40 over the
    0.29 ceiling) is within noise; 14 of 20 is above it with confidence."""
    gate = GateSettings(max_low_consistency_share=0.29)
    specs = specs_for(gate)
    docs = clean_documents()
    docs["base_low_consistency"] = [i < 8 for i in range(N)]
    assert failed(run_documents(docs, specs)) == set()
    low = document_tables(docs)[FACTS_BOUNDS].set_index("bound").loc["low_consistency_share"]
    assert low["estimate"] == pytest.approx(0.40) and low["ci_low"] < 0.29 < low["estimate"]
    docs["base_low_consistency"] = [i < 14 for i in range(N)]
    assert failed(run_documents(docs, specs)) == {(FACTS_BOUNDS, "low_consistency_share")}
