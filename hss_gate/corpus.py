"""Load and validate a corpus of documents (JSONL: doc_id, category, tier, title, text)."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from hss_gate.errors import InputError


class Document(BaseModel):
    """One source document."""

    model_config = ConfigDict(frozen=True, extra="ignore")

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
        lines = path.read_text(encoding="utf-8").splitlines()
    except UnicodeDecodeError as exc:
        raise InputError(f"{path}: not valid UTF-8 ({exc.reason} at byte {exc.start})") from exc
    for number, line in enumerate(lines, start=1):
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
            raise InputError(f"{path}:{number}: field '{field}': {first['msg']}") from exc


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
