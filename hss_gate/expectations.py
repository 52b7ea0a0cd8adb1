"""Great Expectations suites built from the gate thresholds; a runner that validates tables.

Two layers:

- `gate_expectations` / `monitor_expectations` are pure: they turn `GateSettings` into a list of
  `ExpectationSpec` records (GX class name + kwargs), with no GX import.
- `run_suites` builds one ephemeral GX context, one suite per table, validates the pandas tables
  through a Checkpoint (building Data Docs when asked) and maps every result back to its spec.
  It fails closed: a missing table, a missing column, an unknown expectation or a GX error gives a
  failed `CheckResult` with an explanatory `observed` value, never an exception.
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
from typing import TYPE_CHECKING, Any, Literal

from hss_gate.summary_checks import FLAG_REASONS, FLAGS

if TYPE_CHECKING:
    import pandas as pd

    from hss_gate.settings import GateSettings

Kind = Literal["data", "hss", "facts", "output", "summarizes"]
"""What a check is about: data quality, HSS (advisory unless gate.hss_blocks), the facts of the
summaries, their form (cut mid-sentence), and whether the candidate summarizes at all."""

DOCUMENTS, PERTURBATIONS, CATEGORIES = "documents", "perturbations", "categories"

# Required columns of each score table, with their value ranges: (min, max); None = unbounded.
# "bool" columns are validated as 0/1 after a cast to float.
DOCUMENT_COLUMNS: dict[str, tuple[float | None, float | None] | str | None] = {
    "doc_id": None,
    "category": None,
    "tier": None,
    "hss": (0.0, 1.0),
    "hss_aware": (0.0, 1.0),
    "hss_raw": (0.0, 1.0),
    "mean_distance": (0.0, None),
    "mean_distance_aware": (0.0, None),
    "mean_distance_raw": (0.0, None),
    "n_perturbations": (1, None),
    "base_unsupported_share": (0.0, 1.0),
    "base_novel_ngram_share": (0.0, 1.0),
    "base_truncated": "bool",
    "base_empty": "bool",
    "base_n_words": (0, None),
    "base_n_sentences": (0, None),
    "base_consistency": (0.0, 1.0),
    "base_low_consistency": "bool",
    "base_near_empty": "bool",
    "base_copies_source": "bool",
    "base_overlong": "bool",
    "base_other_language": "bool",
}
OPTIONAL_DOCUMENT_COLUMNS: dict[str, tuple[float | None, float | None]] = {
    "attribution_instability": (0.0, 1.0),
}
PERTURBATION_COLUMNS: dict[str, tuple[float | None, float | None] | str | None] = {
    "doc_id": None,
    "category": None,
    "strength": None,
    "index": (0, None),
    "distance": (0.0, None),
    "distance_aware": (0.0, None),
    "distance_raw": (0.0, None),
    "share": (0.0, 1.0),
    "n_edits": (0, None),
    "reached": "bool",
}
CATEGORY_COLUMNS: dict[str, tuple[float | None, float | None] | str | None] = {
    "category": None,
    "candidate_hss": (0.0, 1.0),
    "production_hss": (0.0, 1.0),
    "delta": (-1.0, 1.0),
    "n": (1, None),
}
# The signals of the summaries production served (the monitor's served-summary checks).
SERVED_COLUMNS: dict[str, tuple[float | None, float | None] | str | None] = {
    "doc_id": None,
    "live_consistency": (0.0, 1.0),
    "live_low_consistency": "bool",
    "live_unsupported_share": (0.0, 1.0),
    "live_truncated": "bool",
    "live_n_words": (0, None),
    **{f"live_{flag}": "bool" for flag in FLAGS},
}
# Live traffic has no meaningful category or tier: the monitor does not require them.
MONITOR_SKIPPED_COLUMNS = frozenset({"category", "tier"})

_DOCS_SITE = "hss_gate"


@dataclass(frozen=True)
class ExpectationSpec:
    """One check: a GX expectation class name and its kwargs, on one table."""

    table: str
    kind: Kind
    name: str
    expectation: str
    kwargs: dict[str, Any]
    description: str


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

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serializable dict."""
        return _jsonable(asdict(self))

    @classmethod
    def failed(cls, spec: ExpectationSpec, observed: str) -> CheckResult:
        """A failed result for a spec that could not be evaluated."""
        return cls(**asdict(spec), success=False, observed=observed)


# ---------------------------------------------------------------------------------------------
# Pure spec builders
# ---------------------------------------------------------------------------------------------


def _fmt(x: float) -> str:
    """0.7 -> '0.70', 0.005 -> '0.005'."""
    return f"{x:.2f}" if round(x, 2) == x else f"{x:g}"


def _pct(x: float) -> str:
    return f"{x * 100:g}%"


def _data_specs(
    table: str,
    columns: Mapping[str, tuple[float | None, float | None] | str | None],
) -> list[ExpectationSpec]:
    specs: list[ExpectationSpec] = []
    for column, rule in columns.items():
        specs.append(
            ExpectationSpec(
                table,
                "data",
                f"{column}_exists",
                "ExpectColumnToExist",
                {"column": column},
                f"{table} has a column '{column}'",
            )
        )
        specs.append(
            ExpectationSpec(
                table,
                "data",
                f"{column}_not_null",
                "ExpectColumnValuesToNotBeNull",
                {"column": column},
                f"{table}.{column} has no missing values",
            )
        )
        if rule == "bool":
            specs.append(
                ExpectationSpec(
                    table,
                    "data",
                    f"{column}_bool",
                    "ExpectColumnValuesToBeInSet",
                    {"column": column, "value_set": [0.0, 1.0]},
                    f"{table}.{column} is true/false",
                )
            )
        elif isinstance(rule, tuple):
            low, high = rule
            if low is not None and high is not None:
                text = f"{table}.{column} is in [{_fmt(low)}, {_fmt(high)}]"
            elif low is not None:
                text = f"{table}.{column} >= {_fmt(low)}"
            else:
                text = f"{table}.{column} <= {_fmt(high)}"  # type: ignore[arg-type]
            specs.append(
                ExpectationSpec(
                    table,
                    "data",
                    f"{column}_range",
                    "ExpectColumnValuesToBeBetween",
                    {"column": column, "min_value": low, "max_value": high},
                    text,
                )
            )
    return specs


def _row_count(table: str, n: int, what: str) -> ExpectationSpec:
    return ExpectationSpec(
        table,
        "data",
        "row_count",
        "ExpectTableRowCountToEqual",
        {"value": int(n)},
        f"{table} has {int(n)} rows (one per {what})",
    )


def _absolute_severity(
    gate: GateSettings, optional_columns: Collection[str]
) -> list[ExpectationSpec]:
    t = DOCUMENTS
    specs = [
        ExpectationSpec(
            t,
            "hss",
            "mean_hss",
            "ExpectColumnMeanToBeBetween",
            {"column": "hss", "min_value": None, "max_value": gate.max_mean_hss},
            f"mean HSS <= {_fmt(gate.max_mean_hss)}",
        ),
        ExpectationSpec(
            t,
            "hss",
            "p95_hss",
            "ExpectColumnQuantileValuesToBeBetween",
            {
                "column": "hss",
                "quantile_ranges": {
                    "quantiles": [0.95],
                    "value_ranges": [[None, gate.max_p95_hss]],
                },
                # linear interpolation = numpy's default, as in the baseline's hss_p95
                "allow_relative_error": "linear",
            },
            f"95th percentile of HSS <= {_fmt(gate.max_p95_hss)}",
        ),
        ExpectationSpec(
            t,
            "hss",
            "share_above_severity",
            "ExpectColumnValuesToBeBetween",
            {
                "column": "hss",
                "min_value": None,
                "max_value": gate.severity_level,
                # rounded so that a share exactly at the ceiling passes (1 - 0.3 != 0.7 in floats)
                "mostly": round(1.0 - gate.max_share_above, 12),
            },
            f"at most {_pct(gate.max_share_above)} of documents have HSS > "
            f"{_fmt(gate.severity_level)}",
        ),
        ExpectationSpec(
            t,
            "facts",
            "mean_unsupported_share",
            "ExpectColumnMeanToBeBetween",
            {
                "column": "base_unsupported_share",
                "min_value": None,
                "max_value": gate.max_unsupported_share,
            },
            "mean share of summary entities/numbers not in the source <= "
            f"{_fmt(gate.max_unsupported_share)}",
        ),
        ExpectationSpec(
            t,
            "output",
            "truncated_share",
            "ExpectColumnMeanToBeBetween",
            {"column": "base_truncated", "min_value": None, "max_value": gate.max_truncated_share},
            f"share of summaries cut mid-sentence <= {_fmt(gate.max_truncated_share)}",
        ),
    ]
    if (
        "attribution_instability" in optional_columns
        and gate.max_attribution_instability is not None
    ):
        specs.append(
            ExpectationSpec(
                t,
                "hss",
                "mean_attribution_instability",
                "ExpectColumnMeanToBeBetween",
                {
                    "column": "attribution_instability",
                    "min_value": None,
                    "max_value": gate.max_attribution_instability,
                },
                f"mean attribution instability <= {_fmt(gate.max_attribution_instability)}",
            )
        )
    specs.append(
        ExpectationSpec(
            t,
            "facts",
            "low_consistency_share",
            "ExpectColumnMeanToBeBetween",
            {
                "column": "base_low_consistency",
                "min_value": None,
                "max_value": gate.max_low_consistency_share,
            },
            "share of summaries the consistency checker finds unsupported <= "
            f"{_fmt(gate.max_low_consistency_share)}",
        )
    )
    specs += [
        ExpectationSpec(
            t,
            "summarizes",
            f"{flag}_share",
            "ExpectColumnMeanToBeBetween",
            {"column": f"base_{flag}", "min_value": None, "max_value": gate.max_not_summary_share},
            f"share of {FLAG_REASONS[flag]} <= {_fmt(gate.max_not_summary_share)}",
        )
        for flag in FLAGS
    ]
    return specs


def _document_columns(optional_columns: Collection[str], skip: Collection[str] = ()) -> dict:
    columns = {c: r for c, r in DOCUMENT_COLUMNS.items() if c not in skip}
    columns.update({c: r for c, r in OPTIONAL_DOCUMENT_COLUMNS.items() if c in optional_columns})
    return columns


def gate_expectations(
    gate: GateSettings,
    *,
    categories: Sequence[str],
    n_documents: int,
    n_perturbations: int,
    optional_columns: Collection[str] = (),
) -> list[ExpectationSpec]:
    """Data-quality checks on the three score tables plus the gate's severity thresholds.

    `categories` are the categories of the reference corpus: each must appear in the documents
    and have exactly one row in the categories table, whose delta (candidate - production mean HSS)
    must not exceed `gate.category_margin`. `optional_columns` names the optional document columns
    the score table has (their checks are added only then).
    """
    unknown = set(optional_columns) - set(OPTIONAL_DOCUMENT_COLUMNS)
    if unknown:
        raise ValueError(f"unknown optional columns: {sorted(unknown)}")
    cats = [str(c) for c in categories]
    specs = _data_specs(DOCUMENTS, _document_columns(optional_columns))
    specs += [
        ExpectationSpec(
            DOCUMENTS,
            "data",
            "doc_id_unique",
            "ExpectColumnValuesToBeUnique",
            {"column": "doc_id"},
            "documents.doc_id is unique",
        ),
        ExpectationSpec(
            DOCUMENTS,
            "data",
            "categories_present",
            "ExpectColumnDistinctValuesToContainSet",
            {"column": "category", "value_set": cats},
            f"documents cover every category ({len(cats)})",
        ),
        _row_count(DOCUMENTS, n_documents, "document"),
    ]
    specs += _data_specs(PERTURBATIONS, PERTURBATION_COLUMNS)
    specs.append(_row_count(PERTURBATIONS, n_perturbations, "perturbation"))
    specs += _data_specs(CATEGORIES, CATEGORY_COLUMNS)
    specs += [
        ExpectationSpec(
            CATEGORIES,
            "data",
            "category_unique",
            "ExpectColumnValuesToBeUnique",
            {"column": "category"},
            "categories.category is unique",
        ),
        ExpectationSpec(
            CATEGORIES,
            "data",
            "categories_present",
            "ExpectColumnDistinctValuesToContainSet",
            {"column": "category", "value_set": cats},
            f"categories table covers every category ({len(cats)})",
        ),
        _row_count(CATEGORIES, len(cats), "category"),
    ]
    specs += _absolute_severity(gate, optional_columns)
    specs += [
        ExpectationSpec(
            CATEGORIES,
            "hss",
            f"category_delta[{cat}]",
            "ExpectColumnMaxToBeBetween",
            {
                "column": "delta",
                "min_value": None,
                "max_value": gate.category_margin,
                "row_condition": {
                    "type": "comparison",
                    "column": {"name": "category"},
                    "operator": "==",
                    "parameter": cat,
                },
            },
            f"category '{cat}': mean HSS rises by <= {_fmt(gate.category_margin)} over production",
        )
        for cat in cats
    ]
    return specs


def monitor_expectations(
    gate: GateSettings, *, n_documents: int, optional_columns: Collection[str] = ()
) -> list[ExpectationSpec]:
    """The live monitor's subset: data quality + absolute severity, on the documents table only.

    No categories table and no category coverage (live traffic has no known categories);
    `category` and `tier` are not required.
    """
    unknown = set(optional_columns) - set(OPTIONAL_DOCUMENT_COLUMNS)
    if unknown:
        raise ValueError(f"unknown optional columns: {sorted(unknown)}")
    specs = _data_specs(DOCUMENTS, _document_columns(optional_columns, MONITOR_SKIPPED_COLUMNS))
    specs += [
        ExpectationSpec(
            DOCUMENTS,
            "data",
            "doc_id_unique",
            "ExpectColumnValuesToBeUnique",
            {"column": "doc_id"},
            "documents.doc_id is unique",
        ),
        _row_count(DOCUMENTS, n_documents, "sampled document"),
    ]
    return specs + _absolute_severity(gate, optional_columns)


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
        if (
            isinstance(value, dict)
            and isinstance(value.get("values"), list)
            and len(value["values"]) == 1
        ):
            value = value["values"][0]  # a single quantile
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
    the folder in place (see hss_gate.workflows.score.validate_tables).
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
    import great_expectations as gx
    from great_expectations.checkpoint import Checkpoint, UpdateDataDocsAction

    classes = _gx_classes()
    ctx = _context(docs_dir)
    source = ctx.data_sources.add_pandas("hss_gate")
    for table, indices in by_table.items():
        df = _prepare(tables[table])
        columns = {str(c) for c in df.columns}
        expectations = []
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
                results[i] = CheckResult.failed(
                    spec, f"unknown GX expectation '{spec.expectation}'"
                )
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
        if not sent:
            continue
        try:
            # built in one go: add_expectation() is quadratic and drops "equal" expectations
            suite = ctx.suites.add(
                gx.ExpectationSuite(name=f"hss_gate.{table}", expectations=expectations)
            )
            batch = source.add_dataframe_asset(table).add_batch_definition_whole_dataframe("whole")
            definition = ctx.validation_definitions.add(
                gx.ValidationDefinition(name=f"hss_gate.{table}", data=batch, suite=suite)
            )
            actions = (
                [UpdateDataDocsAction(name="data_docs", site_names=[_DOCS_SITE])]
                if docs_dir is not None
                else []
            )
            checkpoint = ctx.checkpoints.add(
                Checkpoint(
                    name=f"hss_gate.{table}",
                    validation_definitions=[definition],
                    actions=actions,
                    result_format="SUMMARY",
                )
            )
            run = checkpoint.run(batch_parameters={"dataframe": df})
        except Exception as exc:  # a GX failure must not let a candidate through
            for i in sent:
                results[i] = CheckResult.failed(specs[i], f"GX validation failed: {exc}")
            continue
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
        for i in sent:
            if results[i] is None:
                results[i] = CheckResult.failed(specs[i], "GX returned no result for this check")


def served_expectations(gate: GateSettings, *, n_documents: int) -> list[ExpectationSpec]:
    """The served summaries' checks (`hss monitor`, also `--served-only`): data quality of
    their signals and whether they are summaries at all (empty, copies, overlong, foreign)."""
    specs = _data_specs(DOCUMENTS, SERVED_COLUMNS)
    specs.append(_row_count(DOCUMENTS, n_documents, "served summary"))
    specs += [
        ExpectationSpec(
            DOCUMENTS,
            "summarizes",
            f"served_{flag}_share",
            "ExpectColumnMeanToBeBetween",
            {"column": f"live_{flag}", "min_value": None, "max_value": gate.max_not_summary_share},
            f"share of served {FLAG_REASONS[flag]} <= {_fmt(gate.max_not_summary_share)}",
        )
        for flag in FLAGS
    ]
    return specs
