"""The live-traffic monitor (`hss monitor`, the `monitor` flow). Fails closed.

Steps, in order: load the settings; open the sample store; read the production reference scores
and constants; take the most recent samples; score them with the deployed model (tables to
OUT/scores/); compute the signals of the summaries production served; measure drift against the
reference (OUT/drift.html, drift.json), the severity rise (bootstrap CI against the margin) and
the Great Expectations checks (OUT/data_docs/); give the verdict; record the run in the store
(the trend); write monitor.json, monitor.md and monitor.html. Any error becomes the verdict
"error", recorded and written like any other; the stored samples are never changed.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from hss_gate import decision_report, report
from hss_gate.errors import InputError, ReportError, error_message
from hss_gate.gate import SCHEMA_VERSION
from hss_gate.inputs import load_normalization, reference_checker, require_same_checker
from hss_gate.io import read_score_table, write_json_atomic, write_text_atomic
from hss_gate.monitor import (
    live_summary_signals,
    monitor_verdict,
    run_record,
    sample_rows,
    samples_to_documents,
    served_rises,
    severity_rise,
)
from hss_gate.pipeline import Toolkit
from hss_gate.progress import Progress, no_progress
from hss_gate.redact import redacted_uri
from hss_gate.settings import GateSettings, HssSettings, MonitorSettings, ScoreSettings
from hss_gate.summary_checks import LengthPolicy
from hss_gate.tables import OPTIONAL_COLUMNS
from hss_gate.workflows.shared import as_floats, score_drift, score_frame, validate_tables
from hss_gate.workflows.steps import DIRECT, ModelRunner, Outcome, Steps

TREND_RUNS = 20


@dataclass
class MonitorRequest:
    """Which store, model (default run.production_model), how many samples, and where."""

    samples: str | None = None
    model: str | None = None
    sample_size: int | None = None
    out: str | None = None
    served_only: bool = False


def open_store(url: str) -> Any:
    """The production sample store (SQLite or PostgreSQL)."""
    from hss_gate.samples import SampleStore

    return SampleStore(url)


def recent_samples(store: Any, n: int, model_id: str | None) -> list[Any]:
    """The n newest samples (of one model id, if given)."""
    return store.recent(n, model_id)


def live_frame(scores: pd.DataFrame, live: list[dict[str, Any]]) -> pd.DataFrame:
    """Scored samples joined with the signals of the summaries production served."""
    return scores.merge(pd.DataFrame(live), on="doc_id", how="left", validate="one_to_one")


def monitor_severity(
    current: pd.DataFrame,
    reference: pd.DataFrame,
    monitor: MonitorSettings,
    score_settings: ScoreSettings,
    seed: int,
) -> dict[str, Any]:
    """Live mean HSS against the production reference, with the configured bootstrap."""
    return severity_rise(
        current["hss"].tolist(),
        reference["hss"].tolist(),
        margin=monitor.margin,
        resamples=score_settings.bootstrap_resamples,
        confidence=score_settings.confidence,
        seed=seed,
    )


def run_monitor_checks(
    current: pd.DataFrame, gate: GateSettings, docs_dir: Path | None, served_only: bool
) -> list[dict[str, Any]]:
    """The served summaries' checks and, after a full run, the absolute severity and
    data-quality checks of the rescored samples."""
    from hss_gate.expectations import monitor_expectations, served_expectations

    specs = served_expectations(gate, n_documents=len(current))
    if not served_only:
        full = monitor_expectations(
            gate,
            n_documents=len(current),
            optional_columns=[c for c in OPTIONAL_COLUMNS if c in current],
        )
        names = {s.name for s in full}
        specs = full + [s for s in specs if s.name not in names]
    return validate_tables({"documents": as_floats(current)}, specs, docs_dir)


def served_signals(
    samples: list[Any], tools: Toolkit, settings: HssSettings
) -> list[dict[str, Any]]:
    """The checker's verdicts, mentions and length flags of the summaries production served."""
    from hss_gate.cache import Cache
    from hss_gate.pipeline import verdicts_cached

    cache = Cache(settings.run.cache_dir)
    try:
        verdicts = verdicts_cached([(s.document, s.summary) for s in samples], tools.checker, cache)
    finally:
        cache.close()
    policy = LengthPolicy(
        settings.generate.summary_words,
        settings.score.near_empty_share,
        settings.score.overlong_ratio,
        settings.score.copy_ratio,
    )
    return live_summary_signals(
        samples,
        tools.tagger.mentions([s.summary for s in samples]),
        verdicts,
        settings.score.ngram,
        policy,
        tools.checker.threshold,
    )


def served_comparison(
    live: pd.DataFrame, reference: pd.DataFrame, settings: HssSettings
) -> list[dict[str, Any]]:
    """The served signals against the production reference rates (bootstrap)."""
    return served_rises(
        live,
        reference,
        {
            "live_low_consistency": settings.monitor.served_margin,
            "live_unsupported_share": settings.monitor.served_unsupported_margin,
        },
        resamples=settings.score.bootstrap_resamples,
        confidence=settings.score.confidence,
        seed=settings.perturb.seed,
    )


def record_run(store: Any, result: dict[str, Any], started: dt.datetime) -> list[dict]:
    """Append this run to the store's history; return the recent runs (the trend)."""
    store.record_run(run_record(result, started))
    return [r.model_dump(mode="json") for r in store.runs(TREND_RUNS)]


def write_monitor_reports(out_dir: Path, result: dict[str, Any]) -> None:
    """monitor.json, monitor.md and monitor.html (each written atomically)."""
    write_json_atomic(out_dir / "monitor.json", result)
    write_text_atomic(out_dir / "monitor.md", decision_report.monitor_markdown(result))
    write_text_atomic(out_dir / "monitor.html", decision_report.monitor_html(result))


def _check_live(
    settings: HssSettings,
    store: Any,
    request: MonitorRequest,
    model: str,
    out_dir: Path,
    runner: ModelRunner,
    steps: Steps,
    progress: Progress,
) -> dict[str, Any]:
    """The served summaries' checks; unless served_only, also the deployed model's rescoring
    of the samples: drift, severity rise and suite checks."""
    size = request.sample_size or settings.monitor.sample_size
    if size < 1:
        raise InputError("--sample-size must be at least 1")
    reference = steps.io(read_score_table, settings.monitor.reference)
    recent = steps.io(recent_samples, store, size, settings.monitor.model_id)
    steps.compute(samples_to_documents, recent)  # refuses an empty store
    tools = runner.toolkit(settings)
    scored_by = steps.io(reference_checker, settings.monitor.reference)
    steps.compute(
        require_same_checker, settings.monitor.reference, scored_by, tools.checker.fingerprint
    )
    live = pd.DataFrame(steps.compute(served_signals, recent, tools, settings))
    served = steps.compute(served_comparison, live, reference, settings)
    if request.served_only:
        current, rise, drift, warnings = live, None, None, []
    else:
        current, rise, drift, warnings = _rescore(
            settings, recent, live, reference, model, out_dir, runner, steps, progress
        )
    checks = steps.compute(
        run_monitor_checks, current, settings.gate, out_dir / "data_docs", request.served_only
    )
    decision, reasons = steps.compute(monitor_verdict, rise, drift, checks, served)
    return {
        "served": served,
        "decision": decision,
        "reasons": reasons,
        "severity": rise,
        "drift": drift,
        "checks": checks,
        "warnings": warnings,
        "samples": steps.compute(sample_rows, current.to_dict("records"), recent),
    }


def _rescore(
    settings: HssSettings,
    recent: list[Any],
    live: pd.DataFrame,
    reference: pd.DataFrame,
    model: str,
    out_dir: Path,
    runner: ModelRunner,
    steps: Steps,
    progress: Progress,
) -> tuple[pd.DataFrame, dict[str, Any], dict[str, Any], list[str]]:
    """The deployed model rescores the samples (tables to OUT/scores/): the scored samples
    joined with the served signals, the severity rise, drift, and the run's warnings."""
    norm = steps.io(load_normalization, settings.score.normalization)
    docs = steps.compute(samples_to_documents, recent)
    scored, meta = runner(model, docs, settings, norm, progress)
    steps.io(report.write_outputs, out_dir / "scores", scored, meta)
    current = steps.compute(
        live_frame, steps.compute(score_frame, scored, settings.score.variant), live
    )
    drift = steps.compute(
        score_drift,
        reference,
        current,
        settings.monitor,
        out_dir,
        f"live traffic of {model} against the production reference",
    )
    rise = steps.compute(
        monitor_severity,
        current,
        reference,
        settings.monitor,
        settings.score,
        settings.perturb.seed,
    )
    return current, rise, drift, scored.warnings


def run_monitor(
    load_settings: Callable[[], HssSettings],
    request: MonitorRequest,
    *,
    runner: ModelRunner,
    steps: Steps = DIRECT,
    progress: Progress = no_progress,
) -> Outcome[dict[str, Any]]:
    """Run the monitor's steps in order, record the run and write the reports; fails closed.

    Raises ReportError only when not even monitor.json can be written."""
    started = dt.datetime.now(dt.UTC)
    model = request.model
    result: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "run_id": uuid.uuid4().hex[:12],
        "kind": "served" if request.served_only else "full",
        "model": redacted_uri(model or ""),
    }
    out_dir, store = Path(request.out or MonitorSettings().out), None
    error: BaseException | None = None
    try:
        try:
            settings = steps.io(load_settings)
            out_dir = Path(request.out or settings.monitor.out)
            model = model or settings.run.production_model
            result["model"] = redacted_uri(model)
            store = steps.io(open_store, request.samples or settings.monitor.samples_url)
            result |= _check_live(settings, store, request, model, out_dir, runner, steps, progress)
        except KeyboardInterrupt as exc:
            error = exc
            result |= {"decision": "error", "reasons": ["interrupted"]}
        except Exception as exc:  # fail closed; the stored samples are never touched
            error = exc
            result |= {"decision": "error", "reasons": [f"could not monitor: {error_message(exc)}"]}
        result["n_samples"] = len(result.get("samples", []))
        error = _record(store, result, started, steps) or error
        error = _write_or_fail_closed(store, result, out_dir, steps) or error
    finally:
        if store is not None:
            with contextlib.suppress(Exception):
                store.close()
    return Outcome(result, out_dir, error)


def _record(
    store: Any, result: dict[str, Any], started: dt.datetime, steps: Steps
) -> BaseException | None:
    """Record the run in the store (its trend into `result`); a failure makes the run an
    error and is returned."""
    if store is None:
        return None
    try:
        result["trend"] = steps.io(record_run, store, result, started)
    except Exception as exc:  # e.g. the store went away: the run is an error
        result["reasons"].append(
            f"could not record the run in the sample store: {error_message(exc)}"
        )
        result["decision"] = "error"
        result["trend"] = []
        return exc
    return None


def _write_or_fail_closed(
    store: Any, result: dict[str, Any], out_dir: Path, steps: Steps
) -> BaseException | None:
    """Write the reports; a verdict without its report fails closed, in the store too (the
    failure is returned). Raises ReportError when not even monitor.json can be written."""
    try:
        steps.io(write_monitor_reports, out_dir, result)
    except Exception as exc:
        result["decision"] = "error"
        result["reasons"].append(f"could not write the report: {type(exc).__name__}: {exc}")
        _mark_run_failed(store, result)
        try:
            write_json_atomic(out_dir / "monitor.json", result)
        except Exception as again:
            raise ReportError(
                f"could not write the monitor report to {out_dir}: {again}"
            ) from again
        with contextlib.suppress(Exception):  # replace a stale verdict if the reports render
            write_monitor_reports(out_dir, result)
        return exc
    return None


def _mark_run_failed(store: Any, result: dict[str, Any]) -> None:
    """The stored run of a monitor whose reports failed says "error" too; never raises."""
    if store is None or not result.get("trend"):
        return  # nothing was recorded
    try:
        store.mark_run_failed(result["run_id"], result["reasons"], result.get("kind", "full"))
        for run in result["trend"]:
            if run["run_id"] == result["run_id"]:
                run["decision"], run["details"] = "error", {"reasons": list(result["reasons"])}
    except Exception as exc:
        result["reasons"].append(f"the stored run still has its earlier verdict: {exc}")
