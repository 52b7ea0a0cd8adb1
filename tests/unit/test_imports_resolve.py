"""Every import statement in hss_gate/, scripts/, experiments/ and flows/ resolves, at module
level and inside functions (an import inside a function runs only when it is called, so a
removed module or name would otherwise go unnoticed until a user hits it). The project's own
imports are checked by reading the target module's source (the names it defines or imports at
its top level, or a submodule); other imports by finding the top-level distribution installed."""

from __future__ import annotations

import ast
import importlib.util
from functools import cache
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

REPO = Path(__file__).resolve().parents[2]
SCANNED = ("hss_gate", "scripts", "experiments", "flows")
OWN = "hss_gate"


def _files() -> list[Path]:
    return sorted(p for folder in SCANNED for p in (REPO / folder).rglob("*.py"))


def _module_path(module: str) -> Path | None:
    """The source file of one of the project's modules (a package's __init__.py), or None."""
    base = REPO.joinpath(*module.split("."))
    for path in (base.with_suffix(".py"), base / "__init__.py"):
        if path.is_file():
            return path
    return None


@cache
def _top_level_names(path: Path) -> frozenset[str]:
    """The names a module binds at its top level (definitions, assignments, imports), including
    those bound under `if`/`try` blocks there."""
    names: set[str] = set()

    def visit(body: list[ast.stmt]) -> None:
        for node in body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                names.add(node.name)
            elif isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for target in targets:
                    names.update(n.id for n in ast.walk(target) if isinstance(n, ast.Name))
            elif isinstance(node, ast.Import | ast.ImportFrom):
                for alias in node.names:
                    names.add((alias.asname or alias.name).split(".")[0])
            elif isinstance(node, ast.If | ast.Try | ast.With):
                for block in ("body", "orelse", "finalbody", "handlers"):
                    for part in getattr(node, block, []) or []:
                        visit(part.body if isinstance(part, ast.ExceptHandler) else [part])

    visit(ast.parse(path.read_text(encoding="utf-8")).body)
    return frozenset(names)


def _absolute(node: ast.ImportFrom, path: Path) -> str:
    if not node.level:
        return node.module or ""
    package = path.relative_to(REPO).with_suffix("").parts[: -node.level]
    return ".".join([*package, *([node.module] if node.module else [])])


def _problems(path: Path) -> list[str]:
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        shown = path.relative_to(REPO) if path.is_relative_to(REPO) else path.name
        where = f"{shown}:{getattr(node, 'lineno', '?')}"
        if isinstance(node, ast.Import):
            for alias in node.names:
                out += _check_module(alias.name, where, path)
        elif isinstance(node, ast.ImportFrom):
            module = _absolute(node, path)
            out += _check_module(module, where, path)
            target = _module_path(module) if module.split(".")[0] == OWN else None
            if target is None:
                continue
            for alias in node.names:
                known = alias.name in _top_level_names(target) or alias.name == "*"
                if not known and _module_path(f"{module}.{alias.name}") is None:
                    out.append(f"{where}: {module} has no {alias.name}")
    return out


def _check_module(module: str, where: str, path: Path) -> list[str]:
    top = module.split(".")[0]
    if (path.parent / f"{top}.py").is_file():  # a script's sibling, on its sys.path
        return []
    if top == OWN:
        return [] if _module_path(module) else [f"{where}: no module {module}"]
    if top in {"scripts", "experiments", "flows"} and (REPO / top).is_dir():
        return [] if _module_path(module) else [f"{where}: no module {module}"]
    return [] if importlib.util.find_spec(top) else [f"{where}: {top} is not installed"]


def test_every_import_statement_resolves():
    problems = [p for path in _files() for p in _problems(path)]
    assert problems == []


def test_the_check_finds_a_missing_name_and_a_missing_module(tmp_path):
    bad = tmp_path / "probe.py"
    bad.write_text(
        "def f():\n"
        "    from hss_gate.text.sentences import no_such_function\n"
        "    from hss_gate.consistency import segment\n"
        "    import hss_gate.no_such_module\n",
        encoding="utf-8",
    )
    found = _problems(bad)
    assert len(found) == 3, found
    assert "hss_gate.text.sentences has no no_such_function" in found[0]
    assert "hss_gate.consistency has no segment" in found[1]
    assert "no module hss_gate.no_such_module" in found[2]
