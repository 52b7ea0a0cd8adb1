"""Issue 34, "Done means": hss-gate in a user's own repository, through the installed wheel.

The wheel is built from this checkout and installed by the action's own install step
(scripts/action.sh install, offline mode: a venv over this test's site packages, then
`pip install --no-deps --no-index` of the wheel) into a folder outside the checkout. In an empty
folder with six documents of another domain (tenancy clauses and clinical notes, written for
this test) the installed `hss` sets up the repository (`hss init`), builds production's baseline
(`hss baseline`, then `dvc repro` adopts it), and gates an extractive candidate, a `summaries:`
candidate and, through the action's run and verdict steps, another `summaries:` candidate. A
corpus without categories gets one stratum. Every command runs in a subprocess with the
checkout off the path, so only what the wheel carries is used.

Cost on 2 busy cores: about 2 minutes, most of it the first scoring (spaCy, GloVe, SBERT, the
checker) in `hss baseline`.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.conftest import REPO

pytestmark = pytest.mark.integration

ACTION_SCRIPT = REPO / "scripts" / "action.sh"

DOCUMENTS = [
    (
        "lease-01",
        "tenancy",
        "The tenant shall pay the monthly rent of 1,250 euros on or before the fifth day of "
        "each month. Payment is made by bank transfer to the account named in the schedule.\n\n"
        "If the rent is more than ten days late, the landlord may charge a late fee of 40 "
        "euros. Repeated late payment over three consecutive months is a breach of this "
        "agreement. The landlord must give written notice of any breach and allow fourteen days "
        "to remedy it before ending the tenancy. The tenant may not sublet the flat without the "
        "landlord's written consent.",
    ),
    (
        "lease-02",
        "tenancy",
        "This agreement begins on 1 September and runs for twelve months. Either party may end "
        "it after the first six months by giving two months' written notice.\n\nThe tenant paid "
        "a deposit of 2,500 euros, held by the regional deposit scheme. The deposit is returned "
        "within thirty days after the tenant leaves, less the cost of any damage beyond normal "
        "wear. Disputes about the deposit go to the scheme's free mediation service before any "
        "court. The landlord keeps the boiler and the roof in good repair.",
    ),
    (
        "lease-03",
        "tenancy",
        "The landlord may enter the property for inspection once every six months. Each visit "
        "needs at least forty-eight hours of written notice to the tenant.\n\nIn an emergency, "
        "such as a burst pipe or a gas leak, the landlord may enter without notice. The tenant "
        "must report any damage to the property within seven days of noticing it. Pets are "
        "allowed only with the landlord's written permission, which may not be refused without "
        "good reason. Smoking inside the flat is not permitted.",
    ),
    (
        "clinic-01",
        "clinical",
        "A 58-year-old man came to the clinic with chest pain that started two hours earlier "
        "while he was climbing stairs. The pain spread to his left arm and eased after ten "
        "minutes of rest.\n\nHis blood pressure was 150 over 95 and his heart rate was 88. An "
        "electrocardiogram showed no acute changes, and the first troponin test was normal. He "
        "was given aspirin and admitted for observation and a second troponin test after six "
        "hours. He smokes ten cigarettes a day and has type 2 diabetes.",
    ),
    (
        "clinic-02",
        "clinical",
        "A 34-year-old woman reported a dry cough and a mild fever for five days. She had no "
        "shortness of breath and her oxygen saturation was 97 percent on room air.\n\nA chest "
        "X-ray was clear. The doctor diagnosed a viral upper respiratory infection and advised "
        "rest, fluids and paracetamol for the fever. No antibiotics were prescribed. She was "
        "told to return if the fever lasted more than three more days or if breathing became "
        "difficult. She works as a primary school teacher.",
    ),
    (
        "clinic-03",
        "clinical",
        "A 71-year-old woman fell at home and hurt her right hip. She could not bear weight on "
        "the leg, which was shortened and turned outward.\n\nAn X-ray confirmed a fracture of "
        "the neck of the femur. She had surgery the next morning to replace the hip joint, "
        "under spinal anaesthesia. She was standing with a frame on the second day after the "
        "operation. The team started blood thinners to prevent clots and planned four weeks of "
        "physiotherapy. She lives alone and her daughter will stay with her after discharge.",
    ),
]

INVENTED = {
    "lease-01": "The tenant pays 2,900 euros rent in cash by the twentieth of each month. Rent "
    "late by one day costs a 400 euro fee, and any late payment lets Mr Dupont evict the tenant "
    "at once.",
    "lease-02": "The agreement starts on 1 March and runs for five years with no way to end it "
    "early. The 9,000 euro deposit is kept by the landlord, Mr Dupont, and is never returned.",
    "lease-03": "The landlord may enter the property at any time without notice, every week. "
    "The tenant must report damage within one day, and dogs and cats are banned by the Paris "
    "housing court.",
    "clinic-01": "A 45-year-old woman had a heart attack in Berlin, confirmed by her "
    "electrocardiogram and a high troponin test. She was given morphine and sent straight to "
    "surgery for a bypass.",
    "clinic-02": "A 60-year-old man had pneumonia for three weeks with low oxygen and a shadow "
    "on his chest X-ray. Dr Weber prescribed amoxicillin and admitted him to intensive care.",
    "clinic-03": "A 90-year-old man broke his left wrist playing tennis in Madrid. He had a "
    "plaster cast and went home the same day without any physiotherapy.",
}
"""Summaries that invent numbers, names and places: the facts must block them."""


def _sentences(text: str) -> list[str]:
    return re.split(r"(?<=\.)\s+", text.replace("\n\n", " "))


COPIED = {doc_id: " ".join(_sentences(text)[i] for i in (0, 1, 3)) for doc_id, _, text in DOCUMENTS}
"""Summaries an extractive system already logged (sentences 1, 2 and 4): supported by the source."""


def _write_corpus(path: Path, categories: bool = True) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    rows = [
        {"doc_id": doc_id, "text": text} | ({"category": category} if categories else {})
        for doc_id, category, text in DOCUMENTS
    ]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")


def _write_summaries(path: Path, summaries: dict[str, str]) -> None:
    rows = [{"doc_id": doc_id, "summary": summary} for doc_id, summary in summaries.items()]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")


def _snapshot(folder: Path) -> dict[str, tuple[bytes, int]]:
    """Every file outside .git and .dvc: its bytes and mode."""
    return {
        p.relative_to(folder).as_posix(): (p.read_bytes(), p.stat().st_mode)
        for p in sorted(folder.rglob("*"))
        if p.is_file() and p.relative_to(folder).parts[0] not in (".git", ".dvc")
    }


class Installed:
    """The environment the action's install step made, and commands run in it."""

    def __init__(self, venv: Path, home: Path) -> None:
        self.venv = venv
        self.env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("HSS_", "GITHUB_", "INPUT_")) and k != "PYTHONPATH"
        }
        self.env |= {
            "PATH": f"{venv / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}",
            "XDG_CACHE_HOME": str(home / "cache"),  # the models folder outside a project
            "HF_HUB_OFFLINE": "1",
            "TRANSFORMERS_OFFLINE": "1",
            "TOKENIZERS_PARALLELISM": "false",
            "NO_COLOR": "1",
            "COLUMNS": "200",
            "GIT_CONFIG_GLOBAL": os.devnull,
            "DVC_NO_ANALYTICS": "1",
        }

    def run(
        self, args: list[str], cwd: Path, ok: tuple[int, ...] = (0,), **env: str
    ) -> subprocess.CompletedProcess:
        result = subprocess.run(
            args, cwd=cwd, env=self.env | env, text=True, timeout=600,
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT,  # hss's console is stderr
        )  # fmt: skip
        assert result.returncode in ok, (args, result.returncode, result.stdout)
        return result

    def hss(self, *args: str, cwd: Path, ok: tuple[int, ...] = (0,)) -> subprocess.CompletedProcess:
        return self.run([str(self.venv / "bin" / "hss"), *args], cwd, ok)

    def dvc(self, *args: str, cwd: Path) -> subprocess.CompletedProcess:
        return self.run([str(self.venv / "bin" / "python"), "-m", "dvc", *args], cwd)


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Installed:
    from hss_gate.models import model_store

    missing = [
        n
        for n in model_store.CORE_MODELS
        if not model_store.is_installed(model_store.resolve_name(n))
    ]
    if missing:
        pytest.skip(f"embedded models not installed: {missing} (run `hss models install`)")
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    home = tmp_path_factory.mktemp("outside")
    dist = home / "dist"
    subprocess.run(
        [
            *(sys.executable, "-m", "uv", "build", "--wheel", "--no-build-isolation", "--quiet"),
            *("--python", sys.executable, "--out-dir", str(dist), str(REPO)),
        ],
        check=True,
        capture_output=True,
        timeout=300,
    )
    (wheel,) = dist.glob("hss_gate-*.whl")
    venv = home / "venv"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env |= {
        "PYTHON": sys.executable,
        "HSS_VENV": str(venv),
        "HSS_INSTALL_FROM": str(wheel),
        "HSS_INSTALL_MODE": "offline",
        "HSS_MODELS": "skip",  # the embedded models are this environment's already
    }
    subprocess.run(
        ["bash", str(ACTION_SCRIPT), "install"], cwd=home, env=env, check=True, timeout=300
    )
    return Installed(venv, home)


def test_a_user_repository_gets_its_own_baseline_and_gate(
    installed: Installed, tmp_path_factory: pytest.TempPathFactory
):
    where = installed.run(
        [
            str(installed.venv / "bin" / "python"),
            "-c",
            "import hss_gate, hss_gate.common.packaged as p; "
            "print(hss_gate.__file__, p.packaged_root())",
        ],
        cwd=tmp_path_factory.getbasetemp(),
    ).stdout.split()
    assert all(path.startswith(str(installed.venv)) for path in where), where  # the wheel's

    repo = tmp_path_factory.mktemp("user-repo")
    installed.run(["git", "init", "--quiet", "."], repo)
    _write_corpus(repo / "docs" / "documents.jsonl")

    # hss init: the files, then a second run that changes nothing
    first = installed.hss(
        "init", "--production", "extractive:lead-3", "--corpus", "docs/documents.jsonl", cwd=repo
    )
    assert "wrote params.yaml" in first.stdout and "wrote dvc.yaml" in first.stdout
    params = yaml.safe_load((repo / "params.yaml").read_text())
    assert params["run"] == {
        "production_model": "extractive:lead-3",
        "corpus": "docs/documents.jsonl",
        "baseline_dir": "data/baseline",
    }
    stages = yaml.safe_load((repo / "dvc.yaml").read_text())["stages"]
    assert list(stages) == ["scores", "constants", "metrics"]  # no attribution: no likelihoods
    assert (repo / "params.yaml").stat().st_mode & 0o044  # readable by others, as git keeps it
    before = _snapshot(repo)
    second = installed.hss(
        "init", "--production", "extractive:lead-3", "--corpus", "docs/documents.jsonl", cwd=repo
    )
    assert "nothing to do" in second.stdout
    assert _snapshot(repo) == before

    # the baseline: `hss baseline`, then DVC adopts it (`dvc repro` from the cache) and is settled
    built = installed.hss("baseline", cwd=repo)
    assert "2 categories" in built.stdout
    baseline = repo / "data" / "baseline"
    for name in ("normalization.json", "metrics.json", "production_scores.csv"):
        assert (baseline / name).is_file(), name
    assert (baseline / "reference" / "summaries.jsonl").is_file()
    constants = json.loads((baseline / "normalization.json").read_text())
    assert constants["model"].startswith("extractive:lead-3")
    assert set(constants["constants"]["aware"]) == {"tenancy", "clinical"}
    assert json.loads((baseline / "metrics.json").read_text())["documents"] == 6
    installed.dvc("init", "--quiet", cwd=repo)
    installed.dvc("repro", cwd=repo)
    assert "Data and pipelines are up to date" in installed.dvc("status", cwd=repo).stdout
    again = installed.dvc("repro", cwd=repo).stdout
    assert "Data and pipelines are up to date" in again
    assert again.count("didn't change, skipping") == 3

    # an extractive candidate: one sentence is too little to be a summary
    lead1 = installed.hss(
        "gate", "--candidate", "extractive:lead-1", "--out", "outputs/lead-1", cwd=repo, ok=(1,)
    )
    assert "BLOCK (exit 1)" in lead1.stdout
    decision = json.loads((repo / "outputs/lead-1/decision.json").read_text())
    assert decision["decision"] == "block"
    assert decision["metrics"]["hss_measured"] is True and decision["metrics"]["documents"] == 6
    assert any("does not summarize" in reason for reason in decision["reasons"])
    assert (repo / "outputs/lead-1/decision.md").is_file()
    assert (repo / "outputs/lead-1/decision.html").is_file()

    # a `summaries:` candidate that invents facts: HSS not measured, the facts block it
    _write_summaries(repo / "invented.jsonl", INVENTED)
    installed.hss(
        "gate", "--candidate", "summaries:invented.jsonl", "--out", "outputs/invented", cwd=repo,
        ok=(1,),
    )  # fmt: skip
    decision = json.loads((repo / "outputs/invented/decision.json").read_text())
    assert decision["decision"] == "block"
    assert decision["metrics"]["hss_measured"] is False
    assert any("consistency" in reason for reason in decision["reasons"])

    # the action's run and verdict steps: a `summaries:` candidate with supported summaries
    _write_summaries(repo / "copied.jsonl", COPIED)
    outputs, summary = repo / "github_output", repo / "step_summary"
    action = {
        "HSS_VENV": str(installed.venv),
        "INPUT_CANDIDATE": "summaries:copied.jsonl",
        "INPUT_PARAMS": "params.yaml",
        "INPUT_OUT": "outputs/action",
        "GITHUB_OUTPUT": str(outputs),
        "GITHUB_STEP_SUMMARY": str(summary),
    }
    installed.run(["bash", str(ACTION_SCRIPT), "run"], repo, **action)
    recorded = dict(line.split("=", 1) for line in outputs.read_text().splitlines())
    assert recorded["decision"] == "promote" and recorded["exit_code"] == "0", recorded
    assert json.loads((repo / "outputs/action/decision.json").read_text())["decision"] == "promote"
    assert (repo / "outputs/action/junit.xml").is_file()
    assert summary.read_text() == (repo / "outputs/action/decision.md").read_text()
    verdict = installed.run(
        ["bash", str(ACTION_SCRIPT), "verdict"], repo, GATE_EXIT=recorded["exit_code"]
    )
    assert "Gate decision: promote" in verdict.stdout
    installed.run(["bash", str(ACTION_SCRIPT), "verdict"], repo, ok=(1,), GATE_EXIT="1")

    # the gate's caches and reports stay out of git (hss init's .gitignore lines)
    status = installed.run(["git", "status", "--porcelain", "--untracked-files=all"], repo).stdout
    assert ".hss/" not in status and "outputs/" not in status

    # a corpus without categories: one stratum (the same documents: the cache is shared)
    flat = tmp_path_factory.mktemp("user-repo-flat")
    _write_corpus(flat / "documents.jsonl", categories=False)
    installed.hss(
        "init", "--production", "extractive:lead-3", "--corpus", "documents.jsonl", cwd=flat
    )
    cache = {"HSS_RUN__CACHE_DIR": str(repo / ".hss" / "cache")}
    built = installed.run([str(installed.venv / "bin" / "hss"), "baseline"], flat, **cache)
    assert "1 categories" in built.stdout or "1 category" in built.stdout, built.stdout
    constants = json.loads((flat / "data/baseline/normalization.json").read_text())
    assert list(constants["constants"]["aware"]) == ["uncategorized"]
    same = installed.run(
        [str(installed.venv / "bin" / "hss"), "gate", "--candidate", "extractive:lead-3"],
        flat,
        **cache,
    )
    assert "PROMOTE (exit 0)" in same.stdout
