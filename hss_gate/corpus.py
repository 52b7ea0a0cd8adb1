"""Load and validate a corpus of documents (JSONL: doc_id, category, tier, title, text)."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from hss_gate.errors import InputError


class Document(BaseModel):
    """One source document."""

    # unknown fields are refused: a misspelt optional field ("teir") would silently default
    model_config = ConfigDict(frozen=True, extra="forbid")

    doc_id: str = Field(min_length=1)
    category: str = Field(min_length=1)
    tier: str = "unspecified"
    title: str = ""
    text: str

    @field_validator("text")
    @classmethod
    def _text_not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("text is blank")
        return value


def _corpus_files(path: Path) -> list[Path]:
    if path.is_dir():
        files = sorted(p for p in path.rglob("*.jsonl") if p.is_file())
        if not files:
            raise InputError(f"{path}: no .jsonl files in this directory")
        return files
    if path.is_file():
        return [path]
    raise InputError(f"{path}: no such file or directory")


def _parse_lines(path: Path) -> Iterable[tuple[int, Document]]:
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise InputError(f"{path}: cannot read ({exc.strerror or exc})") from exc
    data = data.removeprefix(b"\xef\xbb\xbf")  # UTF-8 byte-order mark
    for number, raw in enumerate(data.splitlines(), start=1):
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            where = f"{exc.reason} at byte {exc.start + 1} of the line"
            raise InputError(f"{path}:{number}: not valid UTF-8 ({where})") from exc
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InputError(f"{path}:{number}: invalid JSON ({exc.msg})") from exc
        if not isinstance(record, dict):
            raise InputError(f"{path}:{number}: expected a JSON object")
        try:
            yield number, Document.model_validate(record)
        except ValidationError as exc:
            first = exc.errors()[0]
            field = ".".join(str(part) for part in first["loc"]) or "record"
            if first["type"] == "extra_forbidden":
                allowed = ", ".join(Document.model_fields)
                raise InputError(
                    f"{path}:{number}: unknown field '{field}' (a typo? allowed: {allowed})"
                ) from exc
            why = first["msg"].removeprefix("Value error, ")
            raise InputError(f"{path}:{number}: field '{field}': {why}") from exc


def load_corpus(path: str | Path, limit: int | None = None) -> list[Document]:
    """Read every document from a JSONL file or a directory of JSONL files, in order."""
    documents: list[Document] = []
    seen: dict[str, str] = {}
    for file in _corpus_files(Path(path)):
        for number, doc in _parse_lines(file):
            where = f"{file}:{number}"
            if doc.doc_id in seen:
                raise InputError(
                    f"{where}: duplicate doc_id '{doc.doc_id}' (first at {seen[doc.doc_id]})"
                )
            seen[doc.doc_id] = where
            documents.append(doc)
    if not documents:
        raise InputError(f"{path}: the corpus has no documents")
    return documents[:limit] if limit else documents
