"""The layout's rules, read from the code's imports (ARCHITECTURE.md).

- Every module has one floor, declared once in ARCHITECTURE.md's concept table (read here), and
  imports only from its own floor or lower ones, lazy imports inside functions included.
- Only the CLI's `experiment`, `bench` and `systems` commands import the research wing
  (hss_gate/research/): nothing on the gate, monitor or baseline path does, lazily or not.
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
FLOORS = (
    "foundations",
    "pure core",
    "rules",
    "adapters",
    "engine",
    "workflows",
    "entry points",
)
APART = "research"  # imports any floor below the entry points; only the CLI imports it
# declared in ARCHITECTURE.md, added by branches in flight (merged, they exist)
PENDING = {"hss_gate/signals/tables.py", "hss_gate/decision/checks.py"}


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


def declared_floors() -> dict[str, str]:
    """ARCHITECTURE.md's concept table: module or folder path -> floor (the one declaration)."""
    text = (REPO / "ARCHITECTURE.md").read_text(encoding="utf-8")
    table = text[text.index("## Which module owns which concept") :]
    floors: dict[str, str] = {}
    for line in table.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 4 or not cells[1].startswith("`"):
            continue
        path, floor = cells[1].strip("`"), cells[2]
        assert path not in floors, f"{path}: declared twice"
        assert floor in (*FLOORS, APART), f"{path}: unknown floor '{floor}'"
        floors[path] = floor
    return floors


def _floor_of(path: Path, floors: dict[str, str]) -> str | None:
    relative = path.relative_to(REPO).as_posix()
    if relative in floors:
        return floors[relative]
    folders = [f for f in floors if f.endswith("/") and relative.startswith(f)]
    return floors[max(folders, key=len)] if folders else None


def _modules(*roots: Path) -> list[Path]:
    return sorted(p for root in roots for p in root.rglob("*.py"))


def _is_research(module: str) -> bool:
    return module == RESEARCH or module.startswith(RESEARCH + ".")


def test_nothing_outside_the_research_wing_and_the_cli_imports_it():
    wing, cli = PACKAGE / "research", PACKAGE / "cli"
    checked = [
        p
        for p in _modules(PACKAGE, REPO / "flows")
        if wing not in p.parents and cli not in p.parents
    ]
    assert len(checked) > 40  # the package and the flows, not an empty glob
    offenders = [
        f"{path.relative_to(REPO)}: {module}"
        for path in checked
        for _, module in _imports(path)
        if _is_research(module)
    ]
    assert offenders == []


def test_only_the_research_commands_import_the_research_wing():
    """In every module of the CLI package, only these command functions import the wing."""
    cli = _modules(PACKAGE / "cli")
    assert len(cli) > 5  # the package's modules, not an empty glob
    users = {owner for path in cli for owner, module in _imports(path) if _is_research(module)}
    assert users == {"experiment", "bench", "systems"}


def test_the_checker_is_not_research():
    """Decisions will use the consistency checker: it lives beside the other adapters."""
    for path in _modules(PACKAGE / "consistency"):
        assert not [m for _, m in _imports(path) if _is_research(m)], path


def test_workflows_do_not_import_prefect_and_flows_do():
    for path in _modules(PACKAGE / "workflows"):
        assert not [m for _, m in _imports(path) if m.split(".")[0] in {"prefect", "flows"}], path
    flows = {m.split(".")[0] for path in _modules(REPO / "flows") for _, m in _imports(path)}
    assert {"prefect", "hss_gate"} <= flows


def _declared_modules() -> dict[str, tuple[Path, str]]:
    floors = declared_floors()
    return {
        _module_name(path): (path, floor)
        for path in _modules(PACKAGE, REPO / "flows")
        if (floor := _floor_of(path, floors)) is not None
    }


def test_every_module_has_one_declared_floor():
    floors = declared_floors()
    assert len(floors) > 50  # the table, not a header
    undeclared = [
        str(p.relative_to(REPO))
        for p in _modules(PACKAGE, REPO / "flows")
        if _floor_of(p, floors) is None
    ]
    assert undeclared == []
    missing = [p for p in floors if not (REPO / p).exists()]
    assert missing == []


TOP_LEVEL = 12  # entries at the top of hss_gate/ besides __init__.py, __main__.py, py.typed


def _packages() -> list[Path]:
    return sorted(d for d in PACKAGE.iterdir() if (d / "__init__.py").exists())


def test_the_package_top_holds_at_most_twelve_entries():
    entries = [
        p.name
        for p in PACKAGE.iterdir()
        if p.name not in {"__init__.py", "__main__.py", "py.typed"} and not p.name.startswith("_")
    ]
    assert len(entries) >= 5  # the package, not an empty folder
    assert len(entries) <= TOP_LEVEL, sorted(entries)


def test_every_package_states_its_floor_and_no_module_in_it_stands_higher():
    """A package's row is its ceiling: a module declared inside it may stand lower, never higher,
    so an import that points up fails by its path."""
    floors = declared_floors()
    packages = _packages()
    assert len(packages) >= 10
    unstated = [p.name for p in packages if f"{p.relative_to(REPO).as_posix()}/" not in floors]
    assert unstated == []
    above = [
        f"{path} ({floor}) in {folder} ({floors[folder]})"
        for path, floor in floors.items()
        for folder in floors
        if folder.endswith("/")
        and path != folder
        and path.startswith(folder)
        and _rank(floor) > _rank(floors[folder])
    ]
    assert above == []


MODULE_LINES, FUNCTION_LINES = 600, 60


def test_no_module_over_600_lines_and_no_function_over_60_outside_research():
    """Size guards: a module past 600 lines holds more than one concept; a function past 60
    lines more than one step (the research wing's functions are exempt, its modules are not)."""
    too_long = []
    for path in _modules(PACKAGE):
        source = path.read_text(encoding="utf-8")
        where = path.relative_to(REPO).as_posix()
        if len(source.splitlines()) > MODULE_LINES:
            too_long.append(f"{where}: {len(source.splitlines())} lines")
        if "research" in path.relative_to(PACKAGE).parts:
            continue
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                length = node.end_lineno - node.lineno + 1  # type: ignore[operator]
                if length > FUNCTION_LINES:
                    too_long.append(f"{where}: {node.name} {length} lines")
    assert too_long == []


def _rank(floor: str) -> float:
    return len(FLOORS) - 1.5 if floor == APART else FLOORS.index(floor)


def floor_violations() -> list[str]:
    """Every import of a module from a higher floor (research: from the entry points), and of
    the research wing from outside it and the entry points."""
    modules = _declared_modules()
    found: set[str] = set()
    for name, (path, floor) in sorted(modules.items()):
        for owner, imported in _imports(path):
            target = _resolve(imported, modules)
            if target is None or target == name:
                continue
            other = modules[target][1]
            up = _rank(other) > _rank(floor)
            into_research = other == APART and floor not in (APART, "entry points")
            if up or into_research:
                found.add(f"{name} ({floor}) -> {target} ({other}) in {owner}")
    return sorted(found)


def _resolve(imported: str, modules: dict[str, tuple[Path, str]]) -> str | None:
    """The module an import names (`from a.b import c`: a.b.c if it is a module, else a.b)."""
    parts = imported.split(".")
    for end in range(len(parts), 0, -1):
        if ".".join(parts[:end]) in modules:
            return ".".join(parts[:end])
    return None


def test_every_import_points_down_a_floor():
    assert floor_violations() == []


def test_the_floor_check_sees_an_import_that_points_up(monkeypatch, tmp_path):
    """The check is not blind: a rules module that imports an adapter is reported."""
    rules = PACKAGE / "signals" / "summary_flags.py"
    bad = tmp_path / "summary_flags.py"
    bad.write_text(
        rules.read_text(encoding="utf-8") + "\n\ndef f():\n    import hss_gate.models.language\n"
    )
    real = _imports
    monkeypatch.setitem(globals(), "_imports", lambda path: real(bad if path == rules else path))
    assert floor_violations() == [
        "hss_gate.signals.summary_flags (rules) -> hss_gate.models.language (adapters) in f"
    ]


def test_the_pure_core_imports_no_orchestration_or_io_library():
    """No file, model or service in the pure core: no orchestration, validation-suite, drift or
    store library, and neither hss_gate.common.io nor hss_gate.common.jsonl (the adapters read the
    files)."""
    banned = {"prefect", "dvc", "great_expectations", "evidently", "sqlalchemy", "typer"}
    banned_own = {
        "hss_gate.common.io",
        "hss_gate.common.jsonl",
        "hss_gate.workflows",
        "hss_gate.cli",
    }
    core = [p for p, floor in _declared_modules().values() if floor == "pure core"]
    assert len(core) >= 10
    for path in core:
        imported = {m for _, m in _imports(path)}
        assert not {m.split(".")[0] for m in imported} & banned, path
        assert not {m for m in imported for own in banned_own if m.startswith(own)}, path


FILE_CALLS = {"open", "read_text", "read_bytes", "write_text", "write_bytes", "exists"}
FILE_CALLS |= {"is_file", "is_dir", "glob", "rglob", "iterdir", "mkdir", "unlink"}


def test_the_pure_core_and_the_rules_touch_no_file():
    """Parsing stays pure: the adapters (inputs.py, samples.py, ...) read the files."""
    touching = []
    for path, floor in _declared_modules().values():
        if floor not in ("pure core", "rules"):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call):
                func = node.func
                called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
                if called in FILE_CALLS:
                    touching.append(f"{path.relative_to(REPO)}:{node.lineno}: {called}()")
    assert touching == []


def test_the_flows_define_no_step_of_their_own():
    """Every workflow step is the workflow's; a flow module defines only its flow and main."""
    for name in ("gate", "monitor", "baseline"):
        tree = ast.parse((REPO / "flows" / f"{name}.py").read_text(encoding="utf-8"))
        functions = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
        assert functions == {f"{name}_flow", "main"}, (name, functions)


def packages_picture() -> dict[tuple[str, str], str]:
    """ARCHITECTURE.md's picture of the packages: (package, module stem) -> the floor it is
    drawn on. A line names its floor (or goes on the last one's), its package at column 15 (or
    goes on the last one's), then module names."""
    text = (REPO / "ARCHITECTURE.md").read_text(encoding="utf-8")
    section = text[text.index("## The packages") :]
    block = section.split("```")[1]
    drawn: dict[tuple[str, str], str] = {}
    floor = package = ""
    for line in block.splitlines():
        label, rest = line[:15].strip(), line[15:]
        if label in FLOORS or label == APART:
            floor = label
        words = rest.split()
        if words and not rest.startswith(" ") and words[0].endswith("/"):
            package = words.pop(0).rstrip("/")
        for word in words:
            stem = word.strip("()·,")
            if stem.isidentifier():
                drawn.setdefault((package, stem), floor)
    return drawn


def test_the_packages_picture_draws_every_module_on_its_floor():
    """Every module of hss_gate/ stands in ARCHITECTURE.md's picture, in its package, on the
    floor the concept table declares for it: the picture cannot fall behind the code."""
    drawn, floors = packages_picture(), declared_floors()
    assert len(drawn) > 100  # the picture, not a header
    wrong = []
    for path in _modules(PACKAGE):
        parts = path.relative_to(PACKAGE).parts
        if len(parts) == 1 or path.name == "__init__.py":
            continue
        floor = _floor_of(path, floors)
        where = drawn.get((parts[0], path.stem))
        if where != floor:
            wrong.append(f"{path.relative_to(REPO)}: drawn on {where}, declared {floor}")
    assert wrong == []


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
