"""The consistency of (document, summary) pairs, with every comparator column
(`hss factuality`), and the pairs file it reads."""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from hss_gate.common.errors import InputError
from hss_gate.common.jsonl import BadLine, jsonl_lines, read_bytes
from hss_gate.consistency.aggregation import summac_zs
from hss_gate.consistency.features import overlap_scores
from hss_gate.consistency.model import (
    ConsistencyModel,
    Encode,
    FactccModel,
    FactccWeights,
    VectorCache,
    consistency_matrix,
)
from hss_gate.text.sentences import split_sentences

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


class FactualityComparators:
    """All comparator columns for (document, summary) pairs.

    - ``summac_zs``: SummaC-ZS over the chosen model's sentence matrix (default factcc);
    - ``summac_conv``: the Conv head over the factcc matrix (only with the factcc model);
    - ``factcc``: mean over summary sentences of P(consistent | whole document, sentence);
    - ``sbert_zs``: SummaC-ZS over SBERT cosines; ``precision`` / ``recall`` / ``f1``: overlap.
    ``consistency`` = the gate's checker's verdict when one is given (``invented-sbert``, the
    default, docs/FACTUALITY.md), else ``summac_zs``.
    """

    def __init__(
        self,
        weights: FactccWeights,
        encode: Encode,
        model: ConsistencyModel | None = None,
        checker: Any = None,
    ) -> None:
        self.checker = checker
        cached = VectorCache(encode)
        self.factcc = FactccModel(weights.logistic, cached, weights.fingerprint)
        self.model: ConsistencyModel = model if model is not None else self.factcc
        self.conv = weights.conv if self.model is self.factcc else None
        self._encode = cached

    def score(self, document: str, summary: str) -> dict[str, Any]:
        sentences = split_sentences(summary)
        overlap = overlap_scores(document, summary)
        row = {
            "precision": overlap.precision,
            "recall": overlap.recall,
            "f1": overlap.f1,
            "n_summary_sentences": len(sentences),
        }
        doc_sentences = split_sentences(document)
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
        consistency = (
            zs if self.checker is None else self.checker.check([(document, summary)])[0].consistency
        )
        row |= {
            "consistency": float(np.clip(consistency, 0.0, 1.0)),
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
        texts = [s for _, d, m in pairs for s in (*split_sentences(d), *split_sentences(m))]
        if texts:
            self._encode(texts)
        rows = []
        for pair_id, document, summary in pairs:
            rows.append({"id": pair_id} | self.score(document, summary))
            advance(1)
        return [{c: r[c] for c in COLUMNS} for r in rows]


@dataclass(frozen=True)
class Pair:
    id: str
    document: str
    summary: str
    label: int | None = None  # 1 consistent, 0 not (a labelled sample for --calibrate)


def read_pairs(path: str | Path) -> list[Pair]:
    """JSON Lines of {id, document, summary}; every line is validated and the first bad one is
    reported as ``file:line: why`` (InputError), with the number of further bad lines."""
    path = Path(path)
    raw = read_bytes(path)
    pairs: list[Pair] = []
    errors: list[str] = []
    seen: dict[str, int] = {}
    for number, record in jsonl_lines(raw, objects=False):
        problem, pair = _parse_pair(record)
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


def _parse_pair(record: Any) -> tuple[str, Pair | None]:
    if isinstance(record, BadLine):
        if isinstance(record.error, json.JSONDecodeError):
            return f"not valid JSON ({record.error.msg})", None
        return "not UTF-8", None
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
    label = record.get("label")
    if label is not None and label not in (0, 1):  # True/False compare equal to 1/0
        return "label must be 1 (consistent) or 0 (not)", None
    label = None if label is None else int(label)
    return "", Pair(str(pair_id), record["document"], record["summary"], label)
