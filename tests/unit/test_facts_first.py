"""Facts first (issue 44): which summaries each look of the gate generates under each setting of
gate.hss_documents, gate.hss_blocks and gate.looks, what the decision says HSS rests on, and the
bad settings (a clear error or a stated fallback, never a silent change of what blocks).

The gate runs through the command line on the fake toolkit (as tests/unit/test_golden_outputs.py
does) on the reference corpus's first 16 documents: 4 categories of 4, so the default plan has
two looks of 8 (hss_gate.decision.sequential.look_sizes). Every call of the model runner is
recorded with
the documents it scored, the doc_ids it was asked to measure HSS on and the summaries it made
(strength "base": the original's; low, moderate, high: the perturbed versions'). The first look's
verdict is held at "continue" so that both looks run whatever the fakes score.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from hss_gate import cli as cli_module
from hss_gate.cli import app
from hss_gate.common.cache import Cache
from hss_gate.common.inputs import load_normalization
from hss_gate.decision.paired_comparison import compare
from hss_gate.decision.rule import LookJudgement, decide
from hss_gate.models.summarizers.base import FakeSummarizer
from hss_gate.scoring.pipeline import FACTS_FIRST, merge_results, score_documents
from hss_gate.settings import GateSettings
from tests.conftest import REPO
from tests.reliability.test_bad_input import _fake_toolkit
from tests.unit.test_not_measured import DOCS, NORMALIZATION, SearchCounter, _settings, _toolkit

pytestmark = pytest.mark.unit

ARGS = ("--candidate", "fake:lead", "--production", "extractive:lead-3", "--limit", "16")
PERTURBED = ("low", "moderate", "high")  # -k 1: one perturbed version per band


@pytest.fixture()
def fake_cli(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> CliRunner:
    """The command line on the fake toolkit, a private cache (tests/unit/test_golden_outputs.py)."""
    monkeypatch.chdir(REPO)
    monkeypatch.setenv("HSS_RUN__CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("HSS_PERTURB__GAMMA", "0")  # the hashing embedder is no sentence model
    monkeypatch.setenv("HSS_SCORE__BOOTSTRAP_RESAMPLES", "100")
    for name in ("HSS_OPENAI_API_KEY", "HSS_OPENAI_MODEL", "HSS_DEBUG"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr("hss_gate.scoring.toolkit.real_toolkit", _fake_toolkit)
    for console in (cli_module.console, cli_module.out_console):
        monkeypatch.setattr(console, "_width", 1000)
    return CliRunner()


@pytest.fixture()
def recorded(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    """Every model-runner call: role, documents, hss_documents asked for, summaries made."""
    import hss_gate.scoring.runner

    calls: list[dict[str, Any]] = []
    score_model = hss_gate.scoring.runner.score_model

    def recording(uri, docs, *args, hss_documents=None, **kwargs):
        result, meta = score_model(uri, docs, *args, hss_documents=hss_documents, **kwargs)
        calls.append(
            {
                "role": "candidate" if uri.startswith("fake:") else "production",
                "docs": [d.doc_id for d in docs],
                "hss_documents": None if hss_documents is None else sorted(hss_documents),
                "summaries": Counter(row["strength"] for row in result.summaries),
                "perturbed_docs": sorted(
                    {r["doc_id"] for r in result.summaries if r["strength"] != "base"}
                ),
            }
        )
        return result, meta

    monkeypatch.setattr(hss_gate.scoring.runner, "score_model", recording)
    continuing_looks(monkeypatch)
    return calls


def continuing_looks(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every look but the last continues, whatever it found (its checks still run)."""
    import hss_gate.workflows.gate_looks as gate_looks

    judge_look = gate_looks.judge_look

    def continuing(*args, last, **kwargs):
        judged = judge_look(*args, last=last, **kwargs)
        if last or judged.verdict == "continue":
            return judged
        return LookJudgement("continue", judged.checks, judged.gate)

    monkeypatch.setattr(gate_looks, "judge_look", continuing)


def _gate(cli, tmp_path: Path, monkeypatch, **env: str) -> tuple[Any, dict[str, Any]]:
    for key, value in env.items():
        monkeypatch.setenv(f"HSS_GATE__{key.upper()}", value)
    out = tmp_path / "gate"
    result = cli.invoke(app, ["gate", *ARGS, "-k", "1", "--out", str(out)])
    return result, json.loads((out / "decision.json").read_text())


def _per_look(calls: list[dict[str, Any]], role: str = "candidate") -> list[tuple[int, int]]:
    """(originals, perturbed versions) each look summarized for `role`."""
    return [
        (c["summaries"]["base"], sum(c["summaries"][s] for s in PERTURBED))
        for c in calls
        if c["role"] == role
    ]


def test_by_default_only_the_first_look_is_perturbed(fake_cli, tmp_path, monkeypatch, recorded):
    result, decision = _gate(fake_cli, tmp_path, monkeypatch)
    assert result.exit_code in (0, 1), result.output
    assert _per_look(recorded) == [(8, 24), (8, 0)]
    assert _per_look(recorded, "production") == [(8, 24), (8, 0)]
    first, second = (c for c in recorded if c["role"] == "candidate")
    assert first["hss_documents"] == sorted(first["docs"]) == first["perturbed_docs"]
    assert second["hss_documents"] == [] and second["perturbed_docs"] == []
    metrics = decision["metrics"]
    assert metrics["documents"] == 16 and metrics["hss_documents"] == 8
    assert metrics["signals"]["hss"]["documents"] == 8
    assert metrics["signals"]["base_consistency"].get("documents") is None  # on all 16
    assert sum(c["n"] for c in metrics["categories"]) == 8
    note = next(f for f in decision["findings"] if f["code"] == "hss.subset")
    assert "HSS measured on 8 of 16 documents (the first look's documents" in note["text"]
    assert "rests on 8 of the 16 documents of the deciding look" in note["text"]
    # the HSS checks read the documents HSS was measured on; the facts read all 16
    tables = {c["name"]: c["table"] for c in decision["checks"]}
    assert tables["mean_hss"] == tables["p95_hss"] == "hss_documents"
    assert tables["mean_unsupported_share"] == tables["low_consistency_share"] == "facts_bounds"
    assert metrics["signals"]["base_unsupported_share"].get("documents") is None  # on all 16
    rows = {(c["table"], c["name"]): c for c in decision["checks"]}
    assert rows[("hss_documents", "row_count")]["kwargs"]["value"] == 8
    assert rows[("documents", "row_count")]["kwargs"]["value"] == 16
    assert rows[("perturbations", "row_count")]["kwargs"]["value"] == 24
    assert ("documents", "hss_not_null") not in rows  # NaN outside the subset, not checked
    assert all(c["success"] for c in decision["checks"] if c["kind"] == "data")
    # 2 documents a category among the 8: fewer than gate.min_category_documents, said
    small = next(f for f in decision["findings"] if f["code"] == "categories.too_small")
    assert "among the 8 documents HSS was measured on" in small["text"]
    assert "at most 2 document(s)" in small["text"]


@pytest.mark.parametrize(
    "env", [{"hss_blocks": "true"}, {"hss_documents": "all"}], ids=["hss_blocks", "all"]
)
def test_hss_everywhere_perturbs_every_look(fake_cli, tmp_path, monkeypatch, recorded, env):
    result, decision = _gate(fake_cli, tmp_path, monkeypatch, **env)
    assert result.exit_code in (0, 1), result.output
    assert _per_look(recorded) == [(8, 24), (8, 24)]
    assert all(c["hss_documents"] is None for c in recorded)  # the runner is asked as before
    assert "hss_documents" not in decision["metrics"]
    assert not any(f["code"] == "hss.subset" for f in decision["findings"])
    tables = {c["table"] for c in decision["checks"]}
    assert tables == {"documents", "perturbations", "categories", "facts_bounds"}


def test_a_count_spans_the_looks(fake_cli, tmp_path, monkeypatch, recorded):
    result, decision = _gate(fake_cli, tmp_path, monkeypatch, hss_documents="12")
    assert result.exit_code in (0, 1), result.output
    assert _per_look(recorded) == [(8, 24), (8, 12)]
    second = [c for c in recorded if c["role"] == "candidate"][1]
    assert len(second["hss_documents"]) == 4 and second["perturbed_docs"] == second["hss_documents"]
    assert decision["metrics"]["hss_documents"] == 12


def test_configured_looks_and_a_first_look_smaller_than_the_categories(
    fake_cli, tmp_path, monkeypatch, recorded
):
    """gate.looks [2, 16]: the first look has 2 of the 4 categories, so first_look is widened
    to the first document of each category (said), measured as the looks reach them."""
    result, decision = _gate(fake_cli, tmp_path, monkeypatch, looks="[2, 16]")
    assert result.exit_code in (0, 1), result.output
    assert _per_look(recorded) == [(2, 6), (14, 6)]
    note = next(f for f in decision["findings"] if f["code"] == "hss.subset")
    assert "HSS measured on 4 of 16 documents" in note["text"]
    assert "widened to one of each of the 4 categories" in note["text"]
    assert [look["documents"] for look in decision["metrics"]["sequential"]["looks"]] == [2, 16]
    assert "over the planned looks [2, 16]" in decision["metrics"]["sequential"]["design"]


def test_looks_beyond_the_corpus_give_way_to_it_and_say_so(
    fake_cli, tmp_path, monkeypatch, recorded
):
    result, decision = _gate(fake_cli, tmp_path, monkeypatch, looks="[8, 24, 48]")
    assert result.exit_code in (0, 1), result.output
    assert [c["docs"].__len__() for c in recorded if c["role"] == "candidate"] == [8, 8]
    plan = next(f for f in decision["findings"] if f["code"] == "sequential.plan")
    assert plan["text"] == (
        "gate.looks [8, 24, 48]: 24, 48 beyond the corpus's 16 documents, so the looks are [8, 16]"
    )
    assert "after 2 of 2 look(s)" in " ".join(decision["notes"])


def test_a_subset_without_every_category_is_a_clear_error(fake_cli, tmp_path, monkeypatch):
    result, decision = _gate(fake_cli, tmp_path, monkeypatch, hss_documents="3")
    assert result.exit_code == 2
    assert decision["decision"] == "error"
    assert "gate.hss_documents 3 is fewer than the corpus's 4 categories" in decision["reasons"][0]


def test_hss_that_blocks_on_a_subset_is_refused(fake_cli, tmp_path, monkeypatch):
    result, decision = _gate(
        fake_cli, tmp_path, monkeypatch, hss_blocks="true", hss_documents="first_look"
    )
    assert result.exit_code == 2 and decision["decision"] == "error"
    assert "gate.hss_blocks is true" in decision["reasons"][0]


# ------------------------------------------------------------------ the engine and the rule


class _Concurrent(FakeSummarizer):
    """The fake summarizer through the background path (`summarize_one`, one worker), which
    real GGUF models take, recording every text it summarizes."""

    workers = 1

    def __init__(self) -> None:
        super().__init__()
        self.texts: list[str] = []

    def summarize_one(self, text: str) -> str:
        self.texts.append(text)
        return self.summarize([text])[0]


@pytest.mark.parametrize("background", [False, True], ids=["batched", "background"])
def test_the_engine_perturbs_and_summarizes_only_the_hss_documents(
    tmp_path, monkeypatch, background
):
    docs = DOCS[:4]
    searched = SearchCounter(monkeypatch)
    summarizer = _Concurrent() if background else FakeSummarizer()
    parts = [
        score_documents(
            part,
            summarizer,
            _settings(),
            _toolkit(),
            Cache(tmp_path / "cache"),
            load_normalization(NORMALIZATION),
            hss_documents=["d00"],
        )
        for part in (docs[:2], docs[2:])
    ]
    assert searched.texts == [docs[0].text]  # the others are not even searched
    result = merge_results(parts, _settings())
    by_id = {row["doc_id"]: row for row in result.documents}
    assert not math.isnan(by_id["d00"]["hss"]) and by_id["d00"]["n_perturbations"] == 2
    for doc_id in ("d01", "d02", "d03"):
        assert math.isnan(by_id[doc_id]["hss"]) and by_id[doc_id]["n_perturbations"] == 0
        assert 0.0 <= by_id[doc_id]["base_consistency"] <= 1.0
    made = Counter((r["doc_id"], r["strength"] == "base") for r in result.summaries)
    assert made == {("d00", True): 1, ("d00", False): 2, **{(d.doc_id, True): 1 for d in docs[1:]}}
    if background:
        assert set(summarizer.texts) >= {d.text for d in docs}
        assert len(summarizer.texts) <= 4 + 2
    # the run says why HSS is missing: facts first, not a summaries file without perturbed ones
    assert result.aggregates["hss_not_measured"] == FACTS_FIRST
    assert result.aggregates["hss_measured_documents"] == 1
    assert not any(w.startswith("HSS not measured") for w in result.warnings)


def test_hss_is_compared_on_the_subset_and_the_facts_on_every_document():
    def rows(hss, consistency):
        return [
            {
                "doc_id": f"d{i}",
                "category": "news" if i % 2 else "legal",
                "hss": h,
                "base_consistency": c,
                "base_mean_support": c,
                "base_unsupported_share": 0.0,
            }
            for i, (h, c) in enumerate(zip(hss, consistency, strict=True))
        ]

    nan = float("nan")
    candidate = rows([0.6, 0.4, nan, nan, nan, nan], [0.9, 0.8, 0.7, 0.9, 0.8, 0.6])
    production = rows([0.2, 0.2, nan, nan, nan, nan], [0.9, 0.9, 0.9, 0.9, 0.9, 0.9])
    comparison = compare(candidate, production, resamples=100, hss_documents={"d0", "d1"})
    hss, consistency = comparison["signals"]["hss"], comparison["signals"]["base_consistency"]
    assert comparison["hss_measured"] and comparison["hss_documents"] == 2
    assert hss["documents"] == 2 and hss["difference"] == pytest.approx(0.3)
    # on all six (on the subset alone it would be -0.05)
    assert "documents" not in consistency
    assert consistency["difference"] == pytest.approx(4.7 / 6 - 0.9)
    assert [(c["category"], c["n"]) for c in comparison["categories"]] == [
        ("legal", 1),
        ("news", 1),
    ]
    # without the subset, the NaN rows make HSS "not measured" as before (never NaN or 0)
    assert not compare(candidate, production, resamples=100)["hss_measured"]
    decision = decide(comparison, [], GateSettings())
    assert decision.metrics["hss_documents"] == 2
    small = next(f for f in decision.findings if f.code == "categories.too_small")
    assert "among the 2 documents HSS was measured on" in small.text
