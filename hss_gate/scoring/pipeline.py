"""The scoring engine: perturb -> summarize -> embed -> distance -> severity, with caching.

The models measure here (cached); hss_gate/scoring/document_rows.py turns what they measured into
the
score tables' rows."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from hss_gate.common.cache import Cache, content_key
from hss_gate.common.progress import Progress, no_progress
from hss_gate.consistency.checker import Checker, Verdict
from hss_gate.consistency.features import SBERT_MAX_WORDS, long_units
from hss_gate.consistency.novelty import with_words
from hss_gate.models.embedding import embed_cached, torch_threads
from hss_gate.models.language import Token, looks_non_english
from hss_gate.models.summarizers.base import Summarizer, truncate_words
from hss_gate.scoring import document_rows
from hss_gate.scoring.document_rows import DocumentSummaries, Measures, PerturbedSummary, Rules
from hss_gate.scoring.generation import BackgroundSummaries, summary_key
from hss_gate.scoring.normalization import Normalization
from hss_gate.scoring.severity import bootstrap_ci
from hss_gate.settings import HssSettings
from hss_gate.signals.summary_flags import flag_shares
from hss_gate.text.corpus import Document
from hss_gate.text.perturb import Candidate, Edit, Perturbation, find_candidates, perturb
from hss_gate.text.sentences import split_sentences
from hss_gate.text.swap_back import swap_back

if TYPE_CHECKING:  # the type only: the real models' loaders are not the engine's to import
    from hss_gate.scoring.toolkit import Toolkit

# bump when the perturbation algorithm changes: cached perturbations are keyed on it
PERTURB_ALGORITHM = "perturb-v2"


@dataclass
class ScoreResult:
    """Everything a run produces, as plain records."""

    documents: list[dict[str, Any]]
    perturbations: list[dict[str, Any]]
    edits: list[dict[str, Any]]
    summaries: list[dict[str, Any]]
    aggregates: dict[str, Any]
    warnings: list[str] = field(default_factory=list)


def perturbation_key(doc: Document, settings: HssSettings, perturb_fingerprint: str) -> str:
    """The cache key of a document's perturbations: its text, the perturbation settings and the
    models behind them. A document cut for the summarizer is perturbed only where the summarizer
    reads it: the cut is part of the key of those documents (the others keep their keys)."""
    limit = settings.generate.max_input_words
    visible = f"|visible:{limit}" if len(doc.text.split()) > limit else ""
    return content_key(
        PERTURB_ALGORITHM,
        settings.perturb.model_dump_json() + visible,
        perturb_fingerprint,
        doc.text,
    )


def make_perturbations(
    docs: Sequence[Document],
    settings: HssSettings,
    tools: Toolkit,
    cache: Cache,
    progress: Progress = no_progress,
    on_document: Callable[[list[Perturbation]], None] = lambda made: None,
) -> dict[str, list[Perturbation]]:
    """K perturbations per strength for every document (cached by content + settings);
    on_document receives each document's perturbations as soon as they exist."""
    p = settings.perturb
    limit = settings.generate.max_input_words
    keys = {d.doc_id: perturbation_key(d, settings, tools.perturb_fingerprint) for d in docs}
    cached = cache.get_many("perturbations", keys.values())
    out: dict[str, list[Perturbation]] = {}
    advance = progress("perturb", len(docs), sum(k in cached for k in keys.values()))
    for doc in docs:
        key = keys[doc.doc_id]
        if key in cached:
            out[doc.doc_id] = [_perturbation_from_dict(x) for x in json.loads(cached[key])]
            on_document(out[doc.doc_id])
            continue
        tokens = visible_tokens(tools.tagger.tokens(doc.text), doc.text, limit)
        candidates: dict[int, list[Candidate]] = find_candidates(
            doc.text,
            tokens,
            p,
            vectors=tools.vectors,
            lexicon=tools.lexicon,
            tagger=tools.tagger,
            encode=tools.embedder.encode,
        )
        made = [
            perturb(
                doc.doc_id,
                doc.text,
                tokens,
                candidates,
                strength,
                k,
                p,
                encode=tools.embedder.encode,
            )
            for strength in p.strengths
            for k in range(p.k)
        ]
        cache.put_many("perturbations", {key: json.dumps([m.to_dict() for m in made]).encode()})
        out[doc.doc_id] = made
        on_document(made)
        advance(1)
    return out


def visible_tokens(tokens: Sequence[Token], text: str, max_words: int) -> list[Token]:
    """The tokens inside the first max_words whitespace words (what truncate_words keeps), so
    swaps and band shares count only words the summarizer sees."""
    ends = [m.end() for m in re.finditer(r"\S+", text)]
    if len(ends) <= max_words:
        return list(tokens)
    cut = ends[max_words - 1]
    return [t for t in tokens if t.idx + len(t.text) <= cut]


def _perturbation_from_dict(data: dict[str, Any]) -> Perturbation:
    data = dict(data)
    data.pop("share", None)
    edits = [Edit(**e) for e in data.pop("edits")]
    return Perturbation(**data | {"band": tuple(data["band"])}, edits=edits)


def summarize_cached(
    texts: Sequence[str],
    summarizer: Summarizer,
    cache: Cache,
    progress: Progress = no_progress,
    chunk: int = 4,
) -> list[str]:
    """Summaries of the texts; only the ones not in the cache are generated (and stored)."""
    keys = [summary_key(summarizer.fingerprint, t) for t in texts]
    found = {k: v.decode() for k, v in cache.get_many("summaries", keys).items()}
    missing = [i for i, k in enumerate(keys) if k not in found]
    todo = list(dict.fromkeys(keys[i] for i in missing))
    text_of = {keys[i]: texts[i] for i in missing}
    advance = progress("summarize", len(set(keys)), len(set(keys)) - len(todo))
    for start in range(0, len(todo), chunk):
        batch = todo[start : start + chunk]
        made = summarizer.summarize([text_of[k] for k in batch], progress=advance)
        cache.put_many("summaries", {k: s.encode() for k, s in zip(batch, made, strict=True)})
        found.update(zip(batch, made, strict=True))
    return [found[k] for k in keys]


def mentions_cached(texts: Sequence[str], tagger: Any, cache: Cache) -> list[list[str]]:
    """Entity and number mentions of each text; only texts not in the cache are tagged."""
    keys = [content_key("mentions-v1", tagger.fingerprint, t) for t in texts]
    found = cache.get_many("mentions", keys)
    todo = {k: t for k, t in zip(keys, texts, strict=True) if k not in found}
    if todo:
        made = {
            k: json.dumps(m).encode()
            for k, m in zip(todo, tagger.mentions(list(todo.values())), strict=True)
        }
        cache.put_many("mentions", made)
        found.update(made)
    return [json.loads(found[k]) for k in keys]


def verdicts_cached(
    pairs: Sequence[tuple[str, str]], checker: Checker, cache: Cache
) -> list[Verdict]:
    """The checker's verdict on each (source, summary) pair; only pairs not cached are checked.
    A verdict cached before `Unsupported.words` existed gets its words here (scores unchanged)."""
    keys = [content_key("verdict-v2", checker.fingerprint, src, summ) for src, summ in pairs]
    found = cache.get_many("verdicts", keys)
    todo = {k: pair for k, pair in zip(keys, pairs, strict=True) if k not in found}
    if todo:
        made = {
            k: json.dumps(v.to_dict()).encode()
            for k, v in zip(todo, checker.check(list(todo.values())), strict=True)
        }
        cache.put_many("verdicts", made)
        found.update(made)
    out = []
    for k, (source, _) in zip(keys, pairs, strict=True):
        data = json.loads(found[k])
        verdict = Verdict.from_dict(data)
        if any("words" not in u for u in data["unsupported"]):
            verdict = with_words(verdict, source)
        out.append(verdict)
    return out


def score_documents(
    docs: Sequence[Document],
    summarizer: Summarizer,
    settings: HssSettings,
    tools: Toolkit,
    cache: Cache,
    normalization: Normalization | None,
    progress: Progress = no_progress,
    hss_documents: Collection[str] | None = None,
) -> ScoreResult:
    """Score every document; without normalization only distances are reported (baseline).
    `hss_documents`: the doc_ids whose HSS is measured (None: every document); the others
    are neither perturbed nor summarized beyond their original (facts first: HSS NaN)."""
    max_words = settings.generate.max_input_words
    warnings = _long_input_warnings(docs, max_words)
    unmeasured = hss_unmeasurable(docs, summarizer)
    warnings += _not_measured_warnings(docs, unmeasured)
    wanted = None if hss_documents is None else set(hss_documents)
    facts_only = (
        set() if wanted is None else {d.doc_id for d in docs if d.doc_id not in wanted}
    ) - unmeasured
    unmeasured |= facts_only
    perturbations, summaries = _perturb_and_summarize(
        docs, summarizer, settings, tools, cache, progress, unmeasured
    )
    groups = _group_summaries(docs, perturbations, summaries)
    # what the summarizer read of each original: every summary is checked against it
    visible = {d.doc_id: truncate_words(d.text, max_words) for d in docs}
    warnings += _checker_cut_warnings(visible)
    measures = _measure(groups, visible, tools, cache)
    rules = Rules.of(settings, tools.checker.threshold, normalization)

    doc_rows, pert_rows, edit_rows, summary_rows = [], [], [], []
    for group in groups:
        source = visible[group.doc.doc_id]
        distances = [measures.distances(group.base, v) for v in group.perturbed]
        pert_rows += [
            document_rows.perturbation_row(group, v, d, measures, source, rules)
            for v, d in zip(group.perturbed, distances, strict=True)
        ]
        measured = group.doc.doc_id not in unmeasured
        doc_rows.append(
            document_rows.document_row(
                group, distances, measures, source, rules, warnings, measured
            )
        )
        edit_rows += [row for v in group.perturbed for row in document_rows.edit_rows(group.doc, v)]
        summary_rows += document_rows.summary_rows(group, measures, source)
    warnings.extend(_degenerate_input_warnings(docs, perturbations, summary_rows, unmeasured))
    aggregates = aggregate(doc_rows, pert_rows, settings, rules.variant)
    if facts_only and aggregates.get("hss_not_measured") and len(unmeasured) == len(facts_only):
        aggregates["hss_not_measured"] = FACTS_FIRST
    return ScoreResult(doc_rows, pert_rows, edit_rows, summary_rows, aggregates, warnings)


NOT_MEASURED = (
    "HSS not measured: the summaries file has no perturbed summaries (export them with "
    "`hss perturb`)"
)
FACTS_FIRST = (
    "HSS measured on a subset of the documents only (gate.hss_documents): the others were "
    "summarized from their originals alone, facts first"
)


def hss_unmeasurable(docs: Sequence[Document], summarizer: Summarizer) -> set[str]:
    """The doc_ids whose HSS cannot be measured: a summarizer that answers only from stored
    summaries (`perturbed_sources`) and holds none of the document's perturbed versions. Those
    documents are not perturbed at all (the search is the slow part)."""
    sources = getattr(summarizer, "perturbed_sources", None)
    if sources is None:
        return set()
    held = sources()
    return {d.doc_id for d in docs if d.doc_id not in held}


def _not_measured_warnings(docs: Sequence[Document], unmeasured: set[str]) -> list[str]:
    if not unmeasured:
        return []
    ids = [d.doc_id for d in docs if d.doc_id in unmeasured]
    shown = ", ".join(ids[:3]) + (", ..." if len(ids) > 3 else "")
    return [f"{NOT_MEASURED}: {len(ids)} of {len(docs)} document(s) ({shown})"]


def _long_input_warnings(docs: Sequence[Document], max_words: int) -> list[str]:
    return [
        f"{doc.doc_id}: longer than {max_words} words; the summarizer sees only the beginning"
        for doc in docs
        if len(doc.text.split()) > max_words
    ]


def _checker_cut_warnings(visible: dict[str, str]) -> list[str]:
    warnings = []
    for doc_id, text in visible.items():
        cut = long_units(text)
        if cut:
            warnings.append(
                f"{doc_id}: {cut} source passage(s) longer than {SBERT_MAX_WORDS} words (text "
                "without sentence punctuation?): the checker's sentence encoder reads only the "
                "beginning of each"
            )
    return warnings


def _group_summaries(
    docs: Sequence[Document], perturbations: dict[str, list[Perturbation]], summaries: list[str]
) -> list[DocumentSummaries]:
    """The summaries, in the order `_perturb_and_summarize` returns them (each document's
    original's, then its perturbed versions'), grouped by document."""
    ordered = iter(summaries)
    groups = []
    for doc in docs:
        base = next(ordered)
        perturbed = []
        for p in perturbations[doc.doc_id]:
            summary = next(ordered)
            perturbed.append(PerturbedSummary(p, summary, swap_back(summary, p.swaps, doc.text)))
        groups.append(DocumentSummaries(doc, base, perturbed))
    return groups


def _measure(
    groups: Sequence[DocumentSummaries], visible: dict[str, str], tools: Toolkit, cache: Cache
) -> Measures:
    """Embed every summary's sentences, tag its mentions and check it (all cached), in that
    order: the checker may embed sentences too, and what it embeds first lands in the cache in
    its batches (which move the vectors in their last bits). The original's summary is its own
    restored summary."""
    versions = [
        (g.doc.doc_id, summary, restored)
        for g in groups
        for summary, restored in [(g.base, g.base), *((v.summary, v.restored) for v in g.perturbed)]
    ]
    sentences = [s for _, *texts in versions for t in texts for s in (split_sentences(t) or [""])]
    summaries = [summary for _, summary, _ in versions]
    pairs = [(visible[doc_id], restored) for doc_id, _, restored in versions]
    vectors = embed_cached(sentences, tools.embedder, cache)
    mentions = mentions_cached(summaries, tools.tagger, cache)
    verdicts = verdicts_cached(pairs, tools.checker, cache)
    return Measures(
        vectors=vectors,
        mentions=dict(zip(summaries, mentions, strict=True)),
        verdicts=dict(zip(pairs, verdicts, strict=True)),
    )


def _perturb_and_summarize(
    docs: Sequence[Document],
    summarizer: Summarizer,
    settings: HssSettings,
    tools: Toolkit,
    cache: Cache,
    progress: Progress,
    unmeasured: Collection[str] = (),
) -> tuple[dict[str, list[Perturbation]], list[str]]:
    """Perturbations of every document (none for the `unmeasured` ones: not searched) and the
    summaries of each original followed by its perturbed versions. A summarizer with
    `summarize_one` generates in the background while the perturbations are searched (every
    original first)."""
    to_perturb = [d for d in docs if d.doc_id not in unmeasured]

    def perturbed(
        on_document: Callable[[list[Perturbation]], None] = lambda made: None,
    ) -> dict[str, list[Perturbation]]:
        made = (
            make_perturbations(to_perturb, settings, tools, cache, progress, on_document)
            if to_perturb
            else {}
        )
        return {d.doc_id: made.get(d.doc_id, []) for d in docs}

    def texts_of(perturbations: dict[str, list[Perturbation]]) -> list[str]:
        return [t for d in docs for t in (d.text, *(p.text for p in perturbations[d.doc_id]))]

    if not hasattr(summarizer, "summarize_one"):
        perturbations = perturbed()
        return perturbations, summarize_cached(texts_of(perturbations), summarizer, cache, progress)
    versions = len(settings.perturb.strengths) * settings.perturb.k
    advance = progress("summarize", len(docs) + len(to_perturb) * versions, 0)
    with (
        torch_threads(_cores_left(summarizer)),
        BackgroundSummaries(summarizer, cache, advance) as jobs,
    ):
        jobs.submit(d.text for d in docs)
        perturbations = perturbed(lambda made: jobs.submit(p.text for p in made))
        return perturbations, jobs.results(texts_of(perturbations))


def _cores_left(summarizer: Any) -> int | None:
    """The cores an in-process summarizer leaves free while it generates (at least 1), for
    the SBERT encodes of the perturbation search beside it; None for one that runs elsewhere
    or on torch's own threads (its `local_threads` is not set)."""
    busy = getattr(summarizer, "local_threads", 0)
    if not busy:
        return None
    return max(1, (os.cpu_count() or 1) - busy)


def _degenerate_input_warnings(
    docs: Sequence[Document],
    perturbations: dict[str, list[Perturbation]],
    summary_rows: list[dict[str, Any]],
    unmeasured: Collection[str] = (),
) -> list[str]:
    """Inputs whose HSS measures nothing: not English, no swap possible, empty or constant
    summaries (documents whose HSS was not measured at all are warned about apart)."""
    foreign = {doc.doc_id for doc in docs if looks_non_english(doc.text)}
    out = [
        f"{doc_id}: does not look like English; the pipeline's models (spaCy en, GloVe, "
        "WordNet, SBERT MiniLM) are English-only, so its swaps and HSS are not comparable"
        for doc_id in sorted(foreign)
    ]
    out += [
        f"{doc.doc_id}: no word could be swapped (only names, numbers or stop words, or too "
        "short); its distances are 0 by construction and its HSS measures nothing"
        for doc in docs
        if doc.doc_id not in foreign
        and doc.doc_id not in unmeasured
        and not any(p.edits for p in perturbations[doc.doc_id])
    ]
    empty = [row for row in summary_rows if not row["summary"].strip()]
    if empty:
        where = ", ".join(f"{row['doc_id']}/{row['strength']}" for row in empty[:3])
        out.append(
            f"{len(empty)} of {len(summary_rows)} summaries are empty ({where}"
            f"{', ...' if len(empty) > 3 else ''}); distances to an empty summary measure the "
            "summarizer failing, not hallucination"
        )
    base = {row["summary"].strip() for row in summary_rows if row["strength"] == "base"}
    if len(docs) > 1 and len(base) == 1 and "" not in base:
        out.append(
            f"every document got the same summary ({next(iter(base))[:60]!r}); "
            "HSS cannot see a summarizer that ignores its input"
        )
    return out


def merge_results(parts: Sequence[ScoreResult], settings: HssSettings) -> ScoreResult:
    """One result from results scored on disjoint chunks of a corpus (in chunk order)."""
    variant = settings.score.variant
    docs = [row for part in parts for row in part.documents]
    perts = [row for part in parts for row in part.perturbations]
    aggregates = aggregate(docs, perts, settings, variant)
    whys = [p.aggregates.get("hss_not_measured") for p in parts]
    if aggregates.get("hss_not_measured") and NOT_MEASURED not in whys and FACTS_FIRST in whys:
        aggregates["hss_not_measured"] = FACTS_FIRST  # the parts' own reason
    return ScoreResult(
        docs,
        perts,
        [row for part in parts for row in part.edits],
        [row for part in parts for row in part.summaries],
        aggregates,
        [w for part in parts for w in part.warnings],
    )


def aggregate(
    doc_rows: list[dict[str, Any]],
    pert_rows: list[dict[str, Any]],
    settings: HssSettings,
    variant: str,
) -> dict[str, Any]:
    """Model and per-category means with bootstrap CIs, plus the beside-HSS signals."""
    s = settings.score

    def ci(values: list[float]) -> dict[str, float]:
        low, high = bootstrap_ci(
            values, resamples=s.bootstrap_resamples, level=s.confidence, seed=settings.perturb.seed
        )
        return {"mean": float(np.mean(values)), "ci_low": low, "ci_high": high, "n": len(values)}

    def measured_ci(column: str, rows: list[dict[str, Any]]) -> dict[str, float] | None:
        """Over the rows whose value was measured (not NaN); None when none was."""
        values = [float(r[column]) for r in rows if not np.isnan(float(r[column]))]
        return ci(values) if values else None

    measured = [r for r in doc_rows if not np.isnan(float(r["mean_distance_aware"]))]
    out: dict[str, Any] = {
        "variant": variant,
        "documents": len(doc_rows),
        "perturbations": len(pert_rows),
        "hss_measured": len(measured) == len(doc_rows),
        "hss_measured_documents": len(measured),
    }
    if len(measured) < len(doc_rows):
        out["hss_not_measured"] = NOT_MEASURED
    if doc_rows and "hss" in doc_rows[0]:
        out["hss"] = measured_ci("hss", doc_rows)
        out["hss_aware"] = measured_ci("hss_aware", doc_rows)
        out["hss_raw"] = measured_ci("hss_raw", doc_rows)
        out["by_category"] = {
            c: measured_ci("hss", [r for r in doc_rows if r["category"] == c])
            for c in sorted({r["category"] for r in doc_rows})
        }
    out["mean_distance"] = ci([r["distance"] for r in pert_rows]) if pert_rows else None
    out["base_unsupported_share"] = ci([r["base_unsupported_share"] for r in doc_rows])
    out["base_novel_ngram_share"] = ci([r["base_novel_ngram_share"] for r in doc_rows])
    out["base_consistency"] = ci([r["base_consistency"] for r in doc_rows])
    out["low_consistency_share"] = float(np.mean([r["base_low_consistency"] for r in doc_rows]))
    out["consistency_drop_mean"] = measured_ci("consistency_drop_mean", doc_rows)
    out["not_summaries"] = flag_shares(doc_rows)
    summaries_truncated = [r["base_truncated"] for r in doc_rows] + [
        r["summary_truncated"] for r in pert_rows
    ]
    out["truncated_share"] = float(np.mean(summaries_truncated)) if summaries_truncated else 0.0
    out["perturbations_short_of_band"] = int(sum(not r["reached"] for r in pert_rows))
    out["by_strength"] = {
        st: {
            "mean_share": float(np.mean([r["share"] for r in pert_rows if r["strength"] == st])),
            "mean_distance": float(
                np.mean([r["distance"] for r in pert_rows if r["strength"] == st])
            ),
        }
        for st in dict.fromkeys(r["strength"] for r in pert_rows)
    }
    return out
