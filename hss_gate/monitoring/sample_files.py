"""Sample files read and validated row by row: JSON Lines or CSV samples, or a summaries file
joined with its corpus (`from_summaries`), for the production sample store
(hss_gate/monitoring/store.py).

Sample files are JSON Lines (``.jsonl`` / ``.json``, one object per line) or CSV (``.csv`` with a
header row). Fields: ``sample_id``, ``document``, ``summary`` (may be empty, must be present),
``model_id``, ``timestamp`` (ISO 8601; naive means UTC) and optional ``category``
(default ``"unspecified"``; an empty CSV cell counts as absent).

Choices a caller should know about:

- Unknown fields (JSON keys, CSV columns) are rejected, not ignored: a misspelt optional field such
  as ``categroy`` would otherwise silently fall back to its default.
- Every row is validated; a bad row becomes a :class:`RowError` with its 1-based physical line
  number (for CSV the line where the record starts; the header is line 1). Blank lines are skipped.
  Header problems in a CSV file make the whole file unusable (:class:`InputError`).
"""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Callable, Iterator, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from hss_gate.common.errors import InputError
from hss_gate.common.jsonl import BadLine, jsonl_lines
from hss_gate.monitoring.records import REQUIRED_FIELDS, SAMPLE_FIELDS, RowError, Sample

_CSV_FIELD_LIMIT = 1 << 26  # 64 MiB per cell: documents can exceed csv's 128 KiB default
_UNDECODABLE = re.compile("[\udc80-\udcff]")  # what surrogateescape leaves for invalid UTF-8


def _describe(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors():
        field = ".".join(str(part) for part in err["loc"]) or "record"
        if err["type"] == "missing":
            parts.append(f"missing field '{field}'")
        elif err["type"] == "extra_forbidden":
            parts.append(f"unknown field '{field}' (a typo? allowed: {', '.join(SAMPLE_FIELDS)})")
        else:
            parts.append(f"field '{field}': {err['msg'].removeprefix('Value error, ')}")
    return "; ".join(parts)


def _json_kind(value: Any) -> str:
    names = {list: "an array", str: "a string", bool: "a boolean", type(None): "null"}
    return names.get(type(value), "a number")


def _jsonl_records(data: bytes, path: Path) -> Iterator[tuple[int, dict | RowError]]:
    if path.suffix.lower() == ".json" and data.lstrip().startswith(b"["):
        raise InputError(f"{path}: a JSON array; expected JSON Lines (one object per line)")
    for number, record in jsonl_lines(data):
        if isinstance(record, BadLine):
            yield number, RowError(number, _bad_line(record))
            continue
        yield number, record


def _bad_line(bad: BadLine) -> str:
    if isinstance(bad.error, UnicodeDecodeError):
        return f"not valid UTF-8 ({bad.error.reason} at byte {bad.error.start})"
    if isinstance(bad.error, json.JSONDecodeError):
        return f"invalid JSON ({bad.error.msg} at column {bad.error.colno})"
    return f"expected a JSON object, got {_json_kind(bad.value)}"


def _csv_header(row: list[str], path: Path, line: int) -> list[str]:
    header = [cell.strip() for cell in row]
    where = f"{path}:{line}: CSV header"
    if any(_UNDECODABLE.search(cell) for cell in header):
        raise InputError(f"{where} is not valid UTF-8")
    problems = []
    if dupes := sorted({c for c in header if header.count(c) > 1}):
        problems.append(f"repeated column(s) {', '.join(map(repr, dupes))}")
    if unknown := [c for c in header if c not in SAMPLE_FIELDS]:
        problems.append(
            f"unknown column(s) {', '.join(map(repr, unknown))} "
            f"(a typo? allowed: {', '.join(SAMPLE_FIELDS)})"
        )
    if missing := [c for c in REQUIRED_FIELDS if c not in header]:
        problems.append(f"missing column(s) {', '.join(map(repr, missing))}")
    if problems:
        raise InputError(f"{where}: {'; '.join(problems)}")
    return header


def _csv_records(data: bytes, path: Path) -> Iterator[tuple[int, dict | RowError]]:
    csv.field_size_limit(max(csv.field_size_limit(), _CSV_FIELD_LIMIT))
    # surrogateescape keeps undecodable bytes as lone surrogates, so one bad row does not hide
    # the others and line numbers stay exact.
    text = data.decode("utf-8", errors="surrogateescape")
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    header: list[str] | None = None
    while True:
        start = reader.line_num + 1  # the physical line where the next record starts
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            if str(exc) == "unexpected end of data":
                message = f"unterminated quoted field: lines {start}-{reader.line_num} unreadable"
            else:
                message = f"malformed CSV ({exc})"
            if header is None:
                raise InputError(f"{path}:{start}: CSV header: {message}") from exc
            yield start, RowError(start, message)
            continue
        if not row or (len(row) == 1 and not row[0].strip()):
            continue  # blank line
        if header is None:
            header = _csv_header(row, path, start)
            continue
        if any(_UNDECODABLE.search(cell) for cell in row):
            yield start, RowError(start, "not valid UTF-8")
            continue
        if len(row) != len(header):
            yield (
                start,
                RowError(start, f"{len(row)} values but the header has {len(header)} columns"),
            )
            continue
        record = dict(zip(header, row, strict=True))
        if record.get("category") == "":
            del record["category"]
        yield start, record


SummaryRecord = Callable[[dict[str, Any]], dict[str, Any] | None]


def from_summaries(
    documents: Mapping[str, Any],
    model_id: str | None = None,
    system: str | None = None,
    now: datetime | None = None,
) -> SummaryRecord:
    """Read a summaries file (`summaries:` format: doc_id, summary, optional system, timestamp,
    sample_id; other fields ignored) as samples: the document and category come from the corpus
    by doc_id, the model id from `model_id` or the record's `system`, the timestamp from the
    record or the ingest time. Records of another system than `system` are skipped (None)."""
    stamp = (now or datetime.now(UTC)).isoformat()

    def to_sample(record: dict[str, Any]) -> dict[str, Any] | None:
        own = None if record.get("system") is None else str(record["system"])
        if system is not None and own != system:
            return None
        doc_id = record.get("doc_id")
        if isinstance(doc_id, bool) or not isinstance(doc_id, str | int) or not str(doc_id).strip():
            raise ValueError("field 'doc_id' is missing or empty")
        doc = documents.get(str(doc_id))
        if doc is None:
            raise ValueError(f"doc_id {str(doc_id)!r} is not in the corpus")
        model = model_id or own
        if model is None:
            raise ValueError("no model id: give --model-id or a 'system' field")
        return {
            "sample_id": str(record.get("sample_id") or f"{model}/{doc_id}"),
            "document": doc.text,
            "summary": record.get("summary"),
            "model_id": model,
            "timestamp": record.get("timestamp") or stamp,
            "category": doc.category,
        }

    return to_sample


def _open_records(
    path: Path, summaries: SummaryRecord | None
) -> Iterator[tuple[int, dict | RowError]]:
    suffix = path.suffix.lower()
    if suffix not in (".jsonl", ".json", ".csv"):
        raise InputError(f"{path}: unsupported sample file type (use .jsonl, .json or .csv)")
    if path.is_dir():
        raise InputError(f"{path}: is a directory, not a sample file")
    if not path.is_file():
        raise InputError(f"{path}: no such file")
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise InputError(f"{path}: cannot read ({exc.strerror})") from exc
    data = data.removeprefix(b"\xef\xbb\xbf")  # UTF-8 byte-order mark
    if summaries is not None and suffix == ".csv":
        raise InputError(f"{path}: a summaries file is JSON Lines (doc_id, summary per line)")
    return _csv_records(data, path) if suffix == ".csv" else _jsonl_records(data, path)


def _row_sample(
    line: int,
    record: dict,
    summaries: SummaryRecord | None,
    first_seen: dict[str, int],
) -> Sample | RowError | None:
    """One record as a sample, a :class:`RowError`, or None (a record of another system)."""
    if summaries is not None:
        try:
            record = summaries(record)
        except ValueError as exc:
            return RowError(line, str(exc))
        if record is None:
            return None
    try:
        sample = Sample.model_validate(record)
    except ValidationError as exc:
        return RowError(line, _describe(exc))
    if sample.sample_id in first_seen:
        return RowError(
            line,
            f"duplicate sample_id {sample.sample_id!r} "
            f"(first at line {first_seen[sample.sample_id]})",
        )
    first_seen[sample.sample_id] = line
    return sample


def read_samples(
    path: str | Path, summaries: SummaryRecord | None = None
) -> tuple[list[Sample], list[RowError]]:
    """Read and validate every row of a JSONL or CSV sample file (or, with `summaries`, of a
    JSONL summaries file joined with its corpus, see `from_summaries`).

    Returns the valid samples in file order and one :class:`RowError` per rejected row (invalid
    UTF-8 or JSON, missing/blank/unknown fields, bad timestamps, a sample_id repeated in the file).
    Raises :class:`InputError` for a missing file, an unsupported extension, an unusable CSV
    header or a file without any rows ("no samples").
    """
    path = Path(path)
    records = _open_records(path, summaries)
    samples: list[Sample] = []
    errors: list[RowError] = []
    first_seen: dict[str, int] = {}
    n_rows = 0
    for line, record in records:
        n_rows += 1
        row = (
            record
            if isinstance(record, RowError)
            else _row_sample(line, record, summaries, first_seen)
        )
        if isinstance(row, RowError):
            errors.append(row)
        elif row is not None:
            samples.append(row)
    if n_rows == 0 or not (samples or errors):  # nothing, or no line of the chosen system
        raise InputError(f"{path}: no samples")
    return samples, errors
