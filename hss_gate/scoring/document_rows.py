"""The score tables' rows of a scored run: a document's summaries (the original's and its
perturbed versions'), what the models measured in them (`Measures`) and the run's settings that
turn measures into values (`Rules`) become the rows of documents.csv, perturbations.csv,
summaries.jsonl and edits.jsonl (hss_gate/signals/tables.py declares their columns, the
builders of hss_gate/signals/row_builders.py keep to them). Pure: the engine
(hss_gate/scoring/pipeline.py) measures, with its models and cache, and calls these."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, NamedTuple

import numpy as np

from hss_gate.consistency.checker import Verdict
from hss_gate.scoring.distance import wasserstein
from hss_gate.scoring.normalization import Normalization
from hss_gate.scoring.severity import severity
from hss_gate.settings import HssSettings
from hss_gate.signals import row_builders
from hss_gate.signals.summary_flags import LengthPolicy
from hss_gate.signals.summary_values import summary_values
from hss_gate.text.corpus import Document
from hss_gate.text.mentions import unsupported_mentions, unsupported_share
from hss_gate.text.perturb import Perturbation
from hss_gate.text.sentences import split_sentences


@dataclass(frozen=True)
class PerturbedSummary:
    """The summary of one perturbed version; `restored` is it with the swaps mapped back."""

    perturbation: Perturbation
    summary: str
    restored: str


@dataclass(frozen=True)
class DocumentSummaries:
    """A document with its original's summary (`base`) and its perturbed versions' summaries."""

    doc: Document
    base: str
    perturbed: list[PerturbedSummary]


class Distances(NamedTuple):
    """A perturbed version's summary's distances to the original's summary."""

    aware: float  # its swaps mapped back first
    raw: float


@dataclass(frozen=True)
class Measures:
    """What the models found in the summaries, by content: sentence vectors, each summary's
    mentions and the checker's verdict on each (source, summary with swaps mapped back)."""

    vectors: dict[str, np.ndarray]
    mentions: dict[str, list[str]]
    verdicts: dict[tuple[str, str], Verdict]

    def cloud(self, summary: str) -> np.ndarray:
        """The summary's sentence vectors (an empty summary: one empty sentence)."""
        return np.stack([self.vectors[s] for s in split_sentences(summary) or [""]])

    def distances(self, base: str, version: PerturbedSummary) -> Distances:
        """Wasserstein distances of the version's summary (as restored, as written) to `base`."""
        base_cloud = self.cloud(base)
        return Distances(
            aware=wasserstein(base_cloud, self.cloud(version.restored)),
            raw=wasserstein(base_cloud, self.cloud(version.summary)),
        )


@dataclass(frozen=True)
class Rules:
    """The settings that turn measures into table values."""

    variant: str
    ngram: int
    policy: LengthPolicy
    threshold: float
    normalization: Normalization | None

    @classmethod
    def of(
        cls, settings: HssSettings, threshold: float, normalization: Normalization | None
    ) -> Rules:
        """The rules of a run: its settings and the checker's threshold."""
        policy = LengthPolicy(
            settings.generate.summary_words,
            settings.score.near_empty_share,
            settings.score.overlong_ratio,
            settings.score.copy_ratio,
        )
        return cls(settings.score.variant, settings.score.ngram, policy, threshold, normalization)


def summary_signals(
    summary: str, source: str, verdict: Verdict, measures: Measures, rules: Rules
) -> dict[str, Any]:
    """A summary's signals against `source`, the text its summarizer was given (the score
    tables keep six digits of the two shares)."""
    values = summary_values(
        summary,
        source,
        verdict,
        measures.mentions[summary],
        ngram=rules.ngram,
        policy=rules.policy,
        threshold=rules.threshold,
    )
    for share in ("unsupported_share", "novel_ngram_share"):
        values[share] = round(values[share], 6)
    return values


def summary_rows(group: DocumentSummaries, measures: Measures, source: str) -> list[dict[str, Any]]:
    """The original's summary (strength "base", index 0), then the perturbed versions'."""
    found = [("base", 0, group.base, group.base)] + [
        (v.perturbation.strength, v.perturbation.index, v.summary, v.restored)
        for v in group.perturbed
    ]
    rows = []
    for strength, index, summary, restored in found:
        verdict = measures.verdicts[(source, restored)]
        rows.append(
            row_builders.summary_row(
                doc_id=group.doc.doc_id,
                strength=strength,
                index=index,
                summary=summary,
                restored=restored,
                consistency=verdict.consistency,
                unsupported_sentences=[u.sentence for u in verdict.unsupported],
            )
        )
    return rows


def edit_rows(doc: Document, version: PerturbedSummary) -> list[dict[str, Any]]:
    p = version.perturbation
    return [
        row_builders.edit_row(doc_id=doc.doc_id, strength=p.strength, index=p.index, **asdict(e))
        for e in p.edits
    ]


def perturbation_row(
    group: DocumentSummaries,
    version: PerturbedSummary,
    distances: Distances,
    measures: Measures,
    source: str,
    rules: Rules,
) -> dict[str, Any]:
    """One perturbed version: its summary's distances to the original's, its signals, and
    the mentions its summary has that the original's does not."""
    p, base, summary = version.perturbation, group.base, version.summary
    verdict = measures.verdicts[(source, version.restored)]
    mentions = measures.mentions[summary]
    return row_builders.perturbation_row(
        doc_id=group.doc.doc_id,
        category=group.doc.category,
        strength=p.strength,
        index=p.index,
        distance=distances.aware if rules.variant == "aware" else distances.raw,
        distance_aware=distances.aware,
        distance_raw=distances.raw,
        share=round(p.share, 6),
        n_edits=len(p.edits),
        n_words=p.n_words,
        band_low=p.band[0],
        band_high=p.band[1],
        reached=p.reached,
        note=p.note,
        mentions_not_in_base_summary=round(
            len(unsupported_mentions(mentions, base)) / max(len(mentions), 1), 6
        ),
        mentions_unsupported_by_source_or_base=round(
            unsupported_share(mentions, base + " " + group.doc.text), 6
        ),
        # its summary's facts and form against the perturbed text it was given
        summary=summary_signals(summary, p.text, verdict, measures, rules),
        consistency_drop=round(
            measures.verdicts[(source, base)].consistency - verdict.consistency, 6
        ),
    )


def document_row(
    group: DocumentSummaries,
    distances: list[Distances],
    measures: Measures,
    source: str,
    rules: Rules,
    warnings: list[str],
    measured: bool = True,
) -> dict[str, Any]:
    """A document: its HSS (with normalization), its mean distances and its original's
    summary's signals. Not `measured` (no perturbed summaries): its HSS, distances and
    consistency drop are NaN, never 0."""
    doc = group.doc
    d_aware, d_raw = [d.aware for d in distances], [d.raw for d in distances]
    base_verdict = measures.verdicts[(source, group.base)]
    drops = [
        base_verdict.consistency - measures.verdicts[(source, v.restored)].consistency
        for v in group.perturbed
    ]
    nan = float("nan")
    if not measured:
        normalized = None if rules.normalization is None else _not_measured_severity()
        mean_aware = mean_raw = drop = nan
    else:
        normalized = _severity(doc, d_aware, d_raw, rules, warnings)
        mean_aware, mean_raw = float(np.mean(d_aware)), float(np.mean(d_raw))
        drop = round(float(np.mean(drops)), 6) if drops else 0.0
    return row_builders.document_row(
        doc_id=doc.doc_id,
        category=doc.category,
        tier=doc.tier,
        normalized=normalized,
        mean_distance=mean_aware if rules.variant == "aware" else mean_raw,
        mean_distance_aware=mean_aware,
        mean_distance_raw=mean_raw,
        n_perturbations=len(d_aware),
        base=summary_signals(group.base, source, base_verdict, measures, rules),
        consistency_drop_mean=drop,
    )


def _not_measured_severity() -> dict[str, Any]:
    """The normalized columns of a document whose HSS was not measured: NaN, never 0."""
    nan = float("nan")
    return row_builders.normalized_values(
        hss_aware=nan, hss_raw=nan, hss=nan, normalization_constant=nan, constant_source=""
    )


def _severity(
    doc: Document, d_aware: list[float], d_raw: list[float], rules: Rules, warnings: list[str]
) -> dict[str, Any] | None:
    """A document's HSS under the normalization constants (None without them)."""
    if rules.normalization is None:
        return None
    m_aware, known = rules.normalization.constant(doc.category, "aware")
    m_raw, _ = rules.normalization.constant(doc.category, "raw")
    if not known:
        warnings.append(
            f"{doc.doc_id}: category '{doc.category}' has no reference constant; "
            "using the global one"
        )
    hss = {"aware": severity(d_aware, m_aware), "raw": severity(d_raw, m_raw)}
    return row_builders.normalized_values(
        hss_aware=hss["aware"],
        hss_raw=hss["raw"],
        hss=hss[rules.variant],
        normalization_constant=m_aware if rules.variant == "aware" else m_raw,
        constant_source="category" if known else "global",
    )
