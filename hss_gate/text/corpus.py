"""A corpus of documents (doc_id, category, tier, title, text): records validated as Documents.

`document` is accepted for `text` (the field name of many published summarization sets), and
`category` is optional: a document without one is in UNCATEGORIZED, which has no reference
constant (HSS uses the global one, with a warning) and makes one stratum for the gate's looks.

Pure: the records come from the caller (`hss_gate.common.inputs.load_corpus` reads them from JSONL).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from hss_gate.common.errors import InputError

UNCATEGORIZED = "uncategorized"


class Document(BaseModel):
    """One source document."""

    # unknown fields are refused: a misspelt optional field ("teir") would silently default
    model_config = ConfigDict(frozen=True, extra="forbid")

    doc_id: str = Field(min_length=1)
    category: str = Field(UNCATEGORIZED, min_length=1)
    tier: str = "unspecified"
    title: str = ""
    text: str

    @field_validator("text")
    @classmethod
    def _text_not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("text is blank")
        return value


def parse_document(record: dict[str, Any], where: str) -> Document:
    """One corpus record as a Document; InputError `where: why` names the first bad field."""
    if "document" in record:
        if "text" in record:
            raise InputError(f"{where}: both 'text' and 'document'; give one of them")
        record = {("text" if k == "document" else k): v for k, v in record.items()}
    try:
        return Document.model_validate(record)
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(part) for part in first["loc"]) or "record"
        if first["type"] == "extra_forbidden":
            allowed = ", ".join(Document.model_fields)
            raise InputError(
                f"{where}: unknown field '{field}' (a typo? allowed: {allowed})"
            ) from exc
        why = first["msg"].removeprefix("Value error, ")
        raise InputError(f"{where}: field '{field}': {why}") from exc


def collect_documents(
    records: Iterable[tuple[str, dict[str, Any]]], source: str, limit: int | None = None
) -> list[Document]:
    """The documents of (where, record) pairs in order: each validated, a doc_id once only;
    `source` names the corpus when it has no documents."""
    documents: list[Document] = []
    seen: dict[str, str] = {}
    for where, record in records:
        doc = parse_document(record, where)
        if doc.doc_id in seen:
            raise InputError(
                f"{where}: duplicate doc_id '{doc.doc_id}' (first at {seen[doc.doc_id]})"
            )
        seen[doc.doc_id] = where
        documents.append(doc)
    if not documents:
        raise InputError(f"{source}: the corpus has no documents")
    return documents[:limit] if limit else documents
