"""Run the paper's analysis: score every model, add comparators, ablate, build the tables."""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from hss_gate.common.errors import InputError
from hss_gate.common.jsonl import read_jsonl
from hss_gate.common.progress import Progress, no_progress
from hss_gate.research.experiment import (
    ATTRIBUTION_CLAIMS,
    attribution_table,
    correlation_table,
    extractiveness_table,
    group_table,
    handcheck_table,
    model_table,
    strength_table,
)
from hss_gate.research.experiment_report import paper_table
from hss_gate.scoring.distance import transport_shares
from hss_gate.scoring.normalization import Normalization
from hss_gate.settings import HssSettings
from hss_gate.text.corpus import Document
from hss_gate.text.sentences import split_sentences

ABLATIONS: dict[str, dict[str, Any]] = {
    "full method": {},
    "no NER protection": {"protect_entities": False},
    "no semantic filter": {"semantic_filter": False},
    "no stop-word protection": {"protect_stopwords": False},
}

# the attribution hook's column of per-word SHAP records (instability.WordChange dicts); moved
# out of the documents table into the localization items
ATTRIBUTION_WORDS = "attribution_words"
# sentence-level explainers of experiment.attribution_methods -> sentence_explainer's method
SENTENCE_METHODS = {"sentence_shap": None, "sentence_lime": "lime"}  # None: gate.attribution's

# (model URI, documents, base summaries by doc_id) -> DataFrame: doc_id + comparator columns
Comparators = Callable[[str, Sequence[Document], dict[str, str]], pd.DataFrame]


@dataclass
class ExperimentResult:
    """Everything the report needs."""

    tables: dict[str, pd.DataFrame]
    documents: pd.DataFrame
    perturbations: pd.DataFrame
    notes: list[str] = field(default_factory=list)
    localization: list[dict[str, Any]] = field(default_factory=list)


def external_documents(path: str | Path, n: int, category: str) -> list[Document]:
    """The first n documents of a JSONL file whose records have 'text' or 'article'."""
    path = Path(path)
    if n == 0 or not path.exists():
        return []
    docs = []
    for number, record in read_jsonl(path):
        if len(docs) == n:
            break
        text = record.get("text") or record.get("article") or ""
        if text.strip():
            doc_id = str(record.get("doc_id") or f"{path.stem}-{number:04d}")
            docs.append(Document(doc_id=doc_id, category=category, tier="external", text=text))
    return docs


def _tag(rows: list[dict[str, Any]], **extra: Any) -> pd.DataFrame:
    return pd.DataFrame([r | extra for r in rows])


def score_models(
    models: Sequence[str],
    docs: Sequence[Document],
    settings: HssSettings,
    normalization: Normalization,
    score: Callable[..., Any],
    progress: Progress = no_progress,
) -> tuple[pd.DataFrame, pd.DataFrame, dict[str, Any]]:
    """Documents and perturbations tables of every model (model column), and the raw results."""
    documents, perturbations, results = [], [], {}
    for uri in models:
        result, _ = score(uri, docs, settings, normalization, progress=progress)
        documents.append(_tag(result.documents, model=uri))
        perturbations.append(_tag(result.perturbations, model=uri))
        results[uri] = result
    return (
        pd.concat(documents, ignore_index=True),
        pd.concat(perturbations, ignore_index=True),
        results,
    )


def ablation_table(
    model: str,
    docs: Sequence[Document],
    settings: HssSettings,
    normalization: Normalization,
    score: Callable[..., Any],
    progress: Progress = no_progress,
) -> pd.DataFrame:
    """HSS of one model with each protection switched off, and with no normalization."""
    from hss_gate.research.experiment import _spearman

    rows = []
    for name, change in ABLATIONS.items():
        variant = settings.model_copy(deep=True)
        variant.perturb = variant.perturb.model_copy(update=change)
        result, _ = score(model, docs, variant, normalization, progress=progress)
        frame = pd.DataFrame(result.documents)
        rows.append(_ablation_row(name, frame, frame["hss"], _spearman))
        if name == "full method":  # no normalization: the mean distance itself
            rows.append(_ablation_row("no normalization", frame, frame["mean_distance"], _spearman))
    return pd.DataFrame(rows)


def _ablation_row(name: str, frame: pd.DataFrame, score: pd.Series, spearman) -> dict[str, Any]:
    by_category = frame.assign(score=score).groupby("category")["score"].mean()
    return {
        "ablation": name,
        "mean": float(score.mean()),
        "sd_between_categories": float(by_category.std(ddof=0)),
        "spearman_with_rewriting": spearman(score, frame["base_novel_ngram_share"]),
        "spearman_with_unsupported": spearman(score, frame["base_unsupported_share"]),
        "n": len(frame),
    }


def localization_items(
    results: dict[str, Any],
    documents: pd.DataFrame,
    embed: Callable,
    n: int,
    words: dict[tuple[str, str], list[dict[str, Any]]] | None = None,
) -> list[dict[str, Any]]:
    """For the n highest-HSS documents and every explained one: each base-summary sentence's
    share of the transport cost to the perturbed summaries (mean over perturbations) and, where
    SHAP records exist (`words` by (model, doc_id)), each source word's attribution change."""
    words = words or {}
    items = []
    ranked = documents.sort_values("hss", ascending=False)
    explained = ranked.set_index(["model", "doc_id"]).index.isin(list(words))
    top = ranked[(np.arange(len(ranked)) < n) | explained]
    for row in top.itertuples(index=False):
        summaries = [s for s in results[row.model].summaries if s["doc_id"] == row.doc_id]
        base = next(s["summary"] for s in summaries if s["strength"] == "base")
        sentences = split_sentences(base) or [base]
        base_vectors = np.asarray(embed(sentences))
        shares = np.zeros(len(sentences))
        others = [s["restored"] for s in summaries if s["strength"] != "base"]
        for other in others:
            vectors = np.asarray(embed(split_sentences(other) or [other]))
            shares += transport_shares(vectors, base_vectors)  # per base sentence
        items.append(
            {
                "doc_id": row.doc_id,
                "model": row.model,
                "hss": float(row.hss),
                "sentences": sentences,
                "sentence_shares": list(shares / max(len(others), 1)),
            }
        )
        records = words.get((row.model, row.doc_id))
        if records:
            items[-1] |= moved_words(records)
    return items


def moved_words(records: Sequence[dict[str, Any]], k: int = 10) -> dict[str, Any]:
    """From SHAP's per-word records: every word with its change, the k words whose share of the
    attribution moved most (position, word, change), and the resolution reached: how many
    contiguous blocks share one value (a budget below 2(M-1) evaluations leaves word groups)."""
    changes = [float(r["mean_abs_change"]) for r in records]
    values = [float(r["attribution"]) for r in records]
    order = sorted(range(len(records)), key=lambda i: (-changes[i], i))[:k]
    moved = (not np.isclose(a, b, rtol=1e-9, atol=1e-12) for a, b in itertools.pairwise(values))
    blocks = 1 + sum(moved)  # a shared value differs only by rounding inside a block
    return {
        "source_words": [r["word"] for r in records],
        "word_changes": changes,
        "moved_words": [[i, records[i]["word"], changes[i]] for i in order],
        "blocks": blocks if records else 0,
    }


def analysis_tables(
    documents: pd.DataFrame,
    perturbations: pd.DataFrame,
    normalization: Normalization,
    errors: pd.DataFrame | None,
    model_names: dict[str, str],
    settings: HssSettings,
) -> dict[str, pd.DataFrame]:
    """Every table of the report except the ablations."""
    seed, resamples = settings.perturb.seed, settings.score.bootstrap_resamples
    correlations = correlation_table(documents, resamples=resamples, seed=seed)
    strengths = strength_table(perturbations, normalization)
    domains = group_table(documents, ["model", "category"], resamples=resamples, seed=seed)
    tables = {
        "correlations": correlations,
        "models": model_table(documents, resamples=resamples, seed=seed),
        "strength": strengths,
        "domains": domains,
        "extractiveness": extractiveness_table(documents),
    }
    if any(c in documents for c in ATTRIBUTION_CLAIMS):
        tables["attribution_claim"] = attribution_table(documents, resamples=resamples, seed=seed)
    if errors is not None:
        tables["handcheck"] = handcheck_table(documents, errors, model_names)
    tables["paper_vs_ours"] = paper_table(correlations, strengths, domains)
    return tables


def run_experiment(
    docs: Sequence[Document],
    settings: HssSettings,
    normalization: Normalization,
    *,
    score: Callable[..., Any],
    embed: Callable[[list[str]], Any],
    comparators: Comparators | None = None,
    attribution: Comparators | None = None,
    errors: pd.DataFrame | None = None,
    model_names: dict[str, str] | None = None,
    progress: Progress = no_progress,
) -> ExperimentResult:
    """The whole analysis. `score(uri, docs, settings, normalization, progress=)` scores a model
    (hss_gate.scoring.runner.score_model); comparators/attribution add per-document columns from the
    base summaries (for the first experiment.attribution_documents documents for attribution)."""
    exp = settings.experiment
    documents, perturbations, results = score_models(
        exp.models, docs, settings, normalization, score, progress
    )
    notes = [
        f"{len(docs)} documents x {len(exp.models)} summarizers: {', '.join(exp.models)}",
        f"{settings.perturb.k} perturbation(s) per strength band; HSS normalized by the "
        f"production constants ({normalization.model}).",
    ]
    extra = []
    for uri, result in results.items():
        base = {s["doc_id"]: s["summary"] for s in result.summaries if s["strength"] == "base"}
        parts = []
        if comparators is not None:
            parts.append(comparators(uri, docs, base))
        explained = exp.attribution_models is None or uri in exp.attribution_models
        if attribution is not None and exp.attribution_documents and explained:
            parts.append(attribution(uri, docs[: exp.attribution_documents], base))
        for part in parts:
            extra.append(part.assign(model=uri))
    words: dict[tuple[str, str], list[dict[str, Any]]] = {}
    if extra:
        merged = pd.concat(extra, ignore_index=True).groupby(["model", "doc_id"]).first()
        if ATTRIBUTION_WORDS in merged:
            records = merged.pop(ATTRIBUTION_WORDS)
            words = {key: value for key, value in records.items() if isinstance(value, list)}
        documents = documents.merge(merged.reset_index(), on=["model", "doc_id"], how="left")
    tables = analysis_tables(
        documents, perturbations, normalization, errors, model_names or {}, settings
    )
    if exp.ablation_documents:
        tables["ablations"] = ablation_table(
            exp.ablation_model,
            docs[: exp.ablation_documents],
            settings,
            normalization,
            score,
            progress,
        )
        notes.append(
            f"ablations: {exp.ablation_model} on the first "
            f"{min(exp.ablation_documents, len(docs))} documents"
        )
    localization = localization_items(results, documents, embed, exp.localization_documents, words)
    return ExperimentResult(tables, documents, perturbations, notes, localization)


def explained_perturbations(perturbations: Sequence[Any], n: int) -> list[Any]:
    """The first n perturbations taking one per strength band in turn (index 0 of every band,
    then index 1, ...), so a small budget still covers every strength."""
    return sorted(perturbations, key=lambda p: p.index)[:n]


def attribution_budget(settings: HssSettings) -> Any:
    """The experiment's AttributionSettings (methods, budgets, seed) from its settings."""
    from hss_gate.research.attribution import AttributionSettings

    exp = settings.experiment
    return AttributionSettings(
        methods=[m for m in exp.attribution_methods if m not in SENTENCE_METHODS],
        shap_max_evals=exp.shap_max_evals,
        lime_num_samples=exp.lime_samples,
        max_words=settings.generate.max_input_words,
        seed=settings.perturb.seed,
    )


def sentence_evaluations(settings: HssSettings, text: str, perturbed: int) -> int:
    """The evaluations one sentence-level method plans for a document (the gate's explainer,
    gate.attribution's budget for its sentences, the original and each perturbation); 0 for a
    document too short to explain."""
    from hss_gate.decision.attribution import MIN_SENTENCES, explained_words, explainer_settings
    from hss_gate.text.masked_text import sentence_features

    words = explained_words(settings)
    sentences = sentence_features(text, words).n
    if sentences < MIN_SENTENCES:
        return 0
    return (1 + perturbed) * explainer_settings(settings.gate.attribution, sentences, words).budget


def attribution_hook(
    settings: HssSettings, tools: Any, cache: Any, progress: Progress = no_progress
) -> Comparators:
    """SHAP / LIME / attention instability of each model's base summary under the document's
    perturbations (rank instability = 1 - Spearman of aligned word attributions, or of source
    sentences' for sentence_shap / sentence_lime; see docs/ATTRIBUTION.md). Models without
    token probabilities get no columns."""
    from hss_gate.common.errors import ModelError
    from hss_gate.decision.attribution import explain_document as explain_sentence_level
    from hss_gate.decision.attribution import explained_words
    from hss_gate.research.attribution import explain_document, planned_evaluations
    from hss_gate.research.likelihood import CachedLikelihood, CountedLikelihood, load_scorer
    from hss_gate.scoring.pipeline import make_perturbations

    exp = settings.experiment
    budget = attribution_budget(settings)
    sentence_methods = [m for m in exp.attribution_methods if m in SENTENCE_METHODS]
    sentence_budget = settings.gate.attribution  # the gate's explainer, on the same texts

    def columns(uri: str, docs: Sequence[Document], base: dict[str, str]) -> pd.DataFrame:
        try:
            model = load_scorer(
                uri,
                settings,
                exp.attribution_backend,
                exp.attribution_dtype,
                exp.attribution_workers,
            )
        except ModelError:
            return pd.DataFrame({"doc_id": [d.doc_id for d in docs]})
        scorer = CachedLikelihood(model, cache)  # every evaluation stored: a rerun resumes
        perturbed = make_perturbations(docs, settings, tools, cache)
        rows = []
        advance = progress(f"attribution {uri}", len(docs), 0)
        for doc in docs:
            chosen = explained_perturbations(perturbed[doc.doc_id], exp.attribution_perturbations)
            texts = [p.text for p in chosen]
            row: dict[str, Any] = {"doc_id": doc.doc_id}
            limits = {"lime": exp.lime_perturbations}
            sentence_plan = sentence_evaluations(settings, doc.text, len(texts))
            planned = len(sentence_methods) * sentence_plan
            if budget.methods:
                planned += planned_evaluations(budget, len(texts), limits=limits)
            # the document's evaluations done of those planned: moves during the document
            step = progress(f"attribution {uri} evaluations", planned, 0)
            if budget.methods:
                explained = explain_document(
                    scorer, doc.text, base[doc.doc_id], texts, budget, limits=limits, advance=step
                )
                shap = explained.get("shap")
                row |= (
                    {f"{m}_instability": r.summary["rank"] for m, r in explained.items()}
                    | {f"{m}_evaluations": r.evaluations for m, r in explained.items()}
                    | {f"{m}_seconds": r.seconds for m, r in explained.items()}
                    | {ATTRIBUTION_WORDS: shap.words if shap is not None else None}
                )
            for name in sentence_methods:
                counted = CountedLikelihood(scorer, step)
                found = explain_sentence_level(
                    counted,
                    doc.doc_id,
                    doc.text,
                    base[doc.doc_id],
                    texts,
                    sentence_budget,
                    explained_words(settings),
                    seed=settings.perturb.seed,
                    method=SENTENCE_METHODS[name],
                )
                if sentence_plan > counted.count:
                    counted.add(sentence_plan - counted.count)
                row |= {
                    f"{name}_instability": found.rank,
                    f"{name}_evaluations": found.evaluations,
                    f"{name}_seconds": found.seconds,
                }
            rows.append(row)
            advance(1)
        return pd.DataFrame(rows)

    return columns


def factuality_hook(settings: HssSettings) -> Comparators:
    """Every factuality comparator's column for the base summaries (hss_gate.consistency)."""
    from hss_gate.workflows.factuality import consistency_scorer

    scorer = consistency_scorer(settings)

    def columns(uri: str, docs: Sequence[Document], base: dict[str, str]) -> pd.DataFrame:
        rows = scorer.score_many([(d.doc_id, d.text, base[d.doc_id]) for d in docs])
        return pd.DataFrame(rows).rename(columns={"id": "doc_id"})

    return columns


def run_and_report(
    settings: HssSettings,
    *,
    limit: int | None = None,
    out: str | None = None,
    progress: Progress = no_progress,
) -> Path:
    """`hss experiment`: the documents of the `experiment` settings, every model scored, the
    comparators and attribution added, the report written to OUT; returns OUT."""
    import functools

    import yaml

    from hss_gate.common.cache import Cache
    from hss_gate.common.inputs import load_corpus, load_normalization
    from hss_gate.common.io import write_csv_atomic, write_text_atomic
    from hss_gate.models import model_store
    from hss_gate.research.experiment_report import localization_section, write_report
    from hss_gate.scoring.runner import score_model
    from hss_gate.scoring.toolkit import real_toolkit

    exp = settings.experiment
    docs = load_corpus(settings.run.corpus) + external_documents(
        exp.external, exp.external_documents, exp.external_category
    )
    if limit is not None:
        if limit < 1:
            raise InputError("--limit must be at least 1")
        docs = docs[:limit]
    norm = load_normalization(settings.score.normalization)
    tools = real_toolkit(settings)
    errors = pd.read_csv(exp.handcheck) if Path(exp.handcheck).exists() else None
    names = {
        alias: f"gguf:{m.name}" for m in model_store.all_models() for alias in (m.name, *m.aliases)
    }
    out_dir = Path(out or exp.out)
    result = run_experiment(
        docs,
        settings,
        norm,
        score=functools.partial(score_model, tools=tools),
        embed=tools.embedder.encode,
        comparators=factuality_hook(settings),
        attribution=attribution_hook(settings, tools, Cache(settings.run.cache_dir), progress),
        errors=errors,
        model_names=names,
        progress=progress,
    )
    stated = yaml.safe_dump(
        {
            "perturb": settings.perturb.model_dump(mode="json"),
            "experiment": exp.model_dump(mode="json"),
        },
        sort_keys=False,
    )
    write_report(
        out_dir,
        result.tables,
        stated,
        result.notes,
        localization_section(result.localization),
        result.documents,
        result.tables["strength"],
    )
    write_csv_atomic(out_dir / "documents.csv", result.documents)
    write_text_atomic(out_dir / "localization.json", json.dumps(result.localization, indent=1))
    return out_dir
