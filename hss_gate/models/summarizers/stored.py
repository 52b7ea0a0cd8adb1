"""Summaries a user already has (`summaries:` model URIs): a JSONL file keyed by doc_id.

`summaries:runs/candidate.jsonl` reads one JSON object per line with `doc_id` and `summary`;
`?system=NAME` picks one system from a file that holds several (a `system` field). Unknown
fields are ignored. The summaries of perturbed documents, as exported by `hss perturb`, carry
the perturbed document's stable id (`perturbed_id`): its doc_id, `~`, and a digest of its text,
so the same settings and seed find them again.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import parse_qs

from hss_gate.common.errors import InputError, ModelError
from hss_gate.common.jsonl import read_jsonl

SCHEME = "summaries"
PERTURBED_SEPARATOR = "~"


def perturbed_id(doc_id: str, text: str) -> str:
    """The stable id of a perturbed document: its source's doc_id and a digest of its text."""
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]
    return f"{doc_id}{PERTURBED_SEPARATOR}{digest}"


@dataclass(frozen=True)
class SummariesSource:
    """Where a `summaries:` URI points: the file and, optionally, one system in it."""

    path: Path
    system: str | None = None

    @classmethod
    def from_target(cls, target: str) -> SummariesSource:
        """Parse the part after `summaries:` (`path[?system=NAME]`)."""
        path, _, query = target.partition("?")
        if not path:
            raise ModelError("summaries: URI without a file (use summaries:PATH[?system=NAME])")
        options = parse_qs(query, keep_blank_values=True) if query else {}
        unknown = sorted(set(options) - {"system"})
        if unknown:
            raise ModelError(
                f"summaries:{target}: unknown option '{unknown[0]}' (only ?system=NAME is known)"
            )
        systems = options.get("system", [])
        if len(systems) > 1 or (systems and not systems[0]):
            raise ModelError(f"summaries:{target}: give exactly one non-empty ?system=NAME")
        return cls(Path(path), systems[0] if systems else None)


def _field(record: Mapping[str, object], name: str, where: str) -> str:
    value = record.get(name)
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise InputError(f"{where}: field '{name}' is missing or not a string")
    return str(value)


def read_summaries(source: SummariesSource) -> dict[str, str]:
    """doc_id -> summary for the chosen system; one-line errors for every fault."""
    by_system: dict[str | None, dict[str, tuple[int, str]]] = {}
    for number, record in read_jsonl(source.path):
        where = f"{source.path}:{number}"
        doc_id = _field(record, "doc_id", where).strip()
        if not doc_id:
            raise InputError(f"{where}: field 'doc_id' is empty")
        summary = record.get("summary")
        if not isinstance(summary, str):
            raise InputError(f"{where}: field 'summary' is missing or not a string")
        system = None if record.get("system") is None else str(record["system"])
        rows = by_system.setdefault(system, {})
        if doc_id in rows:
            of = f" of system '{system}'" if system is not None else ""
            raise InputError(
                f"{where}: duplicate summary for doc_id '{doc_id}'{of} "
                f"(first at line {rows[doc_id][0]})"
            )
        rows[doc_id] = (number, summary)
    if not by_system:
        raise InputError(f"{source.path}: the file has no summaries")
    named = sorted(s for s in by_system if s is not None)
    if source.system is not None:
        if source.system not in by_system:
            known = ", ".join(named) or "none: the file has no 'system' field"
            raise InputError(
                f"{source.path}: no summaries of system '{source.system}' (systems: {known})"
            )
        chosen = by_system[source.system]
    elif len(by_system) > 1:
        raise InputError(
            f"{source.path}: the file holds {len(by_system)} systems ({', '.join(named)}); "
            "pick one with ?system=NAME"
        )
    else:
        chosen = next(iter(by_system.values()))
    return {doc_id: summary for doc_id, (_, summary) in chosen.items()}


class MissingSummaryError(ModelError):
    """A stored-summaries run was asked for a document it has no summary of."""


class StoredSummarizer:
    """Answers with summaries read from a file, looked up by the document they summarize."""

    def __init__(self, source: SummariesSource, summaries: Mapping[str, str]) -> None:
        self.source = source
        self.summaries = dict(summaries)
        self._doc_ids: dict[str, str] = {}
        self._perturbed = {  # text digest -> perturbed id
            key.partition(PERTURBED_SEPARATOR)[2]: key
            for key in self.summaries
            if PERTURBED_SEPARATOR in key
        }
        blob = json.dumps(sorted(self.summaries.items()), ensure_ascii=False).encode("utf-8")
        self.fingerprint = f"{SCHEME}:{hashlib.sha256(blob).hexdigest()[:16]}"

    @classmethod
    def from_target(cls, target: str) -> StoredSummarizer:
        """Read the file a `summaries:` URI names."""
        source = SummariesSource.from_target(target)
        return cls(source, read_summaries(source))

    def attach(self, documents: Mapping[str, str]) -> None:
        """Tell the summarizer the corpus (doc_id -> text), so texts map back to doc_ids."""
        self._doc_ids = {text: doc_id for doc_id, text in documents.items()}

    def has(self, doc_id: str) -> bool:
        """Whether the file holds a summary of this document (or perturbed document) id."""
        return doc_id in self.summaries

    def document_ids(self) -> set[str]:
        """The doc_ids of the original documents the file has summaries of (not perturbed)."""
        return {key for key in self.summaries if PERTURBED_SEPARATOR not in key}

    def perturbed_sources(self) -> set[str]:
        """The doc_ids whose perturbed documents have summaries in the file."""
        return {key.partition(PERTURBED_SEPARATOR)[0] for key in self._perturbed.values()}

    def summarize(
        self, texts: Sequence[str], progress: Callable[[int], None] | None = None
    ) -> list[str]:
        """The stored summary of each text: originals by doc_id, perturbed texts by their id."""
        out = []
        for text in texts:
            key = self._key_for(text)
            if key is None or key not in self.summaries:
                raise MissingSummaryError(
                    f"{self.source.path}: no summary for "
                    + (f"document '{key}'" if key else "a document not in the corpus")
                )
            out.append(self.summaries[key])
            if progress:
                progress(1)
        return out

    def _key_for(self, text: str) -> str | None:
        if text in self._doc_ids:
            return self._doc_ids[text]
        return self._perturbed.get(perturbed_id("", text).removeprefix(PERTURBED_SEPARATOR))


@dataclass(frozen=True)
class Pairing:
    """Which corpus documents both compared runs can be scored on: `kept` (corpus order), the
    `dropped` ones (doc_id -> the runs without a summary of it) and, per run, the doc_ids its
    file has that the corpus does not."""

    kept: list[str]
    dropped: dict[str, list[str]]
    not_in_corpus: dict[str, list[str]]

    def share_dropped(self) -> float:
        """The share of the corpus's documents dropped from the pairing."""
        total = len(self.kept) + len(self.dropped)
        return len(self.dropped) / total if total else 0.0

    def record(self, shown: int = 10) -> dict[str, object]:
        """What decision.json keeps (the first `shown` ids of each list)."""
        return {
            "corpus": len(self.kept) + len(self.dropped),
            "paired": len(self.kept),
            "dropped": len(self.dropped),
            "dropped_share": round(self.share_dropped(), 6),
            "dropped_ids": [
                {"doc_id": d, "missing_in": runs} for d, runs in list(self.dropped.items())[:shown]
            ],
            "not_in_corpus": {run: len(ids) for run, ids in self.not_in_corpus.items()},
            "not_in_corpus_ids": {run: ids[:shown] for run, ids in self.not_in_corpus.items()},
        }

    def text(self) -> str:
        """One line saying what was dropped and what the corpus lacks."""
        parts = []
        if self.dropped:
            first = ", ".join(list(self.dropped)[:3]) + (", ..." if len(self.dropped) > 3 else "")
            parts.append(
                f"{len(self.dropped)} of {len(self.kept) + len(self.dropped)} documents "
                f"({self.share_dropped():.1%}) dropped from the pairing: a summary is missing "
                f"on one side ({first})"
            )
        extra = {run: ids for run, ids in self.not_in_corpus.items() if ids}
        if extra:
            parts.append(
                "summaries of doc_ids not in the corpus, ignored: "
                + ", ".join(f"{run} {len(ids)} (first: {ids[0]})" for run, ids in extra.items())
            )
        return "; ".join(parts)


def pair_documents(corpus: Sequence[str], held: Mapping[str, set[str] | None]) -> Pairing:
    """The pairing of the corpus's doc_ids over the runs (`held`: each run's doc_ids with a
    summary, None for a run that generates its summaries and so has every document)."""
    stored = {run: ids for run, ids in held.items() if ids is not None}
    dropped = {
        doc_id: missing
        for doc_id in corpus
        if (missing := [run for run, ids in stored.items() if doc_id not in ids])
    }
    known = set(corpus)
    return Pairing(
        kept=[doc_id for doc_id in corpus if doc_id not in dropped],
        dropped=dropped,
        not_in_corpus={run: sorted(ids - known) for run, ids in stored.items()},
    )
