"""The files a run reads: the corpus (JSONL) and the normalization constants (JSON).

The file-system side of `hss_gate.text.corpus` and `hss_gate.scoring.normalization`, which only
parse and
validate: errors name the file (and the line), as `file:line: why`.
"""

from __future__ import annotations

import json
from pathlib import Path

from hss_gate.common.errors import InputError, NormalizationError
from hss_gate.common.jsonl import read_jsonl
from hss_gate.scoring.normalization import Normalization, parse_normalization
from hss_gate.text.corpus import Document, collect_documents


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


def reference_checker(scores_path: str | Path) -> str | None:
    """The checker fingerprint that scored a production reference table: the `checker` of the
    metrics.json beside it (`hss baseline`), or None when nothing says."""
    metrics = Path(scores_path).with_name("metrics.json")
    try:
        checker = json.loads(metrics.read_text(encoding="utf-8")).get("checker")
    except (OSError, ValueError, AttributeError):
        return None
    return str(checker) if checker else None


def require_same_checker(reference: str | Path, scored_by: str | None, current: str) -> None:
    """Refuse to compare consistency scored by one checker with scores of another (their
    units and thresholds differ)."""
    if scored_by is not None and scored_by != current:
        raise InputError(
            f"{reference}: scored by the checker '{scored_by}', this run uses '{current}': "
            "consistency in different units cannot be compared. Recompute the reference with "
            "this checker (`dvc repro`, or `hss baseline`), or set consistency.model back."
        )
