"""Attribution instability in the gate (issue 26 item 5), with a fake likelihood scorer.

The fake (research.likelihood.OverlapLikelihood) is additive over words: a word of the document
weighs 1 if the summary has it, -0.1 otherwise. Its sentence-level Shapley value is the sum of
its words' weights, which permutation SHAP recovers exactly, so the instability between a
document and a perturbation is known: `instability` of the two sentence sums.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from hss_gate.common.errors import ModelError
from hss_gate.decision.attribution import (
    COLUMN,
    ExplainedDocument,
    Side,
    attribution_record,
    explain_cached,
    explain_document,
    result_key,
)
from hss_gate.decision.record import Decision
from hss_gate.decision.reports import decision_html, decision_markdown
from hss_gate.decision.rule import check_findings
from hss_gate.research.likelihood import OverlapLikelihood
from hss_gate.scoring.instability_metrics import instability
from hss_gate.scoring.pipeline import ScoreResult
from hss_gate.settings import GateAttributionSettings, HssSettings
from hss_gate.text.corpus import Document
from hss_gate.workflows.gate_explanation import add_attribution, attribute
from hss_gate.workflows.gate_looks import Look
from hss_gate.workflows.gate_preparation import GateRun, Role
from hss_gate.workflows.steps import DIRECT

pytestmark = pytest.mark.unit

TEXTS = {
    "d1": "Alpha beta gamma. Delta epsilon zeta. Eta theta iota kappa.",
    "d2": "One two three four. Five six. Seven eight nine.",
    "d3": "Red green blue. Cyan magenta. Yellow black white grey.",
}
SUMMARIES = {"d1": "alpha beta delta", "d2": "two five six nine", "d3": "red cyan yellow"}
PERTURBED = {  # one-for-one word swaps
    "d1": ["Omega psi gamma. Delta epsilon zeta. Eta theta iota kappa."],
    "d2": ["One two three four. Five chi. Seven eight rho."],
    "d3": ["Red green blue. Cyan magenta. Yellow black white grey."],  # unchanged
}


def exact(text: str, summary: str) -> np.ndarray:
    """The fake's sentence Shapley values: each sentence's sum of word weights."""
    scorer = OverlapLikelihood()
    return np.array(
        [scorer.word_weights(s.split(), summary).sum() for s in text.split(". ")], dtype=float
    )


def expected_rank(doc_id: str) -> float:
    text, summary = TEXTS[doc_id], SUMMARIES[doc_id]
    return instability(exact(text, summary), exact(PERTURBED[doc_id][0], summary), 3)["rank"]


def test_one_document_instability_is_the_exact_one() -> None:
    settings = GateAttributionSettings()
    result = explain_document(
        OverlapLikelihood(), "d1", TEXTS["d1"], SUMMARIES["d1"], PERTURBED["d1"], settings, 1500
    )
    assert result.rank == pytest.approx(expected_rank("d1"))
    assert result.rank > 0.5  # the swaps moved the explanation
    assert result.perturbations == 1 and result.sentences == 3
    assert result.budget == 6  # 2 x M


def test_an_unchanged_document_has_zero_instability() -> None:
    result = explain_document(
        OverlapLikelihood(), "d3", TEXTS["d3"], SUMMARIES["d3"], PERTURBED["d3"], _config(), 1500
    )
    assert result.rank == pytest.approx(0.0)


def test_a_one_sentence_document_is_not_measured_never_zero() -> None:
    scorer = OverlapLikelihood()
    text, perturbed = "Alpha beta gamma delta.", ["Omega beta gamma delta."]
    result = explain_document(scorer, "short", text, "alpha delta", perturbed, _config(), 1500)
    assert np.isnan(result.rank) and result.perturbations == 0 and result.sentences == 1
    assert scorer.evaluations == 0  # nothing explained
    one = explain_document(
        OverlapLikelihood(), "d1", TEXTS["d1"], SUMMARIES["d1"], PERTURBED["d1"], _config(), 1500
    )
    side = Side("m", [result, one])
    assert side.values() == {"d1": one.rank}
    record = side.record()
    assert record["too_short"] == 1 and record["mean"] == pytest.approx(one.rank)
    alone = Side("m", [result]).record()
    assert alone["mean"] is None and alone["too_short"] == 1


def test_a_cached_result_with_one_sentence_is_not_counted() -> None:
    # a result cached before the rule (instability 0.000 of a one-sentence document)
    stale = ExplainedDocument("old", 0.0, 0.0, 0.0, 1, 1, 2, 2, 0.0, cached=True)
    assert Side("m", [stale]).values() == {}


class MemoryCache:
    def __init__(self) -> None:
        self.store: dict[str, dict[str, bytes]] = {}

    def get_many(self, namespace, keys):
        found = self.store.get(namespace, {})
        return {k: found[k] for k in keys if k in found}

    def put_many(self, namespace, items):
        self.store.setdefault(namespace, {}).update(items)


def test_a_second_gate_reads_the_result_from_the_cache() -> None:
    scorer, cache = OverlapLikelihood(), MemoryCache()
    args = ("d1", TEXTS["d1"], SUMMARIES["d1"], PERTURBED["d1"], _config(), 1500)

    def cached(*args):
        key = result_key(scorer.fingerprint, *args[1:], 0)
        return explain_cached(cache, key, args[0], lambda: explain_document(scorer, *args))

    first = cached(*args)
    spent = scorer.evaluations
    again = cached(*args)
    assert scorer.evaluations == spent  # no model evaluation
    assert again.cached and not first.cached
    assert again.rank == first.rank
    other = cached(*args[:4], _config(per_sentence=3.0), 1500)
    assert not other.cached  # other explainer settings: another key


def _config(**changes) -> GateAttributionSettings:
    return GateAttributionSettings(**changes)


# --------------------------------------------------------------------------- the workflow step


def _result(doc_ids) -> ScoreResult:
    return ScoreResult(
        documents=[{"doc_id": d, "hss": 0.5} for d in doc_ids],
        perturbations=[],
        edits=[],
        summaries=[
            {"doc_id": d, "strength": "base", "index": 0, "summary": SUMMARIES[d]} for d in doc_ids
        ],
        aggregates={},
    )


def _run(tmp_path: Path, n: int, bound: float | None = None, production: str = "fake:overlap"):
    settings = HssSettings()
    gate = settings.gate.model_copy(
        update={"attribution_documents": n, "max_attribution_instability": bound}
    )
    # the run cache and the baseline in the test's folder, never the repository's
    paths = settings.run.model_copy(
        update={"cache_dir": str(tmp_path / "cache"), "baseline_dir": str(tmp_path / "baseline")}
    )
    settings = settings.model_copy(update={"gate": gate, "run": paths})
    docs = [Document(doc_id=d, text=t) for d, t in TEXTS.items()]
    run = GateRun(
        settings,
        tmp_path,
        Role("candidate", "fake:overlap", settings),
        Role("production", production, settings),
        docs,
        None,  # type: ignore[arg-type]
    )
    look = Look(3, _result(TEXTS), _result(TEXTS), {}, [], "promote")
    return run, look


def perturbed(role, docs):
    return {d.doc_id: PERTURBED[d.doc_id] for d in docs}


class Scorers:
    """Builds the fake for every URI except those named `missing` (no likelihood)."""

    def __init__(self, missing: str = "") -> None:
        self.missing = missing
        self.built: list[str] = []

    def __call__(self, uri: str, settings: HssSettings):
        if uri == self.missing:
            raise ModelError("stored summaries: no model, so no likelihood to explain")
        self.built.append(uri)
        return OverlapLikelihood()


def test_off_by_default_costs_nothing_and_adds_no_column(tmp_path: Path) -> None:
    assert HssSettings().gate.attribution_documents == 0
    run, look = _run(tmp_path, 0)
    scorers = Scorers()
    assert attribute(run, look, perturbed, scorers, DIRECT) is None
    assert scorers.built == []  # no model built
    assert all(COLUMN not in r for r in look.candidate.documents + look.production.documents)


def test_n_documents_explained_on_both_sides_with_a_ci(tmp_path: Path) -> None:
    run, look = _run(tmp_path, 2)
    record = attribute(run, look, perturbed, Scorers(), DIRECT)
    assert record is not None
    for side in ("candidate", "production"):
        assert record[side]["measured"] and record[side]["documents"] == 2
        assert record[side]["mean"] == pytest.approx(
            np.mean([expected_rank("d1"), expected_rank("d2")])
        )
        rows = {r["doc_id"]: r for r in getattr(look, side).documents}
        assert rows["d1"][COLUMN] == pytest.approx(expected_rank("d1"))
        assert np.isnan(rows["d3"][COLUMN])  # not explained: NaN, never 0
    diff = record["difference"]
    assert diff["documents"] == 2
    assert diff["difference"] == pytest.approx(0.0)  # the same fake on both sides
    assert diff["ci_low"] <= diff["difference"] <= diff["ci_high"]
    assert "checked" not in record and look.checks == []  # no threshold, no check


def test_blocks_only_with_the_threshold_set(tmp_path: Path) -> None:
    run, look = _run(tmp_path, 2, bound=0.1)
    attribute(run, look, perturbed, Scorers(), DIRECT)
    mean = [c for c in look.checks if c["code"] == "hss.attribution_instability"]
    assert len(mean) == 1 and not mean[0]["success"] and mean[0]["blocking"]
    findings = check_findings(look.checks, run.settings.gate)
    assert [f.effect for f in findings if "attribution" in f.text] == ["block"]
    data = [c for c in look.checks if c["kind"] == "data"]
    assert data and all(c["success"] for c in data)  # the column is seen, no NaN complaint

    run, look = _run(tmp_path, 2, bound=1.9)
    attribute(run, look, perturbed, Scorers(), DIRECT)
    assert all(c["success"] for c in look.checks)


def test_a_side_without_likelihood_is_not_measured(tmp_path: Path) -> None:
    uri = "summaries:prod.jsonl"
    run, look = _run(tmp_path, 2, bound=0.1, production=uri)
    record = attribute(run, look, perturbed, Scorers(missing=uri), DIRECT)
    assert record is not None
    assert record["production"]["measured"] is False
    assert "no likelihood" in record["production"]["not_measured"]
    assert record["difference"] is None
    assert all(COLUMN not in r for r in look.production.documents)
    assert record["checked"] is True  # the candidate is measured: its check runs

    run, look = _run(tmp_path, 2, bound=0.1)
    run.candidate.uri = uri
    record = attribute(run, look, perturbed, Scorers(missing=uri), DIRECT)
    assert record["checked"] is False and look.checks == []  # NaN never fails a check


def _decision(record):
    signals = {
        "hss": {
            "label": "HSS",
            "candidate": 0.5,
            "production": 0.4,
            "difference": 0.1,
            "ci_low": 0.0,
            "ci_high": 0.2,
        }
    }
    decision = Decision(decision="promote", reasons=["ok"], metrics={"signals": signals})
    add_attribution(decision, record)
    return decision


def test_the_reports_show_it_beside_hss() -> None:
    settings = GateAttributionSettings()
    measured = Side("fake:overlap")
    measured.documents.append(
        explain_document(
            OverlapLikelihood(), "d1", TEXTS["d1"], SUMMARIES["d1"], PERTURBED["d1"], settings, 1500
        )
    )
    record = attribution_record(
        measured, Side("summaries:x", not_measured="no likelihood"), settings, 4
    )
    decision = _decision(record)
    assert decision.metrics["attribution"]["production"]["not_measured"] == "no likelihood"
    for page in (decision_markdown(decision), decision_html(decision)):
        assert "attribution instability (rank, sentence SHAP)" in page
        assert "not measured: no likelihood" in page
    both = attribution_record(measured, measured, settings, 4)
    page = decision_html(_decision(both))
    assert "[+0.000, +0.000]" in page


def test_max_words_explains_only_the_first_sentences(tmp_path: Path) -> None:
    from hss_gate.decision.attribution import explained_words

    settings = HssSettings()
    assert explained_words(settings) == settings.generate.max_input_words
    gate = settings.gate.model_copy(update={"attribution": GateAttributionSettings(max_words=4)})
    capped = settings.model_copy(update={"gate": gate})
    assert explained_words(capped) == 4
    result = explain_document(
        OverlapLikelihood(), "d1", TEXTS["d1"], SUMMARIES["d1"], PERTURBED["d1"], _config(), 4
    )
    assert result.sentences == 2 and result.budget == 4  # sentences starting in 4 words
