"""Which threshold becomes which check, and which checks block (pure: no Great Expectations).

A `Check` is a plain record: a stable code, the table and column it reads, the bound, and
whether its failure blocks a promotion or is only reported. The gate's and the monitor's checks
are declared here from the settings; hss_gate.decision.suites turns them into Great Expectations
suites and runs them; hss_gate.decision.record decides on the results.

Codes are `<signal>.<what>`, the signal being the `decided_by` value a failed check gives:
`data.*` (data quality), `not_summarizing.*`, `facts.*`, `form.*` and `hss.*` (see CODES).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Literal

from hss_gate.decision.rule import check_blocks, enough_documents
from hss_gate.signals import relative_bounds
from hss_gate.signals.summary_flags import FLAG_REASONS, FLAGS

if TYPE_CHECKING:
    from hss_gate.settings import GateSettings

Kind = Literal["data", "hss", "facts", "output", "summarizes", "attribution"]
"""What a check is about: data quality, HSS (advisory unless gate.hss_blocks), the facts of the
summaries, their form (cut mid-sentence; advisory unless gate.form_blocks), and whether the
candidate summarizes at all; attribution instability (declared only with
gate.max_attribution_instability set, and then blocking)."""

Test = Literal[
    "column_exists",  # the column is there
    "not_null",  # no missing value
    "in_set",  # every value is one of `values`
    "between",  # every value in [low, high]; with max_share: all but that share of the rows
    "unique",  # no value twice
    "contains",  # the distinct values include every one of `values`
    "row_count",  # exactly `high` rows
    "mean",  # the column's mean in [low, high]
    "quantile",  # the column's `quantile` in [low, high] (linear interpolation)
    "max",  # the column's max over the rows `where` selects in [low, high]
]

ColumnRule = tuple[float | None, float | None] | str | None
"""A column's rule in a table schema: a (min, max) range (None: unbounded), "bool" (0/1 after
a cast to float) or None (only present and not null)."""

DOCUMENTS, PERTURBATIONS, CATEGORIES = "documents", "perturbations", "categories"
FACTS_BOUNDS = "facts_bounds"
"""One row per facts bound: the interval of the candidate's mean of its column
(hss_gate.decision.paired_comparison.bound_intervals, paired with production; the monitor's
one-sample), whose lower end the facts checks hold to the bounds."""
HSS_DOCUMENTS = "hss_documents"
"""Facts first (gate.hss_documents): the documents HSS was measured on, with their HSS columns;
the HSS checks read it, the documents table keeps the rest."""
ATTRIBUTION_COLUMN = "attribution_instability"  # the documents column explained on request

FLAG_CODES = {flag: f"not_summarizing.{flag}_share" for flag in FLAGS}
CODES: dict[str, tuple[Kind, Test]] = {
    "data.column_exists": ("data", "column_exists"),
    "data.not_null": ("data", "not_null"),
    "data.bool": ("data", "in_set"),
    "data.range": ("data", "between"),
    "data.unique": ("data", "unique"),
    "data.categories_present": ("data", "contains"),
    "data.row_count": ("data", "row_count"),
    **{code: ("summarizes", "mean") for code in FLAG_CODES.values()},
    "facts.mean_unsupported_share": ("facts", "max"),
    "facts.low_consistency_share": ("facts", "max"),
    "form.truncated_share": ("output", "mean"),
    "hss.mean": ("hss", "mean"),
    "hss.p95": ("hss", "quantile"),
    "hss.share_above_severity": ("hss", "between"),
    "hss.attribution_instability": ("attribution", "mean"),
    "hss.category_delta": ("hss", "max"),
}
"""Every check code, with its kind and how it is tested. A code is stable: reports, JUnit and
users' CI read it, never the description."""


@dataclass(frozen=True)
class Check:
    """One declared check: what it tests on which table and column, against which bound, and
    whether its failure blocks (otherwise it is reported as advisory)."""

    table: str
    kind: Kind
    name: str  # unique within its table, e.g. "mean_hss", "category_delta[news]"
    code: str  # one of CODES
    test: Test
    description: str
    blocking: bool
    column: str | None = None
    low: float | None = None
    high: float | None = None
    values: tuple[Any, ...] = ()  # in_set, contains
    quantile: float | None = None  # quantile
    max_share: float | None = None  # between: the share of rows allowed outside [low, high]
    where: tuple[str, str] | None = None  # max: only the rows whose column equals the value


def _fmt(x: float) -> str:
    """0.7 -> '0.70', 0.005 -> '0.005'."""
    return f"{x:.2f}" if round(x, 2) == x else f"{x:g}"


def _pct(x: float) -> str:
    return f"{x * 100:g}%"


def _check(gate: GateSettings, table: str, name: str, code: str, text: str, **bound: Any) -> Check:
    kind, test = CODES[code]
    return Check(table, kind, name, code, test, text, check_blocks(kind, gate), **bound)


def _mean_at_most(
    gate: GateSettings, name: str, code: str, column: str, high: float, text: str
) -> Check:
    """The mean of a documents column at most `high`."""
    return _check(gate, DOCUMENTS, name, code, text, column=column, high=high)


def _facts_bound_check(gate: GateSettings, setting: str) -> Check:
    """The check a registered signal's `RelativeBound` on `setting` declares: the lower end of
    the interval of its column's mean (a FACTS_BOUNDS row) at most the setting's value, so a
    facts bound blocks only when the candidate is above it with confidence."""
    bound = next(b for b in relative_bounds() if b.setting == setting)
    high = float(getattr(gate, setting))
    text = f"{bound.text} <= {_fmt(high)} (the lower end of its interval)"
    return _check(
        gate,
        FACTS_BOUNDS,
        bound.check,
        bound.code,
        text,
        column="ci_low",
        high=high,
        where=("bound", bound.check),
    )


def with_intervals(
    results: Sequence[Mapping[str, Any]], intervals: Sequence[Mapping[str, Any]]
) -> list[dict[str, Any]]:
    """Check results with each facts bound's interval (a FACTS_BOUNDS row) beside its result,
    so the reports show the interval and the bound side by side."""
    by_bound = {str(row["bound"]): dict(row) for row in intervals}
    return [
        dict(r) | {"interval": by_bound[r["name"]]}
        if r["table"] == FACTS_BOUNDS and r["name"] in by_bound
        else dict(r)
        for r in results
    ]


def column_checks(gate: GateSettings, table: str, columns: Mapping[str, ColumnRule]) -> list[Check]:
    """Data quality from a table's schema: each column present, never null, and in its range."""
    checks: list[Check] = []
    for column, rule in columns.items():
        at = f"{table}.{column}"
        checks.append(
            _check(
                gate,
                table,
                f"{column}_exists",
                "data.column_exists",
                f"{table} has a column '{column}'",
                column=column,
            )
        )
        checks.append(
            _check(
                gate,
                table,
                f"{column}_not_null",
                "data.not_null",
                f"{at} has no missing values",
                column=column,
            )
        )
        if rule == "bool":
            checks.append(
                _check(
                    gate,
                    table,
                    f"{column}_bool",
                    "data.bool",
                    f"{at} is true/false",
                    column=column,
                    values=(0.0, 1.0),
                )
            )
        elif isinstance(rule, tuple):
            low, high = rule
            checks.append(
                _check(
                    gate,
                    table,
                    f"{column}_range",
                    "data.range",
                    _range_text(at, low, high),
                    column=column,
                    low=low,
                    high=high,
                )
            )
    return checks


def _range_text(at: str, low: float | None, high: float | None) -> str:
    if low is not None and high is not None:
        return f"{at} is in [{_fmt(low)}, {_fmt(high)}]"
    return f"{at} >= {_fmt(low)}" if low is not None else f"{at} <= {_fmt(high)}"  # type: ignore[arg-type]


def row_count_check(gate: GateSettings, table: str, n: int, what: str) -> Check:
    """Exactly n rows, one per `what`."""
    text = f"{table} has {int(n)} rows (one per {what})"
    return _check(gate, table, "row_count", "data.row_count", text, low=int(n), high=int(n))


def unique_check(gate: GateSettings, table: str, column: str) -> Check:
    """No value of the column twice."""
    text = f"{table}.{column} is unique"
    return _check(gate, table, f"{column}_unique", "data.unique", text, column=column)


def covers_categories(gate: GateSettings, table: str, cats: Sequence[str], what: str) -> Check:
    """Every category appears in the table's category column."""
    text = f"{what} every category ({len(cats)})"
    code = "data.categories_present"
    return _check(
        gate, table, "categories_present", code, text, column="category", values=tuple(cats)
    )


def flag_checks(gate: GateSettings, prefix: str, served: bool = False) -> list[Check]:
    """At most gate.max_not_summary_share of the summaries (or of the served ones) flagged as
    not a summary, per flag (hss_gate.signals.summary_flags). `prefix` is the flag columns'
    prefix."""
    bound = gate.max_not_summary_share
    name, whose = ("served_", "served ") if served else ("", "")
    return [
        _mean_at_most(
            gate,
            f"{name}{flag}_share",
            FLAG_CODES[flag],
            f"{prefix}{flag}",
            bound,
            f"share of {whose}{FLAG_REASONS[flag]} <= {_fmt(bound)}",
        )
        for flag in FLAGS
    ]


def severity_checks(gate: GateSettings, optional_columns: Collection[str] = ()) -> list[Check]:
    """The absolute checks of a run's documents: HSS (mean, p95, the share of severe
    documents), the facts (unsupported entities/numbers, summaries the checker finds
    unsupported), form (cut mid-sentence), attribution instability when the table has it and a
    bound is set, and whether the summaries are summaries at all."""
    g = gate
    severe = f"at most {_pct(g.max_share_above)} of documents have HSS > {_fmt(g.severity_level)}"
    checks = [
        _mean_at_most(
            g, "mean_hss", "hss.mean", "hss", g.max_mean_hss, f"mean HSS <= {_fmt(g.max_mean_hss)}"
        ),
        _check(
            g,
            DOCUMENTS,
            "p95_hss",
            "hss.p95",
            f"95th percentile of HSS <= {_fmt(g.max_p95_hss)}",
            column="hss",
            quantile=0.95,
            high=g.max_p95_hss,
        ),
        _check(
            g,
            DOCUMENTS,
            "share_above_severity",
            "hss.share_above_severity",
            severe,
            column="hss",
            high=g.severity_level,
            max_share=g.max_share_above,
        ),
        _facts_bound_check(g, "max_unsupported_share"),
        _mean_at_most(
            g,
            "truncated_share",
            "form.truncated_share",
            "base_truncated",
            g.max_truncated_share,
            f"share of summaries cut mid-sentence <= {_fmt(g.max_truncated_share)}",
        ),
    ]
    bound = g.max_attribution_instability
    if ATTRIBUTION_COLUMN in optional_columns and bound is not None:
        checks.append(
            _mean_at_most(
                g,
                "mean_attribution_instability",
                "hss.attribution_instability",
                ATTRIBUTION_COLUMN,
                bound,
                f"mean attribution instability <= {_fmt(bound)}",
            )
        )
    checks.append(_facts_bound_check(g, "max_low_consistency_share"))
    return checks + flag_checks(g, "base_")


def attribution_checks(gate: GateSettings, columns: Mapping[str, ColumnRule]) -> list[Check]:
    """The gate's attribution checks, run on the candidate's explained documents only (a
    documents table of doc_id and the column): the column there, not null and within its rule
    in `columns` (the documents table's rules), and its mean at most
    gate.max_attribution_instability (not declared while that is unset)."""
    column = ATTRIBUTION_COLUMN
    checks = column_checks(gate, DOCUMENTS, {column: columns[column]})
    return checks + [c for c in severity_checks(gate, [column]) if c.column == column]


def category_checks(
    gate: GateSettings, categories: Sequence[str], sizes: Mapping[str, int] | None = None
) -> list[Check]:
    """Each category's mean HSS rises by at most gate.category_margin over production's, for
    the categories with enough documents (`sizes`: documents per category in this look; None:
    every category is checked)."""
    margin = _fmt(gate.category_margin)
    return [
        _check(
            gate,
            CATEGORIES,
            f"category_delta[{cat}]",
            "hss.category_delta",
            f"category '{cat}': mean HSS rises by <= {margin} over production",
            column="delta",
            high=gate.category_margin,
            where=("category", cat),
        )
        for cat in categories
        if sizes is None or enough_documents(sizes.get(cat, 0), gate)
    ]


@dataclass(frozen=True)
class HssSubset:
    """Facts first: HSS measured on fewer documents than the look's (gate.hss_documents), and
    the categories among them."""

    documents: int
    categories: tuple[str, ...]


def gate_checks(
    gate: GateSettings,
    *,
    schema: Mapping[str, Mapping[str, ColumnRule]],
    categories: Sequence[str],
    n_documents: int,
    n_perturbations: int,
    optional_columns: Collection[str] = (),
    category_sizes: Mapping[str, int] | None = None,
    hss_measured: bool = True,
    hss_subset: HssSubset | None = None,
) -> list[Check]:
    """The gate's checks: data quality of the three score tables (`schema`: each table's
    columns), then the absolute checks of the candidate's documents, then each category's HSS
    rise (only for the categories with enough documents, when `category_sizes` is given).
    HSS not measured (stored summaries without perturbed ones): no HSS check and no check of
    the perturbations and categories tables (all about HSS) is declared: they are reported as
    not measured, neither passed nor failed. HSS measured on a subset (`hss_subset`, facts
    first): the HSS columns and checks read the HSS_DOCUMENTS table of those documents, and
    the perturbations and categories tables cover them (`n_perturbations`, `category_sizes`
    and the categories being the subset's)."""
    cats = [str(c) for c in categories]
    documents = [
        *column_checks(gate, DOCUMENTS, schema[DOCUMENTS]),
        unique_check(gate, DOCUMENTS, "doc_id"),
        covers_categories(gate, DOCUMENTS, cats, "documents cover"),
        row_count_check(gate, DOCUMENTS, n_documents, "document"),
    ]
    severity = severity_checks(gate, optional_columns)
    if not hss_measured:
        return [*documents, *(c for c in severity if c.kind != "hss")]
    hss_cats = cats
    if hss_subset is not None:
        hss_cats = list(hss_subset.categories)
        documents += [
            *column_checks(gate, HSS_DOCUMENTS, schema[HSS_DOCUMENTS]),
            unique_check(gate, HSS_DOCUMENTS, "doc_id"),
            row_count_check(gate, HSS_DOCUMENTS, hss_subset.documents, "document HSS rests on"),
        ]
        severity = [replace(c, table=HSS_DOCUMENTS) if c.kind == "hss" else c for c in severity]
    return [
        *documents,
        *column_checks(gate, PERTURBATIONS, schema[PERTURBATIONS]),
        row_count_check(gate, PERTURBATIONS, n_perturbations, "perturbation"),
        *column_checks(gate, CATEGORIES, schema[CATEGORIES]),
        unique_check(gate, CATEGORIES, "category"),
        covers_categories(gate, CATEGORIES, hss_cats, "categories table covers"),
        row_count_check(gate, CATEGORIES, len(hss_cats), "category"),
        *severity,
        *category_checks(gate, hss_cats, category_sizes),
    ]


def monitor_checks(
    gate: GateSettings,
    *,
    columns: Mapping[str, ColumnRule],
    n_documents: int,
    optional_columns: Collection[str] = (),
) -> list[Check]:
    """The live monitor's checks of the rescored samples: data quality of the documents table
    (`columns`) and the absolute checks. Any failure makes the run unhealthy
    (hss_gate.monitoring.rules.monitor_verdict), so every check blocks."""
    checks = [
        *column_checks(gate, DOCUMENTS, columns),
        unique_check(gate, DOCUMENTS, "doc_id"),
        row_count_check(gate, DOCUMENTS, n_documents, "sampled document"),
        *severity_checks(gate, optional_columns),
    ]
    return [replace(c, blocking=True) for c in checks]


def served_checks(
    gate: GateSettings, *, columns: Mapping[str, ColumnRule], n_documents: int
) -> list[Check]:
    """The served summaries' checks (`hss monitor`, also `--served-only`): data quality of
    their signals (`columns`) and whether they are summaries at all; every check blocks."""
    checks = [
        *column_checks(gate, DOCUMENTS, columns),
        row_count_check(gate, DOCUMENTS, n_documents, "served summary"),
        *flag_checks(gate, "live_", served=True),
    ]
    return [replace(c, blocking=True) for c in checks]
