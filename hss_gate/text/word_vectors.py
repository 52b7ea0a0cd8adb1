"""Word-vector nearest neighbours for swap candidates (GloVe by default, or a word2vec file)."""

from __future__ import annotations

import hashlib
from functools import lru_cache
from pathlib import Path

import numpy as np

from hss_gate.common.errors import ModelError
from hss_gate.models import model_store


class WordVectors:
    """Cosine nearest neighbours over the `vocab_limit` most frequent words."""

    def __init__(self, words: list[str], vectors: np.ndarray, *, fingerprint: str) -> None:
        if len(words) != vectors.shape[0]:
            raise ValueError("words and vectors differ in length")
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        self._matrix = (vectors / np.where(norms == 0, 1.0, norms)).astype(np.float32)
        self._words = words
        self._index = {w: i for i, w in enumerate(words)}
        self.fingerprint = fingerprint
        self.neighbours = lru_cache(maxsize=50_000)(self._neighbours)

    def __contains__(self, word: str) -> bool:
        return word in self._index

    def rank(self, word: str) -> int | None:
        """Frequency rank of a word (0 = most frequent), None if unknown."""
        return self._index.get(word)

    def _neighbours(self, word: str, n: int, min_cosine: float) -> tuple[tuple[str, float], ...]:
        i = self._index.get(word)
        if i is None:
            return ()
        sims = self._matrix @ self._matrix[i]
        sims[i] = -1.0
        top = np.argpartition(-sims, min(n, sims.size - 1))[:n]
        top = top[np.argsort(-sims[top], kind="stable")]
        return tuple((self._words[j], float(sims[j])) for j in top if sims[j] >= min_cosine)

    @classmethod
    def load(cls, name_or_path: str, vocab_limit: int) -> WordVectors:
        """Load the embedded GloVe ('glove-6b-50d') or a word2vec file (never a pickle)."""
        if name_or_path == "glove-6b-50d":
            return cls._load_glove(vocab_limit)
        return cls._load_keyed_vectors(Path(name_or_path), vocab_limit)

    @classmethod
    def _load_glove(cls, vocab_limit: int) -> WordVectors:
        import pandas as pd

        model = model_store.resolve_name("glove-6b-50d")
        problems = model_store.verify(model)
        if problems:
            raise ModelError("GloVe failed verification: " + "; ".join(problems))
        npy, parquet = model_store.weight_paths(model)
        words = pd.read_parquet(parquet)["index"].astype(str).tolist()[:vocab_limit]
        vectors = np.load(npy, mmap_mode="r")[:vocab_limit]
        keep = [i for i, w in enumerate(words) if w.isalpha()]
        return cls(
            [words[i] for i in keep],
            np.asarray(vectors[keep]),
            fingerprint=f"glove-6b-50d:{model.weights[0].sha256[:12]}:{vocab_limit}",
        )

    @classmethod
    def _load_keyed_vectors(cls, path: Path, vocab_limit: int) -> WordVectors:
        from gensim.models import KeyedVectors

        if not path.exists():
            raise ModelError(f"{path}: word-vector file not found")
        if path.suffix not in {".bin", ".txt", ".vec", ".gz"}:
            # gensim's native KeyedVectors.save format is a pickle: loading it can run code
            raise ModelError(
                f"{path}: only word2vec files (.bin, .txt, .vec, .gz) are read; gensim's native "
                "format is a pickle and is refused (convert it with save_word2vec_format)"
            )
        try:
            kv = KeyedVectors.load_word2vec_format(
                str(path), binary=path.suffix == ".bin", limit=vocab_limit
            )
        except Exception as exc:  # gensim raises many types for bad files
            raise ModelError(f"{path}: cannot read word vectors ({exc})") from exc
        words = [w for w in kv.index_to_key[:vocab_limit]]
        keep = [i for i, w in enumerate(words) if w.isalpha()]
        digest = hashlib.sha256(path.read_bytes()[: 1 << 20]).hexdigest()[:12]
        return cls(
            [words[i].lower() for i in keep],
            np.asarray(kv.vectors[keep]),
            fingerprint=f"kv:{path.name}:{digest}:{vocab_limit}",
        )
