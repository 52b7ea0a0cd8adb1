"""The house in numbers, read from the code (issue 36): modules, floors and imports of the
import graph; modules over 600 lines; workflow functions over 60 lines; module names used
three times or more; imports of the research wing from outside it.

    PYTHONPATH=. .venv/bin/python scripts/layout_counts.py
"""

from __future__ import annotations

import ast
import sys
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.unit.test_layout import (  # noqa: E402
    _declared_modules,
    _imports,
    _is_research,
    _resolve,
)


def main() -> None:
    modules = _declared_modules()
    edges = {
        (name, target)
        for name, (path, _) in modules.items()
        for _, imported in _imports(path)
        if (target := _resolve(imported, modules)) not in (None, name)
    }
    floors = Counter(floor for _, floor in modules.values())
    print(f"modules {len(modules)}, floors {len(floors)}, imports (module pairs) {len(edges)}")
    print("modules per floor: " + ", ".join(f"{f} {n}" for f, n in sorted(floors.items())))
    package = sorted((REPO / "hss_gate").rglob("*.py"))
    long = [(len(p.read_text().splitlines()), p.relative_to(REPO)) for p in package]
    print(
        "modules over 600 lines: "
        + (", ".join(f"{p} {n}" for n, p in sorted(long, reverse=True) if n > 600) or "none")
    )
    long_functions = []
    for path in sorted((REPO / "hss_gate" / "workflows").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                length = node.end_lineno - node.lineno + 1
                if length > 60:
                    long_functions.append(f"{path.name}:{node.name} {length}")
    print("workflow functions over 60 lines: " + (", ".join(long_functions) or "none"))
    names = Counter(
        p.stem for p in [*package, *(REPO / "flows").rglob("*.py")] if p.stem != "__init__"
    )
    print(
        "module names used 3+ times: "
        + (", ".join(f"{n} x{c}" for n, c in names.items() if c >= 3) or "none")
    )
    wing = REPO / "hss_gate" / "research"
    outside = sorted(
        {
            f"{name} -> {target}"
            for name, target in edges
            if _is_research(target) and wing not in modules[name][0].parents
        }
    )
    print("research imported from: " + (", ".join(outside) or "nowhere"))


if __name__ == "__main__":
    main()
