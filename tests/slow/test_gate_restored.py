"""A cold gate against the default production model takes production from the versioned
baseline (data/baseline/reference): no production summary is generated (slow tier, CI)."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from hss_gate.cli import app
from hss_gate.models import model_store
from tests.conftest import REPO

pytestmark = pytest.mark.slow


def test_a_cold_gate_generates_no_production_summary(monkeypatch, tmp_path):
    if not model_store.is_installed(model_store.resolve_name("qwen2.5-coder-0.5b-instruct")):
        pytest.skip("the production model is not installed (hss models install)")
    monkeypatch.chdir(REPO)
    monkeypatch.setenv("HSS_RUN__CACHE_DIR", str(tmp_path / "empty-cache"))
    out = tmp_path / "gate"
    result = CliRunner().invoke(
        app, ["gate", "--candidate", "extractive:lead-3", "--limit", "2", "--out", str(out)]
    )
    assert result.exit_code in (0, 1), result.output
    decision = json.loads((out / "decision.json").read_text())
    production = decision["metrics"]["production"]
    assert production["restored"].startswith("restored "), production
    assert production["summaries_generated"] == 0
    # lead-3 is cut from the source: its summaries are made here, 1 + 3 bands x K per document
    assert production["candidate_summaries_generated"] > 0
    assert decision["metrics"]["sequential"]["documents_used"] == 2
