"""The files a run reads: the corpus (JSONL) and the normalization constants (JSON).

The file-system side of `hss_gate.corpus` and `hss_gate.normalization`, which only parse and
validate: errors name the file (and the line), as `file:line: why`.
"""

from __future__ import annotations

from pathlib import Path

from hss_gate.corpus import Document, collect_documents
from hss_gate.errors import InputError, NormalizationError
from hss_gate.jsonl import read_jsonl
from hss_gate.normalization import Normalization, parse_normalization


def corpus_files(path: Path) -> list[Path]:
    """The JSONL file, or every .jsonl file under a folder, in name order."""
    if path.is_dir():
        files = sorted(p for p in path.rglob("*.jsonl") if p.is_file())
        if not files:
            raise InputError(f"{path}: no .jsonl files in this directory")
        return files
    if path.is_file():
        return [path]
    raise InputError(f"{path}: no such file or directory")


def load_corpus(path: str | Path, limit: int | None = None) -> list[Document]:
    """Read every document from a JSONL file or a directory of JSONL files, in order."""
    records = (
        (f"{file}:{number}", record)
        for file in corpus_files(Path(path))
        for number, record in read_jsonl(file)
    )
    return collect_documents(records, str(path), limit)


def load_normalization(path: str | Path) -> Normalization:
    """Read a normalization file, with a clear error when it is missing or malformed."""
    path = Path(path)
    if not path.exists():
        raise NormalizationError(
            f"{path}: no normalization constants; run `hss baseline` (or `dvc repro`) first"
        )
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, ValueError) as exc:
        raise NormalizationError(f"{path}: not a valid normalization file ({exc})") from exc
    return parse_normalization(text, str(path))
