"""Attribution instability in the gate (issue 26, item 5): how far the summarizer's explanation
of its own base summary moves when the document is perturbed, for both sides of a gate.

For a document, its base summary y0 and the gate's own perturbations of it (the ones HSS used),
the faithful explainer (sentence-level antithetic permutation SHAP of log p(y0 | x),
hss_gate.models.sentence_explainer; docs/ATTRIBUTION.md section 7) explains the original and
each explained perturbation with the same seed; per perturbation the rank instability
(1 - Spearman of the sentence attributions, 0-2), top-k and mass instability; a document's values
are their means over its perturbations. `attribution_instability` (the documents table's
column) is the rank instability.

The paired difference candidate - production over the documents both sides explained comes
with a percentile bootstrap CI of the mean difference (hss_gate.scoring.severity.bootstrap_ci). A
side
whose model has no teacher-forced likelihood (stored `summaries:`, `openai:`, extractive) is
"not measured" with the reason, never 0.

The monitor (monitor.attribution_documents) explains served samples the same way, the served
summary as the target, the newest N of its reference and of its current window with the
deployed model: `windows_record` compares the two windows (independent samples: a bootstrap CI
of the difference of the means; the reported Mann-Whitney test is hss_gate.monitoring.rules's).

Production's results are restored with the baseline, as its summaries are: the dvc stage
`attribution` (`hss baseline --stage attribution`) explains the first baseline.attribution_documents
documents a gate explains with the production model and writes each result under its run-cache key
to BASELINE/attribution.jsonl (`read_baseline_results` reads it back). The key holds the model's
fingerprint, the document, the summary, the perturbed texts, the explainer's settings and the seed,
so a stored result is used only where a gate would compute exactly it; a stale file misses and is
recomputed. `explain_documents` is the one route of the gate, the monitor and the stage, so their
keys agree.

Pure given the scorer: the model, the cache and the perturbations are the caller's.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import TypeAdapter, ValidationError

from hss_gate.common.cache import content_key
from hss_gate.common.errors import InputError, ModelError
from hss_gate.common.jsonl import read_jsonl
from hss_gate.decision.paired_comparison import difference_text
from hss_gate.models.sentence_explainer import (
    SentenceAttributionSettings,
    explain_sentences,
    sentence_instability,
)
from hss_gate.scoring.severity import bootstrap_ci, difference_bootstrap_ci
from hss_gate.settings import GateAttributionSettings, HssSettings
from hss_gate.text.corpus import Document
from hss_gate.text.masked_text import sentence_features

COLUMN = "attribution_instability"
MEASURE = "rank instability (1 - Spearman) of sentence-level SHAP, original vs perturbed, 0-2"
ALGORITHM = "gate-attribution-v1"  # bump when what a cached result holds changes
NAMESPACE = "gate_attribution"
BASELINE_FILE = "attribution.jsonl"  # in run.baseline_dir: production's stored results
MIN_SENTENCES = 2  # a ranking of fewer sentences cannot change: "not measured", never 0


@dataclass
class ExplainedDocument:
    """One document's attribution instability on one side."""

    doc_id: str
    rank: float
    topk: float
    mass: float
    perturbations: int  # explained perturbations the means are over
    sentences: int  # explained sentences (M)
    budget: int  # evaluations per explanation asked for
    evaluations: int  # distinct model evaluations spent on the document
    seconds: float  # wall time of the document (0 when read from the cache)
    cached: bool = False

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def load_attribution_scorer(uri: str, settings: HssSettings) -> Any:
    """The teacher-forced likelihood scorer of a model URI with the role's prompt settings
    (gate.attribution's engine); ModelError for a model without one."""
    from hss_gate.models.likelihood import likelihood_scorer
    from hss_gate.models.summarizers.stored import SCHEME as SUMMARIES_SCHEME

    if uri.partition(":")[0] == SUMMARIES_SCHEME:
        raise ModelError("stored summaries: no model, so no likelihood to explain")
    config = settings.gate.attribution
    return likelihood_scorer(
        uri, settings.generate, settings.run.models_dir, config.backend, config.dtype
    )


def explained_words(settings: Any) -> int:
    """The words whose sentences are explained (HssSettings): what the summarizer reads, or
    fewer (gate.attribution.max_words)."""
    limit = settings.generate.max_input_words
    cap = settings.gate.attribution.max_words
    return int(limit if cap is None else min(limit, cap))


def explainer_settings(
    settings: GateAttributionSettings, sentences: int, max_words: int
) -> SentenceAttributionSettings:
    """The SentenceAttributionSettings of one document of `sentences` explained sentences."""
    budget = max(2, math.ceil(settings.per_sentence * max(sentences, 1)))
    return SentenceAttributionSettings(
        method=settings.method,
        budget=budget,
        seed=0,
        batch_size=settings.batch_size,
        max_words=max_words,
        segments=False,
        top_k=settings.top_k,
    )


def explain_document(
    scorer: Any,
    doc_id: str,
    text: str,
    base_summary: str,
    perturbed: Sequence[str],
    settings: GateAttributionSettings,
    max_words: int,
    seed: int = 0,
    method: str | None = None,
) -> ExplainedDocument:
    """The mean instability between the explanation of `text` and of each perturbed version
    (one-for-one word swaps: the same sentence slots), the base summary as the target. A
    perturbation whose words do not align with the original's is skipped (not counted).
    `method` overrides settings.method (the experiment's sentence-level LIME: "lime")."""
    started = time.perf_counter()
    features = sentence_features(text, max_words)
    if features.n < MIN_SENTENCES:
        nan = float("nan")
        return ExplainedDocument(doc_id, nan, nan, nan, 0, features.n, 0, 0, 0.0)
    explainer = explainer_settings(settings, features.n, max_words).model_copy(
        update={"seed": seed, "method": method or settings.method}
    )
    original = explain_sentences(scorer, text, base_summary, explainer)
    evaluations = original.evaluations
    found: list[dict[str, float]] = []
    for version in perturbed:
        if len(version.split()) != sum(features.word_counts):
            continue
        moved = explain_sentences(
            scorer, version, base_summary, explainer, word_counts=features.word_counts
        )
        evaluations += moved.evaluations
        found.append(sentence_instability(original, moved, settings.top_k))

    def mean(metric: str) -> float:
        return float(np.mean([f[metric] for f in found])) if found else float("nan")

    return ExplainedDocument(
        doc_id,
        mean("rank"),
        mean("topk"),
        mean("mass"),
        len(found),
        features.n,
        explainer.budget,
        evaluations,
        round(time.perf_counter() - started, 3),
    )


def result_key(
    fingerprint: str,
    text: str,
    base_summary: str,
    perturbed: Sequence[str],
    settings: GateAttributionSettings,
    max_words: int,
    seed: int,
) -> str:
    """The run cache's key of a document's result: the model, the document, its summary, the
    perturbations explained and the explainer's settings."""
    return content_key(
        ALGORITHM,
        fingerprint,
        settings.model_dump_json(),
        f"max_words={max_words}|seed={seed}",
        text,
        base_summary,
        *perturbed,
    )


def explain_cached(
    cache: Any, key: str, doc_id: str, explain: Callable[[], ExplainedDocument]
) -> ExplainedDocument:
    """`explain()`'s result stored in the run cache under `key` (result_key; namespace
    "gate_attribution"): a second gate on the same model, document, perturbations and settings
    reads it back instead of explaining again."""
    if cache is not None:
        found = cache.get_many(NAMESPACE, [key])
        if key in found:
            stored = json.loads(found[key])
            return ExplainedDocument(**(stored | {"doc_id": doc_id, "cached": True}))
    result = explain()
    if cache is not None:
        cache.put_many(NAMESPACE, {key: json.dumps(result.to_dict()).encode()})
    return result


def in_explained_order(made: Sequence[tuple[int, str]]) -> list[str]:
    """A document's perturbed texts, (index within its band, text) in the pipeline's order (band
    by band), in the order a side explains them: index 0 of every band in turn, then index 1."""
    return [text for _, text in sorted(made, key=lambda item: item[0])]


def explain_documents(
    scorer: Any,
    cache: Any,
    docs: Sequence[Document],
    base: Mapping[str, str],
    texts: Mapping[str, Sequence[str]],
    settings: HssSettings,
    on_document: Callable[[ExplainedDocument], None] = lambda explained: None,
) -> list[tuple[str, ExplainedDocument]]:
    """(run-cache key, result) of each document: explained against its base summary
    `base[doc_id]` with the first gate.attribution.perturbations of its perturbed texts
    `texts[doc_id]` (in_explained_order), read from the cache when there (explain_cached). The
    one route of the gate's sides, the monitor's windows and the baseline's stage, so that the
    stage's keys are the gate's."""
    config = settings.gate.attribution
    max_words, seed = explained_words(settings), settings.perturb.seed
    out: list[tuple[str, ExplainedDocument]] = []
    for doc in docs:
        summary = base[doc.doc_id]
        chosen = list(texts.get(doc.doc_id, []))[: config.perturbations]
        key = result_key(scorer.fingerprint, doc.text, summary, chosen, config, max_words, seed)
        explained = explain_cached(
            cache,
            key,
            doc.doc_id,
            partial(
                explain_document,
                scorer,
                doc.doc_id,
                doc.text,
                summary,
                chosen,
                config,
                max_words,
                seed,
            ),
        )
        on_document(explained)
        out.append((key, explained))
    return out


def read_baseline_results(path: str | Path) -> dict[str, bytes] | None:
    """The results the baseline's stage `attribution` stored (BASELINE/attribution.jsonl: one
    {"key": run-cache key, "result": the cached value} a line), as run-cache items to seed
    NAMESPACE with; None when the file is absent. A malformed line is an InputError
    `file:line: why`."""
    path = Path(path)
    if not path.exists():
        return None
    stored_result = TypeAdapter(ExplainedDocument)
    items: dict[str, bytes] = {}
    for number, row in read_jsonl(path):
        key, result = row.get("key"), row.get("result")
        if not isinstance(key, str) or not key or not isinstance(result, dict):
            raise InputError(
                f"{path}:{number}: expected an object with a `key` (text) and a `result` "
                "(an object), as `hss baseline --stage attribution` writes them"
            )
        try:
            stored = stored_result.validate_python(result)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(part) for part in first["loc"]) or "result"
            raise InputError(
                f"{path}:{number}: not an attribution result ({where}: {first['msg']})"
            ) from exc
        items[key] = json.dumps(stored.to_dict()).encode()
    return items


@dataclass
class Side:
    """One side's explained documents, or why it was not measured."""

    model: str
    documents: list[ExplainedDocument] = field(default_factory=list)
    not_measured: str | None = None  # the reason, when the model has no likelihood
    load_seconds: float = 0.0  # building the scorer
    restored: int = 0  # documents whose result was the baseline's (BASELINE/attribution.jsonl)

    def measured(self) -> list[ExplainedDocument]:
        """The documents with a measured instability: at least MIN_SENTENCES explained
        sentences (a result cached with fewer is not one) and a finite value."""
        return [d for d in self.documents if d.sentences >= MIN_SENTENCES and math.isfinite(d.rank)]

    def values(self) -> dict[str, float]:
        """doc_id -> rank instability of the measured documents."""
        return {d.doc_id: d.rank for d in self.measured()}

    def record(self) -> dict[str, Any]:
        if self.not_measured is not None:
            return {"model": self.model, "measured": False, "not_measured": self.not_measured}
        fresh = [d for d in self.documents if not d.cached]
        values = list(self.values().values())

        def mean(metric: str) -> float | None:
            found = [getattr(d, metric) for d in self.measured()]
            found = [v for v in found if math.isfinite(v)]
            return float(np.mean(found)) if found else None

        too_short = sum(d.sentences < MIN_SENTENCES for d in self.documents)
        return {
            "model": self.model,
            "measured": True,
            "documents": len(self.documents),
            # documents with fewer than MIN_SENTENCES sentences: not measured, not counted
            "too_short": too_short,
            "mean": float(np.mean(values)) if values else None,
            "mean_topk": mean("topk"),
            "mean_mass": mean("mass"),
            # wall time of the documents explained in this run; the first includes loading the
            # model (the transformers scorer loads on first use)
            "seconds_per_document": (
                round(float(np.mean([d.seconds for d in fresh])), 2) if fresh else None
            ),
            "evaluations_per_document": (
                float(np.mean([d.evaluations for d in self.documents])) if self.documents else None
            ),
            "from_cache": len(self.documents) - len(fresh),
            "scorer_load_seconds": round(self.load_seconds, 2),
            "per_document": [d.to_dict() for d in self.documents],
        }


def explainer_record(settings: GateAttributionSettings, target: str = "base summary") -> dict:
    """The explainer and its budget, as the reports state them."""
    return {
        "method": f"sentence-level {settings.method} SHAP of log p({target} | document)",
        "per_sentence": settings.per_sentence,
        "budget": f"ceil({settings.per_sentence} x M) evaluations per explanation (M: "
        "explained sentences; permutation spends at least 2(M-1)+2)",
        "perturbations_per_document": settings.perturbations,
        "max_words": settings.max_words,
        "explained": "every sentence the summarizer reads"
        if settings.max_words is None
        else f"the sentences starting in the first {settings.max_words} words",
        "backend": settings.backend,
        "dtype": settings.dtype,
        "top_k": settings.top_k,
    }


def attribution_record(
    candidate: Side,
    production: Side,
    settings: GateAttributionSettings,
    requested: int,
    *,
    resamples: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
) -> dict[str, Any]:
    """decision.json's `metrics.attribution`: each side's mean instability, the paired
    difference candidate - production with its bootstrap CI (None when a side is not measured
    or no document has both), the explainer and its budget."""
    a, b = candidate.values(), production.values()
    paired = [d for d in a if d in b]
    difference: dict[str, Any] | None = None
    if paired:
        diffs = [a[d] - b[d] for d in paired]
        low, high = bootstrap_ci(diffs, resamples=resamples, level=confidence, seed=seed)
        difference = {
            "documents": len(paired),
            "difference": float(np.mean(diffs)),
            "ci_low": low,
            "ci_high": high,
            "confidence": confidence,
            "method": "percentile bootstrap of the mean paired difference",
        }
    return {
        "requested_documents": requested,
        "measure": MEASURE,
        "column": COLUMN,
        "explainer": explainer_record(settings),
        "candidate": candidate.record(),
        "production": production.record(),
        "difference": difference,
        "restored_with_baseline": production.restored > 0,
        # production's documents whose result was restored from the baseline's stored results
        "production_restored": production.restored,
    }


def attribution_text(record: Mapping[str, Any]) -> str:
    """One line for decision.md's notes."""

    def side(name: str) -> str:
        s = record[name]
        if not s.get("measured"):
            return f"{name} not measured ({s['not_measured']})"
        mean = s.get("mean")
        too_short = s.get("too_short", 0)
        if mean is None:
            shown = "not measured" + (" (fewer than 2 sentences)" if too_short else "")
        else:
            shown = f"{mean:.3f}"
        text = f"{name} {shown} on {s['documents'] - too_short} document(s)"
        if too_short and mean is not None:
            text += f" ({too_short} not measured: fewer than 2 sentences)"
        restored = record.get(f"{name}_restored")
        return text + (f" ({restored} restored from the baseline)" if restored else "")

    text = (
        f"attribution instability (rank, sentence SHAP): {side('candidate')}, {side('production')}"
    )
    d = record.get("difference")
    if d is not None:
        text += f"; difference {difference_text(d)} over {d['documents']} paired document(s)"
    return text


def window_record(side: Side) -> dict[str, Any]:
    """One monitor window's explained served samples: Side.record with n, the median and the
    seconds per sample."""
    record = side.record()
    if not record["measured"]:
        return record
    values = list(side.values().values())
    return record | {
        "n": len(values),
        "median": float(np.median(values)) if values else None,
        "seconds_per_sample": record["seconds_per_document"],
    }


def windows_record(
    reference: Side,
    current: Side,
    settings: GateAttributionSettings,
    requested: int,
    test: Mapping[str, Any] | None,
    *,
    resamples: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
) -> dict[str, Any]:
    """monitor.json's `attribution`: each window's explained served samples (n, mean, median,
    seconds per sample), the difference current - reference of the means with a percentile
    bootstrap CI (independent samples: each window resampled; None unless both windows have
    values) and the reported (never blocking) test `test`. A model without a likelihood is
    "not measured" with the reason, never 0."""
    ref, cur = list(reference.values().values()), list(current.values().values())
    difference: dict[str, Any] | None = None
    if ref and cur:
        diff, low, high = difference_bootstrap_ci(
            cur, ref, resamples=resamples, level=confidence, seed=seed
        )
        difference = {
            "difference": diff,
            "ci_low": low,
            "ci_high": high,
            "confidence": confidence,
            "method": "percentile bootstrap of the difference of the means, each window "
            "resampled (independent samples)",
        }
    reason = reference.not_measured or current.not_measured
    return {
        "requested_samples": requested,
        "measured": reason is None,
        "not_measured": reason,
        "measure": MEASURE,
        "target": "the served summary",
        "explainer": explainer_record(settings, "served summary"),
        "reference": window_record(reference),
        "current": window_record(current),
        "difference": difference,
        "test": dict(test) if test is not None else None,
        "blocking": False,
    }


def windows_text(record: Mapping[str, Any]) -> str:
    """One line for the monitor's report: each window's mean instability, the difference with
    its CI and the reported test, or why it was not measured."""
    if not record.get("measured"):
        return f"attribution instability (sentence SHAP): not measured ({record['not_measured']})"

    def window(name: str) -> str:
        w = record[name]
        mean, median = w.get("mean"), w.get("median")
        if mean is None:
            return f"{name} n/a"
        seconds = w.get("seconds_per_sample")
        cost = "cached" if seconds is None else f"{seconds:.1f} s/sample"
        return f"{name} mean {mean:.3f}, median {median:.3f} (n={w['n']}, {cost})"

    text = (
        "attribution instability (rank, sentence SHAP of the served summary; reported, not "
        f"blocking): {window('reference')}; {window('current')}"
    )
    d = record.get("difference")
    if d is not None:
        text += f"; difference {difference_text(d)}"
    t = record.get("test")
    if t is not None:
        text += f"; Mann-Whitney one-sided p={t['p_value']:.4f} (alpha {t['alpha']})"
    return text
