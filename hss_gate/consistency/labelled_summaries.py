"""Human-labelled summaries other than SummEdits', read as labelled sentences for the checker's
training: QAGS (a label a sentence, by the workers' majority), the SummaC subsets (FactCC,
SummEval: a label a summary) and FRANK (`factuality`, the share of a summary's sentences with
no error).

A sentence is taken only where its own label is known: every sentence of a summary labelled
consistent (label 1); label 0 for a sentence the QAGS workers rejected, for an inconsistent
summary of one sentence, and for every sentence of a FRANK summary with no factual sentence.
The other sentences of an inconsistent summary (which of them is wrong is not known) are not
read. `document_marks` and `is_marked` find copies of a document across these files, whose CNN/DM
articles overlap, so a set left out of training keeps its documents out of every other set.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from hss_gate.common.errors import InputError
from hss_gate.text.sentences import split_sentences

# A document's mark: 200 of its letters and digits after the first 50, which differ between
# copies of one article ("(CNN)", "By . Daily Mail Reporter ."); a document holding another's
# mark is a copy of it. Set by hand; on the development sets' CNN/DM articles it finds the 5
# QAGS articles that FRANK also holds (and 11 of FactCC's, 3 of SummEval's).
MARK_SKIP, MARK_LENGTH = 50, 200


@dataclass(frozen=True)
class LabelledSummary:
    """A summary's sentences whose labels are known, with its document."""

    id: str
    document: str
    sentences: tuple[tuple[str, int], ...]  # (sentence, 1 = supported, 0 = not)


def _letters(text: str) -> str:
    return re.sub(r"[^a-z0-9]", "", text.lower())


def document_marks(paths: Iterable[str | Path]) -> frozenset[str]:
    """The marks of every document in these files (`read_documents`' formats)."""
    from hss_gate.consistency.entailment_data import read_documents

    marks = set()
    for path in paths:
        for _, text in read_documents(path):
            letters = _letters(text)
            marks.add(letters[MARK_SKIP : MARK_SKIP + MARK_LENGTH] or letters)
    return frozenset(marks)


def is_marked(text: str, marks: frozenset[str]) -> bool:
    """Whether `text` is a copy (in any case, spacing or punctuation) of a marked document."""
    letters = _letters(text)
    return any(mark in letters for mark in marks)


def read_labelled_summaries(path: str | Path) -> list[LabelledSummary]:
    """The labelled sentences of a QAGS JSON Lines file, a SummaC-style JSON object of records
    (`document`, `claim`, `label`) or FRANK's summaries.jsonl (documents.jsonl beside it)."""
    path = Path(path)
    if not path.is_file():
        raise InputError(f"{path}: no such file")
    if path.suffix == ".json":
        data = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(data, dict):
            raise InputError(f"{path}: not a SummaC-style JSON object of records")
        return [_summary_label(f"{path.stem}:{key}", rec) for key, rec in _records(path, data)]
    records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]
    if records and "summary_sentences" in records[0]:
        return [_qags(f"{path.stem}:{i}", rec) for i, rec in enumerate(records)]
    if records and "factuality" in records[0]:
        return _frank(path, records)
    raise InputError(f"{path}: neither QAGS (summary_sentences) nor FRANK (factuality) records")


def _records(path: Path, data: dict) -> Iterable[tuple[str, dict]]:
    for key, rec in data.items():
        if not isinstance(rec, dict) or "claim" not in rec or "label" not in rec:
            raise InputError(f"{path}: record {key} has no claim and label")
        yield str(key), rec


def _known(sentences: list[str], consistent: bool) -> tuple[tuple[str, int], ...]:
    if consistent:
        return tuple((s, 1) for s in sentences)
    return tuple((s, 0) for s in sentences) if len(sentences) == 1 else ()


def _summary_label(summary_id: str, rec: dict) -> LabelledSummary:
    sentences = split_sentences(str(rec["claim"]))
    known = _known(sentences, int(rec["label"]) == 1)
    return LabelledSummary(summary_id, str(rec["document"]), known)


def _qags(summary_id: str, rec: dict) -> LabelledSummary:
    known = []
    for sentence in rec["summary_sentences"]:
        answers = [str(r["response"]).strip().lower() for r in sentence["responses"]]
        rejected = sum(a == "no" for a in answers) * 2 > len(answers)
        known.append((str(sentence["sentence"]).strip(), int(not rejected)))
    return LabelledSummary(summary_id, str(rec["article"]), tuple(known))


def _frank(path: Path, records: list[dict]) -> list[LabelledSummary]:
    documents_file = path.with_name("documents.jsonl")
    if not documents_file.is_file():
        raise InputError(f"{path}: FRANK summaries need their documents.jsonl beside them")
    lines = documents_file.read_text(encoding="utf-8").splitlines()
    documents = {rec["doc_id"]: rec["document"] for rec in map(json.loads, filter(None, lines))}
    out = []
    for rec in records:
        sentences = split_sentences(str(rec["summary"]))
        share = float(rec["factuality"])
        known = _known(sentences, True) if share == 1.0 else ()
        if share == 0.0:
            known = tuple((s, 0) for s in sentences)
        summary_id = f"{path.parent.name}:{rec['doc_id']}|{rec['system']}"
        out.append(LabelledSummary(summary_id, documents[rec["doc_id"]], known))
    return out
