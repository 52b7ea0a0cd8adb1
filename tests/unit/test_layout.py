"""The layout's rules, read from the code's imports (ARCHITECTURE.md).

- Only the CLI's `experiment` and `bench` commands import the research wing (hss_gate/research/):
  nothing on the gate, monitor or baseline path does, lazily or not.
- The workflows do not know about Prefect; the flows add it.
- The pure core imports no orchestration, validation, drift or file-writing library.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

REPO = Path(__file__).resolve().parents[2]
PACKAGE = REPO / "hss_gate"
RESEARCH = "hss_gate.research"
CORE = ("corpus", "sentences", "signals", "distance", "severity", "restore", "perturb")


def _imports(path: Path) -> list[tuple[str, str]]:
    """(enclosing top-level function or '<module>', imported module) for every import."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: list[tuple[str, str]] = []

    def visit(node: ast.AST, owner: str) -> None:
        for child in ast.iter_child_nodes(node):
            name = owner
            if owner == "<module>" and isinstance(child, ast.FunctionDef | ast.ClassDef):
                name = child.name
            if isinstance(child, ast.Import):
                found.extend((name, alias.name) for alias in child.names)
            elif isinstance(child, ast.ImportFrom) and child.module:
                found.append((name, child.module))
                found.extend((name, f"{child.module}.{a.name}") for a in child.names)
            visit(child, name)

    visit(tree, "<module>")
    return found


def _modules(*roots: Path) -> list[Path]:
    return sorted(p for root in roots for p in root.rglob("*.py"))


def _is_research(module: str) -> bool:
    return module == RESEARCH or module.startswith(RESEARCH + ".")


def test_nothing_outside_the_research_wing_and_the_cli_imports_it():
    wing, cli = PACKAGE / "research", PACKAGE / "cli.py"
    checked = [p for p in _modules(PACKAGE, REPO / "flows") if wing not in p.parents and p != cli]
    assert len(checked) > 40  # the package and the flows, not an empty glob
    offenders = [
        f"{path.relative_to(REPO)}: {module}"
        for path in checked
        for _, module in _imports(path)
        if _is_research(module)
    ]
    assert offenders == []


def test_only_the_experiment_and_bench_commands_import_the_research_wing():
    users = {owner for owner, module in _imports(PACKAGE / "cli.py") if _is_research(module)}
    assert users == {"experiment", "bench"}


def test_the_checker_is_not_research():
    """Decisions will use the consistency checker: it lives beside the other adapters."""
    for path in _modules(PACKAGE / "consistency"):
        assert not [m for _, m in _imports(path) if _is_research(m)], path


def test_workflows_do_not_import_prefect_and_flows_do():
    for path in _modules(PACKAGE / "workflows"):
        assert not [m for _, m in _imports(path) if m.split(".")[0] in {"prefect", "flows"}], path
    flows = {m.split(".")[0] for path in _modules(REPO / "flows") for _, m in _imports(path)}
    assert {"prefect", "hss_gate"} <= flows


def test_the_pure_core_imports_no_orchestration_or_io_library():
    banned = {"prefect", "dvc", "great_expectations", "evidently", "sqlalchemy", "typer"}
    banned_own = {"hss_gate.io", "hss_gate.workflows", "hss_gate.cli"}
    for name in CORE:
        imported = {m for _, m in _imports(PACKAGE / f"{name}.py")}
        assert not {m.split(".")[0] for m in imported} & banned, name
        assert not {m for m in imported for own in banned_own if m.startswith(own)}, name


def test_the_flows_define_no_step_of_their_own():
    """Every workflow step is the workflow's; a flow module defines only its flow and main."""
    for name in ("gate", "monitor", "baseline"):
        tree = ast.parse((REPO / "flows" / f"{name}.py").read_text(encoding="utf-8"))
        functions = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
        assert functions == {f"{name}_flow", "main"}, (name, functions)


def test_the_readme_layout_lists_every_module():
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    layout = readme[readme.index("## Layout") :]
    layout = layout[: layout.index("\n## ", 5)]
    missing = [
        str(path.relative_to(REPO))
        for path in _modules(PACKAGE, REPO / "flows")
        if path.name not in layout and path.name != "__init__.py"
    ]
    assert missing == []


def _module_name(path: Path) -> str:
    parts = path.relative_to(REPO).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def test_no_two_modules_import_each_other_even_through_others():
    """Every import points down a floor (ARCHITECTURE.md): no cycle, lazy imports included."""
    modules = {_module_name(p): p for p in _modules(PACKAGE) if p.name != "__init__.py"}
    graph = {
        name: {m for _, m in _imports(path) if m in modules and m != name}
        for name, path in modules.items()
    }
    done: set[str] = set()

    def cycle_from(node: str, path: list[str]) -> list[str] | None:
        if node in path:
            return [*path[path.index(node) :], node]
        if node in done:
            return None
        for nxt in sorted(graph[node]):
            found = cycle_from(nxt, [*path, node])
            if found:
                return found
        done.add(node)
        return None

    assert len(graph) > 40
    cycles = [c for name in sorted(graph) if (c := cycle_from(name, []))]
    assert not cycles, " -> ".join(cycles[0])
