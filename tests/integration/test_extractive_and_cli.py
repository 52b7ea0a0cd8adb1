"""lead-3 scores near zero with the perturbation-aware distance; the CLI end to end."""

from __future__ import annotations

import json
import os

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from hss_gate.cli import app
from hss_gate.common.cache import Cache
from hss_gate.common.inputs import load_corpus
from hss_gate.models.summarizers.extractive import LeadSummarizer
from hss_gate.scoring.pipeline import score_documents
from tests.conftest import CORPUS, REPO

pytestmark = pytest.mark.integration


def test_lead3_copying_scores_near_zero_when_perturbation_aware(real_settings, real_toolkit):
    docs = load_corpus(CORPUS)[::4]
    result = score_documents(
        docs, LeadSummarizer(3), real_settings, real_toolkit, Cache(None), None
    )
    aware = np.array([r["distance_aware"] for r in result.perturbations])
    raw = np.array([r["distance_raw"] for r in result.perturbations])
    assert np.median(aware) == pytest.approx(0.0, abs=1e-6)
    assert aware.mean() < 0.25 * raw.mean()
    assert all(r["base_novel_ngram_share"] == 0.0 for r in result.documents)
    assert all(r["base_unsupported_share"] == 0.0 for r in result.documents)


@pytest.fixture()
def runner(tmp_path, monkeypatch):
    monkeypatch.chdir(REPO)
    monkeypatch.setenv("HSS_RUN__CACHE_DIR", str(tmp_path / "cache"))
    return CliRunner()


def test_score_cli_writes_every_output(runner, tmp_path, real_toolkit):
    out = tmp_path / "out"
    result = runner.invoke(
        app, ["score", "--model", "extractive:lead-3", "--limit", "2", "-k", "1", "--out", str(out)]
    )
    assert result.exit_code == 0, result.output
    docs = pd.read_csv(out / "documents.csv")
    perts = pd.read_csv(out / "perturbations.csv")
    assert list(docs["doc_id"]) == [d.doc_id for d in load_corpus(CORPUS, limit=2)]
    assert docs["hss"].between(0, 1).all()
    assert {"doc_id", "distance", "strength", "share"} <= set(perts.columns)
    assert len(perts) == 2 * 3
    summary = json.loads((out / "summary.json").read_text())
    assert summary["model"] == "extractive:lead-3"
    assert 0 <= summary["aggregates"]["hss"]["mean"] <= 1
    assert (out / "report.md").read_text().startswith("# HSS report")
    assert (out / "edits.jsonl").exists() and (out / "summaries.jsonl").exists()
    # no terminal here: plain progress lines instead of bars
    assert "progress: perturb 2/2 (100%)" in result.output
    assert "progress: summarize" in result.output


def test_a_run_piped_through_a_pipe_shows_progress_lines(tmp_path):
    """As `hss score ... | cat` or a CI log sees it: plain lines, not an empty screen."""
    import subprocess
    import sys

    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "hss_gate",
            "score",
            "-m",
            "extractive:lead-3",
            "--limit",
            "1",
            "-k",
            "1",
            "--out",
            str(tmp_path / "out"),
        ],
        cwd=REPO,
        env={**os.environ, "HSS_RUN__CACHE_DIR": str(tmp_path / "cache")},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout
    lines = [line for line in done.stdout.splitlines() if line.startswith("progress: ")]
    assert any(line.startswith("progress: summarize") for line in lines), done.stdout
    assert "\x1b[" not in "".join(lines)  # no terminal control codes


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--model", "nonsense"], "invalid model URI"),
        (["--model", "gguf:no-such-model"], "unknown embedded model"),
        (["--model", "extractive:lead-3", "--strengths", "extreme"], "--strengths"),
        (["--model", "extractive:lead-3", "--limit", "0"], "--limit"),
    ],
)
def test_bad_options_exit_2_with_one_line(runner, args, message, real_toolkit):
    result = runner.invoke(app, ["score", *args])
    assert result.exit_code == 2
    assert message in result.output and "Traceback" not in result.output


def test_bad_corpus_names_file_and_line(runner, tmp_path, real_toolkit):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"doc_id": "a", "category": "x", "text": "fine."}\n{"doc_id": "b"\n')
    result = runner.invoke(app, ["score", "--model", "extractive:lead-3", "--corpus", str(bad)])
    assert result.exit_code == 2
    assert f"{bad}:2: invalid JSON" in " ".join(result.output.split())


def test_invalid_params_name_the_key(runner, tmp_path):
    params = tmp_path / "params.yaml"
    params.write_text("perturb:\n  tau: high\n")
    result = runner.invoke(app, ["score", "--model", "extractive:lead-3", "--params", str(params)])
    assert result.exit_code == 2 and "perturb.tau" in result.output


def test_models_verify_reports_each_model(runner, real_toolkit):
    result = runner.invoke(app, ["models", "verify", "smollm2", "all-minilm-l6-v2"])
    assert result.exit_code == 0
    assert "smollm2-135m-instruct: verified" in result.output
