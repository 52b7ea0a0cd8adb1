"""The baseline's stage `attribution` (`hss baseline --stage attribution`, dvc.yaml): production's
attribution results, stored with the baseline for every gate to restore (issue 26, item 5).

`hss gate --attribution N` explains the first N documents of its deciding look on both sides.
Production's side does not change between baseline relocks, yet costs ~139 s a document with
Qwen 0.5B on every cold gate. This stage explains them once: the first
baseline.attribution_documents documents in the gate's order (hss_gate.decision.sequential's
stratified
order of the corpus: the order the gate scores and looks in), with production's likelihood scorer
(the gate's loader), each against its base summary and its perturbed texts in the stored
reference run (BASELINE/reference: the summaries and perturbations the gate restores, so the texts
it explains are these, byte for byte), through hss_gate.decision.attribution.explain_documents (the
gate's route) into the run cache. It writes BASELINE/attribution.jsonl, one
{"key": run-cache key, "result": the cached value} a document. The gate seeds its run cache with
it; the key holds the model's fingerprint, the document, the summary, the perturbed texts, the
explainer's settings and the seed, so a line that is stale (another model, document or
setting) misses and is recomputed.

It is not part of `hss baseline`'s `all` (scores, constants, metrics): `dvc repro` runs it as
its own stage, after `scores`.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hss_gate.common.cache import Cache
from hss_gate.common.errors import ModelError, error_message
from hss_gate.common.inputs import load_corpus
from hss_gate.common.io import write_jsonl_atomic
from hss_gate.decision.attribution import (
    BASELINE_FILE,
    NAMESPACE,
    ExplainedDocument,
    explain_documents,
    in_explained_order,
    load_attribution_scorer,
)
from hss_gate.decision.sequential import stratified_order
from hss_gate.scoring.stored_run import StoredRun, load_stored_run
from hss_gate.settings import HssSettings
from hss_gate.text.corpus import Document
from hss_gate.workflows.steps import DIRECT, Say, Steps, silent

STAGE = "attribution"


def stored_perturbed_texts(stored: StoredRun, doc: Document, settings: HssSettings) -> list[str]:
    """The perturbed texts of `doc` the stored run summarized, rebuilt from its edit log, in the
    order the gate explains them (the pipeline's order, band by band and k each, then
    in_explained_order); [] when one is missing or its edits do not fit the document's text
    (the gate's would not be these)."""
    rebuilt = stored.texts(doc)  # (doc_id, strength, index) -> text, its edits applied
    made: list[tuple[int, str]] = []
    for strength in settings.perturb.strengths:
        for index in range(settings.perturb.k):
            key = (doc.doc_id, strength, index)
            if key in rebuilt:
                made.append((index, rebuilt[key]))
            elif key in stored.summaries and key not in stored.edits:
                made.append((index, doc.text))  # a perturbation that swapped nothing
            else:
                return []
    return in_explained_order(made)


def stored_targets(
    stored: StoredRun, docs: list[Document], settings: HssSettings, n: int
) -> tuple[list[Document], dict[str, str], dict[str, list[str]], list[str]]:
    """The first n documents in the gate's order that the stored run has a base summary and
    every perturbed text of: those documents, their base summaries, their perturbed texts, and
    the doc_ids of the first n left out."""
    chosen, base, texts, skipped = [], {}, {}, []
    for doc in stratified_order(docs, lambda d: d.category)[:n]:
        summary = stored.summaries.get((doc.doc_id, "base", 0))
        perturbed = stored_perturbed_texts(stored, doc, settings)
        if summary is None or not perturbed:
            skipped.append(doc.doc_id)
            continue
        chosen.append(doc)
        base[doc.doc_id] = summary
        texts[doc.doc_id] = perturbed
    return chosen, base, texts, skipped


def run_attribution_stage(
    settings: HssSettings,
    *,
    model: str | None = None,
    corpus: str | None = None,
    out: str | None = None,
    scorers: Callable[[str, HssSettings], Any] = load_attribution_scorer,
    steps: Steps = DIRECT,
    say: Say = silent,
) -> dict[str, Any]:
    """Explain the first baseline.attribution_documents documents a gate explains with the
    production model (or `model`) against the stored reference run in OUT/reference (OUT:
    run.baseline_dir), and write OUT/attribution.jsonl. None to explain (the setting is 0, or
    the model has no likelihood) writes an empty file, saying why. `scorers` replaces the
    likelihood scorer's loader (tests). Returns the path written and the documents stored."""
    out_dir = Path(out or settings.run.baseline_dir)
    target = out_dir / BASELINE_FILE
    uri = model or settings.run.production_model
    n = settings.baseline.attribution_documents
    rows: list[dict[str, Any]] = []
    written = {"attribution": str(target), "attribution_documents": 0}
    if n <= 0:
        steps.io(write_jsonl_atomic, target, rows)
        say(f"wrote {target}: empty (baseline.attribution_documents is 0)")
        return written
    docs = steps.io(load_corpus, corpus or settings.run.corpus)
    stored = steps.io(load_stored_run, out_dir / "reference")
    chosen, base, texts, skipped = stored_targets(stored, docs, settings, n)
    for doc_id in skipped:
        say(
            f"attribution production {doc_id}: skipped (no base summary in {stored.path}, or "
            "its perturbed texts cannot be rebuilt from the edit log)"
        )
    try:
        scorer = scorers(uri, settings)
    except ModelError as exc:
        steps.io(write_jsonl_atomic, target, rows)
        say(f"wrote {target}: empty ({uri} has no likelihood to explain: {error_message(exc)})")
        return written

    def said(explained: ExplainedDocument) -> None:
        cost = "cached" if explained.cached else f"{explained.seconds:.1f} s"
        say(
            f"attribution production {explained.doc_id}: rank instability "
            f"{explained.rank:.3f} ({explained.sentences} sentences, "
            f"{explained.evaluations} evaluations, {cost})"
        )

    cache = Cache(settings.run.cache_dir)
    try:
        found = explain_documents(scorer, cache, chosen, base, texts, settings, said)
        values = cache.get_many(NAMESPACE, [key for key, _ in found])
    finally:
        cache.close()
    rows = [{"key": key, "result": json.loads(values[key])} for key, _ in found]
    steps.io(write_jsonl_atomic, target, rows)
    written["attribution_documents"] = len(rows)
    say(f"wrote {target}: production's attribution results of {len(rows)} document(s)")
    return written
