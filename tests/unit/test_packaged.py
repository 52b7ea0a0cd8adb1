"""The packaged data and the settings layers outside a project (issue 34 item 1).

The build step copies params.yaml, data/reference and data/baseline into the built package
(setup.py, hss_gate/common/packaged.py); settings resolve options > HSS_* > ./params.yaml > the
packaged
params.yaml; input paths the working folder lacks are read from the packaged copy; outside a
project the assembled models go to the user's cache folder.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from hss_gate import settings
from hss_gate.common import packaged
from hss_gate.common.errors import InputError
from hss_gate.settings import load_settings, use_packaged_inputs

pytestmark = pytest.mark.unit

REPO = Path(__file__).resolve().parents[2]


def _project(root: Path) -> Path:
    (root / "data/reference").mkdir(parents=True)
    (root / "data/reference/corpus.jsonl").write_text('{"doc_id": "a", "text": "A."}\n')
    (root / "data/baseline/reference").mkdir(parents=True)
    (root / "data/baseline/normalization.json").write_text("{}\n")
    (root / "data/baseline/reference/summaries.jsonl").write_text("\n")
    (root / "data/baseline/reference/report.md").write_text("# not packaged\n")
    (root / "params.yaml").write_text("perturb:\n  tau: 0.61\nrun:\n  models_dir: .hss/models\n")
    return root


def test_build_copies_the_sources_and_replaces_an_older_copy(tmp_path):
    project = _project(tmp_path / "p")
    target = tmp_path / "build" / packaged.PACKAGE_DIR
    (target / "stale").mkdir(parents=True)
    written = packaged.build(project, target)
    assert sorted(p.relative_to(target).as_posix() for p in written) == [
        "baseline/normalization.json",
        "baseline/reference/summaries.jsonl",
        "params.yaml",
        "reference/corpus.jsonl",
    ]
    assert not (target / "stale").exists()


def test_build_fails_without_a_source(tmp_path):
    project = _project(tmp_path / "p")
    (project / "params.yaml").unlink()
    with pytest.raises(FileNotFoundError, match=r"params\.yaml"):
        packaged.build(project, tmp_path / "t")


def test_packaged_path_maps_project_paths_inside_the_sources_only(tmp_path):
    root = tmp_path / "pk"
    packaged.build(_project(tmp_path / "p"), root)
    assert packaged.packaged_path("data/reference", root) == root / "reference"
    assert packaged.packaged_path("data/baseline/normalization.json", root) == (
        root / "baseline/normalization.json"
    )
    assert packaged.packaged_path("data/baseline/metrics.json", root) is None  # not packaged
    assert packaged.packaged_path("my_docs/corpus.jsonl", root) is None
    assert packaged.packaged_path(str(tmp_path / "data/reference"), root) is None


def test_the_source_checkout_has_no_packaged_data():
    """Run from this checkout (not a built wheel), the working folder's files are used."""
    assert packaged.packaged_root() is None


def test_the_build_step_puts_the_data_into_the_built_package(tmp_path):
    """setup.py's build_py, as the wheel build runs it: the package holds the repo's files."""
    out = tmp_path / "lib"
    subprocess.run(
        [sys.executable, "setup.py", "-q", "build_py", "--build-lib", str(out)],
        cwd=REPO,
        check=True,
        capture_output=True,
        timeout=120,
    )
    root = out / "hss_gate" / packaged.PACKAGE_DIR
    assert (root / "params.yaml").read_bytes() == (REPO / "params.yaml").read_bytes()
    assert (root / "reference/corpus.jsonl").read_bytes() == (
        REPO / "data/reference/corpus.jsonl"
    ).read_bytes()
    for name in ("normalization.json", "production_scores.csv", "reference/summaries.jsonl"):
        assert (root / "baseline" / name).read_bytes() == (
            REPO / "data/baseline" / name
        ).read_bytes()


def _clean_env(monkeypatch, tmp_path):
    for name in ("HSS_RUN__MODELS_DIR", "HSS_PERTURB__TAU", "HSS_RUN__CORPUS"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))


def test_layers_options_env_params_packaged(tmp_path, monkeypatch):
    _clean_env(monkeypatch, tmp_path)
    defaults = tmp_path / "packaged.yaml"
    defaults.write_text("perturb:\n  tau: 0.61\n  gamma: 0.81\n  k: 3\nrun:\n  out: pk\n")
    params = tmp_path / "params.yaml"
    params.write_text("schema_version: 1\nperturb:\n  gamma: 0.82\n  k: 4\n")
    got = load_settings(params, defaults=defaults)
    assert (got.perturb.tau, got.perturb.gamma, got.perturb.k, got.run.out) == (0.61, 0.82, 4, "pk")
    monkeypatch.setenv("HSS_PERTURB__TAU", "0.63")
    got = load_settings(params, defaults=defaults, perturb__k=5)
    assert (got.perturb.tau, got.perturb.gamma, got.perturb.k) == (0.63, 0.82, 5)
    only_packaged = load_settings(tmp_path / "missing.yaml", defaults=defaults)
    assert (only_packaged.perturb.tau, only_packaged.perturb.gamma) == (0.63, 0.81)


def test_models_go_to_the_user_cache_outside_a_project(tmp_path, monkeypatch):
    _clean_env(monkeypatch, tmp_path)
    defaults = tmp_path / "packaged.yaml"
    defaults.write_text("run:\n  models_dir: .hss/models\n")
    user_cache = str(tmp_path / "xdg" / "hss-gate" / "models")
    assert load_settings(tmp_path / "none.yaml", defaults=defaults).run.models_dir == user_cache
    other_tool = tmp_path / "other.yaml"  # empty: no hss-gate section, not a project
    other_tool.write_text("# nothing\n")
    assert load_settings(other_tool, defaults=defaults).run.models_dir == user_cache
    project = tmp_path / "params.yaml"
    project.write_text("schema_version: 1\n")
    assert load_settings(project, defaults=defaults).run.models_dir == ".hss/models"
    got = load_settings(tmp_path / "none.yaml", defaults=defaults, run__models_dir="m")
    assert got.run.models_dir == "m"
    monkeypatch.setenv("HSS_RUN__MODELS_DIR", "/srv/models")
    assert load_settings(tmp_path / "none.yaml", defaults=defaults).run.models_dir == "/srv/models"
    monkeypatch.delenv("HSS_RUN__MODELS_DIR")
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert load_settings(tmp_path / "none.yaml").run.models_dir == str(
        tmp_path / "home/.cache/hss-gate/models"
    )


def test_missing_inputs_are_read_from_the_packaged_copy(tmp_path, monkeypatch):
    _clean_env(monkeypatch, tmp_path)
    root = tmp_path / "pk"
    packaged.build(_project(tmp_path / "p"), root)
    work = tmp_path / "work"
    work.mkdir()
    got = load_settings(work / "params.yaml", defaults=root / "params.yaml")
    notes = use_packaged_inputs(got, root, cwd=work)
    assert got.run.corpus == str(root / "reference")
    assert got.run.baseline_dir == str(root / "baseline")
    assert got.score.normalization == str(root / "baseline/normalization.json")
    assert got.monitor.reference == "data/baseline/production_scores.csv"  # not packaged here
    assert notes == [
        "run.corpus (data/reference)",
        "run.baseline_dir (data/baseline)",
        "score.normalization (data/baseline/normalization.json)",
    ]
    (work / "data/reference").mkdir(parents=True)  # a corpus of the user's own: it stays, and
    mine = load_settings(work / "params.yaml", defaults=root / "params.yaml")
    assert use_packaged_inputs(mine, root, cwd=work) == []  # the packaged baseline is not its
    (work / "data/reference").rmdir()
    writer = load_settings(work / "params.yaml", defaults=root / "params.yaml")
    assert use_packaged_inputs(writer, root, ("run.corpus",), cwd=work) == [
        "run.corpus (data/reference)"
    ]
    assert writer.run.baseline_dir == "data/baseline"  # hss baseline writes here, never the package
    assert use_packaged_inputs(writer, None, cwd=work) == []


def test_schema_version_older_newer_and_malformed(tmp_path, monkeypatch):
    params = tmp_path / "params.yaml"
    params.write_text("schema_version: 1\nperturb:\n  tau: 0.5\n")
    assert load_settings(params).perturb.tau == 0.5
    params.write_text("perturb:\n  tau: 0.5\n")  # no schema_version: today's layout
    assert load_settings(params).perturb.tau == 0.5
    monkeypatch.setattr(settings, "SCHEMA_VERSION", 3)
    monkeypatch.setattr(settings, "CHANGED_SETTINGS", {})
    monkeypatch.setattr(
        settings, "SCHEMA_CHANGES", {2: ("run.corpus -> run.corpora",), 3: ("gate.margin",)}
    )
    params.write_text("schema_version: 2\ngate:\n  margin: 0.1\n")
    with pytest.raises(InputError, match=r"schema_version 2 is older than 3; changed since: gate"):
        load_settings(params)
    params.write_text("run:\n  corpus: data\n")
    with pytest.raises(InputError, match=r"run.corpus -> run.corpora; gate.margin"):
        load_settings(params)
    params.write_text("schema_version: 2\nperturb:\n  tau: 0.5\n")  # no section that changed
    assert load_settings(params).perturb.tau == 0.5
    params.write_text("schema_version: 4\n")
    with pytest.raises(InputError, match=r"newer than this hss-gate reads \(3\): upgrade"):
        load_settings(params)
    params.write_text("schema_version: one\n")
    with pytest.raises(InputError, match="whole number"):
        load_settings(params)


def test_a_baseline_of_another_version_is_named(tmp_path):
    params = tmp_path / "params.yaml"
    params.write_text("schema_version: 1\nhss_gate_version: 0.0.9\n")
    got = load_settings(params)
    assert settings.version_mismatch(got, "0.0.9") is None
    note = settings.version_mismatch(got, "0.1.0")
    assert note == (
        "params: hss_gate_version 0.0.9, installed 0.1.0: set it to 0.1.0 and rebuild the "
        "baseline (dvc repro), or install hss-gate 0.0.9"
    )
    assert settings.version_mismatch(load_settings(tmp_path / "none.yaml"), "0.1.0") is None


def test_a_corpus_option_is_a_setting_so_the_packaged_baseline_stays_with_its_corpus(
    tmp_path, monkeypatch
):
    """`hss gate --corpus mine.jsonl` outside a project: the packaged corpus is not used, and
    neither is the packaged baseline (production's run on the packaged corpus); without the
    option both are."""
    from typer.testing import CliRunner

    from hss_gate.cli import app
    from hss_gate.workflows import gate

    _clean_env(monkeypatch, tmp_path)
    root = tmp_path / "pk"
    packaged.build(_project(tmp_path / "p"), root)
    work = tmp_path / "work"
    work.mkdir()
    (work / "mine.jsonl").write_text('{"doc_id": "m", "text": "Mine."}\n')
    monkeypatch.chdir(work)
    monkeypatch.setattr(packaged, "packaged_root", lambda: root)
    seen = []

    def run_gate(load, request, **_):
        seen.append((request.corpus, load()))
        raise RuntimeError("stop here")

    monkeypatch.setattr(gate, "run_gate", run_gate)
    runner = CliRunner()
    runner.invoke(app, ["gate", "--candidate", "extractive:lead-1", "--corpus", "mine.jsonl"])
    runner.invoke(app, ["gate", "--candidate", "extractive:lead-1"])
    (_, mine), (_, default) = seen
    assert [corpus for corpus, _ in seen] == [None, None]  # the settings carry it
    assert mine.run.corpus == "mine.jsonl"
    assert mine.run.baseline_dir == "data/baseline"
    assert mine.score.normalization == "data/baseline/normalization.json"
    assert default.run.corpus == str(root / "reference")
    assert default.run.baseline_dir == str(root / "baseline")
    assert default.score.normalization == str(root / "baseline/normalization.json")


def test_a_margin_set_in_the_old_units_is_refused_not_reread(tmp_path):
    # schema 3 reads gate.consistency_margin in standardized units: an older file that sets it
    # would silently mean 0.10 of a standard deviation, so it is an error naming the fix
    params = tmp_path / "params.yaml"
    params.write_text("schema_version: 2\ngate:\n  consistency_margin: 0.10\n")
    with pytest.raises(InputError, match=r"gate\.consistency_margin_scale: checker"):
        load_settings(params)
    params.write_text(
        "schema_version: 3\ngate:\n  consistency_margin: 0.10\n"
        "  consistency_margin_scale: checker\n"
    )
    gate = load_settings(params).gate
    assert (gate.consistency_margin, gate.consistency_margin_scale) == (0.10, "checker")
    assert load_settings(tmp_path / "absent.yaml").gate.consistency_margin_scale == "standardized"
    params.write_text("schema_version: 2\ngate:\n  hss_blocks: true\n")  # unchanged keys
    assert load_settings(params).gate.hss_blocks
