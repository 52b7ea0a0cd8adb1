"""`dvc repro` rebuilds the baseline in a fresh git repository; a params change reruns only
the stages that declare it, and `dvc params diff` / `dvc metrics diff` show what changed."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.conftest import CORPUS, REPO

pytestmark = pytest.mark.integration


def _run(args: list[str], cwd: Path, env: dict[str, str]) -> str:
    done = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, f"{args} failed:\n{done.stdout}\n{done.stderr}"
    return done.stdout + done.stderr


def _commit(root: Path, env: dict[str, str]) -> None:
    _run(["git", "add", "-A"], root, env)
    _run(["git", "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "c"], root, env)


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    root = tmp_path_factory.mktemp("dvc-repo")
    shutil.copytree(
        REPO / "hss_gate", root / "hss_gate", ignore=shutil.ignore_patterns("__pycache__")
    )
    shutil.copy(REPO / "dvc.yaml", root / "dvc.yaml")
    (root / "data" / "reference").mkdir(parents=True)
    lines = (CORPUS / "corpus.jsonl").read_text(encoding="utf-8").splitlines()
    (root / "data" / "reference" / "corpus.jsonl").write_text("\n".join(lines[:3]) + "\n")
    params = yaml.safe_load((REPO / "params.yaml").read_text(encoding="utf-8"))
    params["run"]["production_model"] = "extractive:lead-2"
    params["run"]["cache_dir"] = str(root / ".hss-cache")
    params["run"]["models_dir"] = str(REPO / ".hss" / "models")
    (root / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    env = dict(os.environ, DVC_NO_ANALYTICS="1", HSS_RUN__CACHE_DIR=str(root / ".hss-cache"))
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env['PATH']}"
    dvc = [sys.executable, "-m", "dvc"]
    _run(["git", "init", "-q"], root, env)
    _run([*dvc, "init", "-q"], root, env)
    _run([*dvc, "config", "core.analytics", "false"], root, env)
    _commit(root, env)
    out = _run([*dvc, "repro", "metrics"], root, env)  # the baseline chain (not factcc)
    return root, env | {"repro_log": out}


def test_repro_builds_every_baseline_output(repo):
    root, env = repo
    for stage in ("scores", "constants", "metrics"):
        assert f"Running stage '{stage}'" in env["repro_log"]
    norm = json.loads((root / "data/baseline/normalization.json").read_text())
    assert norm["counts"] == {"business": 9}  # 3 documents x 3 strengths
    assert norm["global_constant"]["raw"] > 0  # lead-2 copies: only raw distances move
    metrics = json.loads((root / "data/baseline/metrics.json").read_text())
    assert metrics["documents"] == 3 and 0.0 <= metrics["hss_mean"] <= 1.0
    assert (root / "data/baseline/production_scores.csv").read_text().count("\n") == 4
    assert "up to date" in _run([sys.executable, "-m", "dvc", "status", "metrics"], root, env)


def test_a_params_change_reruns_only_the_stages_that_declare_it(repo):
    root, env = repo
    dvc = [sys.executable, "-m", "dvc"]
    _run(["git", "add", "-A"], root, env)
    _run(
        ["git", "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "baseline"], root, env
    )
    params = yaml.safe_load((root / "params.yaml").read_text())
    params["score"]["quantile"] = 0.5
    (root / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    log = _run([*dvc, "repro", "metrics"], root, env)
    assert "Running stage 'scores'" not in log
    assert "Running stage 'constants'" in log and "Running stage 'metrics'" in log
    assert "score.quantile" in _run([*dvc, "params", "diff"], root, env)
    # lead-2 copies, so only the raw-distance HSS depends on the constants
    assert "hss_raw_mean" in _run([*dvc, "metrics", "diff"], root, env)


def test_the_committed_baseline_is_up_to_date_with_its_code_and_params():
    """dvc.lock matches the code and params of the checkout: `dvc repro` would rerun no
    baseline stage (a code move is relocked with `dvc commit`, not rerun)."""
    env = {**os.environ, "DVC_NO_ANALYTICS": "1"}
    status = json.loads(
        _run(
            [sys.executable, "-m", "dvc", "status", "--json", "scores", "constants", "metrics"],
            REPO,
            env,
        )
    )
    assert status == {}
