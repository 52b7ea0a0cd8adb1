"""The models the engine uses besides the summarizer (`Toolkit`), and the real ones built once
per process (`real_toolkit`; lazy: nothing loads until first use)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any

from hss_gate.consistency.checker import Checker
from hss_gate.models.embedding import Embedder, SbertEmbedder
from hss_gate.models.language import SpacyTagger
from hss_gate.settings import ConsistencySettings, HssSettings


@dataclass
class Toolkit:
    """The models the engine uses besides the summarizer (all lazy)."""

    tagger: Any
    vectors: Any
    lexicon: Any
    embedder: Embedder
    checker: Checker

    @property
    def perturb_fingerprint(self) -> str:
        return "|".join(
            [
                self.tagger.fingerprint,
                self.vectors.fingerprint,
                self.lexicon.fingerprint,
                self.embedder.fingerprint,
            ]
        )


class LazyVectors:
    """Word vectors loaded on first use."""

    def __init__(self, name: str, vocab_limit: int) -> None:
        self.name, self.vocab_limit = name, vocab_limit

    @cached_property
    def _vectors(self):
        from hss_gate.text.word_vectors import WordVectors

        return WordVectors.load(self.name, self.vocab_limit)

    @property
    def fingerprint(self) -> str:
        return (
            f"{self.name}:{self.vocab_limit}"
            if self.name == "glove-6b-50d"
            else self._vectors.fingerprint
        )

    def neighbours(self, word: str, n: int, min_cosine: float):
        return self._vectors.neighbours(word, n, min_cosine)


class LazyLexicon:
    """WordNet loaded on first use."""

    fingerprint = "wordnet:wordnet-3.0"

    @cached_property
    def _wordnet(self):
        from hss_gate.text.lexicon import WordNet

        return WordNet.load_embedded()

    def synonyms(self, lemma: str, pos: str, max_senses: int = 3) -> set[str]:
        return self._wordnet.synonyms(lemma, pos, max_senses)

    def is_antonym(self, a: str, b: str) -> bool:
        return self._wordnet.is_antonym(a, b)

    def base_forms(self, word: str, pos: str) -> list[str]:
        return self._wordnet.base_forms(word, pos)

    def antonyms(self, lemma: str, pos: str) -> set[str]:
        return self._wordnet.antonyms(lemma, pos)


class LazyChecker:
    """The consistency checker, loaded on first use."""

    def __init__(self, settings: ConsistencySettings, embedder: SbertEmbedder, cache_dir: str):
        self.settings, self.embedder, self.cache_dir = settings, embedder, cache_dir

    @cached_property
    def _checker(self):
        from hss_gate.common.cache import Cache
        from hss_gate.consistency.checker import load_checker
        from hss_gate.consistency.model import cached_encoder

        cache = Cache(self.cache_dir)
        encode = cached_encoder(self.embedder, cache)
        s = self.settings
        return load_checker(
            s.model,
            s.weights_dir,
            s.threshold,
            encode,
            self.embedder.fingerprint,
            **s.entail_options(),
            cache=cache,  # a judge's answers (judge:)
        )

    @property
    def fingerprint(self) -> str:
        return self._checker.fingerprint

    @property
    def threshold(self) -> float:
        return self._checker.threshold

    def check(self, pairs):
        return self._checker.check(pairs)


def real_toolkit(settings: HssSettings) -> Toolkit:
    """spaCy, word vectors, WordNet, SBERT and the consistency checker as configured."""
    embedder = SbertEmbedder(settings.score.embedder)
    return Toolkit(
        tagger=SpacyTagger(),
        vectors=LazyVectors(settings.perturb.word_vectors, settings.perturb.vocab_limit),
        lexicon=LazyLexicon(),
        embedder=embedder,
        checker=LazyChecker(settings.consistency, embedder, settings.run.cache_dir),
    )
