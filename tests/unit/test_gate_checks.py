"""The rules floor's checks (hss_gate.decision.checks) and the decision's coded findings."""

from __future__ import annotations

import json
from collections import Counter

import numpy as np
import pandas as pd
import pytest

from hss_gate.common.inputs import load_corpus
from hss_gate.decision.checks import CODES, category_checks
from hss_gate.decision.paired_comparison import bound_intervals, compare
from hss_gate.decision.record import FINDING_CODES, SCHEMA_VERSION, apply_override
from hss_gate.decision.reports import decision_html, decision_junit, decision_markdown
from hss_gate.decision.rule import check_blocks, decide
from hss_gate.decision.sequential import look_sizes, stratified_order
from hss_gate.decision.suites import (
    EXPECTATIONS,
    gate_expectations,
    monitor_expectations,
    run_suites,
)
from hss_gate.settings import GateSettings
from tests.conftest import CORPUS

pytestmark = pytest.mark.unit

GATE = GateSettings()


def _rows(hss, categories, *, unsupported=0.0, consistency=0.9):
    return [
        {
            "doc_id": f"d{i}",
            "category": categories[i],
            "hss": float(h),
            "hss_raw": float(h),
            "base_consistency": consistency,
            "base_mean_support": consistency,
            "base_low_consistency": False,
            "base_unsupported_share": unsupported,
            "base_novel_ngram_share": 0.3,
            "base_truncated": False,
            "base_n_words": 50,
        }
        for i, h in enumerate(hss)
    ]


def _failed(name, kind, code, table="documents", description="a bound", observed=1.0):
    return {
        "table": table,
        "kind": kind,
        "name": name,
        "code": code,
        "description": description,
        "success": False,
        "observed": observed,
    }


def test_every_declared_check_has_a_known_code_kind_and_expectation():
    specs = gate_expectations(
        GateSettings(max_attribution_instability=0.3),
        categories=["a", "b"],
        n_documents=10,
        n_perturbations=40,
        optional_columns=["attribution_instability"],
    ) + monitor_expectations(GATE, n_documents=3)
    assert {s.code for s in specs} == set(CODES)  # every code is used, none is unknown
    for spec in specs:
        kind, test = CODES[spec.code]
        assert spec.kind == kind and spec.expectation == EXPECTATIONS[test], spec.name
    codes_by_name = {s.name: s.code for s in specs}
    assert codes_by_name["low_consistency_share"] == "facts.low_consistency_share"
    assert codes_by_name["mean_hss"] == "hss.mean"
    assert codes_by_name["near_empty_share"] == "not_summarizing.near_empty_share"
    assert codes_by_name["hss_range"] == "data.range"


def test_which_checks_block_is_declared_with_them_and_follows_the_settings():
    def blocking(gate):
        specs = gate_expectations(gate, categories=["a"], n_documents=5, n_perturbations=5)
        return {s.name: s.blocking for s in specs}

    default = blocking(GATE)
    assert not default["mean_hss"] and not default["category_delta[a]"]  # HSS is reported
    assert not default["truncated_share"]  # so is form
    assert default["low_consistency_share"] and default["near_empty_share"]
    assert default["hss_range"] and default["row_count"]
    strict = blocking(GateSettings(hss_blocks=True, form_blocks=True))
    assert all(strict.values())
    assert check_blocks("facts", GATE) and not check_blocks("hss", GATE)
    # the monitor's verdict fails on any failed check: every monitor check blocks
    assert all(s.blocking for s in monitor_expectations(GATE, n_documents=3))


def test_the_decision_has_a_schema_version_and_a_coded_finding_per_reason_and_note():
    cats = ["news", "legal"] * 10
    prod = _rows(np.linspace(0.2, 0.5, 20), cats)
    cand = _rows(np.linspace(0.2, 0.5, 20) + 0.3, cats, unsupported=0.2)
    checks = [
        _failed("low_consistency_share", "facts", "facts.low_consistency_share"),
        _failed("near_empty_share", "summarizes", "not_summarizing.near_empty_share"),
        _failed("mean_hss", "hss", "hss.mean"),
    ]
    decision = decide(compare(cand, prod, resamples=300, seed=1), checks, GATE)
    written = json.loads(decision.model_dump_json())
    assert written["schema_version"] == SCHEMA_VERSION == "3"
    assert decision.decided_by == ["not_summarizing", "unsupported_entities", "facts"]
    findings = written["findings"]
    reasons = [f for f in findings if f["effect"] == "block"]
    assert [f["text"] for f in reasons] == written["reasons"]
    assert [f["code"] for f in reasons] == [
        "not_summarizing.near_empty_share",
        "unsupported_entities",
        "facts.low_consistency_share",
    ]
    assert [f["signal"] for f in reasons] == decision.decided_by
    assert reasons[0]["check"] == "documents.near_empty_share"
    notes = [f for f in findings if f["effect"] != "block"]
    assert [f["text"] for f in notes] == written["notes"]
    assert {f["code"] for f in notes} >= {"hss.mean", "hss.rise", "hss.rewriting"}
    for f in findings:  # every code is a declared check's or a known finding's
        assert f["code"] in CODES or f["code"] in FINDING_CODES, f


def test_a_promotion_and_an_override_keep_their_codes():
    cats = ["news", "legal"] * 10
    same = _rows(np.linspace(0.2, 0.5, 20), cats)
    promoted = decide(compare(same, same, resamples=200), [], GATE)
    assert promoted.findings[0].code == "within_margins"
    assert promoted.reasons == [promoted.findings[0].text]
    blocked = decide(
        compare(_rows([0.3] * 20, cats, unsupported=0.2), same, resamples=200), [], GATE
    )
    overridden = apply_override(blocked, "alice", "product names")
    assert [f.code for f in overridden.findings if f.is_reason] == [
        "override",
        "unsupported_entities",
    ]
    assert [f.effect for f in overridden.findings if f.is_reason] == ["override", "overridden"]
    assert [f.text for f in overridden.findings if f.is_reason] == overridden.reasons
    assert overridden.notes == blocked.notes


def test_junit_reads_the_codes_not_the_text():
    import xml.etree.ElementTree as ET

    cats = ["news", "legal"] * 10
    prod = _rows([0.3] * 20, cats)
    check = _failed("low_consistency_share", "facts", "facts.low_consistency_share")
    blocked = decide(compare(_rows([0.3] * 20, cats, unsupported=0.2), prod), [check], GATE)
    reworded = blocked.model_copy(
        update={
            "reasons": ["reworded"] * len(blocked.reasons),
            "findings": [f.model_copy(update={"text": "reworded"}) for f in blocked.findings],
        }
    )
    for decision in (blocked, reworded):
        suite = ET.fromstring(decision_junit(decision))
        failed = {c.get("name") for c in suite if c.find("failure") is not None}
        assert failed == {"unsupported_entities", "low_consistency_share"}


def test_reports_show_each_reason_with_its_code():
    cats = ["news", "legal"] * 10
    prod = _rows([0.3] * 20, cats)
    decision = decide(compare(_rows([0.3] * 20, cats, unsupported=0.2), prod), [], GATE)
    assert "(`unsupported_entities`)" in decision_markdown(decision)
    assert "<code>unsupported_entities</code>" in decision_html(decision)


def _twelve_document_look(per_category: int, n_categories: int):
    cats = [f"c{i % n_categories}" for i in range(per_category * n_categories)]
    prod = _rows([0.2] * len(cats), cats)
    cand = _rows([0.9] * len(cats), cats)  # every category's HSS rises by 0.7
    return cats, compare(cand, prod, resamples=200)


@pytest.mark.parametrize("per_category,n_categories", [(3, 4), (1, 12)])
def test_a_twelve_document_look_has_no_per_category_line(per_category, n_categories):
    cats, comparison = _twelve_document_look(per_category, n_categories)
    assert comparison["documents"] == 12
    sizes = Counter(cats)
    specs = gate_expectations(
        GATE,
        categories=sorted(sizes),
        n_documents=12,
        n_perturbations=48,
        category_sizes=sizes,
    )
    assert not [s for s in specs if s.code == "hss.category_delta"]  # nothing on 1-3 documents
    categories_table = {s.name for s in specs if s.table == "categories"}
    assert "row_count" in categories_table  # the table's data quality is still checked
    # the categories table validated as the gate does (its data quality passes)
    table = pd.DataFrame(comparison["categories"])
    results = run_suites({"categories": table}, [s for s in specs if s.table == "categories"])
    checks = [r.to_dict() for r in results]
    assert checks and all(c["success"] for c in checks)
    decision = decide(comparison, checks, GATE)
    lines = decision.reasons + decision.notes
    assert not [line for line in lines if "category '" in line or "on categories" in line]
    small = [f for f in decision.findings if f.code == "categories.too_small"]
    assert len(small) == 1
    assert f"{n_categories} of {n_categories} categories" in small[0].text
    assert f"at most {per_category} document" in small[0].text
    markdown = decision_markdown(decision)
    assert markdown.count("categories.too_small") == 1
    assert "check failed on categories" not in markdown


def test_categories_with_enough_documents_are_checked_and_reported():
    cats, comparison = _twelve_document_look(6, 4)  # 24 documents, 6 a category
    sizes = Counter(cats)
    declared = category_checks(GATE, sorted(sizes), sizes)
    assert [c.name for c in declared] == [f"category_delta[c{i}]" for i in range(4)]
    failed = [
        _failed(c.name, "hss", c.code, table="categories", description=c.description, observed=0.7)
        for c in declared
    ]
    decision = decide(comparison, failed, GATE)
    advisories = [f for f in decision.findings if f.code == "hss.category_delta"]
    assert len(advisories) == 4 and all(f.effect == "advisory" for f in advisories)
    assert not [f for f in decision.findings if f.code == "categories.too_small"]
    assert decision.decision == "promote"  # HSS is reported, not blocking
    mixed = category_checks(GATE, ["c0", "c1"], {"c0": 5, "c1": 4})
    assert [c.name for c in mixed] == ["category_delta[c0]"]


def test_the_reference_corpus_first_look_declares_no_per_category_check():
    docs = load_corpus(CORPUS)
    order = stratified_order(docs, lambda d: d.category)
    first = order[: look_sizes(len(order), len({d.category for d in docs}))[0]]
    sizes = Counter(d.category for d in first)
    assert len(first) == 12 and set(sizes.values()) == {1}
    assert category_checks(GATE, sorted(sizes), sizes) == []
    assert GATE.min_category_documents == 5


def test_a_gate_request_is_built_by_field_name_only():
    from hss_gate.workflows.gate_preparation import GateRequest, override_request

    with pytest.raises(TypeError):
        GateRequest("gguf:x", None, None, 4)  # a new field cannot shift the others
    request = GateRequest(candidate="gguf:x", candidate_file="c.yaml", limit=4)
    assert (request.candidate_file, request.limit, request.junit) == ("c.yaml", 4, None)
    assert override_request(None, None) is None
    assert override_request("alice", None) == ("alice", "")  # refused when applied


def test_a_facts_bound_is_read_on_the_paired_interval_of_the_candidates_mean():
    """Paired with production on the same documents: the candidate's interval is production's
    mean plus the paired difference's Student-t CI at the look's level (wider at a stricter
    level), and the point estimate sits inside it."""
    cats = ["a"] * 30
    rng = np.random.default_rng(0)
    production = _rows([0.4] * 30, cats, unsupported=0.02)
    candidate = _rows([0.4] * 30, cats)
    for i, row in enumerate(candidate):
        row["base_unsupported_share"] = float(0.02 + rng.normal(0.03, 0.05))
        row["base_low_consistency"] = i % 3 == 0
    intervals = {}
    for level in (0.95, 0.999):
        comparison = compare(candidate, production, confidence=level, resamples=50)
        intervals[level] = {r["bound"]: r for r in bound_intervals(comparison)}
    row = intervals[0.95]["mean_unsupported_share"]
    diff = comparison["signals"]["base_unsupported_share"]
    assert row["production"] == pytest.approx(0.02) and row["test"] == "paired"
    assert row["ci_low"] < row["estimate"] < row["ci_high"]
    assert row["estimate"] == pytest.approx(0.02 + diff["difference"])
    strict = intervals[0.999]["mean_unsupported_share"]
    assert strict["ci_low"] < row["ci_low"] and strict["ci_high"] > row["ci_high"]
    assert strict["ci_low"] == pytest.approx(0.02 + diff["ci_low"])
    share = intervals[0.95]["low_consistency_share"]
    assert share["estimate"] == pytest.approx(10 / 30) and share["production"] == 0.0
    assert set(intervals[0.95]) == {"mean_unsupported_share", "low_consistency_share"}
