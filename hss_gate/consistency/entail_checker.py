"""The `entail` checker: a trained entailment cross-encoder reads each claim of a summary (each
of its sentences) against the claim's evidence, the source sentences that could support it.

The source is split into sentences (`hss_gate.text.sentences.split_sentences`). For each summary
sentence, the `top` source sentences most similar to it (SBERT cosine) and `neighbours` on each
side of each are joined in document order into one premise that fits the encoder's context beside
the sentence (`evidence.choose_evidence`); the cross-encoder gives P(premise supports sentence)
(`entailment.EntailmentModel`). The summary's consistency aggregates its sentences' scores
(`aggregate`: mean, min, or softmin, a soft minimum in which one unsupported sentence shows);
a sentence below `sentence_threshold` is listed as unsupported beside its evidence. A summary
with no sentence of words claims nothing (consistency 1.0; the form checks see it).

The adapter is the shipped `entail_adapter.safetensors`, verified against the sha256 pinned in
`entail_release.py` before it is loaded, or a file of the user's (`consistency.adapter`), whose
digest goes into the fingerprint. Torch loads on the first pair scored, never at import.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import numpy as np

from hss_gate.common.errors import ModelError
from hss_gate.consistency.entail_release import entail_fingerprint
from hss_gate.consistency.evidence import DEFAULT_NEIGHBOURS, DEFAULT_TOP, choose_evidence
from hss_gate.consistency.model import Encode, VectorCache
from hss_gate.consistency.novelty import with_words
from hss_gate.consistency.verdict import Unsupported, Verdict
from hss_gate.text.english import ENGLISH_FUNCTION_WORDS
from hss_gate.text.sentences import split_sentences

if TYPE_CHECKING:
    from hss_gate.consistency.entailment import EntailmentModel


class PairModel(Protocol):
    """The cross-encoder as the checker uses it."""

    def __call__(self, premises: Sequence[str], hypotheses: Sequence[str]) -> np.ndarray:
        """P(supported) of each aligned (premise, hypothesis) pair, in [0, 1]."""
        ...

    def count_tokens(self, text: str) -> int:
        """Word pieces of `text` under the encoder's tokenizer."""
        ...

    @property
    def max_length(self) -> int:
        """The encoder's context in word pieces (premise and hypothesis together)."""
        ...


BASE_MODEL = "all-minilm-l6-v2"
AGGREGATES = ("mean", "min", "softmin")
# set by hand when the module was written (8dabfb7, 2026-12-05); no data chose it, never tuned
SOFTMIN_TEMPERATURE = 0.1


def aggregate_scores(scores: Sequence[float], how: str) -> float:
    """The summary's consistency from its sentences' scores: their mean, their minimum, or a
    soft minimum (the mean weighted by softmax(-score / 0.1): near the minimum when one sentence
    is far below the rest, near the mean when they are close)."""
    values = np.asarray(scores, dtype=float)
    if values.size == 0:
        return 1.0
    if how == "mean":
        return float(values.mean())
    if how == "min":
        return float(values.min())
    if how == "softmin":
        weights = np.exp(-(values - values.min()) / SOFTMIN_TEMPERATURE)
        return float((weights * values).sum() / weights.sum())
    raise ValueError(f"aggregate: unknown '{how}'; choose from {', '.join(AGGREGATES)}")


def claims_of(summary: str) -> list[str]:
    """The summary's sentences that hold a number or a word other than a function word: the
    claims it makes (a sentence of stop words or punctuation claims nothing)."""
    return [s for s in split_sentences(summary) if _claims_something(s)]


def _claims_something(sentence: str) -> bool:
    words = re.findall(r"\w+", sentence.lower())
    return any(w.isdigit() or w not in ENGLISH_FUNCTION_WORDS for w in words)


def _words_of(text: str) -> str:
    return " ".join(re.findall(r"\w+", text.lower()))


def quoted(evidence: str, claim: str) -> bool:
    """Does the evidence hold the claim word for word (case and punctuation aside)? Such a claim
    is supported by identity; the trained encoder is not asked (it scored some verbatim source
    sentences near 0: docs/FACTUALITY.md)."""
    words = _words_of(claim)
    return bool(words) and f" {words} " in f" {_words_of(evidence)} "


@dataclass(frozen=True)
class ReadClaims:
    """One summary as the checker read it: its claims, each one's evidence and score."""

    claims: tuple[str, ...]
    evidence: tuple[str, ...]
    scores: tuple[float, ...]


class ClaimChecker:
    """The `entail` Checker: each summary sentence against its evidence. Scores are kept per
    (evidence, sentence) for the instance's life, so a document's base and perturbed summaries
    share them; a summary's new pairs go to the encoder in one batch."""

    def __init__(
        self,
        model: PairModel,
        encode: Encode,
        fingerprint: str,
        threshold: float,
        aggregate: str = "min",
        top: int = DEFAULT_TOP,
        neighbours: int = DEFAULT_NEIGHBOURS,
        sentence_threshold: float | None = None,
    ) -> None:
        if top < 1 or neighbours < 0:
            raise ValueError(f"top ({top}) must be >= 1 and neighbours ({neighbours}) >= 0")
        if aggregate not in AGGREGATES:
            raise ValueError(
                f"aggregate: unknown '{aggregate}'; choose from {', '.join(AGGREGATES)}"
            )
        self._model, self._vectors = model, VectorCache(encode)
        self.top, self.neighbours = top, neighbours
        self.fingerprint, self.threshold, self.aggregate = fingerprint, threshold, aggregate
        self.sentence_threshold = threshold if sentence_threshold is None else sentence_threshold
        self._pairs: dict[tuple[str, str], float] = {}

    def evidence(self, source_sentences: Sequence[str], claims: Sequence[str]) -> list[str]:
        """Each claim's evidence text, sized to leave room for the claim in the context."""
        if not claims or not source_sentences:
            return ["" for _ in claims]
        similarity = self._vectors(list(claims)) @ self._vectors(list(source_sentences)).T
        out = []
        for claim, row in zip(claims, similarity, strict=True):
            count = self._model.count_tokens
            budget = max(32, self._model.max_length - count(claim) - 3)
            found = choose_evidence(source_sentences, row, budget, count, self.top, self.neighbours)
            out.append(found.text)
        return out

    def read(self, pairs: Sequence[tuple[str, str]]) -> list[ReadClaims]:
        """Each summary's claims, each claim's evidence and score (a summary's new pairs scored
        in one batch, so a score does not depend on which summaries share a call: padding
        changes the last digits)."""
        planned = []
        for source, summary in pairs:
            claims = claims_of(summary)
            sentences = split_sentences(source) if claims else []
            planned.append((claims, self.evidence(sentences, claims)))
        for claims, evidence in planned:  # one batch a summary, however the calls group them
            wanted = [(e, c) for e, c in zip(evidence, claims, strict=True) if e]
            todo = [pair for pair in dict.fromkeys(wanted) if pair not in self._pairs]
            self._pairs.update((pair, 1.0) for pair in todo if quoted(*pair))
            todo = [pair for pair in todo if pair not in self._pairs]
            if todo:
                found = self._model([p for p, _ in todo], [h for _, h in todo])
                scores = (float(np.clip(v, 0, 1)) for v in found)
                self._pairs.update(zip(todo, scores, strict=True))
        return [
            ReadClaims(
                tuple(claims),
                tuple(evidence),
                tuple(
                    self._pairs[(e, c)] if e else 0.0 for e, c in zip(evidence, claims, strict=True)
                ),
            )
            for claims, evidence in planned
        ]

    def check(self, pairs: Sequence[tuple[str, str]]) -> list[Verdict]:
        out = []
        for (source, _), read in zip(pairs, self.read(pairs), strict=True):
            unsupported = tuple(
                Unsupported(c, e, round(v, 6))
                for c, e, v in zip(read.claims, read.evidence, read.scores, strict=True)
                if v < self.sentence_threshold
            )
            consistency = aggregate_scores(read.scores, self.aggregate)
            consistency = round(float(np.clip(consistency, 0.0, 1.0)), 6)
            support = round(float(np.clip(aggregate_scores(read.scores, "mean"), 0.0, 1.0)), 6)
            out.append(with_words(Verdict(consistency, unsupported, support), source))
        return out


def verified_adapter(path: Path, sha256: str | None) -> str:
    """The adapter file's sha256, after checking it against `sha256` (None: not pinned, a
    user's own file). Missing or another digest: a one-line ModelError naming the file."""
    from hss_gate.models.model_store import sha256_file

    if not path.is_file():
        raise ModelError(f"{path}: the entail checker's adapter is missing")
    digest = sha256_file(path)
    if sha256 is not None and digest != sha256:
        pinned = sha256[:12] if sha256 else "nothing (no sha256 pinned yet)"
        raise ModelError(
            f"{path}: sha256 {digest[:12]}... does not match the pinned {pinned}; refusing to load"
        )
    return digest


def load_entailment_scorer(
    adapter: Path, sha256: str | None, base_dir: Path | None = None, batch_size: int = 16
) -> EntailmentModel:
    """An `EntailmentModel` with the adapter (verified first) on the base encoder (`base_dir`,
    default the embedded all-MiniLM-L6-v2, verified)."""
    from hss_gate.consistency.entailment import (
        EntailmentModel,
        build_cross_encoder,
        embedded_base_dir,
        load_adapter,
        merge_adapters,
        read_adapter_config,
    )

    digest = verified_adapter(adapter, sha256)
    try:
        config = read_adapter_config(adapter)
        if base_dir is None:
            if config.base != BASE_MODEL:
                raise ModelError(f"{adapter}: an adapter for '{config.base}', not {BASE_MODEL}")
            base_dir = embedded_base_dir()
        tokenizer, model = build_cross_encoder(base_dir, config)
        load_adapter(model, adapter)
        merge_adapters(model)
    except ModelError as exc:
        if str(adapter) in str(exc):
            raise
        raise ModelError(f"{adapter}: {exc}") from exc
    except Exception as exc:  # a file safetensors or transformers cannot read
        reason = " ".join(f"{type(exc).__name__}: {exc}".split())
        raise ModelError(f"{adapter}: cannot load the entail checker ({reason})") from exc
    return EntailmentModel(tokenizer, model, config, f"entail:{digest[:12]}", batch_size)


class LazyEntailmentModel:
    """`load_entailment_scorer` on the first pair scored; each call runs on `threads` torch
    threads, else on those of the innermost `embedding.torch_threads`, else torch's own."""

    def __init__(
        self,
        adapter: Path,
        sha256: str | None,
        base_dir: Path | None = None,
        threads: int | None = None,
    ) -> None:
        self.adapter, self.sha256, self.base_dir, self.threads = adapter, sha256, base_dir, threads
        self._scorer: EntailmentModel | None = None
        self._default_threads = 0
        self._max_length: int | None = None

    def _loaded(self) -> EntailmentModel:
        if self._scorer is None:
            import torch

            self._default_threads = torch.get_num_threads()
            self._scorer = load_entailment_scorer(self.adapter, self.sha256, self.base_dir)
        return self._scorer

    def count_tokens(self, text: str) -> int:
        """Word pieces of `text` under the encoder's tokenizer (loads the model once)."""
        return len(self._loaded().tokenizer.tokenize(text))

    @property
    def max_length(self) -> int:
        """The adapter's context length, read from its file's metadata (the model is not loaded)."""
        from hss_gate.consistency.entailment import read_adapter_config

        if self._max_length is None:
            try:
                self._max_length = read_adapter_config(self.adapter).max_length
            except ModelError as exc:
                raise ModelError(f"{self.adapter}: {exc}") from exc
            except Exception as exc:  # not a safetensors file
                reason = " ".join(f"{type(exc).__name__}: {exc}".split())
                raise ModelError(f"{self.adapter}: cannot read the adapter ({reason})") from exc
        return self._max_length

    def __call__(self, premises: Sequence[str], hypotheses: Sequence[str]) -> np.ndarray:
        import torch

        from hss_gate.models.embedding import _apply_torch_threads

        scorer = self._loaded()
        if self.threads:
            torch.set_num_threads(self.threads)
        else:
            _apply_torch_threads(self._default_threads)
        return scorer.scores(premises, hypotheses)


def load_entail_checker(
    encode: Encode,
    embedder: str,
    threshold: float | None = None,
    adapter: str | Path | None = None,
    aggregate: str = "min",
    top: int = DEFAULT_TOP,
    neighbours: int = DEFAULT_NEIGHBOURS,
    threads: int | None = None,
    base_dir: Path | None = None,
) -> ClaimChecker:
    """The checker over the shipped adapter (`adapter` None: sha256-pinned, with the shipped
    threshold) or a user's adapter file (its digest recorded, not pinned). The file is verified
    now; the model loads on the first pair scored (and the file is verified again then)."""
    from hss_gate.consistency import entail_release

    shipped = entail_release.ENTAIL_ADAPTER_PATH
    path = shipped if adapter is None else Path(adapter)
    pin = entail_release.ENTAIL_ADAPTER_SHA256 if path.resolve() == shipped.resolve() else None
    digest = verified_adapter(path, pin)
    chosen = entail_release.ENTAIL_THRESHOLD if threshold is None else threshold
    model = LazyEntailmentModel(path, digest, base_dir, threads)
    fingerprint = entail_fingerprint(digest, embedder, top, neighbours, aggregate, chosen)
    return ClaimChecker(model, encode, fingerprint, chosen, aggregate, top, neighbours)
