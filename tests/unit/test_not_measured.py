"""Stored summaries without perturbed ones: HSS is "not measured" (NaN in the tables, never 0,
and never a perturbation search), the facts and the summarizes checks decide the gate; a
document without both summaries is dropped from the pairing and counted, above
gate.max_dropped_share the gate errors with one line."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from hss_gate import cli as cli_module
from hss_gate.cli import app
from hss_gate.common.cache import Cache
from hss_gate.common.errors import InputError
from hss_gate.common.inputs import load_normalization
from hss_gate.decision.paired_comparison import compare
from hss_gate.decision.rule import decide
from hss_gate.decision.suites import gate_expectations
from hss_gate.models.embedding import HashingEmbedder
from hss_gate.models.summarizers.stored import StoredSummarizer, pair_documents, perturbed_id
from hss_gate.scoring import pipeline
from hss_gate.scoring.pipeline import make_perturbations, score_documents
from hss_gate.scoring.toolkit import Toolkit
from hss_gate.settings import GateSettings, HssSettings, PerturbSettings
from hss_gate.signals.tables import HSS_DOCUMENT_COLUMNS
from hss_gate.text.corpus import Document
from hss_gate.workflows.gate_preparation import paired_documents
from tests.conftest import REPO, FakeChecker, FakeTagger
from tests.unit.test_perturb import LEXICON, TEXT, VECTORS

pytestmark = pytest.mark.unit

NORMALIZATION = REPO / "data" / "baseline" / "normalization.json"
# twelve documents, two categories: each a variant of TEXT the fake tools can perturb
DOCS = [
    Document(
        doc_id=f"d{i:02d}",
        category="news" if i % 2 else "legal",
        text=TEXT.replace("Leeds", f"Leeds{i}").replace("3 homes", f"{i + 3} homes"),
    )
    for i in range(12)
]
# at least 12 words (20% of generate.summary_words): neither is near-empty
FAITHFUL = (
    "The council praised rapid growth. Officials expected large gains and rapid decline. "
    "Residents bought homes."
)
INVENTED = "Paris mayor Dupont sold 900 castles to Berlin in 1999 after a long war."


def _toolkit(settings: Any = None) -> Toolkit:
    return Toolkit(
        tagger=FakeTagger(),
        vectors=VECTORS,
        lexicon=LEXICON,
        embedder=HashingEmbedder(),
        checker=FakeChecker(),
    )


def _settings() -> HssSettings:
    return HssSettings(
        perturb=PerturbSettings(
            tau=0.7, gamma=0.0, k=1, strengths={"low": (0.05, 0.1), "high": (0.1, 0.3)}
        )
    )


def _write(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _stored(path: Path, summaries: dict[str, str], docs: list[Document]) -> StoredSummarizer:
    _write(path, [{"doc_id": k, "summary": v} for k, v in summaries.items()])
    summarizer = StoredSummarizer.from_target(str(path))
    summarizer.attach({d.doc_id: d.text for d in docs})
    return summarizer


def _strict_json(text: str) -> Any:
    """JSON without NaN or Infinity (what decision.json must be)."""

    def refuse(constant: str) -> None:
        raise AssertionError(f"{constant} in JSON")

    return json.loads(text, parse_constant=refuse)


class SearchCounter:
    """Wraps the perturbation search and records the documents it searched."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.texts: list[str] = []
        real = pipeline.find_candidates

        def counted(text: str, *args: Any, **kwargs: Any) -> Any:
            self.texts.append(text)
            return real(text, *args, **kwargs)

        monkeypatch.setattr(pipeline, "find_candidates", counted)


def test_stored_summaries_without_perturbed_ones_leave_hss_not_measured_not_zero(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    docs = DOCS[:2]
    searched = SearchCounter(monkeypatch)
    summarizer = _stored(tmp_path / "s.jsonl", {d.doc_id: FAITHFUL for d in docs}, docs)
    result = score_documents(
        docs,
        summarizer,
        _settings(),
        _toolkit(),
        Cache(tmp_path / "cache"),
        load_normalization(NORMALIZATION),
    )
    assert searched.texts == []  # no perturbation search: the slow part
    assert result.perturbations == [] and result.edits == []
    for row in result.documents:
        for column in ("hss", "hss_aware", "hss_raw", "mean_distance", "consistency_drop_mean"):
            assert math.isnan(row[column]), (column, row[column])  # NaN, never 0
        assert row["n_perturbations"] == 0
        assert 0.0 <= row["base_consistency"] <= 1.0  # the facts are measured as usual
    agg = result.aggregates
    assert agg["hss"] is None and agg["hss_raw"] is None and agg["hss_measured"] is False
    assert agg["by_category"] == {"news": None, "legal": None}
    assert "hss perturb" in agg["hss_not_measured"]
    assert any(w.startswith("HSS not measured") and "2 of 2" in w for w in result.warnings)
    assert _strict_json(json.dumps(agg))


def test_only_the_documents_with_perturbed_summaries_are_perturbed_and_measured(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    docs, settings, tools = DOCS[:2], _settings(), _toolkit()
    made = make_perturbations(docs[:1], settings, tools, Cache(tmp_path / "made"))
    summaries = {d.doc_id: FAITHFUL for d in docs} | {
        perturbed_id(docs[0].doc_id, p.text): FAITHFUL for p in made[docs[0].doc_id]
    }
    summarizer = _stored(tmp_path / "s.jsonl", summaries, docs)
    assert summarizer.perturbed_sources() == {docs[0].doc_id}
    searched = SearchCounter(monkeypatch)
    norm = load_normalization(NORMALIZATION)
    result = score_documents(docs, summarizer, settings, tools, Cache(tmp_path / "cache"), norm)
    assert searched.texts == [docs[0].text]
    measured, not_measured = result.documents
    assert not math.isnan(measured["hss"]) and measured["n_perturbations"] == len(made["d00"])
    assert math.isnan(not_measured["hss"])
    assert result.aggregates["hss"]["n"] == 1 and result.aggregates["hss_measured"] is False


def _rows(consistency: float, hss: float) -> list[dict[str, Any]]:
    return [
        {
            "doc_id": f"d{i}",
            "category": "news",
            "hss": hss,
            "hss_raw": hss,
            "consistency_drop_mean": hss,
            "base_consistency": consistency + 0.01 * (i % 3),
            "base_mean_support": consistency + 0.01 * (i % 3),
            "base_low_consistency": consistency < 0.5,
            "base_unsupported_share": 0.0,
            "base_novel_ngram_share": 0.3,
        }
        for i in range(12)
    ]


def test_the_gate_compares_and_decides_on_the_facts_when_hss_is_not_measured() -> None:
    gate = GateSettings()
    nan = float("nan")
    comparison = compare(_rows(0.3, nan), _rows(0.8, 0.4), resamples=100)
    assert comparison["hss_measured"] is False
    assert not {"hss", "hss_raw", "consistency_drop_mean"} & set(comparison["signals"])
    assert "base_consistency" in comparison["signals"] and comparison["categories"] == []
    decision = decide(comparison, [], gate)
    assert decision.decision == "block" and decision.decided_by == ["consistency"]
    assert decision.metrics["hss_measured"] is False and decision.metrics["hss_candidate"] is None
    assert any(f.code == "hss.not_measured" and f.effect == "note" for f in decision.findings)
    assert _strict_json(json.dumps(decision.model_dump(mode="json")))
    # the reverse promotes on the facts, still saying HSS was not measured
    reverse = decide(compare(_rows(0.8, 0.4), _rows(0.3, nan), resamples=100), [], gate)
    assert reverse.decision == "promote"
    assert any(f.code == "hss.not_measured" for f in reverse.findings)
    # measured on both sides: compared as before
    measured = compare(_rows(0.3, 0.2), _rows(0.8, 0.4), resamples=100)
    assert measured["hss_measured"] is True and "hss" in measured["signals"]
    assert not any(f.code == "hss.not_measured" for f in decide(measured, [], gate).findings)


def test_hss_expectations_are_skipped_not_run_on_nan() -> None:
    specs = gate_expectations(
        GateSettings(), categories=["news"], n_documents=12, n_perturbations=0, hss_measured=False
    )
    assert specs and not [s for s in specs if s.kind == "hss"]
    assert {s.table for s in specs} == {"documents", "facts_bounds"}
    columns = {s.kwargs.get("column") for s in specs}
    assert not columns & HSS_DOCUMENT_COLUMNS
    assert {"base_consistency", "base_unsupported_share", "base_empty"} <= columns
    measured = gate_expectations(
        GateSettings(), categories=["news"], n_documents=12, n_perturbations=24
    )
    assert [s for s in measured if s.kind == "hss"] and "hss" in {
        s.kwargs.get("column") for s in measured
    }


def test_documents_without_both_summaries_are_dropped_and_counted() -> None:
    corpus = [d.doc_id for d in DOCS]
    held = {
        "candidate": set(corpus) - {"d03"} | {"zz"},
        "production": set(corpus),
        "served": None,  # a model that generates has every document
    }
    pairing = pair_documents(corpus, held)
    assert pairing.dropped == {"d03": ["candidate"]}
    assert pairing.kept == [c for c in corpus if c != "d03"]
    assert pairing.not_in_corpus == {"candidate": ["zz"], "production": []}
    record = pairing.record()
    assert record["dropped"] == 1 and record["dropped_ids"] == [
        {"doc_id": "d03", "missing_in": ["candidate"]}
    ]
    assert record["not_in_corpus"] == {"candidate": 1, "production": 0}
    assert [d.doc_id for d in paired_documents(DOCS, pairing, 0.1)] == pairing.kept
    too_many = pair_documents(corpus, held | {"production": set(corpus) - {"d05"}})
    with pytest.raises(InputError, match=r"2 of 12 documents .* gate.max_dropped_share 10%") as e:
        paired_documents(DOCS, too_many, 0.1)
    assert "\n" not in str(e.value)


@pytest.fixture()
def cli(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> CliRunner:
    """The CLI in the repository, with a private cache and the fake toolkit."""
    monkeypatch.chdir(REPO)
    monkeypatch.setenv("HSS_RUN__CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("HSS_PERTURB__GAMMA", "0")
    monkeypatch.setenv("HSS_SCORE__BOOTSTRAP_RESAMPLES", "100")
    monkeypatch.setattr("hss_gate.scoring.toolkit.real_toolkit", _toolkit)
    for console in (cli_module.console, cli_module.out_console):
        monkeypatch.setattr(console, "_width", 1000)
    return CliRunner()


def _corpus(tmp_path: Path) -> Path:
    return _write(
        tmp_path / "corpus.jsonl",
        [{"doc_id": d.doc_id, "category": d.category, "text": d.text} for d in DOCS],
    )


def _summaries(tmp_path: Path, skip: tuple[str, ...] = (), extra: bool = False) -> Path:
    """Two systems in one file: `good` keeps to the source, `bad` invents (minus `skip`)."""
    rows = [{"doc_id": d.doc_id, "system": "good", "summary": FAITHFUL} for d in DOCS]
    rows += [
        {"doc_id": d.doc_id, "system": "bad", "summary": INVENTED}
        for d in DOCS
        if d.doc_id not in skip
    ]
    if extra:
        rows.append({"doc_id": "not-in-corpus", "system": "bad", "summary": INVENTED})
    return _write(tmp_path / "summaries.jsonl", rows)


def _gate(cli: CliRunner, tmp_path: Path, candidate: str, production: str, file: Path) -> Any:
    out = tmp_path / f"gate-{candidate}"
    result = cli.invoke(
        app,
        [
            "gate",
            "--candidate",
            f"summaries:{file}?system={candidate}",
            "--production",
            f"summaries:{file}?system={production}",
            "--corpus",
            str(_corpus(tmp_path)),
            "--out",
            str(out),
        ],
    )
    decision = _strict_json((out / "decision.json").read_text())
    return result, decision, out


def test_the_gate_decides_stored_summaries_on_the_facts_without_perturbing(
    cli: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_search(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("perturbations searched for summaries without perturbed ones")

    monkeypatch.setattr(pipeline, "make_perturbations", no_search)
    file = _summaries(tmp_path)
    result, decision, out = _gate(cli, tmp_path, "bad", "good", file)
    assert result.exit_code == 1, result.output
    assert {"consistency", "unsupported_entities"} & set(decision["decided_by"])
    assert "hss" not in decision["decided_by"]
    assert decision["metrics"]["hss_measured"] is False
    assert decision["metrics"]["hss_candidate"] is None
    assert "hss.not_measured" in {f["code"] for f in decision["findings"]}
    assert not [c for c in decision["checks"] if c["kind"] == "hss"]
    assert decision["metrics"]["pairing"]["dropped"] == 0
    assert "HSS not measured" in result.output
    assert "not measured" in (out / "decision.md").read_text()
    assert "not measured" in (out / "decision.html").read_text()
    assert "**HSS** | not measured" in (out / "candidate" / "report.md").read_text()
    summary = _strict_json((out / "candidate" / "summary.json").read_text())
    assert summary["aggregates"]["hss"] is None

    result, decision, _ = _gate(cli, tmp_path, "good", "bad", file)
    assert result.exit_code == 0, result.output
    assert decision["decision"] == "promote"
    assert "hss.not_measured" in {f["code"] for f in decision["findings"]}


def test_a_missing_summary_is_dropped_and_counted_above_the_share_an_error(
    cli: CliRunner, tmp_path: Path
) -> None:
    file = _summaries(tmp_path, skip=("d04",), extra=True)
    result, decision, _ = _gate(cli, tmp_path, "good", "bad", file)
    assert result.exit_code == 0, result.output
    pairing = decision["metrics"]["pairing"]
    assert pairing["corpus"] == 12 and pairing["paired"] == 11 and pairing["dropped"] == 1
    assert pairing["dropped_ids"] == [{"doc_id": "d04", "missing_in": ["production"]}]
    assert pairing["not_in_corpus"] == {"candidate": 0, "production": 1}
    assert "documents.dropped" in {f["code"] for f in decision["findings"]}
    assert decision["metrics"]["sequential"]["documents_available"] == 11

    file = _summaries(tmp_path, skip=("d04", "d07"))
    result, decision, _ = _gate(cli, tmp_path, "good", "bad", file)
    assert result.exit_code == 2, result.output
    assert decision["decision"] == "error"
    (reason,) = decision["reasons"]
    assert "2 of 12 documents" in reason and "gate.max_dropped_share" in reason
    assert "\n" not in reason


def test_the_length_target_is_stated_or_production_s_own_and_said(
    cli: CliRunner, tmp_path: Path
) -> None:
    file = _summaries(tmp_path)
    _, decision, _ = _gate(cli, tmp_path, "bad", "good", file)
    production_words = len(FAITHFUL.split())  # every production summary has this length
    assert decision["metrics"]["length_target"] == {
        "words": production_words,
        "from": "the median length of production's stored summaries",
    }
    assert "length.target" in {f["code"] for f in decision["findings"]}
    assert "production summaries: read from its summaries file" in " ".join(
        f["text"] for f in decision["findings"]
    )

    out = tmp_path / "stated"
    args = ["gate", "--candidate", f"summaries:{file}?system=bad", "--out", str(out)]
    args += ["--production", f"summaries:{file}?system=good", "--corpus", str(_corpus(tmp_path))]
    stated = cli.invoke(app, [*args, "--summary-words", str(10 * production_words)])
    decision = _strict_json((out / "decision.json").read_text())
    assert decision["metrics"]["length_target"]["from"] == "--summary-words"
    # production's own summaries are now under 20% of the target: near-empty, not summarizing
    assert decision["decision"] == "block" and stated.exit_code == 1
    assert "not_summarizing" in decision["decided_by"]
