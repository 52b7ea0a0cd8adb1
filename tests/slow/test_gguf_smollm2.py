"""The gguf: backend on the real embedded SmolLM2 package (slow tier, runs in CI)."""

from __future__ import annotations

import json
import subprocess
import sys

import pandas as pd
import pytest

from hss_gate.models import model_store
from tests.conftest import REPO

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def smollm2():
    model = model_store.resolve_name("smollm2")
    if not model_store.is_installed(model):
        pytest.skip("smollm2 not installed (hss models install smollm2)")
    return model


def test_gguf_summaries_are_deterministic(smollm2, tmp_path):
    from hss_gate.models.summarizers.gguf import GgufSummarizer
    from hss_gate.settings import GenerateSettings

    settings = GenerateSettings(max_new_tokens=48)
    summarizer = GgufSummarizer("smollm2-135m-instruct", settings, str(tmp_path))
    text = (
        "The council of Leeds approved a new library on 3 May 2024. It will cost 2 million pounds."
    )
    first = summarizer.summarize([text])
    assert first == summarizer.summarize([text])
    assert isinstance(first[0], str) and first[0].strip()
    assert summarizer.fingerprint.startswith("gguf:" + smollm2.weights[0].sha256[:16])


def test_hss_score_smollm2_end_to_end(smollm2, tmp_path):
    out = tmp_path / "out"
    env = {"HSS_RUN__CACHE_DIR": str(tmp_path / "cache"), "HF_HUB_OFFLINE": "1", "PATH": ""}
    import os

    env = {**os.environ, **{k: v for k, v in env.items() if k != "PATH"}}
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "hss_gate",
            "score",
            "--model",
            "gguf:smollm2-135m-instruct",
            "--limit",
            "2",
            "-k",
            "2",
            "--out",
            str(out),
        ],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=3000,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    docs = pd.read_csv(out / "documents.csv")
    assert len(docs) == 2 and docs["hss"].between(0, 1).all()
    perts = pd.read_csv(out / "perturbations.csv")
    assert len(perts) == 2 * 2 * 3 and (perts["distance"] >= 0).all()
    summary = json.loads((out / "summary.json").read_text())
    assert summary["fingerprint"].startswith("gguf:")
    assert "HSS" in proc.stdout
