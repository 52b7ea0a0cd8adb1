"""JSON Lines: one reader of lines for every JSONL file hss-gate reads.

`jsonl_lines(data)` walks the bytes of a file line by line: a UTF-8 byte-order mark is dropped,
blank lines are skipped, and each other line is either its parsed value or a `BadLine` that says
why it is not one (not UTF-8, not JSON, not an object). `read_jsonl(path)` reads a file and
stops at its first bad line with `file:line: why` (InputError). Readers that report every bad
line (the sample store, the checker's pairs) keep going past a `BadLine` and word it their way.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hss_gate.common.errors import InputError

BOM = b"\xef\xbb\xbf"


@dataclass(frozen=True)
class BadLine:
    """A line that is not a JSON object: its number and why (`error` is the decoder's or the
    parser's exception; `value` what parsed, when it is not an object)."""

    number: int
    why: str
    error: UnicodeDecodeError | json.JSONDecodeError | None = None
    value: Any = None


def jsonl_lines(data: bytes, objects: bool = True) -> Iterator[tuple[int, Any | BadLine]]:
    """(line number, parsed value or BadLine) for every non-blank line of `data`; with
    `objects`, a value that is not a JSON object is a BadLine."""
    for number, raw in enumerate(data.removeprefix(BOM).splitlines(), start=1):
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            where = f"{exc.reason} at byte {exc.start + 1} of the line"
            yield number, BadLine(number, f"not valid UTF-8 ({where})", exc)
            continue
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except json.JSONDecodeError as exc:
            yield number, BadLine(number, f"invalid JSON ({exc.msg})", exc)
            continue
        if objects and not isinstance(value, dict):
            yield number, BadLine(number, "expected a JSON object", value=value)
            continue
        yield number, value


def read_bytes(path: Path) -> bytes:
    """The file's bytes, or InputError `path: cannot read (why)`."""
    try:
        return path.read_bytes()
    except OSError as exc:
        raise InputError(f"{path}: cannot read ({exc.strerror or exc})") from exc


def read_jsonl(path: str | Path, objects: bool = True) -> Iterator[tuple[int, Any]]:
    """(line number, value) of every non-blank line of a JSONL file; the first bad line raises
    InputError `file:line: why`."""
    path = Path(path)
    for number, value in jsonl_lines(read_bytes(path), objects):
        if isinstance(value, BadLine):
            raise InputError(f"{path}:{number}: {value.why}") from value.error
        yield number, value
