"""Great Expectations: the declared checks as suites, validated on score tables (the adapter).

Two layers:

- `to_expectation` turns a declared check (hss_gate.decision.checks.Check: a code, the column, the
  bound, blocking or advisory) into an `ExpectationSpec` (GX class name + kwargs);
  `gate_expectations`, `attribution_expectations`, `monitor_expectations`, `served_expectations`:
  the same for the checks hss_gate.decision.checks declares, given the tables' columns. No GX
  import.
- `run_suites` builds one ephemeral GX context, one suite per table, validates the pandas tables
  through a Checkpoint (building Data Docs when asked) and maps every result back to its spec.
  It fails closed: a missing table, a missing column, an unknown expectation or a GX error gives a
  failed `CheckResult` with an explanatory `observed` value, never an exception.

Which threshold becomes which check, and whether a failure blocks, is decided in
hss_gate.decision.checks; this module only runs the checks and returns their results.
"""

from __future__ import annotations

import contextlib
import functools
import html
import logging
import math
from collections.abc import Collection, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hss_gate.decision.checks import (
    CATEGORIES,
    DOCUMENTS,
    HSS_DOCUMENTS,
    PERTURBATIONS,
    Check,
    ColumnRule,
    HssSubset,
    Kind,
    attribution_checks,
    gate_checks,
    monitor_checks,
    served_checks,
)
from hss_gate.signals import tables
from hss_gate.signals.tables import HSS_DOCUMENT_COLUMNS, LIVE_UNKNOWN_COLUMNS, Column, picked

if TYPE_CHECKING:
    import pandas as pd

    from hss_gate.settings import GateSettings


def _rule(column: Column) -> ColumnRule:
    """A declared column's rule in a table schema: "bool" (0/1 after a cast to float) for a bool
    column, else its bounds (None: only present and not null)."""
    return "bool" if column.dtype == "bool" else column.bounds


def _rules(columns: Sequence[Column], checked: Sequence[str]) -> dict[str, ColumnRule]:
    """The rules of the `checked` columns, in that order."""
    return {c.name: _rule(c) for c in picked(columns, checked)}


# The rules of the columns the checks require, per table, in the order they are checked: the
# columns, their ranges and which are required are declared in hss_gate/signals/tables.py.
DOCUMENT_RULES = _rules(tables.DOCUMENT_COLUMNS, tables.CHECKED_DOCUMENT_COLUMNS)
OPTIONAL_DOCUMENT_RULES = {c.name: _rule(c) for c in tables.DOCUMENT_COLUMNS if c.optional}
PERTURBATION_RULES = _rules(tables.PERTURBATION_COLUMNS, tables.CHECKED_PERTURBATION_COLUMNS)
CATEGORY_RULES = _rules(tables.CATEGORY_COLUMNS, tables.CHECKED_CATEGORY_COLUMNS)
SERVED_RULES = _rules(tables.SERVED_COLUMNS, tables.CHECKED_SERVED_COLUMNS)
HSS_RULES = {c: r for c, r in DOCUMENT_RULES.items() if c == "doc_id" or c in HSS_DOCUMENT_COLUMNS}

_DOCS_SITE = "hss_gate"


@dataclass(frozen=True)
class ExpectationSpec:
    """One check as GX runs it: a GX expectation class name and its kwargs, on one table, with
    the declared check's code and whether its failure blocks."""

    table: str
    kind: Kind
    name: str
    expectation: str
    kwargs: dict[str, Any]
    description: str
    code: str = ""
    blocking: bool = True


@dataclass
class CheckResult:
    """The outcome of one `ExpectationSpec`.

    `observed` is GX's observed_value (a mean, a quantile, a row count, ...), the unexpected
    share (0-1, of non-null values) for per-row expectations, {"missing": [...]} for a set
    that must be present, or a message when the check could not run (which counts as a failure).
    `unexpected` holds up to 20 example offending values of per-row expectations.
    """

    table: str
    kind: Kind
    name: str
    expectation: str
    kwargs: dict[str, Any]
    description: str
    success: bool
    observed: Any
    unexpected: list[Any] = field(default_factory=list)
    code: str = ""
    blocking: bool = True

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serializable dict."""
        return _jsonable(asdict(self))

    @classmethod
    def failed(cls, spec: ExpectationSpec, observed: str) -> CheckResult:
        """A failed result for a spec that could not be evaluated."""
        return cls(**asdict(spec), success=False, observed=observed)


# ---------------------------------------------------------------------------------------------
# Declared checks as GX expectations (pure)
# ---------------------------------------------------------------------------------------------

EXPECTATIONS = {
    "column_exists": "ExpectColumnToExist",
    "not_null": "ExpectColumnValuesToNotBeNull",
    "in_set": "ExpectColumnValuesToBeInSet",
    "between": "ExpectColumnValuesToBeBetween",
    "unique": "ExpectColumnValuesToBeUnique",
    "contains": "ExpectColumnDistinctValuesToContainSet",
    "row_count": "ExpectTableRowCountToEqual",
    "mean": "ExpectColumnMeanToBeBetween",
    "quantile": "ExpectColumnQuantileValuesToBeBetween",
    "max": "ExpectColumnMaxToBeBetween",
}
"""The GX expectation that runs each kind of test (hss_gate.decision.checks.Test)."""


def _kwargs(check: Check) -> dict[str, Any]:
    """The GX kwargs of a declared check."""
    if check.test == "row_count":
        return {"value": int(check.high or 0)}
    kwargs: dict[str, Any] = {"column": check.column}
    if check.test in ("in_set", "contains"):
        kwargs["value_set"] = list(check.values)
    elif check.test == "quantile":
        kwargs["quantile_ranges"] = {
            "quantiles": [check.quantile],
            "value_ranges": [[check.low, check.high]],
        }
        # linear interpolation = numpy's default, as in the baseline's hss_p95
        kwargs["allow_relative_error"] = "linear"
    elif check.test in ("between", "mean", "max"):
        kwargs |= {"min_value": check.low, "max_value": check.high}
    if check.max_share is not None:
        # rounded so that a share exactly at the ceiling passes (1 - 0.3 != 0.7 in floats)
        kwargs["mostly"] = round(1.0 - check.max_share, 12)
    if check.where is not None:
        column, value = check.where
        kwargs["row_condition"] = {
            "type": "comparison",
            "column": {"name": column},
            "operator": "==",
            "parameter": value,
        }
    return kwargs


def to_expectation(check: Check) -> ExpectationSpec:
    """The GX expectation that runs a declared check."""
    return ExpectationSpec(
        check.table,
        check.kind,
        check.name,
        EXPECTATIONS[check.test],
        _kwargs(check),
        check.description,
        code=check.code,
        blocking=check.blocking,
    )


def _document_columns(
    optional_columns: Collection[str], skip: Collection[str] = ()
) -> dict[str, ColumnRule]:
    unknown = set(optional_columns) - set(OPTIONAL_DOCUMENT_RULES)
    if unknown:
        raise ValueError(f"unknown optional columns: {sorted(unknown)}")
    columns = {c: r for c, r in DOCUMENT_RULES.items() if c not in skip}
    columns.update({c: r for c, r in OPTIONAL_DOCUMENT_RULES.items() if c in optional_columns})
    return columns


def gate_expectations(
    gate: GateSettings,
    *,
    categories: Sequence[str],
    n_documents: int,
    n_perturbations: int,
    optional_columns: Collection[str] = (),
    category_sizes: Mapping[str, int] | None = None,
    hss_measured: bool = True,
    hss_subset: HssSubset | None = None,
) -> list[ExpectationSpec]:
    """The gate's checks (hss_gate.decision.checks.gate_checks) on the score tables.

    Without `hss_measured` (stored summaries without perturbed ones) the HSS expectations are
    skipped, not passed or failed on NaN (the decision notes it). With `hss_subset` (facts
    first) the HSS columns and checks read the table HSS_DOCUMENTS of the documents HSS was
    measured on. `categories`: each must appear in the documents and have one row in the
    categories table; `category_sizes` (documents per category in this look, or in the HSS
    subset) limits the per-category checks to the categories with enough documents;
    `optional_columns`: the optional document columns the score table has.
    """
    skip = () if hss_measured and hss_subset is None else HSS_DOCUMENT_COLUMNS
    schema = {
        DOCUMENTS: _document_columns(optional_columns, skip),
        PERTURBATIONS: PERTURBATION_RULES,
        CATEGORIES: CATEGORY_RULES,
        HSS_DOCUMENTS: HSS_RULES,
    }
    checks = gate_checks(
        gate,
        schema=schema,
        categories=categories,
        n_documents=n_documents,
        n_perturbations=n_perturbations,
        optional_columns=optional_columns,
        category_sizes=category_sizes,
        hss_measured=hss_measured,
        hss_subset=hss_subset,
    )
    return [to_expectation(c) for c in checks]


def attribution_expectations(gate: GateSettings) -> list[ExpectationSpec]:
    """The gate's attribution checks (checks.attribution_checks) on its explained documents."""
    return [to_expectation(c) for c in attribution_checks(gate, OPTIONAL_DOCUMENT_RULES)]


def monitor_expectations(
    gate: GateSettings, *, n_documents: int, optional_columns: Collection[str] = ()
) -> list[ExpectationSpec]:
    """The live monitor's checks of the rescored samples, on the documents table only.

    No categories table and no category coverage (live traffic has no known categories);
    `category` and `tier` are not required.
    """
    columns = _document_columns(optional_columns, LIVE_UNKNOWN_COLUMNS)
    checks = monitor_checks(
        gate, columns=columns, n_documents=n_documents, optional_columns=optional_columns
    )
    return [to_expectation(c) for c in checks]


def served_expectations(gate: GateSettings, *, n_documents: int) -> list[ExpectationSpec]:
    """The served summaries' checks (`hss monitor`, also `--served-only`): data quality of
    their signals and whether they are summaries at all (empty, copies, overlong, foreign)."""
    checks = served_checks(gate, columns=SERVED_RULES, n_documents=n_documents)
    return [to_expectation(c) for c in checks]


# ---------------------------------------------------------------------------------------------
# GX runner
# ---------------------------------------------------------------------------------------------


def _jsonable(value: Any) -> Any:
    """Plain JSON types: numpy scalars -> Python, NaN/inf -> None, tuples -> lists."""
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [_jsonable(v) for v in value]
    if hasattr(value, "item") and callable(value.item) and getattr(value, "ndim", 1) == 0:
        value = value.item()  # numpy / pandas scalar
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if value is None or isinstance(value, bool | int | float | str):
        return value
    return str(value)


def _referenced_columns(spec: ExpectationSpec) -> list[str]:
    cols = []
    if "column" in spec.kwargs:
        cols.append(str(spec.kwargs["column"]))
    condition = spec.kwargs.get("row_condition")
    if isinstance(condition, dict) and isinstance(condition.get("column"), dict):
        cols.append(str(condition["column"].get("name")))
    return cols


def _prepare(df: pd.DataFrame) -> pd.DataFrame:
    """A copy with bool columns (also object columns of bools) cast to float, strings
    HTML-escaped (see `_for_gx`), index reset."""
    import pandas as pd

    out = df.reset_index(drop=True).copy()
    for column in out.columns:
        series = out[column]
        if pd.api.types.is_bool_dtype(series.dtype):
            out[column] = series.astype(float)
        elif series.dtype == object or pd.api.types.is_string_dtype(series.dtype):
            values = series.dropna()
            if len(values) and all(isinstance(v, bool) for v in values):
                out[column] = series.map(lambda v: float(v) if isinstance(v, bool) else None)
                out[column] = out[column].astype(float)
            else:
                out[column] = series.map(_for_gx).astype(object)
    return out


_STRUCTURAL_KEYS = frozenset({"column", "type", "operator", "name"})


def _for_gx(value: Any) -> Any:
    """Strings HTML-escaped for GX, whose Data Docs insert values, value sets and descriptions
    into the page unescaped. Escaping is one-to-one, so equality checks are unchanged; the
    observed and unexpected values are unescaped back (`_from_gx`)."""
    if isinstance(value, str):
        return html.escape(value, quote=True)
    if isinstance(value, list | tuple):
        return [_for_gx(v) for v in value]
    if isinstance(value, dict):
        return {k: v if k in _STRUCTURAL_KEYS else _for_gx(v) for k, v in value.items()}
    return value


def _from_gx(value: Any) -> Any:
    """The inverse of `_for_gx` on what GX reports back."""
    if isinstance(value, str):
        return html.unescape(value)
    if isinstance(value, list | tuple):
        return [_from_gx(v) for v in value]
    if isinstance(value, dict):
        return {k: _from_gx(v) for k, v in value.items()}
    return value


@functools.cache
def _gx_classes() -> dict[str, Any]:
    """GX expectation classes by name, with a fix for the quantile expectation.

    In GX 1.24.1 ExpectColumnQuantileValuesToBeBetween returns success as numpy.bool_
    (np.all), which the validation-results store cannot serialize, so a Checkpoint run
    raises "Object of type bool is not JSON serializable". The subclass returns plain bools.
    """
    import great_expectations.expectations as gxe

    class ExpectColumnQuantileValuesToBeBetweenPlainBool(gxe.ExpectColumnQuantileValuesToBeBetween):
        """ExpectColumnQuantileValuesToBeBetween whose success is a plain bool."""

        def _validate(self, metrics, runtime_configuration=None, execution_engine=None):
            out = super()._validate(metrics, runtime_configuration, execution_engine)
            out["success"] = bool(out["success"])
            details = out.get("result", {}).get("details", {})
            if "success_details" in details:
                details["success_details"] = [bool(x) for x in details["success_details"]]
            return out

    classes = {
        name: getattr(gxe, name)
        for name in dir(gxe)
        if name.startswith("Expect") and isinstance(getattr(gxe, name), type)
    }
    classes["ExpectColumnQuantileValuesToBeBetween"] = (
        ExpectColumnQuantileValuesToBeBetweenPlainBool
    )
    return classes


@contextlib.contextmanager
def _quiet_gx() -> Iterator[None]:
    """Silence GX's loggers below ERROR for the duration (restored afterwards)."""
    logger = logging.getLogger("great_expectations")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        logger.setLevel(level)


def _context(docs_dir: Path | None):
    import great_expectations as gx
    from great_expectations.data_context.types.base import (
        DataContextConfig,
        InMemoryStoreBackendDefaults,
        ProgressBarsConfig,
    )

    sites = {}
    if docs_dir is not None:
        sites[_DOCS_SITE] = {
            "class_name": "SiteBuilder",
            "show_how_to_buttons": False,
            "store_backend": {
                "class_name": "TupleFilesystemStoreBackend",
                "base_directory": str(docs_dir),
            },
            "site_index_builder": {"class_name": "DefaultSiteIndexBuilder"},
        }
    config = DataContextConfig(
        # in-memory stores and no temporary docs site: nothing is written to disk (or the cwd)
        store_backend_defaults=InMemoryStoreBackendDefaults(init_temp_docs_sites=False),
        data_docs_sites=sites,
        analytics_enabled=False,
        progress_bars=ProgressBarsConfig(globally=False, metric_calculations=False),
    )
    return gx.get_context(project_config=config, mode="ephemeral")


def _observed(spec: ExpectationSpec, gx_result: Any) -> tuple[Any, list[Any]]:
    """(observed, unexpected examples) from a GX ExpectationValidationResult."""
    info = gx_result.exception_info or {}
    messages = []
    if info.get("raised_exception"):
        messages.append(info.get("exception_message"))
    else:  # metric errors are keyed by metric id
        messages.extend(
            v.get("exception_message")
            for v in info.values()
            if isinstance(v, dict) and v.get("raised_exception")
        )
    if messages:
        return f"GX error: {'; '.join(str(m) for m in messages)}", []
    result = dict(gx_result.result or {})
    unexpected = list(result.get("partial_unexpected_list") or [])
    if spec.expectation == "ExpectColumnToExist" and not gx_result.success:
        return f"column '{spec.kwargs.get('column')}' is missing from table '{spec.table}'", []
    value = result.get("observed_value")
    if value is not None:
        values = value.get("values") if isinstance(value, dict) else None
        if isinstance(values, list) and len(values) == 1:
            value = values[0]  # a single quantile
        return value, unexpected
    if "partial_missing_list" in result:
        return {"missing": list(result["partial_missing_list"])}, []
    if "unexpected_percent" in result:
        return result["unexpected_percent"] / 100.0, unexpected  # a share, like the others
    if spec.expectation == "ExpectColumnMaxToBeBetween" and "row_condition" in spec.kwargs:
        return "no rows match the condition", []
    return None, unexpected


def run_suites(
    tables: Mapping[str, pd.DataFrame],
    specs: Sequence[ExpectationSpec],
    *,
    docs_dir: Path | None = None,
) -> list[CheckResult]:
    """Validate `tables` against `specs` with GX; one CheckResult per spec, in order.

    One ephemeral (in-memory) context, one pandas data asset and suite per table, one Checkpoint
    per table. With `docs_dir` (an existing, empty folder), each Checkpoint has an
    UpdateDataDocsAction and GX builds its Data Docs site (index.html) there; the caller puts
    the folder in place (see hss_gate.workflows.shared.validate_tables).
    Fails closed: anything that cannot be evaluated comes back as a failed check.
    """
    results: list[CheckResult | None] = [None] * len(specs)
    by_table: dict[str, list[int]] = {}
    for i, spec in enumerate(specs):
        if spec.table not in tables:
            results[i] = CheckResult.failed(spec, f"table '{spec.table}' was not provided")
        else:
            by_table.setdefault(spec.table, []).append(i)
    if by_table:
        with _quiet_gx():
            _validate_tables(tables, specs, by_table, results, docs_dir)
    return [r for r in results if r is not None]


def _validate_tables(
    tables: Mapping[str, pd.DataFrame],
    specs: Sequence[ExpectationSpec],
    by_table: Mapping[str, list[int]],
    results: list[CheckResult | None],
    docs_dir: Path | None,
) -> None:
    """One suite and Checkpoint per table; fills `results` (a failed result for anything that
    could not be evaluated)."""
    ctx = _context(docs_dir)
    source = ctx.data_sources.add_pandas("hss_gate")
    for table, indices in by_table.items():
        df = _prepare(tables[table])
        expectations, sent = _expectations(table, df, specs, indices, results)
        if not sent:
            continue
        try:
            run = _checkpoint(ctx, source, table, df, expectations, docs_dir)
        except Exception as exc:  # a GX failure must not let a candidate through
            for i in sent:
                results[i] = CheckResult.failed(specs[i], f"GX validation failed: {exc}")
            continue
        _collect(run, specs, sent, results)
        for i in sent:
            if results[i] is None:
                results[i] = CheckResult.failed(specs[i], "GX returned no result for this check")


def _expectations(
    table: str,
    df: pd.DataFrame,
    specs: Sequence[ExpectationSpec],
    indices: Sequence[int],
    results: list[CheckResult | None],
) -> tuple[list[Any], list[int]]:
    """The GX expectations of one table's specs and the indices of the specs they run; a spec
    that cannot run (a missing column, an unknown expectation, bad kwargs) fails here."""
    classes = _gx_classes()
    columns = {str(c) for c in df.columns}
    expectations: list[Any] = []
    sent: list[int] = []
    for i in indices:
        spec = specs[i]
        missing = [
            c
            for c in _referenced_columns(spec)
            if c not in columns and spec.expectation != "ExpectColumnToExist"
        ]
        if missing:
            results[i] = CheckResult.failed(
                spec, f"column '{missing[0]}' is missing from table '{table}'"
            )
            continue
        cls = classes.get(spec.expectation)
        if cls is None:
            results[i] = CheckResult.failed(spec, f"unknown GX expectation '{spec.expectation}'")
            continue
        try:
            expectations.append(
                cls(
                    **_for_gx(spec.kwargs),
                    description=_for_gx(spec.description),
                    meta={"hss_gate": {"index": i, "name": spec.name, "kind": spec.kind}},
                )
            )
        except Exception as exc:  # invalid kwargs: fail closed
            results[i] = CheckResult.failed(spec, f"invalid expectation: {exc}")
            continue
        sent.append(i)
    return expectations, sent


def _checkpoint(
    ctx: Any, source: Any, table: str, df: pd.DataFrame, expectations: list[Any], docs_dir: Any
) -> Any:
    """Run one table's suite through a Checkpoint (with a Data Docs action when asked)."""
    import great_expectations as gx
    from great_expectations.checkpoint import Checkpoint, UpdateDataDocsAction

    # built in one go: add_expectation() is quadratic and drops "equal" expectations
    suite = ctx.suites.add(gx.ExpectationSuite(name=f"hss_gate.{table}", expectations=expectations))
    batch = source.add_dataframe_asset(table).add_batch_definition_whole_dataframe("whole")
    definition = ctx.validation_definitions.add(
        gx.ValidationDefinition(name=f"hss_gate.{table}", data=batch, suite=suite)
    )
    actions = []
    if docs_dir is not None:
        actions.append(UpdateDataDocsAction(name="data_docs", site_names=[_DOCS_SITE]))
    checkpoint = ctx.checkpoints.add(
        Checkpoint(
            name=f"hss_gate.{table}",
            validation_definitions=[definition],
            actions=actions,
            result_format="SUMMARY",
        )
    )
    return checkpoint.run(batch_parameters={"dataframe": df})


def _collect(
    run: Any,
    specs: Sequence[ExpectationSpec],
    sent: Sequence[int],
    results: list[CheckResult | None],
) -> None:
    """Each GX result back to the spec it ran (by the index kept in its meta)."""
    for validation in run.run_results.values():
        for gx_result in validation.results:
            meta = (gx_result.expectation_config.meta or {}).get("hss_gate", {})
            i = meta.get("index")
            if i not in sent:
                continue
            spec = specs[i]
            observed, unexpected = _from_gx(_observed(spec, gx_result))
            success = bool(gx_result.success) and not (
                isinstance(observed, str) and observed.startswith("GX error")
            )
            results[i] = CheckResult(
                **asdict(spec),
                success=success,
                observed=_jsonable(observed),
                unexpected=_jsonable(unexpected),
            )
