"""Distribution drift between a reference score table and a current one, via Evidently.

Evidently (0.7) is imported inside `drift_report` only: it takes 10-15 s to import. Each column's
drift decision is Evidently's own (the status of its per-column ``ValueDrift`` test, FAIL = drift),
with the test chosen here by the column's type, never by Evidently's default: a 0/1 flag gets a
proportion test (FLAG_TEST), a continuous signal a distribution test (CONTINUOUS_TEST). Evidently's
default would test a numeric column with at most 5 distinct values with chi-square, which reads
every value the reference never took as drift: a sparse fractional column (the share of a
summary's entities not in the source: 0, 0.33, 0.5, ...) "drifted" with p 0.000 where the
monitor's own test on the same summaries found nothing (issue 45). Dataset drift is ``share of
drifted columns >= drift_share``, the same rule as Evidently's DataDriftPreset.
"""

from __future__ import annotations

import html as html_lib
import re
from collections.abc import Collection, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from hss_gate.common.errors import HssError, InputError

MIN_ROWS = 2
"""Fewest rows (and non-null values per column) in each frame for a drift test."""
PLAIN_COLUMN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
"""Column names Evidently may show: its report inserts them into the page unescaped."""
CONTINUOUS_TEST = "ks"
"""A continuous column's test: the two-sample Kolmogorov-Smirnov test (Evidently's "ks"), at any
sample size. A value the reference never took moves it only by the share of rows that hold it.
(Evidently's default above 1000 rows, the normed Wasserstein distance, divides by the
reference's spread, which a sparse column's all-zero reference does not have.)"""
FLAG_TEST = "z"
"""A 0/1 flag's test: the two-proportion Z-test (Evidently's "z"; its Fisher test needs windows
of equal size)."""
TEST_NAMES = {CONTINUOUS_TEST: "K-S p_value", FLAG_TEST: "Z-test p_value"}
"""Each test as Evidently's report names it."""


class DriftError(HssError):
    """Evidently failed, or its result could not be read."""


@dataclass
class ColumnDrift:
    """Evidently's verdict on one column."""

    column: str
    drifted: bool
    method: str
    score: float | None
    detail: str


@dataclass
class DriftResult:
    """Drift of several columns; ``skipped`` holds ``"column: reason"`` strings.

    ``pages`` holds Evidently's report ({"html": page, "json": snapshot}) for the caller to
    write; ``html`` and ``json`` are the paths it was written to, once it was.
    """

    drifted: bool
    share: float
    columns: list[ColumnDrift] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    html: str | None = None
    json: str | None = None
    pages: dict[str, str] = field(default_factory=dict, repr=False)

    @property
    def drifted_columns(self) -> list[str]:
        """Names of the columns Evidently flagged."""
        return [c.column for c in self.columns if c.drifted]

    @property
    def skipped_columns(self) -> list[str]:
        """Names of the columns that were not tested."""
        return [s.split(": ", 1)[0] for s in self.skipped]

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready record (for decision.json)."""
        return {
            "drifted": self.drifted,
            "share": self.share,
            "drifted_columns": self.drifted_columns,
            "columns": [asdict(c) for c in self.columns],
            "skipped": list(self.skipped),
            "html": self.html,
            "json": self.json,
        }


def _numeric(series: pd.Series) -> pd.Series | None:
    """The column as float (bools -> 0/1, +-inf -> NaN), or None when it is not numeric."""
    if pd.api.types.is_bool_dtype(series) or pd.api.types.is_numeric_dtype(series):
        values = series.astype(float)
    else:
        try:
            values = pd.to_numeric(series, errors="raise").astype(float)
        except (TypeError, ValueError):
            return None
    return values.replace([np.inf, -np.inf], np.nan)


def _not_flag(ref: pd.Series, cur: pd.Series) -> bool:
    """A column declared a 0/1 flag that holds another value."""
    values = pd.concat([ref, cur]).dropna()
    return not values.isin([0.0, 1.0]).all()


def _usable(
    reference: pd.DataFrame,
    current: pd.DataFrame,
    columns: Sequence[str],
    flags: Collection[str] = (),
) -> tuple[pd.DataFrame, pd.DataFrame, list[str]]:
    """Float frames of the testable columns, and ``"column: reason"`` for the others."""
    ref_out: dict[str, pd.Series] = {}
    cur_out: dict[str, pd.Series] = {}
    skipped: list[str] = []
    for column in dict.fromkeys(columns):
        if not PLAIN_COLUMN.fullmatch(column):
            skipped.append(f"{column!r}: not a plain column name (letters, digits, _)")
            continue
        missing = [
            name
            for name, df in (("reference", reference), ("current", current))
            if column not in df.columns
        ]
        if missing:
            skipped.append(f"{column}: missing from {' and '.join(missing)}")
            continue
        ref, cur = _numeric(reference[column]), _numeric(current[column])
        if ref is None or cur is None:
            skipped.append(f"{column}: not numeric")
            continue
        if column in flags and _not_flag(ref, cur):
            skipped.append(f"{column}: a 0/1 flag that holds other values")
            continue
        n_ref, n_cur = int(ref.notna().sum()), int(cur.notna().sum())
        if n_ref < MIN_ROWS or n_cur < MIN_ROWS:
            skipped.append(
                f"{column}: too few non-null values (reference {n_ref}, current {n_cur}, "
                f"need {MIN_ROWS})"
            )
            continue
        ref_out[column], cur_out[column] = ref.reset_index(drop=True), cur.reset_index(drop=True)
    return pd.DataFrame(ref_out), pd.DataFrame(cur_out), skipped


def _status(value: Any) -> str:
    return str(getattr(value, "value", value)).upper()


def column_results(snapshot: dict[str, Any], columns: Sequence[str]) -> list[ColumnDrift]:
    """Per-column verdicts from an Evidently 0.7 snapshot dict (``snapshot.dict()``).

    Each ``ValueDrift`` metric carries a test whose status is FAIL when Evidently detected drift
    and SUCCESS when not; the metric config holds the resolved method and the value the score.
    """
    values = {m.get("id"): m.get("value") for m in snapshot.get("metrics", [])}
    found: dict[str, ColumnDrift] = {}
    for test in snapshot.get("tests", []):
        config = test.get("metric_config") or {}
        params = config.get("params") or {}
        if not str(params.get("type", "")).endswith(":ValueDrift"):
            continue
        column = params.get("column")
        if column not in columns:
            continue
        status = _status(test.get("status"))
        if status not in ("FAIL", "SUCCESS"):
            raise DriftError(f"evidently drift test for column {column!r} ended with {status}")
        score = values.get(config.get("metric_id"))
        method = str(params.get("method") or "default")
        found[column] = ColumnDrift(
            column=column,
            drifted=status == "FAIL",
            method=TEST_NAMES.get(method, method),
            score=float(score) if isinstance(score, int | float) else None,
            detail=str(test.get("description", "")),
        )
    absent = [c for c in columns if c not in found]
    if absent:
        raise DriftError(f"evidently returned no drift test for column(s) {', '.join(absent)}")
    return [found[c] for c in columns]


def _with_title(page: str, title: str) -> str:
    """Evidently's standalone HTML has no <title>; add one."""
    return page.replace("<head>", f"<head>\n<title>{html_lib.escape(title)}</title>", 1)


def _evidently(
    ref: pd.DataFrame, cur: pd.DataFrame, flags: Collection[str], drift_share: float, title: str
) -> Any:
    """Evidently's snapshot: each column tested as its type says (FLAG_TEST, CONTINUOUS_TEST)."""
    from evidently import DataDefinition, Dataset, Report
    from evidently.presets import DataDriftPreset

    usable = list(ref.columns)
    flagged = [c for c in usable if c in flags]
    definition = DataDefinition(
        numerical_columns=[c for c in usable if c not in flags], categorical_columns=flagged
    )
    preset = DataDriftPreset(
        columns=usable,
        drift_share=drift_share,
        per_column_method={c: FLAG_TEST if c in flags else CONTINUOUS_TEST for c in usable},
    )
    return Report([preset], include_tests=True).run(
        current_data=Dataset.from_pandas(cur, data_definition=definition),
        reference_data=Dataset.from_pandas(ref, data_definition=definition),
        name=title,
    )


def drift_report(
    reference: pd.DataFrame,
    current: pd.DataFrame,
    columns: Sequence[str],
    *,
    drift_share: float,
    title: str = "HSS score drift",
    flags: Collection[str] = (),
) -> DriftResult:
    """Evidently drift of ``columns`` in ``current`` against ``reference``: the ``flags`` (0/1
    columns) by a proportion test, the others by a distribution test.

    Columns missing, non-numeric or (nearly) all-null in either frame are skipped, not fatal, and
    so is a flag holding another value than 0 and 1.
    Fewer than 2 rows in either frame, or no testable column, gives ``drifted=False`` with the
    reason in ``skipped`` and no report pages. Writes nothing: the pages are in ``pages``.
    """
    if not 0.0 < drift_share <= 1.0:
        raise InputError(f"drift_share must be in (0, 1], got {drift_share}")
    wanted = list(dict.fromkeys(columns))
    if len(reference) < MIN_ROWS or len(current) < MIN_ROWS:
        reason = (
            f"too few rows for a drift test (reference {len(reference)}, "
            f"current {len(current)}, need {MIN_ROWS})"
        )
        return DriftResult(
            drifted=False, share=0.0, skipped=[f"{c}: {reason}" for c in wanted] or [f"*: {reason}"]
        )
    ref, cur, skipped = _usable(reference, current, wanted, flags)
    usable = list(ref.columns)
    if not usable:
        return DriftResult(drifted=False, share=0.0, skipped=skipped or ["*: no columns requested"])
    try:
        with np.errstate(all="ignore"):  # constant columns make scipy divide by zero
            snapshot = _evidently(ref, cur, flags, drift_share, title)
            record = snapshot.dict()
    except Exception as exc:  # evidently raises bare ValueError/KeyError etc.
        message = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise DriftError(f"evidently drift report failed: {message}") from exc
    results = column_results(record, usable)
    share = sum(c.drifted for c in results) / len(results)
    return DriftResult(
        drifted=share >= drift_share,
        share=share,
        columns=results,
        skipped=skipped,
        pages={
            "html": _with_title(snapshot.get_html_str(as_iframe=False), title),
            "json": snapshot.json(),
        },
    )
