"""The promotion decision, the monitor verdict and the baseline metrics (pure code)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from hss_gate.common.errors import InputError
from hss_gate.decision.baseline_metrics import (
    document_scores,
    score_metrics,
    with_strength_distances,
)
from hss_gate.decision.paired_comparison import compare
from hss_gate.decision.record import error_decision
from hss_gate.decision.reports import (
    decision_html,
    decision_markdown,
    moved_most,
    pull_request_comment,
)
from hss_gate.decision.rule import decide
from hss_gate.monitoring.rules import monitor_verdict, severity_rise
from hss_gate.scoring.normalization import compute_normalization
from hss_gate.scoring.severity import difference_bootstrap_ci
from hss_gate.settings import GateSettings

pytestmark = pytest.mark.unit


def _docs(
    hss, *, unsupported=0.0, novel=0.3, consistency=0.9, support=None, categories=("news", "legal")
):
    """Document rows; `support` (the sentences' mean support, which the margin reads) defaults
    to `consistency`."""
    consistency = np.broadcast_to(consistency, len(hss))
    support = consistency if support is None else np.broadcast_to(support, len(hss))
    return [
        {
            "doc_id": f"d{i}",
            "category": categories[i % len(categories)],
            "hss": h,
            "hss_raw": h,
            "base_consistency": float(c),
            "base_mean_support": float(s),
            "base_low_consistency": bool(c < 0.5),
            "base_unsupported_share": unsupported,
            "base_novel_ngram_share": novel,
            "base_truncated": False,
            "base_n_words": 50,
        }
        for i, (h, c, s) in enumerate(zip(hss, consistency, support, strict=True))
    ]


def _decide(candidate, production, checks=(), gate=None, drift=None):
    comparison = compare(candidate, production, resamples=500, seed=1)
    return decide(comparison, list(checks), gate or GateSettings(), drift=drift)


def test_identical_candidate_is_promoted():
    prod = _docs(np.linspace(0.2, 0.8, 20))
    decision = _decide(prod, prod)
    assert decision.decision == "promote" and decision.exit_code == 0
    assert decision.metrics["hss_difference"] == 0.0


def test_an_hss_rise_alone_is_reported_not_blocking_by_default():
    rng = np.random.default_rng(0)
    prod_hss = rng.uniform(0.2, 0.6, 30)
    decision = _decide(_docs(prod_hss + 0.3), _docs(prod_hss))
    assert decision.decision == "promote" and decision.exit_code == 0
    assert any("advisory" in n and "HSS rose significantly" in n for n in decision.notes)
    low, high = decision.metrics["hss_difference_ci"]
    assert low == pytest.approx(0.3) and high == pytest.approx(0.3)


def test_an_hss_rise_blocks_when_configured():
    prod_hss = np.linspace(0.2, 0.6, 30)
    decision = _decide(_docs(prod_hss + 0.3), _docs(prod_hss), gate=GateSettings(hss_blocks=True))
    assert decision.decision == "block" and decision.decided_by == ["hss"]
    assert decision.reasons[0].startswith("HSS rose significantly")


def test_a_significant_loss_of_consistency_blocks_and_says_so():
    rng = np.random.default_rng(4)
    prod_consistency = rng.uniform(0.7, 0.95, 30)
    decision = _decide(
        _docs([0.4] * 30, consistency=prod_consistency - 0.15),
        _docs([0.4] * 30, consistency=prod_consistency),
    )
    assert decision.decision == "block" and decision.decided_by == ["consistency"]
    assert "factual consistency (mean sentence support) fell" in decision.reasons[0]
    assert decision.metrics["consistency"]["difference"] == pytest.approx(-0.15)


def test_the_margin_reads_the_mean_support_not_the_least_supported_sentence():
    rng = np.random.default_rng(6)
    prod = rng.uniform(0.7, 0.95, 30)
    # the least supported sentence falls by 0.3 everywhere, the sentences' mean does not move
    kept = _decide(
        _docs([0.4] * 30, consistency=prod - 0.3, support=prod),
        _docs([0.4] * 30, consistency=prod, support=prod),
    )
    assert kept.decision == "promote" and kept.metrics["consistency"]["difference"] == 0.0
    lowered = _decide(
        _docs([0.4] * 30, consistency=prod, support=prod - 0.15),
        _docs([0.4] * 30, consistency=prod, support=prod),
    )
    assert lowered.decision == "block" and lowered.decided_by == ["consistency"]
    assert lowered.metrics["consistency"]["difference"] == pytest.approx(-0.15)
    assert lowered.metrics["signals"]["base_consistency"]["difference"] == 0.0  # reported


@pytest.mark.parametrize(
    ("scale", "setting", "effective"),
    [
        ("checker", 0.10, 0.10),
        ("standardized", 0.5, None),  # half of production's per-document standard deviation
        ("relative", 0.2, None),  # a fifth of production's mean support
    ],
)
def test_the_consistency_margin_in_each_scale_follows_production_on_the_gate_documents(
    scale, setting, effective
):
    prod = np.linspace(0.3, 0.7, 30)  # mean 0.5, sd 0.124
    expected = {
        "checker": effective,
        "standardized": setting * float(np.std(prod, ddof=1)),
        "relative": setting * float(np.mean(prod)),
    }[scale]
    gate = GateSettings(consistency_margin=setting, consistency_margin_scale=scale)
    for fall, blocked in ((expected + 0.01, True), (expected - 0.01, False)):
        decision = _decide(
            _docs([0.4] * 30, consistency=prod - fall),
            _docs([0.4] * 30, consistency=prod),
            gate=gate,
        )
        assert decision.metrics["consistency"]["margin"] == pytest.approx(expected)
        assert decision.metrics["consistency"]["margin_scale"] == scale
        assert (decision.decision == "block") is blocked, (scale, fall)
    if scale != "checker":
        blocked_reason = _decide(
            _docs([0.4] * 30, consistency=prod - expected - 0.01),
            _docs([0.4] * 30, consistency=prod),
            gate=gate,
        ).reasons[0]
        assert f"{expected:.3f} ({setting:g} x production's" in blocked_reason


@pytest.mark.parametrize("scale", ["standardized", "relative"])
def test_a_scaled_margin_never_falls_below_its_floor(scale):
    # production's summaries all fully supported: no spread, so 0.45 x sd would be a margin of 0
    prod = np.full(30, 1.0) if scale == "standardized" else np.full(30, 0.08)
    gate = GateSettings(
        consistency_margin=0.45, consistency_margin_scale=scale, consistency_margin_floor=0.04
    )
    falls = np.linspace(0.0, 0.04, 30)  # a mean fall of 0.02, inside the floor
    kept = _decide(
        _docs([0.4] * 30, consistency=prod - falls), _docs([0.4] * 30, consistency=prod), gate=gate
    )
    assert kept.metrics["consistency"]["margin"] == pytest.approx(0.04)
    assert kept.decision == "promote"
    lowered = _decide(
        _docs([0.4] * 30, consistency=prod - 0.03 - falls),
        _docs([0.4] * 30, consistency=prod),
        gate=gate,
    )
    assert lowered.decision == "block"
    assert "the floor gate.consistency_margin_floor" in lowered.reasons[0]


def test_a_table_without_the_margins_column_is_an_error_not_a_promotion():
    prod = _docs([0.4] * 10)
    old = [{k: v for k, v in row.items() if k != "base_mean_support"} for row in prod]
    with pytest.raises(InputError, match="production's documents table has no base_mean_support"):
        compare(prod, old)
    with pytest.raises(InputError, match="candidate's documents table has no base_mean_support"):
        compare(old, prod)


def test_a_loss_within_the_margin_or_not_significant_does_not_block():
    prod = np.linspace(0.6, 0.95, 30)
    assert (
        _decide(
            _docs([0.4] * 30, consistency=prod - 0.02), _docs([0.4] * 30, consistency=prod)
        ).decision
        == "promote"
    )
    few = prod[::4]  # 8 documents
    rng = np.random.default_rng(5)
    noisy = np.clip(few - 0.05 + rng.normal(0, 0.2, len(few)), 0, 1)
    decision = _decide(_docs([0.4] * 8, consistency=noisy), _docs([0.4] * 8, consistency=few))
    assert decision.metrics["consistency"]["difference_ci"][1] >= -0.03
    assert decision.decision == "promote"


def test_a_rise_within_the_margin_is_not_blocked():
    prod_hss = np.linspace(0.2, 0.6, 30)
    decision = _decide(_docs(prod_hss + 0.04), _docs(prod_hss))
    assert decision.decision == "promote"


def test_a_noisy_rise_whose_ci_reaches_the_margin_is_not_blocked():
    rng = np.random.default_rng(3)
    prod_hss = rng.uniform(0.2, 0.6, 8)
    noise = rng.normal(0.08, 0.25, 8)
    decision = _decide(_docs(np.clip(prod_hss + noise, 0, 1)), _docs(prod_hss))
    low = decision.metrics["hss_difference_ci"][0]
    assert low <= 0.05 and decision.decision == "promote"


def test_a_failed_suite_check_blocks_and_is_named():
    prod = _docs([0.3] * 10)
    check = {
        "table": "documents",
        "kind": "facts",
        "name": "mean_unsupported_share",
        "description": "mean share of summary entities/numbers not in the source <= 0.05",
        "success": False,
        "observed": 0.081,
    }
    decision = _decide(prod, prod, checks=[check])
    assert decision.decision == "block" and decision.decided_by == ["facts"]
    assert "<= 0.05" in decision.reasons[0] and "0.081" in decision.reasons[0]
    hss_check = check | {"kind": "hss", "name": "mean_hss", "description": "mean HSS <= 0.70"}
    assert _decide(prod, prod, checks=[hss_check]).decision == "promote"
    strict = _decide(prod, prod, checks=[hss_check], gate=GateSettings(hss_blocks=True))
    assert strict.decision == "block" and strict.decided_by == ["hss"]


def test_a_candidate_that_does_not_summarize_is_blocked_first_with_that_reason():
    prod = _docs([0.3] * 10)
    checks = [
        {
            "table": "documents",
            "kind": kind,
            "name": name,
            "description": description,
            "success": False,
            "observed": 1.0,
        }
        for kind, name, description in [
            ("facts", "low_consistency_share", "share of unsupported summaries <= 0.50"),
            ("summarizes", "near_empty_share", "share of empty or near-empty summaries <= 0.20"),
        ]
    ]
    decision = _decide(prod, prod, checks=checks)
    assert decision.decided_by == ["not_summarizing", "facts"]
    assert decision.reasons[0].startswith("the candidate does not summarize: share of empty")


def test_unsupported_share_rise_blocks_even_when_hss_is_flat():
    prod = _docs([0.4] * 20, unsupported=0.0)
    cand = _docs([0.4] * 20, unsupported=0.2)
    decision = _decide(cand, prod)
    assert decision.decision == "block"
    assert any("unsupported by the source rose" in r for r in decision.reasons)


def test_drift_blocks_only_when_configured():
    prod = _docs([0.4] * 10)
    drift = {"drifted": True, "drifted_columns": ["hss"], "share": 1.0, "columns": []}
    assert _decide(prod, prod, drift=drift).decision == "promote"
    strict = GateSettings(block_on_drift=True)
    assert _decide(prod, prod, drift=drift, gate=strict).decision == "block"


def test_a_candidate_that_only_rewrites_more_is_promoted_with_a_paraphrase_note():
    prod_hss = np.linspace(0.2, 0.5, 20)
    decision = _decide(_docs(prod_hss + 0.3, novel=0.8), _docs(prod_hss, novel=0.3))
    assert decision.decision == "promote"
    assert any("paraphrase" in n for n in decision.notes)


def test_category_table_and_mismatched_documents():
    prod = _docs([0.2, 0.4, 0.6, 0.8])
    cand = _docs([0.3, 0.4, 0.9, 0.8])
    comparison = compare(cand, prod, resamples=200)
    by_cat = {c["category"]: c for c in comparison["categories"]}
    assert by_cat["news"]["delta"] == pytest.approx((0.3 + 0.9 - 0.2 - 0.6) / 2)
    assert by_cat["legal"]["delta"] == pytest.approx(0.0)
    with pytest.raises(InputError, match="different documents"):
        compare(cand[:3], prod)


def test_error_decision_fails_closed():
    decision = error_decision("model not found", candidate="gguf:x")
    assert decision.decision == "error" and decision.exit_code == 2
    reasons = json.loads(decision.model_dump_json())["reasons"]
    assert reasons == ["could not decide: model not found"]


def test_reports_escape_document_text():
    prod = _docs([0.2, 0.4])
    decision = _decide(_docs([0.9, 0.4]), prod)
    summaries = [{"doc_id": "d0", "strength": "base", "summary": "<script>alert(1)</script>"}]
    examples = moved_most(_docs([0.9, 0.4]), prod, (summaries, summaries))
    assert examples[0]["doc_id"] == "d0"
    page = decision_html(decision.model_copy(update={"candidate": "<img onerror=x>"}), examples)
    assert "<script>" not in page and "&lt;script&gt;" in page
    assert "<img onerror" not in page
    assert "| HSS |" in decision_markdown(decision)


def test_the_pull_request_comment_is_what_decision_md_holds():
    """.github/workflows/gate.yml posts decision.md as the comment: one text, one renderer."""
    prod = _docs([0.2, 0.4, 0.5])
    decision = _decide(_docs([0.9, 0.4, 0.6], consistency=0.3), prod)
    comment = pull_request_comment(decision)
    assert comment == decision_markdown(decision)
    assert comment.startswith("## hss-gate: ") and "**Why**" in comment


def test_difference_bootstrap_matches_the_means():
    a, b = [0.5, 0.7, 0.9], [0.1, 0.2, 0.3]
    diff, low, high = difference_bootstrap_ci(a, b, resamples=2000, seed=0)
    assert diff == pytest.approx(0.5)
    assert 0.2 < low < 0.5 < high < 0.8


def test_monitor_verdict():
    rise = severity_rise([0.9] * 10, [0.5, 0.6] * 10, margin=0.05)
    assert rise["rise"] and rise["difference"] == pytest.approx(0.35)
    verdict, reasons = monitor_verdict(rise, None, [])
    assert verdict == "unhealthy" and "severity rise" in reasons[0]
    assert rise["live_ci_low"] == rise["live_ci_high"] == pytest.approx(0.9)
    flat = severity_rise([0.5, 0.6] * 5, [0.5, 0.6] * 10, margin=0.05)
    assert flat["live_ci_low"] < flat["live_mean"] < flat["live_ci_high"]
    assert monitor_verdict(flat, {"drifted": False}, [])[0] == "healthy"
    drift = {"drifted": True, "drifted_columns": ["hss"]}
    assert monitor_verdict(flat, drift, [])[0] == "unhealthy"


def test_document_scores_recompute_hss_from_distances():
    perts = pd.DataFrame(
        {
            "doc_id": ["a", "a", "b", "b"],
            "category": ["news", "news", "legal", "legal"],
            "strength": ["low", "high", "low", "high"],
            "distance_aware": [0.1, 0.3, 0.2, 0.8],
            "distance_raw": [0.2, 0.4, 0.3, 0.9],
        }
    )
    docs = pd.DataFrame(
        {
            "doc_id": ["a", "b"],
            "category": ["news", "legal"],
            "base_unsupported_share": [0.0, 0.5],
            "base_novel_ngram_share": [0.2, 0.4],
            "base_truncated": [False, True],
            "base_n_words": [40, 60],
        }
    )
    norm = compute_normalization(
        perts[["category", "distance_aware", "distance_raw"]].itertuples(index=False),
        quantile=1.0,
        model="m",
        settings_digest="s",
        created="now",
    )
    scores = document_scores(docs, perts, norm).set_index("doc_id")
    # M_news = max(0.1, 0.3) = 0.3 -> mean(min(0.1/0.3, 1), 1) ; M_legal = 0.8
    assert scores.loc["a", "hss"] == pytest.approx((0.1 / 0.3 + 1.0) / 2)
    assert scores.loc["b", "hss"] == pytest.approx((0.2 / 0.8 + 1.0) / 2)
    assert scores.loc["b", "distance_high"] == pytest.approx(0.8)
    metrics = score_metrics(scores.reset_index(), GateSettings(severity_level=0.65))
    assert metrics["share_above_severity_level"] == pytest.approx(0.5)
    assert metrics["truncated_share"] == pytest.approx(0.5)
    wide = with_strength_distances(docs, perts)
    assert list(wide["distance_low"]) == pytest.approx([0.1, 0.2])


def test_served_summaries_unsupported_more_often_than_the_reference_are_unhealthy():
    from hss_gate.monitoring.rules import served_rises

    reference = pd.DataFrame(
        {"base_low_consistency": [0.0] * 18 + [1.0] * 2, "base_unsupported_share": [0.01] * 20}
    )
    margins = {"live_low_consistency": 0.1, "live_unsupported_share": 0.02}
    bad = pd.DataFrame(
        {"live_low_consistency": [1.0] * 14 + [0.0] * 6, "live_unsupported_share": [0.01] * 20}
    )
    rises = {s["signal"]: s for s in served_rises(bad, reference, margins, resamples=500)}
    assert rises["live_low_consistency"]["rise"] is True
    assert rises["live_low_consistency"]["live_mean"] == pytest.approx(0.7)
    assert rises["live_unsupported_share"]["rise"] is False
    decision, reasons = monitor_verdict(None, None, [], list(rises.values()))
    assert decision == "unhealthy" and "served summaries" in reasons[0]

    good = bad.assign(live_low_consistency=[0.0] * 17 + [1.0] * 3)
    calm = served_rises(good, reference, margins, resamples=500)
    assert monitor_verdict(None, None, [], calm) == ("healthy", [])
    with pytest.raises(InputError, match="rebuild"):
        served_rises(good, reference.drop(columns="base_low_consistency"), margins)


def _blocked():
    prod = _docs([0.4] * 20, unsupported=0.0)
    return _decide(_docs([0.4] * 20, unsupported=0.2), prod)


def test_a_recorded_override_promotes_a_block_and_keeps_what_the_gate_found():
    from hss_gate.decision.record import apply_override

    blocked = _blocked()
    overridden = apply_override(blocked, "alice", "the new entities are product names, checked")
    assert overridden.decision == "promote" and overridden.exit_code == 0
    assert overridden.decided_by == ["override"]
    assert overridden.override["by"] == "alice"
    assert overridden.override["blocked_by"] == ["unsupported_entities"]
    assert overridden.reasons[0].startswith("block overridden by alice:")
    with pytest.raises(InputError, match="who"):
        apply_override(blocked, "alice", " ")
    error = error_decision("model down")
    assert apply_override(error, "alice", "ship it").decision == "error"  # never overridden


def test_junit_has_a_test_per_check_and_signal_and_fails_the_blocking_ones():
    import xml.etree.ElementTree as ET

    from hss_gate.decision.record import apply_override
    from hss_gate.decision.reports import decision_junit

    check = {
        "table": "documents",
        "kind": "hss",
        "name": "mean_hss",
        "description": "mean HSS <= 0.70",
        "success": False,
        "observed": 0.9,
    }
    blocked = _blocked().model_copy(update={"checks": [check]})
    suite = ET.fromstring(decision_junit(blocked))
    failed = {c.get("name") for c in suite if c.find("failure") is not None}
    assert failed == {"unsupported_entities"}  # the HSS check is advisory by default
    assert suite.get("tests") == str(len(suite)) and suite.get("failures") == "1"
    passed = ET.fromstring(decision_junit(apply_override(blocked, "bob", "reviewed")))
    assert passed.get("failures") == "0" and any("override by bob" in c.get("name") for c in passed)
    errored = ET.fromstring(decision_junit(error_decision("boom <&>", candidate="x")))
    assert errored.get("errors") == "1"
