"""dvc.yaml's code dependencies cover the code each stage runs (read from the imports).

From each stage's entry functions, the hss_gate modules they import are followed (module-level
imports and lazy ones inside functions, the packages they sit in included) to a closure. Every
module of the closure must be a dependency of the stage (its file, or a folder that holds it)
or stand in EXCLUDED with the reason it cannot change the stage's outputs; otherwise a change
to it would leave `dvc repro` believing the baseline is up to date.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
import yaml

from tests.unit.test_layout import PACKAGE, REPO, _module_name, _modules

pytestmark = pytest.mark.unit

# stage -> its entry points, "module:function or class" (in the entry module only what they use
# is followed; every module reached from there is followed whole)
ENTRIES = {
    # hss baseline --stage scores: the workflow, with the scorer and settings the CLI gives it
    "scores": (
        "hss_gate.workflows.baseline:run_baseline",
        "hss_gate.scoring.runner:LocalRunner",
        "hss_gate.settings:load_settings",
    ),
    # hss baseline --stage constants: M_c from the reference run's distances, written as JSON
    "constants": (
        "hss_gate.workflows.baseline:reference_normalization",
        "hss_gate.common.io:write_json_atomic",
    ),
    # hss baseline --stage metrics: the reference documents' HSS and the production metrics
    "metrics": (
        "hss_gate.workflows.baseline:reference_scores",
        "hss_gate.decision.baseline_metrics:score_metrics",
        "hss_gate.common.io:write_csv_atomic",
    ),
    # hss baseline --stage attribution: production's attribution results, with the scorer the
    # gate loads (the stage's default) and the settings the CLI gives it
    "attribution": (
        "hss_gate.workflows.baseline_attribution:run_attribution_stage",
        "hss_gate.settings:load_settings",
    ),
    # hss checker train: the entailment checker's adapter
    "checker": ("hss_gate.workflows.checker:train_checker", "hss_gate.settings:load_settings"),
}

# modules in a closure that cannot change a stage's outputs, and why
EXCLUDED = {
    "hss_gate.common.progress": "progress bars and timed log lines: reporting only",
    "hss_gate.decision.suites": "Great Expectations suites: the gate's and monitor's checks, "
    "never run by the baseline stages (reached through workflows/shared.py)",
    "hss_gate.monitoring.drift": "Evidently drift reports: the gate's and monitor's, never run by "
    "the baseline stages (reached through workflows/shared.py)",
    "hss_gate.common.errors": (
        "exception classes and their messages: a stage that raises writes nothing"
    ),
    "hss_gate.common.redact": "credentials masked in error messages and log lines",
    "hss_gate.common.packaged": "finds an installed wheel's packaged data: a source checkout has "
    "none, and a path the working folder has is never replaced (`dvc repro` reads its declared "
    "deps)",
}


def _runtime_imports(path: Path) -> list[str]:
    """Every module a file imports when it runs: module-level and lazy imports, not those
    under `if TYPE_CHECKING:` (annotations only)."""
    found: list[str] = []

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                for other in child.orelse:
                    visit(other)
                continue
            if isinstance(child, ast.Import):
                found.extend(alias.name for alias in child.names)
            elif isinstance(child, ast.ImportFrom) and child.module:
                found.append(child.module)
                found.extend(f"{child.module}.{a.name}" for a in child.names)
            visit(child)

    visit(ast.parse(path.read_text(encoding="utf-8")))
    return found


def _package_modules() -> dict[str, Path]:
    return {_module_name(p): p for p in _modules(PACKAGE)}


def _resolve(imported: str, modules: dict[str, Path]) -> str | None:
    parts = imported.split(".")
    for end in range(len(parts), 0, -1):
        if ".".join(parts[:end]) in modules:
            return ".".join(parts[:end])
    return None


def _with_packages(name: str, modules: dict[str, Path]) -> set[str]:
    """A module and the packages above it (importing it runs their __init__.py)."""
    parts = name.split(".")
    return {".".join(parts[:end]) for end in range(1, len(parts) + 1)} & set(modules)


def _entry_imports(module: str, names: list[str], modules: dict[str, Path]) -> set[str]:
    """What the named functions or classes of `module` import: the module-level imports whose
    names they use, their own lazy imports, and the same for the module's functions they call."""
    tree = ast.parse(modules[module].read_text(encoding="utf-8"))
    bound: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.Import):
            bound.update({(a.asname or a.name).split(".")[0]: a.name for a in node.names})
        elif isinstance(node, ast.ImportFrom) and node.module:
            bound.update({a.asname or a.name: f"{node.module}.{a.name}" for a in node.names})
    defined = {
        n.name: n
        for n in tree.body
        if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
    }
    found: set[str] = set()
    todo, seen = list(names), set()
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        for node in ast.walk(defined[name]):
            if isinstance(node, ast.Import):
                found.update(a.name for a in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module:
                found.update(f"{node.module}.{a.name}" for a in node.names)
            elif isinstance(node, ast.Name):
                if node.id in bound:
                    found.add(bound[node.id])
                elif node.id in defined:
                    todo.append(node.id)
    return {m for i in found if (m := _resolve(i, modules))}


def closure(stage: str) -> set[str]:
    """Every hss_gate module the stage's entry points reach."""
    modules = _package_modules()
    by_module: dict[str, list[str]] = {}
    for entry in ENTRIES[stage]:
        module, _, name = entry.partition(":")
        by_module.setdefault(module, []).append(name)
    reached: set[str] = set()
    todo: list[str] = []
    for module, names in by_module.items():
        reached |= _with_packages(module, modules)
        todo += sorted(_entry_imports(module, names, modules))
    while todo:
        name = todo.pop()
        for module in _with_packages(name, modules) - reached:
            reached.add(module)
            todo += [m for i in _runtime_imports(modules[module]) if (m := _resolve(i, modules))]
    return reached


def stage_deps(stage: str) -> list[str]:
    return yaml.safe_load((REPO / "dvc.yaml").read_text(encoding="utf-8"))["stages"][stage]["deps"]


def uncovered(stage: str, deps: list[str]) -> list[str]:
    """Modules of the stage's closure that no dependency covers and no exclusion names."""
    modules = _package_modules()

    def covered(module: str) -> bool:
        path = modules[module].relative_to(REPO).as_posix()
        return any(path == d or path.startswith(d.rstrip("/") + "/") for d in deps)

    return sorted(m for m in closure(stage) if m not in EXCLUDED and not covered(m))


@pytest.mark.parametrize("stage", sorted(ENTRIES))
def test_every_module_a_stage_runs_is_a_dependency(stage):
    assert len(closure(stage)) >= 5  # the imports were followed, not an empty walk
    assert uncovered(stage, stage_deps(stage)) == []


def test_the_scores_stage_reaches_the_whole_scoring_path():
    reached = closure("scores")
    for module in (
        "scoring.pipeline",
        "scoring.runner",
        "scoring.toolkit",
        "common.cache",
        "scoring.stored_run",
        "consistency.model",
    ):
        assert f"hss_gate.{module}" in reached
    assert not {m for m in reached if m.startswith("hss_gate.research")}


def test_a_missing_dependency_is_reported():
    deps = [d for d in stage_deps("scores") if d != "hss_gate/common/cache.py"]
    assert uncovered("scores", deps) == ["hss_gate.common.cache"]


def test_every_code_dependency_exists():
    for stage in ENTRIES:
        for dep in stage_deps(stage):
            if dep.startswith("hss_gate"):
                assert (REPO / dep).exists(), f"{stage}: {dep}"


def test_exclusions_are_modules():
    assert set(EXCLUDED) <= set(_package_modules())
