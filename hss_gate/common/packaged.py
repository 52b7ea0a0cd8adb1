"""The data the installed package carries, so `hss` works outside this repository's checkout.

The build step (setup.py's `build_py`) copies the project files named in `SOURCES` into the
package folder `hss_gate/_packaged/` of the wheel: the default params.yaml, the reference corpus
and production's stored baseline (dvc.yaml's outputs under data/baseline). They are generated
from data/ at every build, never kept twice in git (`hss_gate/_packaged/` is ignored). At run
time `packaged_root()` finds them through importlib.resources; in a source checkout that was not
built there are none, and the working folder's files are used as before.

Standard library only: setup.py loads this file by path, before the package is installed.
"""

from __future__ import annotations

import shutil
from importlib import resources
from pathlib import Path

PACKAGE_DIR = "_packaged"
"""The folder inside the package that holds the packaged data."""

SOURCES: dict[str, str] = {
    "params.yaml": "params.yaml",
    "data/reference": "reference",
    "data/baseline": "baseline",
}
"""Project path -> its place under the packaged folder."""

IGNORED = ("*.pyc", "__pycache__", ".gitignore", "*.dvc", "report.md")
"""Not copied: caches, DVC pointers and the human-readable run report."""


def packaged_root() -> Path | None:
    """The packaged data folder of the installed package, or None (a source checkout, or a
    package imported from a zip file, which has no real paths to give the readers)."""
    root = resources.files("hss_gate") / PACKAGE_DIR
    if not isinstance(root, Path) or not root.is_dir():
        return None
    return root


def packaged_path(project_path: str, root: Path) -> Path | None:
    """The packaged copy of a project-relative path (e.g. data/baseline/normalization.json),
    or None when it is not inside a packaged source or not in the package."""
    relative = Path(project_path)
    if relative.is_absolute():
        return None
    parts = relative.parts
    for source, target in SOURCES.items():
        head = Path(source).parts
        if parts[: len(head)] == head:
            rest = parts[len(head) :]
            candidate = root / target / Path(*rest) if rest else root / target
            return candidate if candidate.exists() else None
    return None


def build(project: Path, target: Path) -> list[Path]:
    """Copy the packaged sources from the project folder into `target` (the packaged folder of
    a build), replacing what was there; returns the files written. A missing source fails the
    build: a wheel without its baseline would fail every gate outside a checkout."""
    missing = [source for source in SOURCES if not (project / source).exists()]
    if missing:
        raise FileNotFoundError(f"packaged data: missing in {project}: {', '.join(missing)}")
    if target.exists():
        shutil.rmtree(target)
    target.mkdir(parents=True)
    for source, place in SOURCES.items():
        src, dst = project / source, target / place
        if src.is_dir():
            shutil.copytree(src, dst, ignore=shutil.ignore_patterns(*IGNORED))
        else:
            shutil.copy2(src, dst)
    return sorted(p for p in target.rglob("*") if p.is_file())
