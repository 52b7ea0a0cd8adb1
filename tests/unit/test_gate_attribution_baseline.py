"""Production's attribution results stored with the baseline (`hss baseline --stage
attribution`) and restored by the gate, with the fake likelihood scorer.

A stored reference run is written by hand (summaries, edit log, perturbations table, summary.json
with the perturbation settings and models), as `hss baseline --stage scores` writes one. The gate's
perturbations are its own route: the stored run's perturbations seeded into its run cache (as
`restore_production` does) and read back by pipeline.make_perturbations through
workflows.gate_explanation.gate_perturbations. Two strength bands, k = 2 and two explained
perturbations per document, so the order the texts are explained in matters (index 0 of each band
first).
"""

from __future__ import annotations

import csv
import json
import re
import sqlite3
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from hss_gate.common.cache import Cache
from hss_gate.common.errors import InputError, ModelError
from hss_gate.common.io import write_json_atomic, write_jsonl_atomic
from hss_gate.decision.attribution import (
    BASELINE_FILE,
    NAMESPACE,
    attribution_text,
    read_baseline_results,
)
from hss_gate.decision.sequential import stratified_order
from hss_gate.research.likelihood import OverlapLikelihood
from hss_gate.scoring.pipeline import ScoreResult
from hss_gate.scoring.stored_run import load_stored_run, seed_perturbations
from hss_gate.settings import GateAttributionSettings, HssSettings, PerturbSettings
from hss_gate.text.corpus import Document
from hss_gate.workflows.baseline_attribution import run_attribution_stage
from hss_gate.workflows.gate_explanation import attribute, gate_perturbations
from hss_gate.workflows.gate_looks import Look
from hss_gate.workflows.gate_preparation import GateRun, Role
from hss_gate.workflows.steps import DIRECT

pytestmark = pytest.mark.unit

PRODUCTION = "gguf:production"
CANDIDATE = "summaries:candidate.jsonl"  # no likelihood: only production is explained
TOOLS = "tools-1"  # the perturbation models' fingerprint the stored run was made with

DOCS = [  # corpus order; the gate's (stratified) order is a1, b1, a2, b2
    Document(doc_id="a1", category="alpha", text="Alpha beta gamma. Delta epsilon zeta. Eta."),
    Document(doc_id="a2", category="alpha", text="One two three. Four five six. Seven eight."),
    Document(doc_id="b1", category="beta", text="Red green blue. Cyan magenta. Yellow black."),
    Document(doc_id="b2", category="beta", text="North south. East west wind. Up down."),
]
SUMMARIES = {"a1": "alpha delta eta", "a2": "two five seven", "b1": "red cyan", "b2": "east up"}
# (strength, index) -> the word of each document's first sentence swapped for "omega"
SWAPPED = {("low", 0): 0, ("low", 1): 1, ("high", 0): 2, ("high", 1): 1}


def _settings(tmp_path: Path, cache: str, **perturb) -> HssSettings:
    settings = HssSettings(
        perturb=PerturbSettings(strengths={"low": (0.02, 0.5), "high": (0.5, 0.9)}, k=2, **perturb),
    )
    run = settings.run.model_copy(
        update={
            "cache_dir": str(tmp_path / cache),
            "baseline_dir": str(tmp_path / "baseline"),
            "corpus": str(tmp_path / "corpus.jsonl"),
            "production_model": PRODUCTION,
        }
    )
    gate = settings.gate.model_copy(
        update={"attribution_documents": 3, "attribution": GateAttributionSettings(perturbations=2)}
    )
    baseline = settings.baseline.model_copy(update={"attribution_documents": 3})
    return settings.model_copy(update={"run": run, "gate": gate, "baseline": baseline})


def _edit(doc: Document, position: int) -> dict:
    word = doc.text.split()[position]
    return {
        "position": position,
        "char_start": doc.text.index(word),
        "original": word.rstrip("."),
        "replacement": "omega",
        "word_cosine": 0.9,
        "sentence_similarity": 0.95,
    }


@pytest.fixture()
def baseline(tmp_path: Path) -> Path:
    """A stored reference run of the four documents (as `hss baseline --stage scores` writes
    one) and the corpus file."""
    write_jsonl_atomic(tmp_path / "corpus.jsonl", [d.model_dump() for d in DOCS])
    reference = tmp_path / "baseline" / "reference"
    settings = _settings(tmp_path, "unused")
    write_json_atomic(
        reference / "summary.json",
        {
            "fingerprint": "gguf-summarizer",
            "perturb_fingerprint": TOOLS,
            "settings": settings.model_dump(mode="json"),
        },
    )
    summaries, edits, table = [], [], []
    for doc in DOCS:
        summaries.append(
            {"doc_id": doc.doc_id, "strength": "base", "index": 0, "summary": SUMMARIES[doc.doc_id]}
        )
        for (strength, index), position in SWAPPED.items():
            key = {"doc_id": doc.doc_id, "strength": strength, "index": index}
            summaries.append(key | {"summary": f"{strength} {index}"})
            edits.append(key | _edit(doc, position))
            table.append(key | {"n_words": len(doc.text.split()), "reached": True, "note": ""})
    write_jsonl_atomic(reference / "summaries.jsonl", summaries)
    write_jsonl_atomic(reference / "edits.jsonl", edits)
    with (reference / "perturbations.csv").open("w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(table[0]))
        writer.writeheader()
        writer.writerows(table)
    return tmp_path / "baseline"


class Scorers:
    """The fake scorer for production (its evaluations counted), ModelError for the stored
    candidate summaries."""

    def __init__(self) -> None:
        self.scorer = OverlapLikelihood()
        self.scorer.fingerprint = "gguf:production:transformers:chat:loglik:bfloat16"

    def __call__(self, uri: str, settings: HssSettings) -> OverlapLikelihood:
        if uri != PRODUCTION:
            raise ModelError("stored summaries: no model, so no likelihood to explain")
        return self.scorer


class Runner:
    """The gate's runner, for gate_perturbations: a toolkit with the stored run's models."""

    def toolkit(self, settings: HssSettings) -> SimpleNamespace:
        return SimpleNamespace(perturb_fingerprint=TOOLS)


def _result(docs: list[Document]) -> ScoreResult:
    return ScoreResult(
        documents=[{"doc_id": d.doc_id, "hss": 0.5} for d in docs],
        perturbations=[],
        edits=[],
        summaries=[
            {"doc_id": d.doc_id, "strength": "base", "index": 0, "summary": SUMMARIES[d.doc_id]}
            for d in docs
        ],
        aggregates={},
    )


def _gate(settings: HssSettings, scorers: Scorers) -> tuple[dict, list[str]]:
    """The gate's attribution step as a cold gate runs it: production's stored perturbations
    seeded into its (empty) run cache first, the look in the gate's order."""
    cache = Cache(settings.run.cache_dir)
    stored = load_stored_run(Path(settings.run.baseline_dir) / "reference")
    assert seed_perturbations(stored, DOCS, settings, TOOLS, cache) == len(DOCS)
    cache.close()
    order = stratified_order(DOCS, lambda d: d.category)
    run = GateRun(
        settings,
        Path(settings.run.cache_dir).parent,
        Role("candidate", CANDIDATE, settings),
        Role("production", PRODUCTION, settings),
        list(DOCS),
        None,  # type: ignore[arg-type]
    )
    look = Look(len(order), _result(order), _result(order), {}, [], "promote")
    said: list[str] = []
    record = attribute(run, look, gate_perturbations(Runner()), scorers, DIRECT, said.append)
    assert record is not None
    return record, said


def _cached_keys(settings: HssSettings) -> dict[str, dict]:
    """Every attribution result in a run cache (its SQLite file), by key."""
    db = sqlite3.connect(Path(settings.run.cache_dir) / "cache.sqlite")
    try:
        rows = db.execute(
            "SELECT key, value FROM entries WHERE namespace = ?", (NAMESPACE,)
        ).fetchall()
    finally:
        db.close()
    return {key: json.loads(value) for key, value in rows}


def _stage(tmp_path: Path, **perturb) -> tuple[dict, list[dict], Scorers]:
    scorers = Scorers()
    settings = _settings(tmp_path, "stage-cache", **perturb)
    written = run_attribution_stage(settings, scorers=scorers)
    lines = [json.loads(line) for line in Path(written["attribution"]).read_text().splitlines()]
    return written, lines, scorers


def _ranks(record: dict) -> dict[str, float]:
    return {d["doc_id"]: d["rank"] for d in record["production"]["per_document"]}


def test_the_stage_stores_the_results_under_the_keys_the_gate_computes(tmp_path, baseline):
    written, lines, scorers = _stage(tmp_path)
    assert written["attribution"] == str(baseline / BASELINE_FILE)
    assert written["attribution_documents"] == 3 == len(lines)
    # the gate's first three documents (round-robin over categories), not the corpus's
    assert [line["result"]["doc_id"] for line in lines] == ["a1", "b1", "a2"]
    assert all(line["result"]["perturbations"] == 2 for line in lines)
    assert scorers.scorer.evaluations > 0

    (baseline / BASELINE_FILE).unlink()  # a gate without the stored results computes them
    settings = _settings(tmp_path, "gate-cache")
    record, _ = _gate(settings, Scorers())
    computed = _cached_keys(settings)  # production's only: the candidate is not measured
    assert set(computed) == {line["key"] for line in lines}
    for line in lines:
        stored, mine = line["result"], computed[line["key"]]
        assert {k: v for k, v in stored.items() if k != "seconds"} == {
            k: v for k, v in mine.items() if k != "seconds"
        }
    assert record["production_restored"] == 0 and record["restored_with_baseline"] is False


def test_a_cold_gate_restores_them_and_explains_nothing_again(tmp_path, baseline):
    _, lines, _ = _stage(tmp_path)
    assert len(lines) == 3
    scorers = Scorers()
    record, said = _gate(_settings(tmp_path, "gate-cache"), scorers)
    assert scorers.scorer.evaluations == 0  # not one explanation of production
    assert record["production_restored"] == 3 and record["restored_with_baseline"] is True
    assert record["production"]["from_cache"] == 3
    assert "attribution production: 3 of 3 documents restored from the baseline" in said
    assert "on 3 document(s) (3 restored from the baseline)" in attribution_text(record)

    (baseline / BASELINE_FILE).unlink()
    computing = Scorers()
    computed, said = _gate(_settings(tmp_path, "another-cache"), computing)
    assert computing.scorer.evaluations > 0
    assert _ranks(record) == pytest.approx(_ranks(computed))
    assert record["production"]["mean"] == pytest.approx(computed["production"]["mean"])
    assert any(np.isfinite(r) and r > 0 for r in _ranks(record).values())  # the swaps moved it
    assert computed["production_restored"] == 0
    assert any("nothing to restore" in line for line in said)


def test_stored_results_of_other_settings_are_ignored_and_recomputed(tmp_path, baseline):
    _, lines, _ = _stage(tmp_path, seed=99)  # the baseline explained with another seed
    assert len(lines) == 3
    scorers = Scorers()
    record, said = _gate(_settings(tmp_path, "gate-cache"), scorers)  # perturb.seed 13
    assert record["production_restored"] == 0 and record["restored_with_baseline"] is False
    assert record["production"]["from_cache"] == 0
    assert scorers.scorer.evaluations > 0  # explained again
    assert "attribution production: 0 of 3 documents restored from the baseline" in said
    assert all(np.isfinite(r) for r in _ranks(record).values())


def test_a_perturbation_that_swapped_nothing_is_the_text_itself_on_both_routes(tmp_path, baseline):
    """A perturbation without edits (nothing could be swapped) is the document's own text: the
    gate's seeded perturbation is, and the stage rebuilds the same one."""
    edits = baseline / "reference" / "edits.jsonl"
    rows = [json.loads(line) for line in edits.read_text().splitlines()]
    kept = [r for r in rows if (r["doc_id"], r["strength"], r["index"]) != ("a1", "low", 0)]
    write_jsonl_atomic(edits, kept)
    _, lines, _ = _stage(tmp_path)
    assert [line["result"]["doc_id"] for line in lines] == ["a1", "b1", "a2"]
    scorers = Scorers()
    record, _ = _gate(_settings(tmp_path, "gate-cache"), scorers)
    assert scorers.scorer.evaluations == 0 and record["production_restored"] == 3


@pytest.mark.parametrize(
    ("line", "why"),
    [
        ("{not json", "invalid JSON"),
        ('["key", "result"]', "expected a JSON object"),
        ('{"key": "k2", "rank": 0.1}', "expected an object with a `key`"),
        ('{"key": "", "result": {}}', "expected an object with a `key`"),
        ('{"key": "k2", "result": {"doc_id": "a1"}}', "not an attribution result (rank:"),
        (
            '{"key": "k2", "result": {"doc_id": "a1", "rank": "high", "topk": 0, "mass": 0, '
            '"perturbations": 1, "sentences": 3, "budget": 6, "evaluations": 12, "seconds": 1}}',
            "not an attribution result (rank:",
        ),
    ],
)
def test_a_malformed_line_is_an_input_error_naming_the_file_and_line(tmp_path, baseline, line, why):
    _, lines, _ = _stage(tmp_path)
    path = baseline / BASELINE_FILE
    path.write_text(json.dumps(lines[0]) + "\n" + line + "\n", encoding="utf-8")
    with pytest.raises(InputError, match="^" + re.escape(f"{path}:2: {why}")):
        read_baseline_results(path)
    with pytest.raises(InputError, match=re.escape(f"{path}:2: ")):  # the gate fails on it
        _gate(_settings(tmp_path, "gate-cache"), Scorers())


def test_the_file_reads_back_as_cache_items(tmp_path, baseline):
    assert read_baseline_results(baseline / BASELINE_FILE) is None  # absent: nothing to restore
    _, lines, _ = _stage(tmp_path)
    items = read_baseline_results(baseline / BASELINE_FILE)
    assert items is not None and set(items) == {line["key"] for line in lines}
    assert json.loads(items[lines[0]["key"]])["rank"] == lines[0]["result"]["rank"]


def test_none_to_explain_writes_an_empty_file_saying_why(tmp_path, baseline):
    settings = _settings(tmp_path, "stage-cache")
    off = settings.model_copy(
        update={"baseline": settings.baseline.model_copy(update={"attribution_documents": 0})}
    )
    said: list[str] = []
    assert run_attribution_stage(off, scorers=Scorers(), say=said.append) == {
        "attribution": str(baseline / BASELINE_FILE),
        "attribution_documents": 0,
    }
    assert (baseline / BASELINE_FILE).read_text() == ""
    assert "baseline.attribution_documents is 0" in said[-1]

    written = run_attribution_stage(
        settings, model="extractive:lead-3", scorers=Scorers(), say=said.append
    )
    assert written["attribution_documents"] == 0 and (baseline / BASELINE_FILE).read_text() == ""
    assert "extractive:lead-3 has no likelihood" in said[-1]
