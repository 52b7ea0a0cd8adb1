"""scripts/monitor_power.py's simulation on a synthetic scored stream (the real one reads
frank_cnndm, outside the repository): an unchanged stream rarely alarms, a switch is seen."""

from __future__ import annotations

import importlib.util
import random

import pandas as pd
import pytest

from tests.conftest import REPO

pytestmark = pytest.mark.unit


def _script():
    spec = importlib.util.spec_from_file_location(
        "monitor_power", REPO / "scripts" / "monitor_power.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_simulation_measures_false_alarms_power_and_a_switch(tmp_path, capsys):
    rng = random.Random(3)
    rows = [
        {
            "doc_id": f"{system}-{i}",
            "model_id": system,
            "live_low_consistency": rng.random() < flagged,
            "live_unsupported_share": 0.0 if rng.random() < 0.9 else 0.5,
            "factual": int(rng.random() < 0.7),
        }
        for system, flagged in (("good", 0.3), ("bad", 0.95))
        for i in range(250)
    ]
    path = tmp_path / "signals.csv"
    pd.DataFrame(rows).to_csv(path, index=False)
    _script().simulate(path, runs=480, system="good", sizes=[20], alpha=0.001)
    out = capsys.readouterr().out
    assert "windows: reference 100, current 20, alpha 0.001 per signal, 480 runs" in out
    per_run = next(line for line in out.splitlines() if line.startswith("false alarms per run"))
    alarms = int(per_run.split(": ")[1].split("/")[0])
    assert alarms <= 5  # an unchanged stream at alpha 0.001 per signal
    assert "days of 24 hourly runs with any false alarm: " in out and "/20 = " in out
    switch = next(line for line in out.splitlines() if line.startswith("switch to bad ("))
    assert float(switch.split("unhealthy in ")[1].split()[0]) > 0.9
    powers = [float(line.split("|")[3]) for line in out.splitlines() if line.startswith("| 0.")]
    assert powers == sorted(powers) or max(powers) == 1.0
    assert powers[0] < 0.2 and powers[-1] > 0.9
