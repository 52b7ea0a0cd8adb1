"""The builders of the score tables' rows: each returns exactly the columns
hss_gate/signals/tables.py
declares for its table, in the declared order (the order of the files' columns); a value
missing or undeclared is a ValueError. The engine (hss_gate/scoring/document_rows.py) fills them.

Foundations floor: only hss_gate/signals/tables.py is imported here.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from hss_gate.signals.tables import (
    DOCUMENT_COLUMNS,
    EDIT_COLUMNS,
    PERTURBATION_COLUMNS,
    SIGNAL_COLUMNS,
    SUMMARY_COLUMNS,
    Column,
    names,
    written,
)


def _row(columns: Iterable[Column], values: Mapping[str, Any]) -> dict[str, Any]:
    """`values` in the order of `columns`; a value missing or undeclared is a ValueError."""
    order = names(columns)
    missing, extra = set(order) - set(values), set(values) - set(order)
    if missing or extra:
        raise ValueError(
            f"row does not match the declared columns: missing {sorted(missing)}, "
            f"undeclared {sorted(extra)}"
        )
    return {name: values[name] for name in order}


def signal_values(
    *,
    unsupported_share: float,
    unsupported: str,
    novel_ngram_share: float,
    truncated: bool,
    empty: bool,
    n_sentences: int,
    n_words: int,
    near_empty: bool,
    copies_source: bool,
    overlong: bool,
    other_language: bool,
    length_ratio: float,
    consistency: float,
    mean_support: float,
    low_consistency: bool,
    unsupported_sentences: str,
    **computed: Any,
) -> dict[str, Any]:
    """One summary's signals (`SIGNAL_COLUMNS`, without a prefix); `computed`: the columns the
    registered signals compute themselves (hss_gate.signals.computed_values)."""
    values = {k: v for k, v in locals().items() if k != "computed"}
    return _row(SIGNAL_COLUMNS, values | computed)


def _with_prefix(prefix: str, signals: Mapping[str, Any]) -> dict[str, Any]:
    return {f"{prefix}{name}": value for name, value in _row(SIGNAL_COLUMNS, signals).items()}


def document_row(
    *,
    doc_id: str,
    category: str,
    tier: str,
    normalized: Mapping[str, Any] | None,
    mean_distance: float,
    mean_distance_aware: float,
    mean_distance_raw: float,
    n_perturbations: int,
    base: Mapping[str, Any],
    consistency_drop_mean: float,
) -> dict[str, Any]:
    """One documents.csv row. `normalized`: the columns declared `normalized` (hss, ...), None
    when the run has no normalization constants; `base`: the original's summary's signals."""
    values = {
        "doc_id": doc_id,
        "category": category,
        "tier": tier,
        **(normalized or {}),
        "mean_distance": mean_distance,
        "mean_distance_aware": mean_distance_aware,
        "mean_distance_raw": mean_distance_raw,
        "n_perturbations": n_perturbations,
        **_with_prefix("base_", base),
        "consistency_drop_mean": consistency_drop_mean,
    }
    return _row(written(DOCUMENT_COLUMNS, normalized is not None), values)


def normalized_values(
    *,
    hss_aware: float,
    hss_raw: float,
    hss: float,
    normalization_constant: float,
    constant_source: str,
) -> dict[str, Any]:
    """The documents.csv columns that only a run with normalization constants writes."""
    return _row((c for c in DOCUMENT_COLUMNS if c.normalized), locals())


def perturbation_row(
    *,
    doc_id: str,
    category: str,
    strength: str,
    index: int,
    distance: float,
    distance_aware: float,
    distance_raw: float,
    share: float,
    n_edits: int,
    n_words: int,
    band_low: float,
    band_high: float,
    reached: bool,
    note: str,
    mentions_not_in_base_summary: float,
    mentions_unsupported_by_source_or_base: float,
    summary: Mapping[str, Any],
    consistency_drop: float,
) -> dict[str, Any]:
    """One perturbations.csv row; `summary`: the perturbed version's summary's signals."""
    values = dict(locals())
    values |= _with_prefix("summary_", values.pop("summary"))
    return _row(written(PERTURBATION_COLUMNS, normalized=False), values)


def summary_row(
    *,
    doc_id: str,
    strength: str,
    index: int,
    summary: str,
    restored: str,
    consistency: float,
    unsupported_sentences: list[str],
) -> dict[str, Any]:
    """One summaries.jsonl row."""
    return _row(SUMMARY_COLUMNS, locals())


def edit_row(
    *,
    doc_id: str,
    strength: str,
    index: int,
    position: int,
    char_start: int,
    original: str,
    replacement: str,
    word_cosine: float,
    sentence_similarity: float,
) -> dict[str, Any]:
    """One edits.jsonl row: a swap of one perturbed version."""
    return _row(EDIT_COLUMNS, locals())
