"""The checker that decisions use: per summary, its consistency with its source and the summary
sentences the source does not support, each beside the source passage that matches it best.

`Checker.check(pairs)` takes (source, summary) pairs and returns one `Verdict` each. A summary
is "unsupported" when its consistency is below the checker's calibrated `threshold`; a summary
sentence is listed as unsupported when its own score is below `sentence_threshold`, with the
words of it the source does not contain (`novelty.unsupported_words`, the same for every
checker).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol

import numpy as np

from hss_gate.consistency.novelty import with_words
from hss_gate.consistency.verdict import Unsupported, Verdict
from hss_gate.text.sentences import SPLITTER_VERSION, split_sentences

AGGREGATES = ("mean", "min")  # summary sentences' best scores -> the summary's consistency

SentenceMatrix = Callable[[str, Sequence[str]], np.ndarray]
"""(source, summary sentences) -> scores in [0, 1], one row per summary sentence, one column
per source passage."""


class Checker(Protocol):
    """Finds what a summary says that its source does not support."""

    fingerprint: str
    threshold: float

    def check(self, pairs: Sequence[tuple[str, str]]) -> list[Verdict]:
        """One verdict per (source, summary) pair."""
        ...


def verdict_from_matrix(
    matrix: np.ndarray,
    sentences: Sequence[str],
    passages: Sequence[str],
    sentence_threshold: float,
    aggregate: str = "mean",
) -> Verdict:
    """SummaC-ZS over a sentence matrix: the mean (`aggregate` "mean") or the minimum ("min")
    over summary sentences of each one's best passage score; a sentence whose best score is
    below `sentence_threshold` is unsupported."""
    if aggregate not in AGGREGATES:
        raise ValueError(f"aggregate: unknown '{aggregate}'; choose from {', '.join(AGGREGATES)}")
    if not sentences:
        return Verdict(1.0, (), 1.0)  # nothing claimed, nothing unsupported (length checks see it)
    if not passages or matrix.size == 0:
        return Verdict(0.0, tuple(Unsupported(s, "", 0.0) for s in sentences), 0.0)
    best = matrix.max(axis=1)
    where = matrix.argmax(axis=1)
    unsupported = tuple(
        Unsupported(s, passages[int(j)], round(float(b), 6))
        for s, b, j in zip(sentences, best, where, strict=True)
        if b < sentence_threshold
    )
    total = best.mean() if aggregate == "mean" else best.min()
    support = round(float(np.clip(best.mean(), 0.0, 1.0)), 6)
    return Verdict(round(float(np.clip(total, 0.0, 1.0)), 6), unsupported, support)


class MatrixChecker:
    """A Checker from any sentence-matrix scorer (SummaC-style, zero-shot aggregation)."""

    def __init__(
        self,
        matrix: SentenceMatrix,
        passages: Callable[[str], list[str]],
        fingerprint: str,
        threshold: float,
        sentence_threshold: float | None = None,
        aggregate: str = "mean",
    ) -> None:
        self._matrix, self._passages = matrix, passages
        self.fingerprint, self.threshold = fingerprint, threshold
        self.sentence_threshold = threshold if sentence_threshold is None else sentence_threshold
        self.aggregate = aggregate

    def check(self, pairs: Sequence[tuple[str, str]]) -> list[Verdict]:
        out = []
        for source, summary in pairs:
            sentences = split_sentences(summary)
            passages = self._passages(source)
            matrix = self._matrix(source, sentences) if sentences and passages else np.zeros(0)
            verdict = verdict_from_matrix(
                matrix, sentences, passages, self.sentence_threshold, self.aggregate
            )
            out.append(with_words(verdict, source))
        return out


# The SBERT checker's threshold: the best balanced accuracy on SummaC's SummEval subset (its
# validation cut, SummaC's own calibration convention), the only labelled data that chose it;
# FactCC and QAGS CNN/DM stay held out (experiments/calibrate_checker.py; docs/FACTUALITY.md).
# experiments/calibrate_checker.py: SummEval AUC 0.894, bacc 0.840 (in-sample)
SBERT_THRESHOLD = 0.818
CHECKERS = ("sbert", "factcc", "invented", "invented-sbert", "entail")


def sbert_matrix(encode: Any) -> SentenceMatrix:
    """SBERT cosine of each summary sentence with each source sentence, clipped to [0, 1]."""
    from hss_gate.consistency.model import VectorCache

    cached = VectorCache(encode)

    def matrix(source: str, sentences: Sequence[str]) -> np.ndarray:
        passages = split_sentences(source)
        return np.clip(cached(list(sentences)) @ cached(passages).T, 0.0, 1.0)

    return matrix


def load_checker(
    model: str,
    weights_dir: str,
    threshold: float | None,
    encode: Any,
    embedder: str,
    *,
    adapter: str | None = None,
    aggregate: str = "min",
    evidence_top: int = 3,
    evidence_neighbours: int = 1,
    cache: Any = None,
) -> Checker:
    """The checker decisions use (settings `consistency`):

    - `sbert`: SummaC-ZS over SBERT sentence cosines (all-MiniLM-L6-v2, uncased): no trained
      weights;
    - `factcc`: SummaC-ZS over the FactCC-style classifier (weights trained on the reference
      corpus: `hss factuality --train`);
    - `invented`, `invented-sbert`: the lexical checker of invented content (novel content-word
      bigrams, worst sentence; the second adds SBERT), docs/CHECKER_DEV.md: better than `sbert`
      on every development set left out, not (yet) better at system level;
    - `entail` (default): a trained entailment cross-encoder (LoRA adapter on
      all-MiniLM-L6-v2: the shipped, sha256-pinned file or `adapter`) reads each summary
      sentence against its evidence, the `evidence_top` source sentences SBERT finds closest
      to it and `evidence_neighbours` around each; `aggregate` (softmin, min or mean) over
      sentences (consistency/entail_checker.py);
    - `judge:openai:<base url>`: an LLM behind an OpenAI-compatible endpoint reads each claim
      against the same evidence and answers yes or no (P(yes) from its log-probabilities),
      the answers kept in `cache` (consistency/judge.py); never the default.
    """
    if model.startswith("judge:"):
        from hss_gate.consistency.judge import load_judge_checker

        _check_entail_aggregate(aggregate)
        return load_judge_checker(
            model, encode, embedder, threshold, aggregate, evidence_top, evidence_neighbours, cache
        )
    if model == "sbert":
        return _sbert_checker(encode, embedder, threshold)
    if model in ("invented", "invented-sbert"):
        return _invented_checker(model, threshold, encode, embedder)
    if model == "entail":
        from hss_gate.consistency.entail_checker import load_entail_checker

        _check_entail_aggregate(aggregate)
        return load_entail_checker(
            encode, embedder, threshold, adapter, aggregate, evidence_top, evidence_neighbours
        )
    if model != "factcc":
        from hss_gate.common.errors import InputError

        raise InputError(
            f"consistency.model: unknown '{model}'; choose from {', '.join(CHECKERS)} or "
            "judge:openai:<base url>"
        )
    return _factcc_checker(weights_dir, threshold, encode)


def _check_entail_aggregate(aggregate: str) -> None:
    """InputError unless `aggregate` is one the claim checkers (entail, judge) know."""
    from hss_gate.common.errors import InputError
    from hss_gate.consistency.entail_checker import AGGREGATES as ENTAIL_AGGREGATES

    if aggregate not in ENTAIL_AGGREGATES:
        raise InputError(
            f"consistency.aggregate: unknown '{aggregate}'; choose from "
            f"{', '.join(ENTAIL_AGGREGATES)}"
        )


def _sbert_checker(encode: Any, embedder: str, threshold: float | None) -> MatrixChecker:
    """SummaC-ZS over SBERT cosines, at SBERT_THRESHOLD unless `threshold` is given."""
    chosen = SBERT_THRESHOLD if threshold is None else threshold
    fingerprint = f"sbert-zs:{embedder}:{SPLITTER_VERSION}:t{chosen:g}"
    return MatrixChecker(sbert_matrix(encode), split_sentences, fingerprint, chosen)


def _invented_checker(model: str, threshold: float | None, encode: Any, embedder: str) -> Checker:
    """The lexical checker of invented content (`invented`), or with SBERT (`invented-sbert`)."""
    from hss_gate.consistency.invented import SBERT_WEIGHTS_PATH, load_invented_checker

    if model == "invented":
        return load_invented_checker(threshold=threshold)
    sbert = _sbert_checker(encode, embedder, None)
    return load_invented_checker(SBERT_WEIGHTS_PATH, threshold, sbert=sbert)


def _factcc_checker(weights_dir: str, threshold: float | None, encode: Any) -> MatrixChecker:
    """SummaC-ZS over the FactCC-style classifier trained into `weights_dir` (ModelError when
    there are no weights)."""
    from hss_gate.common.errors import ModelError
    from hss_gate.consistency.model import FactccModel, load_factcc_weights, weights_path

    if not weights_path(weights_dir).exists():
        raise ModelError(
            f"{weights_dir}: no factcc checker weights; train them with `hss factuality --train` "
            "(or `dvc repro factcc`)"
        )
    weights = load_factcc_weights(weights_dir)
    factcc = FactccModel(weights.logistic, encode, weights.fingerprint)
    chosen = 0.5 if threshold is None else threshold
    fingerprint = f"zs:{weights.fingerprint}:t{chosen:g}"
    return MatrixChecker(factcc.sentence_matrix, split_sentences, fingerprint, chosen)
