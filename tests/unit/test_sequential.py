"""The sequential gate: a fixed stratified order, the looks, and its error rates by simulation."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest

from hss_gate.decision_rule import look_verdict
from hss_gate.paired_comparison import compare
from hss_gate.sequential import look_confidence, look_sizes, stratified_order
from hss_gate.settings import GateSettings

pytestmark = pytest.mark.unit

GATE = GateSettings()  # consistency margin 0.05 (entail), unsupported margin 0.02


@dataclass(frozen=True)
class Units:
    """A checker's consistency scale: production's per-document values ~ uniform(low, high),
    a same-quality candidate differs by normal noise, and the gate's margin in these units."""

    low: float
    high: float
    noise: float
    margin: float


# Measured on the reference corpus (data/baseline): production's base consistency and one
# perturbed summary per document (a same-model resample): sd 0.180 (mean 0.79, 10% below
# 0.58) / paired-difference sd 0.129 under entail, 0.301 / 0.207 under invented-sbert, 0.137 /
# 0.072 under sbert (whose simulation kept its earlier, more pessimistic noise 0.12).
ENTAIL = Units(0.45, 1.0, 0.13, GATE.consistency_margin)
INVENTED_SBERT = Units(0.0, 1.0, 0.21, 0.07)
SBERT = Units(0.6, 1.0, 0.12, 0.03)
UNITS = [ENTAIL, INVENTED_SBERT, SBERT]
UNIT_IDS = ["entail", "invented-sbert", "sbert"]


def test_every_look_covers_every_category_and_the_order_is_fixed():
    items = [(f"d{i}", f"c{i % 4}") for i in range(18)]
    order = stratified_order(items, lambda x: x[1])
    assert order == stratified_order(items, lambda x: x[1])
    assert [c for _, c in order[:8]] == ["c0", "c1", "c2", "c3"] * 2
    assert sorted(order) == sorted(items)
    assert look_sizes(48, 12) == [12, 24, 36, 48]
    assert look_sizes(18, 4) == [8, 16, 18]  # at least 8 documents a look
    assert look_sizes(48, 12, full=True) == [48] and look_sizes(5, 3) == [5]
    # without categories (frank_cnndm-style corpora): at most MAX_LOOKS equal looks
    assert look_sizes(250, 1) == [50, 100, 150, 200, 250]
    assert look_sizes(30, 1) == [8, 16, 24, 30]
    assert look_confidence(0.95, 4) == pytest.approx(0.9875)


def _docs(consistency, unsupported):
    return [
        {
            "doc_id": f"d{i}",
            "category": f"c{i % 12}",
            "hss": 0.5,
            "base_consistency": float(c),
            "base_unsupported_share": float(u),
        }
        for i, (c, u) in enumerate(zip(consistency, unsupported, strict=True))
    ]


def _run(rng, shift, units, n=48, resamples=400):
    """One simulated gate: paired production/candidate documents, the sequential rule."""
    gate = GATE.model_copy(update={"consistency_margin": units.margin})
    prod_c = rng.uniform(units.low, units.high, n)
    cand_c = np.clip(prod_c + shift + rng.normal(0, units.noise, n), 0, 1)
    prod_u = np.clip(rng.normal(0.01, 0.02, n), 0, 1)
    cand_u = np.clip(prod_u + rng.normal(0, 0.02, n), 0, 1)
    plan = look_sizes(n, 12)
    level = look_confidence(0.95, len(plan))
    for i, m in enumerate(plan):
        comparison = compare(
            _docs(cand_c[:m], cand_u[:m]),
            _docs(prod_c[:m], prod_u[:m]),
            resamples=resamples,
            confidence=level,
            seed=int(rng.integers(1 << 30)),
        )
        verdict = look_verdict(comparison, [], gate, last=i == len(plan) - 1)
        if verdict != "continue":
            return verdict, m
    raise AssertionError("the last look always settles")


def _rates(shift, units=ENTAIL, sims=150, seed=0):
    rng = np.random.default_rng(seed)
    runs = [_run(rng, shift, units) for _ in range(sims)]
    blocked = np.mean([v == "block" for v, _ in runs])
    return blocked, np.mean([m for _, m in runs])


@pytest.mark.parametrize("units", UNITS, ids=UNIT_IDS)
def test_false_blocks_stay_under_alpha_even_at_the_margin(units):
    """A candidate exactly at the margin (consistency one margin lower) must be blocked in at
    most 5% of the runs, looks included (measured 0.7% in invented-sbert units, 2.7% in sbert's;
    see the assertion's slack)."""
    blocked, _ = _rates(-units.margin, units)
    assert blocked <= 0.05 + 2 * np.sqrt(0.05 * 0.95 / 150)  # 5% plus two binomial SEs
    equal, used = _rates(0.0, units)
    assert equal <= 0.02
    assert used < 48  # an equal candidate is usually settled before the corpus runs out


@pytest.mark.parametrize("units", UNITS, ids=UNIT_IDS)
def test_a_clearly_worse_candidate_is_blocked_early(units):
    blocked, used = _rates(-6 * units.margin, units, sims=60)  # entail -0.30, sbert -0.18
    assert blocked >= 0.95 and used <= 16


def test_an_absolute_share_blocks_only_at_the_last_look_and_form_is_advisory():
    same = _docs([0.9] * 12, [0.0] * 12)
    comparison = compare(same, same, resamples=200, confidence=0.9875)

    def check(kind, name):
        return {"table": "documents", "kind": kind, "name": name, "description": name}

    facts = check("facts", "low_consistency_share") | {"success": False, "observed": 0.6}
    assert look_verdict(comparison, [facts], GATE, last=False) == "continue"
    assert look_verdict(comparison, [facts], GATE, last=True) == "block"
    empty = check("summarizes", "near_empty_share") | {"success": False, "observed": 1.0}
    assert look_verdict(comparison, [empty], GATE, last=False) == "block"
    cut = check("output", "truncated_share") | {"success": False, "observed": 0.7}
    assert look_verdict(comparison, [cut], GATE, last=False) == "promote"
    assert look_verdict(comparison, [cut], GateSettings(form_blocks=True), last=True) == "block"
