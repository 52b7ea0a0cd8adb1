"""The `invented` checker: sees what a summary adds that its source does not contain.

Features (hss_gate.consistency.novelty; no neural model): per summary sentence, the rarity-weighted
share of its content words missing from the two source sentences it aligns to, and the share of
its content-word bigrams the source never writes; over the summary, the share of novel bigrams.
Words are matched case-insensitively through Porter stems and normalized numbers ("two" = 2,
"1,000" = 1000, "5.0" = 5, "%" = "percent"), so lower-cased and tokenized text is read as well as
cased text. A logistic regression over the standardized features gives the consistency in (0, 1)
(higher = more consistent); its weights, threshold and provenance are in
`invented_weights.json` beside this module (fitted by experiments/checker_dev.py; which data chose
each number: docs/CHECKER_DEV.md).

Each summary sentence is scored by the same model on its own; a sentence below the sentence
threshold is listed as `Unsupported` with its aligned source passage. `explain()` also gives,
per sentence, the unsupported words (the invented name or number) so reports can mark them.

    checker = load_invented_checker()                  # the shipped weights
    verdicts = checker.check([(source, summary)])
    findings = checker.explain([(source, summary)])   # + unsupported words per sentence
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hss_gate.consistency.novelty import (
    SentenceNovelty,
    Source,
    WordRank,
    novelty_features,
    prepare,
    sentence_novelty,
)
from hss_gate.consistency.verdict import Unsupported, Verdict
from hss_gate.text.sentences import split_sentences

WEIGHTS_PATH = Path(__file__).with_name("invented_weights.json")
SBERT_WEIGHTS_PATH = Path(__file__).with_name("invented_sbert_weights.json")


@dataclass(frozen=True)
class InventedWeights:
    """A fitted logistic regression over named novelty features, with its decision values."""

    features: tuple[str, ...]
    mean: tuple[float, ...]
    std: tuple[float, ...]
    coef: tuple[float, ...]
    intercept: float
    threshold: float
    sentence_threshold: float | None = None
    margin: float | None = None  # the gate's consistency margin in this score's units
    max_low_share: float | None = None
    provenance: dict[str, Any] = field(default_factory=dict)

    @property
    def digest(self) -> str:
        numbers = [self.features, self.mean, self.std, self.coef, self.intercept]
        return hashlib.sha256(json.dumps(numbers).encode()).hexdigest()[:12]

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> InventedWeights:
        n = len(data["features"])
        for name in ("mean", "std", "coef"):
            if len(data[name]) != n:
                raise ValueError(
                    f"invented weights: '{name}' has {len(data[name])} values, not {n}"
                )
        return cls(
            tuple(data["features"]),
            tuple(float(x) for x in data["mean"]),
            tuple(float(x) for x in data["std"]),
            tuple(float(x) for x in data["coef"]),
            float(data["intercept"]),
            float(data["threshold"]),
            None if data.get("sentence_threshold") is None else float(data["sentence_threshold"]),
            None if data.get("margin") is None else float(data["margin"]),
            None if data.get("max_low_share") is None else float(data["max_low_share"]),
            dict(data.get("provenance", {})),
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "features": list(self.features),
            "mean": list(self.mean),
            "std": list(self.std),
            "coef": list(self.coef),
            "intercept": self.intercept,
            "threshold": self.threshold,
            "sentence_threshold": self.sentence_threshold,
            "margin": self.margin,
            "max_low_share": self.max_low_share,
            "provenance": self.provenance,
        }

    def score(self, features: dict[str, float]) -> float:
        """P(consistent) from a feature dict (every name in `features` must be present)."""
        z = self.intercept + sum(
            c * (features[f] - m) / (s if s else 1.0)
            for f, m, s, c in zip(self.features, self.mean, self.std, self.coef, strict=True)
        )
        return 1.0 / (1.0 + math.exp(-max(-60.0, min(60.0, z))))


def load_weights(path: str | Path = WEIGHTS_PATH) -> InventedWeights:
    return InventedWeights.from_dict(json.loads(Path(path).read_text(encoding="utf-8")))


@dataclass(frozen=True)
class SentenceFinding:
    """One summary sentence: its score, aligned passage and unsupported words."""

    sentence: str
    passage: str
    score: float
    unsupported_words: tuple[str, ...]
    unsupported: bool


@dataclass(frozen=True)
class Finding:
    """The verdict on one summary and the per-sentence detail behind it."""

    verdict: Verdict
    sentences: tuple[SentenceFinding, ...]


class InventedChecker:
    """A `Checker` (hss_gate.consistency.checker) over word-level novelty signals."""

    def __init__(
        self,
        weights: InventedWeights,
        word_rank: WordRank | None = None,
        threshold: float | None = None,
        splitter: Callable[[str], list[str]] = split_sentences,
        sbert: Any = None,
    ) -> None:
        """`sbert`: a Checker whose consistency is the `sbert` feature (the default `sbert`
        MatrixChecker), needed only when the weights use that feature."""
        self.weights = weights
        self.threshold = weights.threshold if threshold is None else threshold
        self.sentence_threshold = (
            weights.sentence_threshold if weights.sentence_threshold is not None else self.threshold
        )
        if threshold is not None:
            self.sentence_threshold = threshold
        self._rank = word_rank
        self._split = splitter
        self._sbert = sbert
        if "sbert" in weights.features and sbert is None:
            raise ValueError("these weights use the 'sbert' feature: pass the sbert checker")
        ranks = "glove-rank" if word_rank is not None else "no-rank"
        extra = f":{sbert.fingerprint}" if sbert is not None and "sbert" in weights.features else ""
        # v1: the novelty / splitter code version (bump it when their output changes)
        self.fingerprint = f"invented-v1:{weights.digest}:{ranks}{extra}:t{self.threshold:g}"
        self._source: tuple[str, Source] | None = None

    def _prepared(self, source: str) -> Source:
        if self._source is None or self._source[0] != source:
            self._source = (source, prepare(source))
        return self._source[1]

    def _sentences(self, source: str, summary: str) -> list[SentenceNovelty]:
        src = self._prepared(source)
        return [sentence_novelty(s, src, self._rank) for s in self._split(summary)]

    def explain(self, pairs: Sequence[tuple[str, str]]) -> list[Finding]:
        out = []
        for source, summary in pairs:
            sentences = self._sentences(source, summary)
            if not sentences:
                out.append(
                    Finding(Verdict(1.0, (), 1.0), ())
                )  # nothing claimed, nothing unsupported
                continue
            if not source.strip():
                found = tuple(
                    SentenceFinding(s.sentence, "", 0.0, s.unsupported, True) for s in sentences
                )
                unsupported = tuple(
                    Unsupported(s.sentence, "", 0.0, s.unsupported) for s in sentences
                )
                out.append(Finding(Verdict(0.0, unsupported, 0.0), found))
                continue
            total = round(self.weights.score(self._features(source, summary, sentences)), 6)
            found = tuple(
                SentenceFinding(
                    s.sentence,
                    s.passage,
                    round(sc, 6),
                    s.unsupported,
                    sc < self.sentence_threshold,
                )
                for s, sc in (
                    (s, self.weights.score(self._features(source, s.sentence, [s])))
                    for s in sentences
                )
            )
            unsupported = tuple(
                Unsupported(f.sentence, f.passage, f.score, f.unsupported_words)
                for f in found
                if f.unsupported
            )
            support = round(sum(f.score for f in found) / len(found), 6)
            out.append(Finding(Verdict(total, unsupported, support), found))
        return out

    def _features(
        self, source: str, text: str, sentences: list[SentenceNovelty]
    ) -> dict[str, float]:
        features = novelty_features(sentences)
        if "precision" in self.weights.features:  # content-word precision (clipped counts)
            from hss_gate.consistency.features import overlap_scores

            features["precision"] = overlap_scores(source, text).precision
        if "sbert" in self.weights.features:
            features["sbert"] = self._sbert.check([(source, text)])[0].consistency
        return features

    def check(self, pairs: Sequence[tuple[str, str]]) -> list[Verdict]:
        return [f.verdict for f in self.explain(pairs)]

    def unsupported_words(self, source: str, summary: str) -> list[tuple[str, tuple[str, ...]]]:
        """Per summary sentence: (sentence, its content words the source does not contain);
        the words are `novelty.unsupported_words`, as every checker's `Unsupported.words`."""
        return [(s.sentence, s.unsupported) for s in self._sentences(source, summary)]


def load_invented_checker(
    weights_path: str | Path | None = None,
    threshold: float | None = None,
    word_rank: WordRank | str | None = "glove",
    sbert: Any = None,
) -> InventedChecker:
    """The checker with the shipped weights (or `weights_path`). `word_rank="glove"` loads the
    word-frequency ranks of the embedded GloVe 6B vocabulary (verified) lazily, on the first
    check; pass None to weigh every word alike (the weights were fitted with GloVe ranks).
    `sbert`: the `sbert` Checker (checker.load_checker("sbert", ...)), needed only by weights
    that use the sbert feature (invented_sbert_weights.json)."""
    weights = load_weights(weights_path or WEIGHTS_PATH)
    if word_rank == "glove":
        rank: WordRank | None = _LazyGloveRank()
    else:
        rank = word_rank  # type: ignore[assignment]
    return InventedChecker(weights, rank, threshold, sbert=sbert)


class _LazyGloveRank:
    def __init__(self) -> None:
        self._ranks: dict[str, int] | None = None

    def __call__(self, word: str) -> int | None:
        if self._ranks is None:
            from hss_gate.consistency.novelty import glove_ranks

            self._ranks = glove_ranks()
        return self._ranks.get(word)


def weights_summary(weights: InventedWeights) -> str:
    terms = ", ".join(f"{f} {c:+.3f}" for f, c in zip(weights.features, weights.coef, strict=True))
    return f"{terms}; threshold {weights.threshold:.3f}"


__all__ = [
    "Finding",
    "InventedChecker",
    "InventedWeights",
    "SentenceFinding",
    "load_invented_checker",
    "load_weights",
    "weights_summary",
]
