"""scripts/look_plan_simulation.py: the gate's own rule simulated over look plans and spending
functions, with noise given as a standard deviation or estimated from two score tables."""

from __future__ import annotations

import importlib.util
import sys

import numpy as np
import pandas as pd
import pytest

from hss_gate.settings import GateSettings
from tests.conftest import REPO

pytestmark = pytest.mark.unit


def _script():
    spec = importlib.util.spec_from_file_location(
        "look_plan_simulation", REPO / "scripts" / "look_plan_simulation.py"
    )
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def test_false_blocks_power_and_documents_under_each_spending():
    sim = _script()
    gate = GateSettings(consistency_margin=sim.REFERENCE_MARGIN, consistency_margin_scale="checker")
    noise = (sim.normal(0.13), sim.normal(0.02))
    for plan in sim.plans(["auto", "24,48"], ["bonferroni", "obrien-fleming"], 48, 12, 0.95):
        at_margin = sim.simulate(-gate.consistency_margin, plan, noise, gate, 80, 1)
        assert at_margin.rate <= 0.05 + 2 * np.sqrt(0.05 * 0.95 / 80)
        worse = sim.simulate(-0.3, plan, noise, gate, 40, 2)
        assert worse.rate == 1.0
        if plan.spending == "bonferroni":  # blocked at the first look
            assert worse.documents == plan.sizes[0]
        else:  # O'Brien-Fleming spends little at the first look: blocked before the last
            assert plan.sizes[0] <= worse.documents < plan.sizes[-1]
    equal = sim.simulate(
        0.0, sim.plans(["auto"], ["bonferroni"], 48, 12, 0.95)[0], noise, gate, 40, 3
    )
    assert equal.rate == 0.0 and 12 <= equal.documents <= 48


def test_plans_fit_the_corpus_and_levels_spend_alpha():
    sim = _script()
    (auto,) = sim.plans(["auto"], ["bonferroni"], 48, 12, 0.95)
    assert auto.sizes == [12, 24, 48] and auto.levels == pytest.approx([1 - 0.05 / 3] * 3)
    (fitted,) = sim.plans(["24,96"], ["pocock"], 48, 12, 0.95)
    assert fitted.sizes == [24, 48] and sum(1 - x for x in fitted.levels) == pytest.approx(0.05)
    # facts first: every document's original plus the first look's perturbed versions
    assert sim.summaries_at(auto, 20.0, 12, 3) == 20 + 3 * 12


def test_noise_estimated_from_two_score_tables(tmp_path, capsys, monkeypatch):
    sim = _script()
    rng = np.random.default_rng(0)
    production = rng.uniform(0.5, 1.0, 60)
    candidate = production - 0.05 + rng.normal(0, 0.1, 60)
    for name, values in (("candidate", candidate), ("production", production)):
        pd.DataFrame(
            {
                "doc_id": [f"d{i}" for i in range(60)],
                "base_mean_support": values,
                "base_unsupported_share": np.zeros(60),
            }
        ).to_csv(tmp_path / f"{name}.csv", index=False)
    found = sim.paired_differences(tmp_path / "candidate.csv", tmp_path / "production.csv")
    assert np.std(found["base_mean_support"], ddof=1) == pytest.approx(0.1, abs=0.02)
    monkeypatch.chdir(REPO)  # params.yaml's margins
    sim.main(
        [
            *("--tables", str(tmp_path / "candidate.csv"), str(tmp_path / "production.csv")),
            *("--looks", "24,48", "--runs", "20", "--differences=-0.3", "--markdown"),
        ]
    )
    out = capsys.readouterr().out
    assert "(60 documents): paired difference consistency mean -0.0" in out
    margin = sim.REFERENCE_MARGIN  # the default, in the checker's units
    assert f"| looks | spending | levels | false blocks at -{margin:g} |" in out
    assert "| 24,48 | bonferroni | 0.9750 0.9750 |" in out
    assert "100.0% (24.0)" in out  # -0.3 is blocked at the first look
