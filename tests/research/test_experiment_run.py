"""The whole experiment on fake models: every table, the ablations, the report files."""

from __future__ import annotations

import itertools

import pandas as pd
import pytest

from hss_gate.common.cache import Cache
from hss_gate.models.summarizers import load_summarizer
from hss_gate.research.experiment_report import localization_section, write_report
from hss_gate.research.experiment_run import external_documents, run_experiment
from hss_gate.scoring.normalization import compute_normalization
from hss_gate.scoring.pipeline import score_documents
from hss_gate.settings import ExperimentSettings, HssSettings, PerturbSettings
from hss_gate.text.corpus import Document
from tests.unit.test_perturb import TEXT
from tests.unit.test_pipeline_fakes import _toolkit as fake_toolkit

pytestmark = pytest.mark.unit

DOCS = [
    Document(doc_id=f"d{i}", category=cat, text=TEXT.replace("council", word))
    for i, (cat, word) in enumerate(
        [("news", "council"), ("legal", "court"), ("news", "board"), ("legal", "panel")]
    )
]


@pytest.fixture()
def settings() -> HssSettings:
    return HssSettings(
        perturb=PerturbSettings(
            tau=0.7, gamma=0.0, k=1, strengths={"low": (0.05, 0.1), "high": (0.1, 0.3)}
        ),
        experiment=ExperimentSettings(
            models=["fake:lead", "fake:unstable"],
            ablation_model="fake:unstable",
            ablation_documents=3,
            attribution_documents=2,
            localization_documents=2,
        ),
    )


def test_run_experiment_on_fakes(settings, tmp_path):
    tools = fake_toolkit()
    cache = Cache(tmp_path / "cache")

    def score(uri, docs, run_settings, normalization, progress=None):
        summarizer = load_summarizer(uri, run_settings)
        return score_documents(docs, summarizer, run_settings, tools, cache, normalization), {}

    norm = compute_normalization(
        [("news", 0.5, 0.6), ("legal", 0.4, 0.5)],
        quantile=0.95,
        model="ref",
        settings_digest="s",
        created="now",
    )

    def comparators(uri, docs, base):
        return pd.DataFrame(
            {
                "doc_id": [d.doc_id for d in docs],
                "summac_zs": [len(base[d.doc_id]) / 1000 for d in docs],
            }
        )

    def attribution(uri, docs, base):
        words = [
            [
                {
                    "word": w,
                    "mean_abs_change": 0.1 * (i == 2),
                    "attribution": (0.1 + 0.2 if i == 0 else 0.3) if i < 3 else 0.0,  # rounding
                }
                for i, w in enumerate(d.text.split())
            ]
            for d in docs
        ]
        return pd.DataFrame(
            {
                "doc_id": [d.doc_id for d in docs],
                "shap_instability": [len(base[d.doc_id]) / 100 for d in docs],
                "attribution_words": words,
            }
        )

    errors = pd.DataFrame({"doc_id": ["d0", "d1", "d2"], "model": ["u"] * 3, "errors": [1, 3, 2]})
    result = run_experiment(
        DOCS,
        settings,
        norm,
        score=score,
        embed=tools.embedder.encode,
        comparators=comparators,
        attribution=attribution,
        errors=errors,
        model_names={"u": "fake:unstable"},
    )
    docs = result.documents
    assert len(docs) == 8 and set(docs["model"]) == {"fake:lead", "fake:unstable"}
    # the unstable fake is worse by construction
    means = docs.groupby("model")["hss"].mean()
    assert means["fake:unstable"] > means["fake:lead"]
    assert docs["summac_zs"].notna().all()
    assert docs["shap_instability"].notna().sum() == 4  # first 2 documents x 2 models
    assert "attribution_words" not in docs  # moved into the localization items
    tables = result.tables
    assert {
        "correlations",
        "models",
        "strength",
        "domains",
        "extractiveness",
        "handcheck",
        "paper_vs_ours",
        "ablations",
        "attribution_claim",
    } <= set(tables)
    claim = tables["attribution_claim"]
    assert list(claim["scope"]) == ["pooled"] and claim["n"].tolist() == [4]  # 2 per model: too few
    assert list(tables["ablations"]["ablation"]) == [
        "full method",
        "no normalization",
        "no NER protection",
        "no semantic filter",
        "no stop-word protection",
    ]
    assert "summac_zs" in set(tables["correlations"]["column"])
    # the 2 highest-HSS documents plus every explained one (first 2 documents x 2 models)
    explained = [i for i in result.localization if "source_words" in i]
    assert {(i["model"], i["doc_id"]) for i in explained} == {
        (m, d) for m in ("fake:lead", "fake:unstable") for d in ("d0", "d1")
    }
    assert 4 <= len(result.localization) <= 6
    for item in explained:
        text = next(d.text for d in DOCS if d.doc_id == item["doc_id"])
        assert item["source_words"] == text.split()
        assert item["word_changes"][2] == 0.1 and sum(item["word_changes"]) == 0.1
        assert item["moved_words"][0] == [2, text.split()[2], 0.1]  # the word that moved most
        assert item["blocks"] == 2  # words 0-2 share one value, the rest another
    for item in result.localization:
        assert len(item["sentences"]) == len(item["sentence_shares"])
        assert (
            sum(item["sentence_shares"]) == pytest.approx(1.0) or sum(item["sentence_shares"]) == 0
        )

    out = tmp_path / "report"
    write_report(
        out,
        tables,
        settings.perturb.model_dump_json(indent=1),
        result.notes,
        localization_section(result.localization),
        docs,
        tables["strength"],
    )
    for name in (
        "report.md",
        "report.html",
        "correlations.csv",
        "ablations.csv",
        "hss_by_strength.png",
        "hss_vs_comparators.png",
        "hss_by_domain.png",
        "hss_vs_rewriting_and_invention.png",
    ):
        assert (out / name).stat().st_size > 0, name


def test_localization_html_escapes_text():
    html = localization_section(
        [
            {
                "doc_id": "<b>",
                "model": "m",
                "hss": 0.5,
                "sentences": ["<script>x</script>", "ok"],
                "sentence_shares": [0.9, 0.1],
                "source_words": ["<img", "src=x>"],
                "word_changes": [1.0, 0.0],
            }
        ]
    )
    assert "<script>" not in html and "&lt;script&gt;" in html and "<img" not in html


def test_external_documents(tmp_path):
    path = tmp_path / "x.jsonl"
    path.write_text('{"article": "One. Two."}\n\n{"text": "Three."}\n{"article": ""}\n')
    docs = external_documents(path, 5, "news")
    assert [d.text for d in docs] == ["One. Two.", "Three."]
    assert all(d.category == "news" for d in docs)
    assert external_documents(tmp_path / "missing.jsonl", 5, "news") == []


def test_attribution_hook_adds_instability_for_models_with_likelihoods(settings, tmp_path):
    from hss_gate.research.experiment_run import attribution_hook

    tools = fake_toolkit()
    settings.experiment.shap_max_evals = 16
    settings.experiment.lime_samples = 16
    hook = attribution_hook(settings, tools, Cache(tmp_path / "cache"))
    base = {d.doc_id: "the council approved the plan" for d in DOCS[:2]}
    table = hook("fake:overlap", DOCS[:2], base)  # an additive scorer with exact Shapley values
    assert list(table["doc_id"]) == ["d0", "d1"]
    assert table["shap_instability"].between(0, 2).all()
    assert table["lime_instability"].between(0, 2).all()
    assert (table["shap_evaluations"] > 0).all()
    # a model without token probabilities gets no attribution columns, not an error
    assert list(hook("extractive:lead-3", DOCS[:2], base).columns) == ["doc_id"]


class Recorder:
    """A Progress that records each stage's starts and advances."""

    def __init__(self) -> None:
        self.events: list[tuple[str, str, int]] = []

    def __call__(self, stage: str, total: int, done: int):
        self.events.append(("start", stage, total))
        return lambda n: self.events.append(("advance", stage, n))


def documents_of(events: list[tuple[str, str, int]], stage: str) -> list[tuple[int, list[int]]]:
    """Per start of `stage`: its total and the advances until the next start."""
    out: list[tuple[int, list[int]]] = []
    for kind, name, n in events:
        if name != stage:
            continue
        if kind == "start":
            out.append((n, []))
        else:
            out[-1][1].append(n)
    return out


@pytest.mark.parametrize("methods", [["shap", "lime"], ["shap", "sentence_shap"]])
def test_attribution_progress_moves_during_each_document(settings, tmp_path, methods):
    from hss_gate.research.experiment_run import attribution_hook

    settings.experiment.attribution_methods = methods
    settings.experiment.shap_max_evals = 16
    settings.experiment.lime_samples = 16
    recorder = Recorder()
    hook = attribution_hook(settings, fake_toolkit(), Cache(tmp_path / "cache"), recorder)
    base = {d.doc_id: "the council approved the plan" for d in DOCS[:2]}
    table = hook("fake:overlap", DOCS[:2], base)
    documents = documents_of(recorder.events, "attribution fake:overlap")
    assert documents == [(2, [1, 1])]
    evaluations = documents_of(recorder.events, "attribution fake:overlap evaluations")
    assert len(evaluations) == 2  # one count per document, started again for each
    for (planned, steps), row in zip(evaluations, table.itertuples(), strict=True):
        assert sum(steps) == planned > 0  # done of those planned, complete at the end
        spent = sum(getattr(row, f"{m}_evaluations") for m in methods)
        assert 0 < spent <= planned
        if "sentence_shap" not in methods:  # one explain_document: its rest comes last
            assert spent in set(itertools.accumulate(steps))  # computed, as it came back
        assert len(steps) > 4  # it moved within the document
    assert evaluations[0][0] >= 16 * (1 + 1)  # at least one explained text besides the original


def test_attribution_hook_explains_sentences_with_the_gates_explainer(settings, tmp_path):
    from hss_gate.decision.attribution import explain_document, explained_words
    from hss_gate.research.experiment_run import attribution_hook, explained_perturbations
    from hss_gate.research.likelihood import load_scorer
    from hss_gate.scoring.pipeline import make_perturbations

    tools = fake_toolkit()
    settings.experiment.attribution_methods = ["sentence_shap", "sentence_lime"]
    cache = Cache(tmp_path / "cache")
    base = {d.doc_id: "the council approved the plan" for d in DOCS[:2]}
    table = attribution_hook(settings, tools, cache)("fake:overlap", DOCS[:2], base)
    # sentence level only: no word-level explainer ran
    assert "shap_instability" not in table and "lime_instability" not in table
    assert table["sentence_shap_instability"].between(0, 2).all()
    assert table["sentence_lime_instability"].between(0, 2).all()
    assert (table["sentence_shap_evaluations"] > 0).all()
    # the same numbers as the gate's explainer on the same perturbations (LIME: method "lime")
    doc = DOCS[0]
    chosen = explained_perturbations(
        make_perturbations([doc], settings, tools, cache)[doc.doc_id],
        settings.experiment.attribution_perturbations,
    )
    scorer = load_scorer("fake:overlap", settings, "transformers", "float32")
    for column, method in (("sentence_shap", None), ("sentence_lime", "lime")):
        direct = explain_document(
            scorer,
            doc.doc_id,
            doc.text,
            base[doc.doc_id],
            [p.text for p in chosen],
            settings.gate.attribution,
            explained_words(settings),
            seed=settings.perturb.seed,
            method=method,
        )
        assert table[f"{column}_instability"].iloc[0] == pytest.approx(direct.rank, nan_ok=True)
        assert table[f"{column}_evaluations"].iloc[0] == direct.evaluations


def test_attribution_models_limit_which_models_are_explained(settings, tmp_path):
    settings.experiment.attribution_models = ["fake:unstable"]
    settings.experiment.ablation_documents = 0
    tools = fake_toolkit()
    cache = Cache(tmp_path / "cache")
    norm = compute_normalization(
        [("news", 0.5, 0.6), ("legal", 0.4, 0.5)],
        quantile=0.95,
        model="ref",
        settings_digest="s",
        created="now",
    )
    called = []

    def score(uri, docs, run_settings, normalization, progress=None):
        summarizer = load_summarizer(uri, run_settings)
        return score_documents(docs, summarizer, run_settings, tools, cache, normalization), {}

    def attribution(uri, docs, base):
        called.append(uri)
        return pd.DataFrame({"doc_id": [d.doc_id for d in docs], "shap_instability": 0.5})

    result = run_experiment(
        DOCS, settings, norm, score=score, embed=tools.embedder.encode, attribution=attribution
    )
    assert called == ["fake:unstable"]
    explained = result.documents.dropna(subset=["shap_instability"])
    assert set(explained["model"]) == {"fake:unstable"} and len(explained) == 2


def test_explained_perturbations_take_one_per_band_first():
    from types import SimpleNamespace

    from hss_gate.research.experiment_run import explained_perturbations

    perturbations = [
        SimpleNamespace(strength=band, index=i) for band in ("low", "mid", "high") for i in (0, 1)
    ]
    chosen = explained_perturbations(perturbations, 4)
    assert [(p.strength, p.index) for p in chosen] == [
        ("low", 0),
        ("mid", 0),
        ("high", 0),
        ("low", 1),
    ]
    assert len(explained_perturbations(perturbations, 10)) == 6
