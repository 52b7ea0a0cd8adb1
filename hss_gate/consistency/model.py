"""Consistency models behind one protocol: P(the premise supports the hypothesis)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from hss_gate.common.errors import InputError, ModelError
from hss_gate.common.library_logs import TRANSFORMERS_LOADING, known_messages
from hss_gate.consistency.aggregation import ConvAggregator, sigmoid
from hss_gate.consistency.features import FEATURES, Premise, claim_features
from hss_gate.text.sentences import split_sentences

DEFAULT_MODEL = "factcc"

FACTCC_VERSION = "factcc-lr-v1"

Encode = Callable[[Sequence[str]], np.ndarray]


class ConsistencyModel(Protocol):
    """Scores text pairs: higher = the hypothesis is better supported by the premise."""

    fingerprint: str

    def scores(self, premises: Sequence[str], hypotheses: Sequence[str]) -> np.ndarray:
        """P(hypothesis supported | premise) for each aligned pair, in [0, 1]."""
        ...


def _check_pairs(premises: Sequence[str], hypotheses: Sequence[str]) -> None:
    if len(premises) != len(hypotheses):
        raise ValueError(f"{len(premises)} premises but {len(hypotheses)} hypotheses")


class VectorCache:
    """Memoizes an encoder by text, so each sentence is embedded once per process."""

    def __init__(self, encode: Encode) -> None:
        self._encode = encode
        self._vectors: dict[str, np.ndarray] = {}

    def __call__(self, texts: Sequence[str]) -> np.ndarray:
        missing = [t for t in dict.fromkeys(texts) if t not in self._vectors]
        if missing:
            self._vectors.update(zip(missing, self._encode(missing), strict=True))
        if not texts:
            return np.zeros((0, 1), dtype=np.float32)
        return np.stack([self._vectors[t] for t in texts])


def cached_encoder(embedder: Any, cache: Any) -> Encode:
    """An Encode function over an Embedder that stores vectors in the project's Cache."""
    from hss_gate.models.embedding import embed_cached

    def encode(texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, 1), dtype=np.float32)
        found = embed_cached(list(texts), embedder, cache)
        return np.stack([found[t] for t in texts])

    return encode


class SbertConsistency:
    """Cosine similarity of SBERT embeddings, clipped to [0, 1]."""

    def __init__(self, encode: Encode, fingerprint: str = "sbert") -> None:
        self._encode = VectorCache(encode)
        self.fingerprint = f"sbert-cosine:{fingerprint}"

    def scores(self, premises: Sequence[str], hypotheses: Sequence[str]) -> np.ndarray:
        _check_pairs(premises, hypotheses)
        if not premises:
            return np.zeros(0)
        a, b = self._encode(premises), self._encode(hypotheses)
        return np.clip(np.einsum("ij,ij->i", a, b), 0.0, 1.0)


@dataclass(frozen=True)
class LogisticModel:
    """Standardized logistic regression: P(consistent | features)."""

    features: tuple[str, ...]
    mean: tuple[float, ...]
    scale: tuple[float, ...]
    coef: tuple[float, ...]
    intercept: float

    def predict_proba(self, x: np.ndarray) -> np.ndarray:
        x = np.atleast_2d(np.asarray(x, dtype=float))
        z = (x - np.asarray(self.mean)) / np.asarray(self.scale)
        return sigmoid(z @ np.asarray(self.coef) + self.intercept)

    def to_dict(self) -> dict[str, object]:
        return {
            "features": list(self.features),
            "mean": list(self.mean),
            "scale": list(self.scale),
            "coef": list(self.coef),
            "intercept": self.intercept,
        }

    @classmethod
    def from_dict(cls, data: dict[str, object]) -> LogisticModel:
        return cls(
            tuple(data["features"]),  # type: ignore[arg-type]
            tuple(float(v) for v in data["mean"]),  # type: ignore[union-attr]
            tuple(float(v) for v in data["scale"]),  # type: ignore[union-attr]
            tuple(float(v) for v in data["coef"]),  # type: ignore[union-attr]
            float(data["intercept"]),  # type: ignore[arg-type]
        )


class FactccModel:
    """The FactCC-style classifier: features of (premise, claim) -> logistic regression.
    A premise may be a whole document (FactCC's setting) or one sentence (SummaC's matrix)."""

    def __init__(self, logistic: LogisticModel, encode: Encode, fingerprint: str) -> None:
        if tuple(logistic.features) != FEATURES:
            raise ModelError("factcc weights were trained on other features; retrain them")
        self.logistic = logistic
        self._encode = VectorCache(encode)
        self._premises: dict[str, Premise] = {}
        self.fingerprint = fingerprint

    def premise(self, text: str) -> Premise:
        if text not in self._premises:
            sentences = split_sentences(text)
            self._premises[text] = Premise(sentences, self._encode(sentences))
        return self._premises[text]

    def _features(self, premises: Sequence[Premise], hypotheses: Sequence[str]) -> np.ndarray:
        vectors = self._encode(list(hypotheses))
        rows = [
            claim_features(h, v, p) for p, h, v in zip(premises, hypotheses, vectors, strict=True)
        ]
        return np.array(rows, dtype=float).reshape(len(rows), len(FEATURES))

    def features(self, premises: Sequence[str], hypotheses: Sequence[str]) -> np.ndarray:
        """FEATURES of each (premise, hypothesis) pair."""
        _check_pairs(premises, hypotheses)
        return self._features([self.premise(p) for p in premises], hypotheses)

    def scores(self, premises: Sequence[str], hypotheses: Sequence[str]) -> np.ndarray:
        x = self.features(premises, hypotheses)
        return self.logistic.predict_proba(x) if len(x) else np.zeros(0)

    def sentence_features(self, document: str, hypotheses: Sequence[str]) -> np.ndarray:
        """(n_hypotheses, n_document_sentences, n_features): each document sentence alone is
        the premise, with the document's name tokens (lower-cased claims keep their names)."""
        whole = self.premise(document)
        singles = [
            Premise([s], whole.vectors[j : j + 1], names=whole.names)
            for j, s in enumerate(whole.sentences)
        ]
        if not singles or not hypotheses:
            return np.zeros((len(hypotheses), len(singles), len(FEATURES)))
        pairs_p = [p for _ in hypotheses for p in singles]
        pairs_h = [h for h in hypotheses for _ in singles]
        x = self._features(pairs_p, pairs_h)
        return x.reshape(len(hypotheses), len(singles), len(FEATURES))

    def sentence_matrix(self, document: str, hypotheses: Sequence[str]) -> np.ndarray:
        """SummaC's matrix with this classifier: (n_hypotheses, n_document_sentences)."""
        x = self.sentence_features(document, hypotheses)
        if x.size == 0:
            return np.zeros(x.shape[:2])
        return self.logistic.predict_proba(x.reshape(-1, len(FEATURES))).reshape(x.shape[:2])


def consistency_matrix(
    model: ConsistencyModel, document: str, hypotheses: Sequence[str]
) -> np.ndarray:
    """SummaC's sentence matrix: model scores of (document sentence j, summary sentence i)."""
    if isinstance(model, FactccModel):
        return model.sentence_matrix(document, hypotheses)
    sentences = split_sentences(document)
    if not sentences or not hypotheses:
        return np.zeros((len(hypotheses), len(sentences)))
    premises = [s for _ in hypotheses for s in sentences]
    claims = [h for h in hypotheses for _ in sentences]
    return np.asarray(model.scores(premises, claims), dtype=float).reshape(
        len(hypotheses), len(sentences)
    )


_ENTAIL = ("entail", "support", "consistent", "faithful")

_CONTRA = ("contradict", "refute", "inconsistent", "unfaithful", "hallucinat")


def nli_label_indices(id2label: dict[int, str]) -> tuple[int, int | None]:
    """(entailment index, contradiction index or None) from a config's id2label."""

    def find(keys: Sequence[str], exclude: Sequence[str] = ()) -> int | None:
        for i, name in sorted(id2label.items()):
            low = str(name).lower()
            if any(k in low for k in keys) and not any(low.startswith(x) for x in exclude):
                return int(i)
        return None

    contra = find(_CONTRA)
    entail = find(_ENTAIL, exclude=("not", "non", "in", "un", "hallucinat"))
    if entail is None:
        names = sorted(str(n) for n in id2label.values())
        raise ModelError(f"no entailment label among the NLI model's labels {names}")
    return entail, contra


class HfNliModel:
    """An NLI / consistency cross-encoder from a hub id or a local checkpoint directory."""

    def __init__(self, source: str, batch_size: int = 16, max_length: int = 512) -> None:
        self.source = source
        self.batch_size = batch_size
        self.max_length = max_length
        self._model: Any = None
        self._tokenizer: Any = None
        self.entail_index = -1
        self.contradiction_index: int | None = None
        self.fingerprint = f"hf-nli:{_checkpoint_digest(source)}"

    def _load(self) -> None:
        if self._model is not None:
            return
        import torch
        from transformers import AutoModelForSequenceClassification, AutoTokenizer

        kwargs = {"trust_remote_code": False, "local_files_only": Path(self.source).is_dir()}
        try:
            tokenizer = AutoTokenizer.from_pretrained(self.source, **kwargs)
            with known_messages(TRANSFORMERS_LOADING):  # its load report without ANSI codes
                model = AutoModelForSequenceClassification.from_pretrained(
                    self.source, use_safetensors=True, dtype=torch.float32, **kwargs
                )
        except Exception as exc:
            raise ModelError(f"cannot load NLI model '{self.source}': {exc}") from exc
        self.entail_index, self.contradiction_index = nli_label_indices(
            {int(k): v for k, v in model.config.id2label.items()}
        )
        self._tokenizer, self._model = tokenizer, model.eval()

    def probabilities(self, premises: Sequence[str], hypotheses: Sequence[str]) -> np.ndarray:
        """Softmax over the model's labels, one row per (premise, hypothesis) pair."""
        import torch

        _check_pairs(premises, hypotheses)
        self._load()
        out = []
        for start in range(0, len(premises), self.batch_size):
            batch = self._tokenizer(
                list(premises[start : start + self.batch_size]),
                list(hypotheses[start : start + self.batch_size]),
                truncation="only_first",
                max_length=self.max_length,
                padding=True,
                return_tensors="pt",
            )
            with torch.no_grad():
                logits = self._model(**batch).logits.float()
            out.append(torch.softmax(logits, dim=-1).numpy())
        n_labels = int(self._model.config.num_labels)
        return np.concatenate(out) if out else np.zeros((0, n_labels))

    def scores(self, premises: Sequence[str], hypotheses: Sequence[str]) -> np.ndarray:
        probs = self.probabilities(premises, hypotheses)
        entail = probs[:, self.entail_index]
        if self.contradiction_index is None:
            return entail
        return (1.0 + entail - probs[:, self.contradiction_index]) / 2.0


def _checkpoint_digest(source: str) -> str:
    path = Path(source)
    if not path.is_dir():
        return source  # a hub id: the revision is pinned by the hub cache
    weights = sorted(path.glob("*.safetensors"))
    if not weights:
        raise ModelError(f"{path}: no .safetensors weights (pickle checkpoints are refused)")
    digest = hashlib.sha256()
    for f in sorted(p for p in path.iterdir() if p.is_file()):
        if f.suffix in (".safetensors", ".json", ".txt", ".model"):
            digest.update(f.name.encode() + b"\0" + f.read_bytes())
    return f"{path.name}:{digest.hexdigest()[:16]}"


@dataclass
class FactccWeights:
    """What `train_factcc` writes: the pair classifier, the Conv head and their provenance."""

    logistic: LogisticModel
    conv: ConvAggregator | None
    provenance: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        conv = None
        if self.conv is not None:
            conv = {
                "weights": list(self.conv.weights),
                "bias": self.conv.bias,
                "low": self.conv.low,
                "high": self.conv.high,
            }
        return {
            "version": FACTCC_VERSION,
            "logistic": self.logistic.to_dict(),
            "conv": conv,
            "provenance": self.provenance,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> FactccWeights:
        conv = data.get("conv")
        head = None
        if conv is not None:
            head = ConvAggregator(
                tuple(float(w) for w in conv["weights"]),
                float(conv["bias"]),
                float(conv.get("low", 0.0)),
                float(conv.get("high", 1.0)),
            )
        return cls(
            LogisticModel.from_dict(data["logistic"]), head, dict(data.get("provenance", {}))
        )

    @property
    def fingerprint(self) -> str:
        blob = json.dumps(
            {"l": self.logistic.to_dict(), "c": self.to_dict()["conv"]}, sort_keys=True
        ).encode()
        return f"{FACTCC_VERSION}:{hashlib.sha256(blob).hexdigest()[:16]}"


def weights_path(directory: str | Path) -> Path:
    return Path(directory) / "model.json"


def load_factcc_weights(directory: str | Path) -> FactccWeights:
    """Read trained weights (missing, stale or unreadable: ModelError saying what to do)."""
    path = weights_path(directory)
    if not path.exists():
        raise ModelError(f"{path}: no trained FactCC-style weights; run `hss factuality --train`")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise ModelError(f"{path}: unreadable FactCC-style weights ({exc})") from exc
    if not isinstance(data, dict) or data.get("version") != FACTCC_VERSION:
        found = data.get("version") if isinstance(data, dict) else None
        raise ModelError(
            f"{path}: weights of version {found!r}, expected {FACTCC_VERSION}; "
            "run `hss factuality --train`"
        )
    try:
        return FactccWeights.from_dict(data)
    except (KeyError, TypeError, ValueError) as exc:
        raise ModelError(f"{path}: unreadable FactCC-style weights ({exc})") from exc


def save_factcc_weights(directory: str | Path, weights: FactccWeights) -> Path:
    """Write model.json atomically (the directory is created; keep it out of git)."""
    from hss_gate.common.io import write_json_atomic

    path = weights_path(directory)
    write_json_atomic(path, weights.to_dict())
    return path


def load_consistency_model(
    uri: str, encode: Encode, weights: FactccWeights | None = None
) -> ConsistencyModel:
    """``factcc`` (needs ``weights``), ``sbert`` or ``hf:<hub id or local dir>``."""
    if uri == "factcc":
        if weights is None:
            raise ModelError("the factcc model needs trained weights")
        return FactccModel(weights.logistic, encode, weights.fingerprint)
    if uri == "sbert":
        return SbertConsistency(encode)
    if uri.startswith("hf:") and uri[3:].strip():
        return HfNliModel(uri[3:].strip())
    raise InputError(
        f"--model: unknown consistency model '{uri}'; use factcc, sbert or hf:<hub id or local dir>"
    )
