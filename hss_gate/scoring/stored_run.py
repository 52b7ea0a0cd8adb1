"""A stored run (a folder `hss score` or `hss baseline` wrote) as a source of summaries.

The production baseline (data/baseline/reference) holds every summary the production model wrote
of the reference documents and of their perturbations, with the edit log that made each
perturbed text. When the summarizer's fingerprint (weights sha256, engine and CPU variant,
threads, generation settings) is the stored one, those summaries are put into the cache under
the key of the exact text they summarize. The cache is content-addressed, so a summary is used
only where the text asked for is byte for byte the one stored (a document that changed, or a
perturbation made differently, misses and is generated): seeding cannot mix summaries up.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from hss_gate.common.cache import Cache
from hss_gate.common.io import read_json
from hss_gate.common.jsonl import read_jsonl
from hss_gate.scoring.generation import summary_key
from hss_gate.settings import HssSettings
from hss_gate.text.corpus import Document
from hss_gate.text.perturb import Edit, Perturbation, apply_edits

Key = tuple[str, str, int]  # doc_id, strength ("base" for the original), index


@dataclass
class StoredRun:
    """The summaries of a stored run, the edits behind each perturbed text, and who wrote them."""

    path: Path
    fingerprint: str
    summaries: dict[Key, str]
    edits: dict[Key, list[Edit]] = field(default_factory=dict)
    meta: dict = field(default_factory=dict)
    perturbations: dict[Key, dict] = field(default_factory=dict)  # perturbations.csv rows

    def texts(self, doc: Document) -> dict[Key, str]:
        """The texts this run summarized for `doc`, rebuilt from its text and the edit log."""
        out: dict[Key, str] = {}
        for key in self.summaries:
            if key[0] != doc.doc_id:
                continue
            edits = self.edits.get(key, [])
            if key[1] != "base" and not edits:
                continue  # a perturbation without its edits cannot be rebuilt
            if all(doc.text[e.char_start :].startswith(e.original) for e in edits):
                out[key] = apply_edits(doc.text, edits) if edits else doc.text
        return out


def load_stored_run(path: str | Path) -> StoredRun:
    """summary.json's fingerprint, summaries.jsonl and edits.jsonl of a run folder."""
    path = Path(path)
    meta = read_json(path / "summary.json")
    summaries: dict[Key, str] = {}
    for _, row in read_jsonl(path / "summaries.jsonl"):
        summaries[(row["doc_id"], row["strength"], int(row["index"]))] = row["summary"]
    edits: dict[Key, list[Edit]] = {}
    edit_log = path / "edits.jsonl"
    if edit_log.exists():
        for _, row in read_jsonl(edit_log):
            key = (row.pop("doc_id"), row.pop("strength"), int(row.pop("index")))
            edits.setdefault(key, []).append(Edit(**row))
    for group in edits.values():
        group.sort(key=lambda e: e.char_start)
    rows: dict[Key, dict] = {}
    table = path / "perturbations.csv"
    if table.exists():
        with table.open(encoding="utf-8", newline="") as handle:
            for row in csv.DictReader(handle):
                rows[(row["doc_id"], row["strength"], int(row["index"]))] = row
    return StoredRun(path, str(meta.get("fingerprint", "")), summaries, edits, meta, rows)


def seed_summaries(run: StoredRun, docs: Sequence[Document], fingerprint: str, cache: Cache) -> int:
    """Put the run's summaries of `docs` into the cache for a summarizer with `fingerprint`;
    returns how many (0 when the run was written by another summarizer or settings)."""
    if run.fingerprint != fingerprint:
        return 0
    items = {
        summary_key(fingerprint, text): run.summaries[key].encode()
        for doc in docs
        for key, text in run.texts(doc).items()
    }
    cache.put_many("summaries", items)
    return len(items)


def seed_perturbations(
    run: StoredRun,
    docs: Sequence[Document],
    settings: HssSettings,
    perturb_fingerprint: str,
    cache: Cache,
) -> int:
    """Put the run's perturbations of `docs` into the cache when they were made with these
    perturbation settings and models (so the search is not repeated); returns how many
    documents. The key holds each document's text, so a changed document misses."""
    from hss_gate.scoring.pipeline import perturbation_key

    stored = run.meta.get("settings", {})
    same = (
        run.meta.get("perturb_fingerprint") == perturb_fingerprint
        and stored.get("perturb") == settings.perturb.model_dump(mode="json")
        and stored.get("generate", {}).get("max_input_words") == settings.generate.max_input_words
    )
    if not same:
        return 0
    items = {}
    for doc in docs:
        made = []
        for strength, (low, high) in settings.perturb.strengths.items():
            for k in range(settings.perturb.k):
                row = run.perturbations.get((doc.doc_id, strength, k))
                if row is None:
                    break
                edits = run.edits.get((doc.doc_id, strength, k), [])
                if not all(doc.text[e.char_start :].startswith(e.original) for e in edits):
                    break
                made.append(
                    Perturbation(
                        doc.doc_id,
                        strength,
                        k,
                        apply_edits(doc.text, edits),
                        int(row["n_words"]),
                        (low, high),
                        list(edits),
                        row["reached"] == "True",
                        row.get("note") or "",
                    ).to_dict()
                )
        if len(made) == len(settings.perturb.strengths) * settings.perturb.k:
            key = perturbation_key(doc, settings, perturb_fingerprint)
            items[key] = json.dumps(made).encode()
    cache.put_many("perturbations", items)
    return len(items)


FINGERPRINT_PARTS = ("backend", "weights", "engine build", "threads")


def fingerprint_difference(stored: str, current: str) -> str:
    """What differs between two summarizer fingerprints, in words (e.g. the engine build: the
    stored `...avx2...` against this machine's `...avx512...`)."""
    old, new = stored.split(":"), current.split(":")
    for i, (a, b) in enumerate(zip(old, new, strict=False)):
        if a != b:
            part = FINGERPRINT_PARTS[i] if i < len(FINGERPRINT_PARTS) else "generation settings"
            return f"different {part}: stored {a}, this run {b}"
    return f"fingerprints differ: stored {stored}, this run {current}"
