"""`hss perturb`: the documents a model must summarize for HSS, exported for a model the gate
does not run itself.

The export holds every original document (its own doc_id) and every perturbed version (a stable
id from `perturbed_id`: the source's doc_id and a digest of the perturbed text), made with the
settings and seed the gate uses, so the gate finds the same perturbations again. The user
summarizes the `document` of every line wherever the model runs and hands the summaries back as
a `summaries:` file (`doc_id`, `summary`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hss_gate.common.errors import InputError
from hss_gate.common.io import write_jsonl_atomic
from hss_gate.common.progress import Progress, no_progress
from hss_gate.models.summarizers.stored import perturbed_id
from hss_gate.settings import HssSettings
from hss_gate.workflows.shared import load_documents


def export_rows(docs: list[Any], perturbations: dict[str, list[Any]]) -> list[dict[str, Any]]:
    """One row per distinct document to summarize: each original, then its perturbed versions
    (two perturbations that came out the same text are one row: one summary serves both)."""
    rows: list[dict[str, Any]] = []
    for doc in docs:
        rows.append(
            {
                "doc_id": doc.doc_id,
                "document": doc.text,
                "source_doc_id": doc.doc_id,
                "strength": "base",
                "index": 0,
            }
        )
        seen = {doc.text}
        for p in perturbations[doc.doc_id]:
            if p.text in seen:
                continue
            seen.add(p.text)
            rows.append(
                {
                    "doc_id": perturbed_id(doc.doc_id, p.text),
                    "document": p.text,
                    "source_doc_id": doc.doc_id,
                    "strength": p.strength,
                    "index": p.index,
                }
            )
    return rows


def export_perturbations(
    settings: HssSettings,
    tools: Any,
    *,
    out: str | Path,
    corpus: str | None = None,
    limit: int | None = None,
    progress: Progress = no_progress,
) -> tuple[Path, int, int]:
    """Write the export; returns (path, documents, perturbed documents)."""
    from hss_gate.common.cache import Cache
    from hss_gate.scoring.pipeline import make_perturbations

    target = Path(out)
    if target.is_dir():
        raise InputError(f"--out {target}: is a directory; give a .jsonl file")
    docs = load_documents(corpus or settings.run.corpus, limit)
    cache = Cache(settings.run.cache_dir)
    try:
        perturbations = make_perturbations(docs, settings, tools, cache, progress)
    finally:
        cache.close()
    rows = export_rows(docs, perturbations)
    write_jsonl_atomic(target, rows)
    return target, len(docs), len(rows) - len(docs)
