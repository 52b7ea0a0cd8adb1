"""Pluggable consistency models: P(the premise supports the hypothesis) for text pairs.

Model URIs (``load_consistency_model``):

- ``factcc`` (default): the FactCC-style logistic regression trained here on weakly supervised
  claims from the reference corpus (``train_factcc``); weights in ``.hss/factcc/model.json``,
  never committed. Needs the embedded SBERT encoder.
- ``sbert``: SBERT cosine of premise and hypothesis, clipped to [0, 1] (uncalibrated).
- ``hf:<hub id or local dir>``: an NLI cross-encoder (``AutoModelForSequenceClassification``,
  safetensors only, no remote code); the entailment / contradiction labels are read from the
  config. Score = (1 + P(entailment) - P(contradiction)) / 2: SummaC's e - c mapped to [0, 1].

``FactualityScorer`` turns a model into the per-pair comparator columns of ``hss factuality``.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from hss_gate.errors import InputError, ModelError
from hss_gate.factuality import (
    FEATURES,
    Claim,
    ConvAggregator,
    LogisticModel,
    Mention,
    Premise,
    balanced_accuracy,
    claim_features,
    fit_conv,
    fit_logistic,
    overlap_scores,
    roc_auc,
    split_units,
    summac_zs,
    synthetic_claims,
    synthetic_summaries,
)

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
    from hss_gate.pipeline import embed_cached

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
            sentences = split_units(text)
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
    sentences = split_units(document)
    if not sentences or not hypotheses:
        return np.zeros((len(hypotheses), len(sentences)))
    premises = [s for _ in hypotheses for s in sentences]
    claims = [h for h in hypotheses for _ in sentences]
    return np.asarray(model.scores(premises, claims), dtype=float).reshape(
        len(hypotheses), len(sentences)
    )


# ---------------------------------------------------------------------------------------------
# hf NLI cross-encoders

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


# ---------------------------------------------------------------------------------------------
# the FactCC-style weights: training and storage


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
    from hss_gate.normalization import write_json_atomic

    path = weights_path(directory)
    write_json_atomic(path, weights.to_dict())
    return path


Tagged = list[tuple[list[str], list[list[Mention]]]]


def tag_documents(nlp: Any, documents: Sequence[str]) -> Tagged:
    """Per document: its sentences and each sentence's spaCy entities (text, label)."""
    out = []
    for text in documents:
        sentences = split_units(text)
        mentions = [
            [Mention(e.text, e.label_) for e in doc.ents]
            for doc in nlp.pipe(sentences, batch_size=64)
        ]
        out.append((sentences, mentions))
    return out


@dataclass
class TrainingSet:
    """Synthetic claims, each with its document's index; dev = held-out documents."""

    documents: list[str]
    claims: list[Claim]
    owner: list[int]
    dev: set[int]


def synthetic_training_set(
    tagged: Sequence[tuple[list[str], list[list[Mention]]]],
    seed: int = 13,
    dev_share: float = 0.25,
) -> TrainingSet:
    """FactCC's weakly supervised claims for every document; ``dev_share`` of the documents
    are held out to check the classifier and the Conv head."""
    if len(tagged) < 4:
        raise InputError("training the FactCC-style classifier needs at least 4 documents")
    rng = np.random.default_rng(seed)
    pools = [[m for ms in mentions for m in ms] for _, mentions in tagged]
    claims: list[Claim] = []
    owner: list[int] = []
    for i, (sentences, mentions) in enumerate(tagged):
        foreign = [m for j, pool in enumerate(pools) if j != i for m in pool]
        made = synthetic_claims(sentences, mentions, pools[i], rng, foreign)
        claims += made
        owner += [i] * len(made)
    order = rng.permutation(len(tagged))
    dev = {int(i) for i in order[: max(1, round(dev_share * len(tagged)))]}
    return TrainingSet([" ".join(s) for s, _ in tagged], claims, owner, dev)


def train_factcc(
    tagged: Sequence[tuple[list[str], list[list[Mention]]]],
    encode: Encode,
    seed: int = 13,
    l2: float = 1e-2,
    conv_bins: int = 20,
    progress: Callable[[str], None] = lambda message: None,
) -> FactccWeights:
    """Train the pair classifier on synthetic claims (premise = the whole document, as in
    FactCC) and the Conv head on synthetic multi-sentence summaries, both on the training
    documents only; the held-out documents give the provenance's dev metrics."""
    data = synthetic_training_set(tagged, seed)
    progress(f"{len(data.claims)} synthetic claims from {len(data.documents)} documents")
    model = FactccModel(
        LogisticModel(
            FEATURES, (0.0,) * len(FEATURES), (1.0,) * len(FEATURES), (0.0,) * len(FEATURES), 0.0
        ),
        encode,
        "untrained",
    )
    encode([c.text for c in data.claims])  # one batch
    x = model.features([data.documents[o] for o in data.owner], [c.text for c in data.claims])
    y = np.array([c.label for c in data.claims])
    dev = np.isin(np.array(data.owner), sorted(data.dev))
    logistic = fit_logistic(x[~dev], y[~dev], FEATURES, l2=l2)
    p_dev = logistic.predict_proba(x[dev])
    model.logistic = logistic
    progress(f"pair classifier: synthetic dev AUC {roc_auc(y[dev], p_dev):.3f}")

    rng = np.random.default_rng(seed + 1)
    matrices, labels, held_out = [], [], []
    for i, document in enumerate(data.documents):
        mine = [c for c, o in zip(data.claims, data.owner, strict=True) if o == i]
        for sentences, label in synthetic_summaries(mine, rng):
            matrices.append(model.sentence_matrix(document, sentences))
            labels.append(label)
            held_out.append(i in data.dev)
    is_dev = np.array(held_out)
    lab = np.array(labels)
    conv = fit_conv(
        [m for m, d in zip(matrices, is_dev, strict=True) if not d],
        lab[~is_dev],
        bins=conv_bins,
        l2=1e-4,
    )
    conv_dev = np.array([conv.score(m) for m, d in zip(matrices, is_dev, strict=True) if d])
    zs_dev = np.array([summac_zs(m) for m, d in zip(matrices, is_dev, strict=True) if d])
    provenance = {
        "seed": seed,
        "l2": l2,
        "documents": len(data.documents),
        "dev_documents": len(data.dev),
        "claims": len(data.claims),
        "documents_sha256": hashlib.sha256("\0".join(data.documents).encode("utf-8")).hexdigest(),
        "dev_claim_auc": roc_auc(y[dev], p_dev),
        "dev_claim_balanced_accuracy": balanced_accuracy(y[dev], p_dev >= 0.5),
        "summaries": len(matrices),
        "dev_summary_auc_zs": roc_auc(lab[is_dev], zs_dev),
        "dev_summary_auc_conv": roc_auc(lab[is_dev], conv_dev),
    }
    progress(
        f"Conv head: synthetic dev summary AUC {provenance['dev_summary_auc_conv']:.3f} "
        f"(ZS {provenance['dev_summary_auc_zs']:.3f})"
    )
    return FactccWeights(logistic, conv, provenance)


# ---------------------------------------------------------------------------------------------
# model URIs and the comparator columns


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


COLUMNS = (
    "id",
    "consistency",
    "summac_zs",
    "summac_conv",
    "factcc",
    "sbert_zs",
    "precision",
    "recall",
    "f1",
    "n_summary_sentences",
)


class FactualityScorer:
    """All comparator columns for (document, summary) pairs.

    - ``summac_zs``: SummaC-ZS over the chosen model's sentence matrix (default factcc);
    - ``summac_conv``: the Conv head over the factcc matrix (only with the factcc model);
    - ``factcc``: mean over summary sentences of P(consistent | whole document, sentence);
    - ``sbert_zs``: SummaC-ZS over SBERT cosines; ``precision`` / ``recall`` / ``f1``: overlap.
    ``consistency`` (the default comparator, see docs/FACTUALITY.md) = ``summac_zs``.
    """

    def __init__(
        self, weights: FactccWeights, encode: Encode, model: ConsistencyModel | None = None
    ) -> None:
        cached = VectorCache(encode)
        self.factcc = FactccModel(weights.logistic, cached, weights.fingerprint)
        self.model: ConsistencyModel = model if model is not None else self.factcc
        self.conv = weights.conv if self.model is self.factcc else None
        self._encode = cached

    def score(self, document: str, summary: str) -> dict[str, Any]:
        sentences = split_units(summary)
        overlap = overlap_scores(document, summary)
        row = {
            "precision": overlap.precision,
            "recall": overlap.recall,
            "f1": overlap.f1,
            "n_summary_sentences": len(sentences),
        }
        doc_sentences = split_units(document)
        if not sentences or not doc_sentences:
            nan = math.nan
            return row | {
                "consistency": nan,
                "summac_zs": nan,
                "summac_conv": nan,
                "factcc": nan,
                "sbert_zs": nan,
            }
        matrix = (
            self.factcc.sentence_matrix(document, sentences)
            if self.model is self.factcc
            else consistency_matrix(self.model, document, sentences)
        )
        zs = summac_zs(matrix)
        cos = self._encode(sentences) @ self._encode(doc_sentences).T
        row |= {
            "consistency": float(np.clip(zs, 0.0, 1.0)),
            "summac_zs": zs,
            "summac_conv": self.conv.score(matrix) if self.conv is not None else math.nan,
            "factcc": float(self.factcc.scores([document] * len(sentences), sentences).mean()),
            "sbert_zs": summac_zs(np.clip(cos, 0.0, 1.0)),
        }
        return row

    def score_many(
        self, pairs: Sequence[tuple[str, str, str]], advance: Callable[[int], None] = lambda n: None
    ) -> list[dict[str, Any]]:
        """Rows with COLUMNS for (id, document, summary) triples; embeds in one batch first."""
        texts = [s for _, d, m in pairs for s in (*split_units(d), *split_units(m))]
        if texts:
            self._encode(texts)
        rows = []
        for pair_id, document, summary in pairs:
            rows.append({"id": pair_id} | self.score(document, summary))
            advance(1)
        return [{c: r[c] for c in COLUMNS} for r in rows]


# ---------------------------------------------------------------------------------------------
# pairs files (the edge: read, validate, write)


@dataclass(frozen=True)
class Pair:
    id: str
    document: str
    summary: str


def read_pairs(path: str | Path) -> list[Pair]:
    """JSON Lines of {id, document, summary}; every line is validated and the first bad one is
    reported as ``file:line: why`` (InputError), with the number of further bad lines."""
    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise InputError(f"{path}: cannot read ({exc.strerror or exc})") from exc
    pairs: list[Pair] = []
    errors: list[str] = []
    seen: dict[str, int] = {}
    for number, line in enumerate(raw.splitlines(), start=1):
        if not line.strip():
            continue
        problem, pair = _parse_pair(line)
        if pair is not None and pair.id in seen:
            problem, pair = f"duplicate id '{pair.id}' (first at line {seen[pair.id]})", None
        if pair is None:
            errors.append(f"{path}:{number}: {problem}")
            continue
        seen[pair.id] = number
        pairs.append(pair)
    if errors:
        more = f" (and {len(errors) - 1} more bad lines)" if len(errors) > 1 else ""
        raise InputError(errors[0] + more)
    if not pairs:
        raise InputError(f"{path}: no pairs (expected JSON Lines with id, document, summary)")
    return pairs


def _parse_pair(line: bytes) -> tuple[str, Pair | None]:
    try:
        record = json.loads(line)
    except UnicodeDecodeError:
        return "not UTF-8", None
    except ValueError as exc:
        return f"not valid JSON ({exc.msg})", None
    if not isinstance(record, dict):
        return f"expected a JSON object, got {type(record).__name__}", None
    missing = [k for k in ("id", "document", "summary") if k not in record]
    if missing:
        return f"missing {', '.join(missing)}", None
    pair_id = record["id"]
    if isinstance(pair_id, bool) or not isinstance(pair_id, str | int) or not str(pair_id).strip():
        return "id must be a non-empty string or an integer", None
    for key in ("document", "summary"):
        if not isinstance(record[key], str) or not record[key].strip():
            return f"{key} must be a non-empty string", None
    return "", Pair(str(pair_id), record["document"], record["summary"])


def write_rows_csv(
    path: str | Path, rows: Sequence[dict[str, Any]], columns: Sequence[str]
) -> None:
    """Write rows as CSV through a temporary file in the same directory and an atomic rename."""
    import csv
    import os
    import tempfile

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile(
        "w", dir=path.parent, delete=False, suffix=".tmp", encoding="utf-8", newline=""
    ) as handle:
        writer = csv.DictWriter(handle, fieldnames=list(columns), extrasaction="ignore")
        writer.writeheader()
        for row in rows:
            writer.writerow({k: _cell(row.get(k)) for k in columns})
    os.replace(handle.name, path)


def _cell(value: Any) -> Any:
    if isinstance(value, float):
        return "" if math.isnan(value) else f"{value:.6f}"
    return value
