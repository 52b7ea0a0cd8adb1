"""The `entail` checker's sentence matrix: a trained entailment cross-encoder reads each summary
sentence against the source passages SBERT finds closest to it.

The source is split into sentences (`hss_gate.sentences.split_sentences`) and consecutive
sentences are grouped into non-overlapping chunks of at most `chunk_words` words (a longer
sentence is a chunk of its own). For each summary sentence the `top_k` chunks holding the
source sentence most similar to it (SBERT cosine) are cross-encoded, P(chunk supports sentence)
(`entailment.EntailmentModel`; a pair longer than the encoder's window loses the premise's
tail first, the hypothesis is kept); the other cells of the matrix are 0. `checker.load_checker`
turns the matrix into verdicts (`MatrixChecker`: each sentence's best chunk, then the mean or the
minimum over sentences).

The adapter is the shipped `entail_adapter.safetensors`, verified against the sha256 pinned in
`entail_release.py` before it is loaded, or a file of the user's (`consistency.adapter`), whose
digest goes into the fingerprint. Torch loads on the first pair scored, never at import.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from hss_gate.consistency.model import Encode, VectorCache
from hss_gate.errors import ModelError
from hss_gate.sentences import SPLITTER_VERSION, split_sentences

if TYPE_CHECKING:
    from hss_gate.consistency.entailment import EntailmentModel

PairScores = Callable[[Sequence[str], Sequence[str]], np.ndarray]
"""(premises, hypotheses) -> P(supported) of each aligned pair, in [0, 1]."""

DEFAULT_TOP_K = 2
DEFAULT_CHUNK_WORDS = 120
BASE_MODEL = "all-minilm-l6-v2"


@dataclass(frozen=True)
class SourceChunks:
    """A source's sentences and the chunks they are grouped into."""

    sentences: tuple[str, ...]
    spans: tuple[tuple[int, int], ...]  # each chunk's [start, end) in `sentences`

    @property
    def texts(self) -> list[str]:
        """Each chunk's text: its sentences joined by a space."""
        return [" ".join(self.sentences[a:b]) for a, b in self.spans]


def chunk_source(source: str, chunk_words: int) -> SourceChunks:
    """Consecutive sentences in non-overlapping chunks of at most `chunk_words` words (by
    whitespace); a sentence longer than that is a chunk of its own."""
    sentences = split_sentences(source)
    spans: list[tuple[int, int]] = []
    words = 0
    for i, sentence in enumerate(sentences):
        n = len(sentence.split())
        if not spans or words + n > chunk_words:
            spans.append((i, i))
            words = 0
        spans[-1] = (spans[-1][0], i + 1)
        words += n
    return SourceChunks(tuple(sentences), tuple(spans))


def entail_fingerprint(
    adapter_sha256: str,
    embedder: str,
    top_k: int,
    chunk_words: int,
    aggregate: str,
    threshold: float,
) -> str:
    """What the checker's verdicts depend on: adapter, SBERT, splitter, retrieval, aggregation."""
    return (
        f"entail:{adapter_sha256[:12]}:{embedder}:{SPLITTER_VERSION}:k{top_k}:w{chunk_words}:"
        f"{aggregate}:t{threshold:g}"
    )


class EntailMatrix:
    """The `SentenceMatrix` of the `entail` checker (rows: summary sentences, columns: the
    source's chunks), with `passages` giving those chunks. Cross-encoder scores are kept per
    (chunk, sentence) for the instance's life, so a document's base and perturbed summaries
    share them."""

    def __init__(
        self,
        scores: PairScores,
        encode: Encode,
        adapter_sha256: str,
        top_k: int = DEFAULT_TOP_K,
        chunk_words: int = DEFAULT_CHUNK_WORDS,
    ) -> None:
        if top_k < 1 or chunk_words < 1:
            raise ValueError(f"top_k ({top_k}) and chunk_words ({chunk_words}) must be >= 1")
        self._scores, self._vectors = scores, VectorCache(encode)
        self.adapter_sha256, self.top_k, self.chunk_words = adapter_sha256, top_k, chunk_words
        self._pairs: dict[tuple[str, str], float] = {}
        self._chunked: tuple[str, SourceChunks] | None = None

    def chunks(self, source: str) -> SourceChunks:
        """The source's chunks (the last source's kept: `passages` and the matrix share it)."""
        if self._chunked is None or self._chunked[0] != source:
            self._chunked = (source, chunk_source(source, self.chunk_words))
        return self._chunked[1]

    def passages(self, source: str) -> list[str]:
        """The chunk texts: the matrix's columns, the passages verdicts cite."""
        return self.chunks(source).texts

    def chosen(self, source: str, sentences: Sequence[str]) -> list[list[int]]:
        """Per summary sentence, the `top_k` chunks whose best source sentence is most similar
        to it (SBERT cosine; ties go to the earlier chunk)."""
        chunks = self.chunks(source)
        if not sentences or not chunks.spans:
            return [[] for _ in sentences]
        similarity = self._vectors(list(sentences)) @ self._vectors(list(chunks.sentences)).T
        per_chunk = np.stack([similarity[:, a:b].max(axis=1) for a, b in chunks.spans], axis=1)
        order = np.argsort(-per_chunk, axis=1, kind="stable")[:, : self.top_k]
        return [[int(j) for j in row] for row in order]

    def __call__(self, source: str, sentences: Sequence[str]) -> np.ndarray:
        texts = self.passages(source)
        matrix = np.zeros((len(sentences), len(texts)))
        chosen = self.chosen(source, sentences)
        wanted = [(texts[j], s) for s, row in zip(sentences, chosen, strict=True) for j in row]
        todo = [pair for pair in dict.fromkeys(wanted) if pair not in self._pairs]
        if todo:
            found = self._scores([p for p, _ in todo], [h for _, h in todo])
            self._pairs.update(zip(todo, (float(v) for v in found), strict=True))
        for i, (sentence, row) in enumerate(zip(sentences, chosen, strict=True)):
            for j in row:
                matrix[i, j] = self._pairs[(texts[j], sentence)]
        return np.clip(matrix, 0.0, 1.0)


def verified_adapter(path: Path, sha256: str | None) -> str:
    """The adapter file's sha256, after checking it against `sha256` (None: not pinned, a
    user's own file). Missing or another digest: a one-line ModelError naming the file."""
    from hss_gate.model_store import sha256_file

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

    def __call__(self, premises: Sequence[str], hypotheses: Sequence[str]) -> np.ndarray:
        import torch

        from hss_gate.embedding import _apply_torch_threads

        if self._scorer is None:
            self._default_threads = torch.get_num_threads()
            self._scorer = load_entailment_scorer(self.adapter, self.sha256, self.base_dir)
        if self.threads:
            torch.set_num_threads(self.threads)
        else:
            _apply_torch_threads(self._default_threads)
        return self._scorer.scores(premises, hypotheses)


def load_entail_matrix(
    encode: Encode,
    adapter: str | Path | None = None,
    top_k: int = DEFAULT_TOP_K,
    chunk_words: int = DEFAULT_CHUNK_WORDS,
    threads: int | None = None,
    base_dir: Path | None = None,
) -> EntailMatrix:
    """The matrix over the shipped adapter (`adapter` None: sha256-pinned) or a user's adapter
    file (its digest recorded, not pinned). The file is verified now; the model loads on the
    first pair scored (and the file is verified again then)."""
    from hss_gate.consistency import entail_release

    shipped = entail_release.ENTAIL_ADAPTER_PATH
    path = shipped if adapter is None else Path(adapter)
    pin = entail_release.ENTAIL_ADAPTER_SHA256 if path.resolve() == shipped.resolve() else None
    digest = verified_adapter(path, pin)
    scores = LazyEntailmentModel(path, digest, base_dir, threads)
    return EntailMatrix(scores, encode, digest, top_k, chunk_words)
