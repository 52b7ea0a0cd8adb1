"""Sentence-level attribution in the research wing (issue 26): its fidelity measure and the
localization of what a perturbation moved.

The explainer itself (the target f(x) = log p(y0 | x) over the source's sentences, the
estimators and their budgets, the instability between two explanations) is
hss_gate.models.sentence_explainer, the one the gate uses, with its estimators in
hss_gate.scoring.shapley;
docs/ATTRIBUTION.md, "Sentence-level attribution". Here: `agreement` (Spearman of two
attributions of the same sentences, what hss_gate.research.sentence_fidelity measures), and
`explain_change`: a document and one perturbation explained with the same seed, and per changed
summary sentence the source sentences whose attribution moved most (`localize`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from hss_gate.models.sentence_explainer import (
    SentenceAttribution,
    SentenceAttributionSettings,
    explain_sentences,
    sentence_instability,
)
from hss_gate.research.likelihood import LikelihoodModel
from hss_gate.scoring.instability_metrics import spearman
from hss_gate.text.masked_text import sentence_features
from hss_gate.text.sentences import split_sentences


def agreement(a: np.ndarray, b: np.ndarray) -> float:
    """Spearman of two attributions of the same sentences (the fidelity measure)."""
    return spearman(np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64))


# --------------------------------------------------------------------------- localization


def changed_summary_sentences(base_summary: str, other_summary: str) -> list[int]:
    """Indices of the base summary's sentences that the other summary does not contain
    verbatim (whitespace-normalized): the sentences the perturbation changed."""
    other = {" ".join(s.split()) for s in split_sentences(other_summary)}
    return [i for i, s in enumerate(split_sentences(base_summary)) if s not in other]


@dataclass
class MovedSentence:
    """One source sentence whose attribution to a summary sentence moved."""

    index: int
    sentence: str
    before: float  # attribution in the original document
    after: float  # in the perturbed document
    moved: float  # after - before


@dataclass
class Localization:
    """For one changed summary sentence: the source sentences whose attribution moved most."""

    summary_index: int
    summary_sentence: str
    target: str  # "summary sentence" (segmented) or "whole summary" (scorer without segments)
    moved: list[MovedSentence]


def localize(
    original: SentenceAttribution,
    perturbed: SentenceAttribution,
    changed: Sequence[int],
    top: int = 3,
) -> list[Localization]:
    """Per changed summary sentence, the `top` source sentences with the largest |moved|
    attribution to it (to the whole summary when the explanations are not segmented)."""
    if len(original.values) != len(perturbed.values):
        raise ValueError("sentences must align (explain with the original's word_counts)")
    segmented = original.segment_values is not None and perturbed.segment_values is not None
    out = []
    for j in changed:
        if segmented:
            assert original.segment_values is not None and perturbed.segment_values is not None
            before, after = original.segment_values[:, j], perturbed.segment_values[:, j]
        else:
            before, after = original.values, perturbed.values
        moved = after - before
        order = np.lexsort((np.arange(len(moved)), -np.abs(moved)))[:top]
        rows = [
            MovedSentence(
                int(i),
                original.sentences[i],
                float(before[i]),
                float(after[i]),
                float(moved[i]),
            )
            for i in order
        ]
        sentence = original.summary_sentences[j] if j < len(original.summary_sentences) else ""
        target = "summary sentence" if segmented else "whole summary"
        out.append(Localization(int(j), sentence, target, rows))
    return out


def localization_report(items: Sequence[Localization], width: int = 90) -> str:
    """Plain text: each changed summary sentence, then the source sentences that moved most."""

    def cut(text: str) -> str:
        text = " ".join(text.split())
        return text if len(text) <= width else text[: width - 3] + "..."

    lines = []
    for item in items:
        lines.append(f'summary sentence {item.summary_index + 1}: "{cut(item.summary_sentence)}"')
        lines.append(f"  (attribution to the {item.target})")
        for row in item.moved:
            lines.append(
                f"  source {row.index + 1:>2}  moved {row.moved:+8.3f}  "
                f"({row.before:+.3f} -> {row.after:+.3f})  {cut(row.sentence)}"
            )
    return "\n".join(lines) + ("\n" if lines else "")


@dataclass
class SentenceChange:
    """A document and one perturbation of it, explained at sentence level with the same seed:
    the instability between the two explanations and, per changed summary sentence, the source
    sentences whose attribution moved most."""

    original: SentenceAttribution
    perturbed: SentenceAttribution
    instability: dict[str, float]
    changed: list[int]  # base-summary sentences the perturbed summary does not contain
    localizations: list[Localization]
    swapped_sentences: list[int]  # source sentences where the perturbation swapped a word

    def report(self) -> str:
        swapped = ", ".join(str(i + 1) for i in self.swapped_sentences) or "none"
        head = (
            f"instability: rank {self.instability['rank']:.3f}, top-k "
            f"{self.instability['topk']:.3f}, mass {self.instability['mass']:.4f}; "
            f"swaps in source sentences {swapped}; "
            f"{len(self.changed)} of {len(self.original.summary_sentences)} summary sentences "
            "changed\n"
        )
        return head + localization_report(self.localizations)


def explain_change(
    scorer: LikelihoodModel,
    document: str,
    perturbed: str,
    base_summary: str,
    other_summary: str,
    settings: SentenceAttributionSettings,
    top: int = 3,
) -> SentenceChange:
    """Explain log p(base summary | x) for the document and its perturbation (one-for-one word
    swaps: the perturbation keeps the document's sentence slots) with the same settings and
    seed; `other_summary` is the perturbation's summary (swaps restored, so that only what the
    model changed counts as changed)."""
    features = sentence_features(document, settings.max_words)
    original = explain_sentences(scorer, document, base_summary, settings)
    moved = explain_sentences(
        scorer, perturbed, base_summary, settings, word_counts=features.word_counts
    )
    changed = changed_summary_sentences(base_summary, other_summary)
    ends = np.cumsum(features.word_counts)
    differs = [
        i
        for i, (a, b) in enumerate(zip(document.split(), perturbed.split(), strict=True))
        if a != b
    ]
    swapped = sorted({int(np.searchsorted(ends, i, side="right")) for i in differs})
    return SentenceChange(
        original,
        moved,
        sentence_instability(original, moved, settings.top_k),
        changed,
        localize(original, moved, changed, top),
        swapped,
    )
