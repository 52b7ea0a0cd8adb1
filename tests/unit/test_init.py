"""`hss init` (issue 34 item 2): what it writes, that it never overwrites, that a second run
changes nothing, and that bad input is one line, exit 2, with nothing written."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from hss_gate.cli import app
from hss_gate.common import io
from hss_gate.common.errors import InputError, ModelError
from hss_gate.common.inputs import load_corpus
from hss_gate.settings import load_settings
from hss_gate.workflows.init import (
    TEMPLATE_DIR,
    WORKFLOW,
    InitRequest,
    check_model_uri,
    dvc_text,
    plan,
    run_init,
)

pytestmark = pytest.mark.unit

ALL = [
    "params.yaml",
    "dvc.yaml",
    f"{TEMPLATE_DIR}/documents.jsonl",
    f"{TEMPLATE_DIR}/README.md",
    WORKFLOW,
    ".gitignore",
    "README.md",
]


def _request(folder: Path, **more) -> InitRequest:
    return InitRequest(
        folder=folder, production=more.pop("production", "extractive:lead-3"), corpus=None,
        version="9.8.7", **more,
    )  # fmt: skip


def _run(request: InitRequest):
    return run_init(
        request,
        check_production=lambda uri: check_model_uri(uri, request.folder),
        check_corpus=load_corpus,
    )


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {
        p.relative_to(folder).as_posix(): p.read_bytes() for p in folder.rglob("*") if p.is_file()
    }


def test_a_fresh_folder_gets_every_file_and_a_second_run_changes_nothing(tmp_path):
    folder = tmp_path / "repo"
    first = _run(_request(folder))
    assert first.created == ALL and first.skipped == []
    before = _snapshot(folder)
    assert sorted(before) == sorted(ALL)
    second = _run(_request(folder))
    assert (second.created, second.appended) == ([], [])
    assert [path for path, _ in second.skipped] == ALL
    assert _snapshot(folder) == before


def test_the_written_files_are_what_hss_reads(tmp_path, monkeypatch):
    for name in ("HSS_RUN__MODELS_DIR", "HSS_RUN__CORPUS"):
        monkeypatch.delenv(name, raising=False)
    folder = tmp_path / "repo"
    (folder / "docs").mkdir(parents=True)
    (folder / "docs" / "c.jsonl").write_text(json.dumps({"doc_id": "a", "text": "A b."}) + "\n")
    _run(InitRequest(folder, "gguf:qwen2.5-coder-0.5b-instruct", "docs", "9.8.7"))
    settings = load_settings(folder / "params.yaml")
    assert settings.run.production_model == "gguf:qwen2.5-coder-0.5b-instruct"
    assert (settings.run.corpus, settings.hss_gate_version) == ("docs", "9.8.7")
    assert settings.run.models_dir == ".hss/models"  # a project: models stay in it
    template = load_corpus(folder / TEMPLATE_DIR)
    assert [d.doc_id for d in template] == ["example-01", "example-02"]
    stages = yaml.safe_load((folder / "dvc.yaml").read_text())["stages"]
    assert list(stages) == ["scores", "constants", "metrics", "attribution"]
    assert stages["scores"]["deps"] == ["docs"]
    assert stages["scores"]["params"] == [
        {"params.yaml": ["hss_gate_version", "run.production_model", "run.corpus"]}
    ]
    for stage in stages.values():  # the code dependency is the version, no source file
        assert not [d for d in stage.get("deps", []) if "hss_gate" in d]
        assert "hss_gate_version" in stage["params"][0]["params.yaml"]
    workflow = yaml.safe_load((folder / WORKFLOW).read_text())
    (step,) = [s for s in workflow["jobs"]["gate"]["steps"] if "hss-gate" in s.get("uses", "")]
    assert step["uses"] == "hss-gate/hss-gate@v9.8.7"
    assert step["with"]["params"] == "params.yaml"
    ignored = (folder / ".gitignore").read_text().splitlines()
    assert {".hss/", "outputs/"} <= set(ignored)


@pytest.mark.parametrize("uri", ["extractive:lead-3", "summaries:s.jsonl", "openai:http://h:8/v1"])
def test_no_attribution_stage_for_a_model_without_likelihoods(tmp_path, uri):
    stages = yaml.safe_load(dvc_text(_request(tmp_path, production=uri)))["stages"]
    assert list(stages) == ["scores", "constants", "metrics"]
    hf = yaml.safe_load(dvc_text(_request(tmp_path, production="hf:org/m")))["stages"]
    assert "attribution" in hf


def test_an_own_params_file_is_named_in_the_commands(tmp_path):
    stages = yaml.safe_load(dvc_text(_request(tmp_path, params="hss-gate.yaml")))["stages"]
    assert stages["metrics"]["cmd"].endswith("--params hss-gate.yaml")
    assert stages["metrics"]["params"] == [{"hss-gate.yaml": ["hss_gate_version"]}]


def test_existing_files_are_kept_and_lines_added_once(tmp_path):
    folder = tmp_path
    (folder / "README.md").write_text("# My project")  # no trailing newline
    (folder / ".gitignore").write_text("outputs\n*.log\n")
    (folder / "dvc.yaml").write_text("stages: {}\n")
    (folder / "params.yaml").write_text("gate:\n  margin: 0.1\n")  # hss-gate's already
    result = _run(_request(folder))
    assert dict(result.skipped) == {
        "params.yaml": "exists, left as it is",
        "dvc.yaml": "exists, left as it is",
    }
    assert result.appended == [".gitignore", "README.md"]
    assert (folder / "dvc.yaml").read_text() == "stages: {}\n"
    assert (folder / "params.yaml").read_text() == "gate:\n  margin: 0.1\n"
    gitignore = (folder / ".gitignore").read_text()
    assert gitignore.startswith("outputs\n*.log\n") and gitignore.count("outputs") == 1
    assert ".hss/" in gitignore
    readme = (folder / "README.md").read_text()
    assert readme.startswith("# My project\n") and "hss gate --candidate" in readme
    before = _snapshot(folder)
    _run(_request(folder))
    assert _snapshot(folder) == before


def test_plan_is_pure_and_keys_on_existing_text():
    request = _request(Path("nowhere"))
    planned = {p.path: p.mode for p in plan(request, {})}
    assert set(planned.values()) == {"create"}
    again = plan(request, {p: "x" for p in ALL[:5]} | {".gitignore": ".hss/\noutputs/\n"})
    assert {p.path: p.mode for p in again}[".gitignore"] == "skip"


def _refused(tmp_path, request: InitRequest, message: str) -> None:
    before = _snapshot(tmp_path)
    with pytest.raises(InputError, match=message):
        _run(request)
    assert _snapshot(tmp_path) == before


def test_another_tools_params_file_is_refused_and_left_alone(tmp_path):
    (tmp_path / "params.yaml").write_text("train:\n  epochs: 3\n")
    _refused(tmp_path, _request(tmp_path), r"no hss-gate section .* --params hss-gate\.yaml")
    result = _run(_request(tmp_path, params="hss-gate.yaml"))
    assert "hss-gate.yaml" in result.created
    assert (tmp_path / "params.yaml").read_text() == "train:\n  epochs: 3\n"


def test_a_missing_corpus_or_a_bad_production_writes_nothing(tmp_path):
    missing = InitRequest(tmp_path, "extractive:lead-3", "nowhere.jsonl", "1")
    _refused(tmp_path, missing, r"--corpus nowhere\.jsonl: no such file or folder")
    (tmp_path / "bad.jsonl").write_text("{not json\n")
    _refused(tmp_path, InitRequest(tmp_path, "extractive:lead-3", "bad.jsonl", "1"), "invalid JSON")
    for uri, why in [
        ("qwen", "expected one of gguf:"),
        ("gguf:no-such-model", "unknown embedded model"),
        ("gguf:missing.gguf", "GGUF file not found"),
        ("summaries:none.jsonl", "no such file"),
        ("openai:localhost:8080", "http"),
        ("extractive:magic", "unknown extractive method"),
        ("openai:https://user:secret@h/v1", "credential"),
    ]:
        _refused(tmp_path, _request(tmp_path, production=uri), f"--production .*{why}")


def test_check_model_uri_accepts_what_the_gate_loads(tmp_path):
    (tmp_path / "s.jsonl").write_text("")
    for uri in ("extractive:lead-3", "gguf:qwen2.5-coder-0.5b-instruct", "summaries:s.jsonl"):
        check_model_uri(uri, tmp_path)
    with pytest.raises(ModelError):
        check_model_uri("hf", tmp_path)


def test_write_texts_atomic_is_all_or_none(tmp_path, monkeypatch):
    """The second file fails while it is written: neither target nor a temporary file is left."""
    (tmp_path / "a.txt").write_text("old")
    real, calls = io.os.fsync, []

    def fsync(fd):
        calls.append(fd)
        if len(calls) == 2:
            raise OSError("disk full")
        real(fd)

    monkeypatch.setattr(io.os, "fsync", fsync)
    with pytest.raises(OSError, match="disk full"):
        io.write_texts_atomic({tmp_path / "a.txt": "new", tmp_path / "b.txt": "b"})
    assert [p.name for p in tmp_path.iterdir()] == ["a.txt"]
    assert (tmp_path / "a.txt").read_text() == "old"
    io.write_texts_atomic({tmp_path / "a.txt": "new", tmp_path / "b.txt": "b"})
    assert (tmp_path / "a.txt").read_text() + (tmp_path / "b.txt").read_text() == "newb"


def test_the_cli_exits_2_with_one_line(tmp_path):
    (tmp_path / "params.yaml").write_text("train:\n  epochs: 3\n")
    result = CliRunner().invoke(app, ["init", str(tmp_path)])
    assert result.exit_code == 2
    assert "no hss-gate section" in result.output and "Traceback" not in result.output
    result = CliRunner().invoke(app, ["init", str(tmp_path / "new"), "--production", "x:y"])
    assert result.exit_code == 2 and not (tmp_path / "new").exists()
    result = CliRunner().invoke(
        app, ["init", str(tmp_path / "ok"), "--production", "extractive:lead-3"]
    )
    assert result.exit_code == 0 and "wrote params.yaml" in result.output


def test_the_generated_workflow_passes_actionlint_against_the_action(tmp_path):
    """actionlint on the written workflow, with its `uses:` pointed at this repository's
    action.yml (a remote action is not read), so that every input it passes is checked too."""
    import shutil
    import subprocess

    from tests.unit.test_github_workflows import REPO, _lint

    _run(_request(tmp_path))
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True, timeout=30)
    shutil.copy(REPO / "action.yml", tmp_path / "action.yml")
    workflow = tmp_path / WORKFLOW
    result = _lint([workflow], cwd=tmp_path)
    assert (result.returncode, result.stdout + result.stderr) == (0, "")
    text = workflow.read_text().replace("uses: hss-gate/hss-gate@v9.8.7", "uses: ./")
    assert "uses: ./" in text
    workflow.write_text(text)
    result = _lint([workflow], cwd=tmp_path)
    assert (result.returncode, result.stdout + result.stderr) == (0, "")


@pytest.mark.parametrize("corpus", [TEMPLATE_DIR, f"{TEMPLATE_DIR}/documents.jsonl"])
def test_the_corpus_template_can_be_the_corpus_on_the_first_run(tmp_path, corpus):
    """`hss init --corpus corpus-template`: the template does not exist before this run writes
    it; it is accepted, written, and loads as the corpus the params name."""
    request = InitRequest(tmp_path, "extractive:lead-3", corpus, "9.8.7")
    result = _run(request)
    assert f"{TEMPLATE_DIR}/documents.jsonl" in result.created
    params = yaml.safe_load((tmp_path / "params.yaml").read_text())
    assert params["run"]["corpus"] == corpus
    assert len(load_corpus(tmp_path / corpus)) == 2
    assert not _run(request).created


def test_written_files_get_the_ordinary_mode_and_appended_ones_keep_theirs(tmp_path):
    """Not the temporary file's private 0o600: the files are committed and read by others."""
    (tmp_path / ".gitignore").write_text("build/\n")
    (tmp_path / ".gitignore").chmod(0o640)
    old = os.umask(0o022)
    try:
        _run(_request(tmp_path))
    finally:
        os.umask(old)
    assert (tmp_path / "params.yaml").stat().st_mode & 0o777 == 0o644
    assert (tmp_path / ".gitignore").stat().st_mode & 0o777 == 0o640
