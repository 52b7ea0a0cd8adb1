"""Files: every write is atomic (a temporary file in the same folder, then a rename), and
score tables and JSON are read with errors that name the file.

The one place hss-gate touches the file system for its outputs: adapters and renderers return
text, tables and folders; the workflows write them with these functions.
"""

from __future__ import annotations

import contextlib
import csv
import json
import math
import os
import shutil
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import IO, Any

import pandas as pd

from hss_gate.common.errors import InputError


@contextlib.contextmanager
def atomic_open(path: str | Path, mode: str = "w", suffix: str = ".tmp") -> Iterator[IO[Any]]:
    """Open a temporary file beside `path`; on a clean exit it replaces `path` in one rename,
    on an error it is deleted and `path` is left as it was. Creates the parent folder."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    text = "b" not in mode
    handle = tempfile.NamedTemporaryFile(  # noqa: SIM115 - closed below, before the rename
        mode,
        dir=path.parent,
        delete=False,
        suffix=suffix,
        **({"encoding": "utf-8", "newline": ""} if text else {}),
    )
    try:
        with handle:
            yield handle
        os.replace(handle.name, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(handle.name)
        raise


def write_text_atomic(path: str | Path, text: str) -> None:
    """A text file (UTF-8), written atomically."""
    with atomic_open(path) as handle:
        handle.write(text)


def write_json_atomic(path: str | Path, data: object) -> None:
    """JSON (indent 2, trailing newline), written atomically."""
    with atomic_open(path) as handle:
        json.dump(data, handle, indent=2, sort_keys=False)
        handle.write("\n")


def write_jsonl_atomic(path: str | Path, rows: Sequence[Mapping[str, Any]]) -> None:
    """One JSON object a line, written atomically."""
    with atomic_open(path) as handle:
        for row in rows:
            handle.write(json.dumps(row, ensure_ascii=False) + "\n")


def write_csv_atomic(path: str | Path, rows: Sequence[Mapping[str, Any]] | pd.DataFrame) -> None:
    """A score table as CSV (floats with 6 decimals), written atomically."""
    frame = rows if isinstance(rows, pd.DataFrame) else pd.DataFrame(rows)
    with atomic_open(path) as handle:
        frame.to_csv(handle, index=False, float_format="%.6f")


def write_rows_csv_atomic(
    path: str | Path, rows: Sequence[Mapping[str, Any]], columns: Sequence[str]
) -> None:
    """Rows as CSV with exactly `columns` (missing values and NaN empty), written atomically."""
    with atomic_open(path) as handle:
        writer = csv.DictWriter(handle, fieldnames=list(columns), extrasaction="ignore")
        writer.writeheader()
        for row in rows:
            writer.writerow({k: _cell(row.get(k)) for k in columns})


def _cell(value: Any) -> Any:
    if isinstance(value, float):
        return "" if math.isnan(value) else f"{value:.6f}"
    return value


def write_texts_atomic(files: Mapping[Path, str]) -> None:
    """Several text files (UTF-8), all or none: every one is first written to a temporary file
    beside its target; only when all are written are they renamed into place (a failure before
    that leaves no target touched and no temporary file behind). A new file gets the mode an
    ordinary write would give it (0o666 less the umask), an existing one keeps its mode: the
    temporary file's private 0o600 would otherwise land in the user's repository."""
    staged: list[tuple[Path, Path]] = []
    fresh_mode = 0o666 & ~_umask()
    try:
        for path, text in files.items():
            path.parent.mkdir(parents=True, exist_ok=True)
            handle = tempfile.NamedTemporaryFile(  # noqa: SIM115 - closed here, renamed below
                "w", dir=path.parent, delete=False, suffix=".tmp", encoding="utf-8", newline=""
            )
            staged.append((Path(handle.name), path))
            with handle:
                handle.write(text)
                handle.flush()
                os.fsync(handle.fileno())
            mode = path.stat().st_mode & 0o7777 if path.exists() else fresh_mode
            os.chmod(handle.name, mode)
    except BaseException:
        for temporary, _ in staged:
            temporary.unlink(missing_ok=True)
        raise
    for temporary, path in staged:
        os.replace(temporary, path)


def _umask() -> int:
    """The process's umask (read by setting it, then restoring it at once)."""
    current = os.umask(0o022)
    os.umask(current)
    return current


def new_folder_beside(target: str | Path) -> Path:
    """An empty, world-readable temporary folder in `target`'s parent, to build `target` in."""
    target = Path(target).resolve()
    target.parent.mkdir(parents=True, exist_ok=True)
    built = Path(tempfile.mkdtemp(prefix=f".{target.name}.tmp-", dir=target.parent))
    built.chmod(0o755)  # mkdtemp makes it private; the folders built here are meant to be read
    return built


def replace_folder(built: str | Path, target: str | Path) -> None:
    """Replace folder `target` by `built` (made by new_folder_beside: the same parent)."""
    built, target = Path(built), Path(target).resolve()
    old = None
    if target.exists():
        old = Path(tempfile.mkdtemp(prefix=f".{target.name}.old-", dir=target.parent))
        os.replace(target, old / target.name)
    os.replace(built, target)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


@contextlib.contextmanager
def atomic_folder(target: str | Path) -> Iterator[Path]:
    """An empty folder beside `target` for a library that writes a whole folder of its own
    (Great Expectations' Data Docs site); on a clean exit it replaces `target` as a whole, on an
    error it is deleted and `target` is left as it was."""
    built = new_folder_beside(target)
    try:
        yield built
        replace_folder(built, target)
    finally:
        shutil.rmtree(built, ignore_errors=True)  # gone already unless something failed


def read_score_table(path: str | Path) -> pd.DataFrame:
    """A CSV score table (missing or unreadable: InputError naming the file)."""
    path = Path(path)
    if not path.exists():
        raise InputError(f"{path}: missing; run `hss baseline` (or `dvc repro`) first")
    try:
        return pd.read_csv(path, keep_default_na=False, na_values=[""])
    except (ValueError, pd.errors.ParserError) as exc:
        raise InputError(f"{path}: not a readable score table ({exc})") from exc


def read_json(path: str | Path) -> Any:
    """A JSON file (missing or invalid: InputError naming the file)."""
    path = Path(path)
    if not path.exists():
        raise InputError(f"{path}: missing; run `hss baseline` (or `dvc repro`) first")
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise InputError(f"{path}: invalid JSON ({exc})") from exc
