"""Sentence embeddings behind a small protocol: SBERT for real runs, a hashing fake for tests."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from hss_gate.common.cache import Cache, content_key
from hss_gate.common.errors import ModelError
from hss_gate.models import model_store


class Embedder(Protocol):
    """Maps texts to L2-normalized row vectors."""

    fingerprint: str

    def encode(self, texts: Sequence[str]) -> np.ndarray: ...


_TORCH_THREADS: list[int] = []  # a stack: the innermost `torch_threads` wins


@contextmanager
def torch_threads(n: int | None) -> Iterator[None]:
    """While inside, SBERT encodes on `n` torch threads (None: leave torch's own choice).
    In-process generation that keeps the cores busy leaves torch the cores it does not use;
    torch's default of one thread per core would make four threads spin on two cores."""
    if n is None:
        yield
        return
    _TORCH_THREADS.append(max(1, n))
    try:
        yield
    finally:
        _TORCH_THREADS.pop()


def _apply_torch_threads(default: int) -> None:
    import torch

    want = _TORCH_THREADS[-1] if _TORCH_THREADS else default
    if torch.get_num_threads() != want:
        torch.set_num_threads(want)


class SbertEmbedder:
    """The embedded all-MiniLM-L6-v2 (sha256-verified) or any local sentence-transformers dir."""

    def __init__(self, name_or_dir: str = "all-minilm-l6-v2", batch_size: int = 64) -> None:
        self._name = name_or_dir
        self._batch_size = batch_size
        self._model: Any = None
        self._default_threads = 0  # torch's own thread count, read when the model loads
        self.fingerprint = f"sbert:{name_or_dir}"

    def _load(self) -> Any:
        if self._model is None:
            from sentence_transformers import SentenceTransformer
            from transformers.utils import logging as transformers_logging

            # its "Loading weights" bar is noise in logs: the run's own progress lines show it
            transformers_logging.disable_progress_bar()

            if self._name == "all-minilm-l6-v2":
                model = model_store.resolve_name(self._name)
                problems = model_store.verify(model)
                if problems:
                    raise ModelError("SBERT failed verification: " + "; ".join(problems))
                path = str(model_store.weight_paths(model)[0].parent)
            else:
                path = self._name
                if Path(path).is_dir() and not any(Path(path).rglob("*.safetensors")):
                    raise ModelError(
                        f"{path}: no .safetensors weights (pickle checkpoints are refused)"
                    )
            import torch

            self._default_threads = torch.get_num_threads()
            try:
                self._model = SentenceTransformer(
                    path,
                    device="cpu",
                    local_files_only=True,
                    trust_remote_code=False,
                    model_kwargs={"use_safetensors": True},  # never a pickled checkpoint
                )
            except Exception as exc:
                raise ModelError(f"cannot load sentence encoder '{self._name}': {exc}") from exc
        return self._model

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, 384), dtype=np.float32)
        model = self._load()
        _apply_torch_threads(self._default_threads)
        vectors = model.encode(
            list(texts),
            batch_size=self._batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return np.asarray(vectors, dtype=np.float32)


class HashingEmbedder:
    """Deterministic bag-of-words fake: similar word sets give similar vectors (for tests)."""

    def __init__(self, dim: int = 64) -> None:
        self.dim = dim
        self.fingerprint = f"hashing:{dim}"

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in text.lower().split():
                h = int(hashlib.md5(word.strip(".,;:!?\"'").encode()).hexdigest(), 16)
                out[row, h % self.dim] += 1.0 if (h >> 64) % 2 else -1.0
            out[row, -1] += 0.1  # so an empty text still has a direction
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.where(norms == 0, 1.0, norms)


def embed_cached(
    sentences: Sequence[str], embedder: Embedder, cache: Cache
) -> dict[str, np.ndarray]:
    """Embeddings of unique sentences, computed in one batch for the ones not cached."""
    unique = list(dict.fromkeys(sentences))
    keys = {s: content_key("embed-v1", embedder.fingerprint, s) for s in unique}
    found = cache.get_many("embeddings", keys.values())
    missing = [s for s in unique if keys[s] not in found]
    if missing:
        vectors = embedder.encode(missing)
        new = {
            keys[s]: np.asarray(v, dtype=np.float32).tobytes()
            for s, v in zip(missing, vectors, strict=True)
        }
        cache.put_many("embeddings", new)
        found.update(new)
    return {s: np.frombuffer(found[keys[s]], dtype=np.float32) for s in unique}
