"""The live-traffic monitor (`hss monitor`, the `monitor` flow). Fails closed.

`run_monitor` loads the settings and opens the sample store, runs these steps, in order
(`monitor_steps`), and records and writes the verdict:

1. `prepare`: read the production reference scores (a reference scored by another checker is
   refused), choose the windows' model id and take its current window (its newest samples, or
   those since the last run);
2. `served_signals`: the signals of the summaries production served in the current window;
3. `compare_windows` (hss_gate.workflows.monitor_windows): the current window against the model
   id's own reference window: the blocking and reported tests, Evidently drift of the windows
   to OUT/drift_windows.html; on request (monitor.attribution_documents, `window_explainer`)
   the attribution instability of the newest served samples of both windows, reported only;
4. `served_comparison`: the served signals against the production reference corpus (the
   absolute floor);
5. `rescore`: unless served-only, the deployed model rescores the newest samples (tables to
   OUT/scores/): drift against the reference (OUT/drift.html, drift.json) and the severity rise
   (also the floor);
6. `run_monitor_checks`: the Great Expectations checks (OUT/data_docs/);
7. `decide_monitor`: the verdict, its reasons and the reported notes;
8. `_record`, `_write_or_fail_closed`: record the run in the store (the trend); write
   monitor.json, monitor.md and monitor.html.

Without a current window the windows say why and the verdict is "insufficient_data"
(`no_current_window`). Any error becomes the verdict "error", recorded and written like any
other; the stored samples are never changed.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from hss_gate.common.errors import InputError, ReportError, error_message
from hss_gate.common.inputs import load_normalization, reference_checker, require_same_checker
from hss_gate.common.io import read_score_table, write_json_atomic, write_text_atomic
from hss_gate.common.progress import Progress, no_progress
from hss_gate.common.redact import redacted_uri
from hss_gate.decision import reports
from hss_gate.decision.checks import FACTS_BOUNDS
from hss_gate.decision.paired_comparison import difference_text, one_sample_bound_intervals
from hss_gate.decision.record import SCHEMA_VERSION
from hss_gate.monitoring.rules import (
    monitor_verdict,
    run_record,
    sample_rows,
    samples_to_documents,
    served_margins,
    served_rises,
    severity_rise,
)
from hss_gate.scoring import run_files
from hss_gate.scoring.toolkit import Toolkit
from hss_gate.settings import GateSettings, HssSettings, MonitorSettings, ScoreSettings
from hss_gate.signals.tables import OPTIONAL_COLUMNS
from hss_gate.workflows.monitor_windows import (
    Explain,
    attribution_entry,
    compare_windows,
    current_samples,
    served_signals,
    window_comparison_notes,
    window_explainer,
    windowed_verdict,
)
from hss_gate.workflows.shared import as_floats, score_drift, score_frame, validate_tables
from hss_gate.workflows.steps import DIRECT, ModelRunner, Outcome, Steps

if TYPE_CHECKING:
    from hss_gate.workflows.gate_explanation import LikelihoodLoader, PerturbedTexts

TREND_RUNS = 20


@dataclass
class MonitorRequest:
    """Which store, model (default run.production_model), how many samples, and where."""

    samples: str | None = None
    model: str | None = None
    sample_size: int | None = None
    out: str | None = None
    served_only: bool = False


@dataclass
class MonitorRun:
    """What the monitor's steps share once the production reference and the current window
    are read."""

    settings: HssSettings
    store: Any
    model: str  # the deployed model, which rescores the samples
    out_dir: Path
    size: int  # how many of the current window's newest samples are rescored
    served_only: bool
    reference: pd.DataFrame  # the production reference scores (monitor.reference)
    model_id: str  # the windows' model id
    recent: list[Any]  # the current window, newest first
    selection: dict[str, Any]  # how the current window was chosen
    tools: Toolkit


@dataclass
class LiveScores:
    """What the checks and the verdict look at: the current samples' table (the served signals,
    joined in a full run with the deployed model's scores) and, in a full run, the severity
    rise and drift against the production reference and the rescoring's warnings."""

    current: pd.DataFrame
    rise: dict[str, Any] | None = None
    drift: dict[str, Any] | None = None
    warnings: list[str] = field(default_factory=list)


def open_store(url: str) -> Any:
    """The production sample store (SQLite or PostgreSQL)."""
    from hss_gate.monitoring.store import SampleStore

    return SampleStore(url)


def recent_samples(store: Any, n: int, model_id: str | None) -> list[Any]:
    """The n newest samples (of one model id, if given)."""
    return store.recent(n, model_id)


def window_model_id(store: Any, monitor: MonitorSettings, steps: Steps) -> str:
    """The model id the windows are of: monitor.model_id, else the newest sample's (an empty
    store is refused)."""
    if monitor.model_id is not None:
        return monitor.model_id
    newest = steps.io(recent_samples, store, 1, None)
    steps.compute(samples_to_documents, newest)  # refuses an empty store
    return newest[0].model_id


def prepare(
    settings: HssSettings,
    store: Any,
    request: MonitorRequest,
    model: str,
    out_dir: Path,
    runner: ModelRunner,
    steps: Steps,
) -> MonitorRun:
    """Read the production reference scores, take the current window of the windows' model id
    and load the toolkit; a reference scored by another checker than the toolkit's is
    refused."""
    size = request.sample_size or settings.monitor.sample_size
    if size < 1:
        raise InputError("--sample-size must be at least 1")
    reference = steps.io(read_score_table, settings.monitor.reference)
    model_id = window_model_id(store, settings.monitor, steps)
    kind = "served" if request.served_only else "full"
    recent, selection = steps.io(current_samples, store, settings.monitor, size, model_id, kind)
    tools = runner.toolkit(settings)
    scored_by = steps.io(reference_checker, settings.monitor.reference)
    steps.compute(
        require_same_checker, settings.monitor.reference, scored_by, tools.checker.fingerprint
    )
    return MonitorRun(
        settings,
        store,
        model,
        out_dir,
        size,
        request.served_only,
        reference,
        model_id,
        recent,
        selection,
        tools,
    )


def windows_of(
    run: MonitorRun, live: pd.DataFrame, steps: Steps, explain: Explain | None = None
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The current window against the model id's reference window (compare_windows), and
    monitor.json's `attribution` when it was requested ({"attribution": ...}, else empty)."""
    windows = compare_windows(
        run.store,
        run.settings,
        run.tools,
        run.model_id,
        run.recent,
        live,
        steps,
        run.out_dir,
        run.selection,
        explain,
    )
    requested = run.settings.monitor.attribution_documents
    attribution = {"attribution": attribution_entry(requested, windows)} if requested > 0 else {}
    return windows, attribution


def no_current_window(run: MonitorRun, steps: Steps) -> dict[str, Any]:
    """monitor.json's findings when the current window is empty (monitor.model_id has no
    samples, or none since the last run): the windows say why; "insufficient_data"."""
    windows, attribution = windows_of(run, pd.DataFrame(), steps)
    return attribution | {
        "windows": windows,
        "decision": "insufficient_data",
        "reasons": windows["reasons"],
        "notes": [],
        "served": [],
        "severity": None,
        "drift": None,
        "checks": [],
        "warnings": [],
        "samples": [],
    }


def served_comparison(
    live: pd.DataFrame, reference: pd.DataFrame, settings: HssSettings
) -> list[dict[str, Any]]:
    """The served signals against the production reference rates (bootstrap)."""
    return served_rises(
        live,
        reference,
        served_margins(settings.monitor),
        resamples=settings.score.bootstrap_resamples,
        confidence=settings.score.confidence,
        seed=settings.perturb.seed,
    )


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


def rescore(
    run: MonitorRun, live: pd.DataFrame, runner: ModelRunner, steps: Steps, progress: Progress
) -> LiveScores:
    """Unless served-only, the deployed model rescores the current window's newest `size`
    samples (tables to OUT/scores/): the scored samples joined with the served signals, the
    severity rise, drift against the production reference, and the run's warnings."""
    if run.served_only:
        return LiveScores(live)
    settings, model = run.settings, run.model
    norm = steps.io(load_normalization, settings.score.normalization)
    docs = steps.compute(samples_to_documents, run.recent[: run.size])  # recent: newest first
    scored, meta = runner(model, docs, settings, norm, progress)
    steps.io(run_files.write_outputs, run.out_dir / "scores", scored, meta)
    current = steps.compute(
        live_frame, steps.compute(score_frame, scored, settings.score.variant), live
    )
    drift = steps.compute(
        score_drift,
        run.reference,
        current,
        settings.monitor,
        run.out_dir,
        f"live traffic of {model} against the production reference",
    )
    rise = steps.compute(
        monitor_severity,
        current,
        run.reference,
        settings.monitor,
        settings.score,
        settings.perturb.seed,
    )
    return LiveScores(current, rise, drift, scored.warnings)


def run_monitor_checks(
    current: pd.DataFrame,
    gate: GateSettings,
    docs_dir: Path | None,
    served_only: bool,
    confidence: float,
) -> list[dict[str, Any]]:
    """The served summaries' checks and, after a full run, the absolute severity and
    data-quality checks of the rescored samples (a facts bound on the lower end of the
    samples' one-sample interval at `confidence`)."""
    from hss_gate.decision.suites import monitor_expectations, served_expectations

    specs = served_expectations(gate, n_documents=len(current))
    tables = {"documents": as_floats(current)}
    if not served_only:
        rows = current.to_dict("records")
        tables[FACTS_BOUNDS] = pd.DataFrame(one_sample_bound_intervals(rows, confidence))
        full = monitor_expectations(
            gate,
            n_documents=len(current),
            optional_columns=[c for c in OPTIONAL_COLUMNS if c in current],
        )
        names = {s.name for s in full}
        specs = full + [s for s in specs if s.name not in names]
    return validate_tables(tables, specs, docs_dir)


def decide_monitor(
    run: MonitorRun,
    windows: dict[str, Any],
    served: list[dict[str, Any]],
    scores: LiveScores,
    checks: list[dict[str, Any]],
    steps: Steps,
) -> dict[str, Any]:
    """The verdict: the windows' blocking tests and the suite checks decide, with the absolute
    floor where monitor.floor_blocking (else its findings are notes); the reported findings
    as notes; monitor.json's findings."""
    blocking = run.settings.monitor.floor_blocking
    decision, reasons = steps.compute(
        monitor_verdict,
        scores.rise if blocking else None,
        scores.drift if blocking else None,
        checks,
        served if blocking else (),
    )
    decision, reasons = windowed_verdict(decision, reasons, windows)
    notes = [] if blocking else floor_notes(served, scores.rise, scores.drift)
    return {
        "windows": windows,
        "notes": notes + window_comparison_notes(windows),
        "served": served,
        "decision": decision,
        "reasons": reasons,
        "severity": scores.rise,
        "drift": scores.drift,
        "checks": checks,
        "warnings": scores.warnings,
        "samples": steps.compute(sample_rows, scores.current.to_dict("records"), run.recent),
    }


def floor_notes(
    served: list[dict[str, Any]],
    rise: dict[str, Any] | None = None,
    drift: dict[str, Any] | None = None,
) -> list[str]:
    """The absolute floor (the production reference corpus) when it does not block: a note
    for each served signal significantly above it, and (full runs) for a severity rise and
    for score drift against it."""
    why = "absolute floor (not blocking, monitor.floor_blocking)"
    notes = [
        f"{why}: {s['label']} "
        f"{s['live_mean']:.3f} vs the production reference corpus {s['reference_mean']:.3f}, "
        f"difference {difference_text(s)}"
        for s in served
        if s["rise"]
    ]
    if rise and rise["rise"]:
        notes.append(
            f"{why}: live mean HSS {rise['live_mean']:.3f} vs the production reference corpus "
            f"{rise['reference_mean']:.3f}, difference {difference_text(rise)} "
            f"beyond the margin {rise['margin']}"
        )
    if drift and drift.get("drifted"):
        notes.append(
            f"{why}: score distributions drifted from the production reference: "
            + ", ".join(drift.get("drifted_columns", []))
        )
    return notes


def monitor_steps(
    settings: HssSettings,
    store: Any,
    request: MonitorRequest,
    model: str,
    out_dir: Path,
    *,
    runner: ModelRunner,
    steps: Steps,
    progress: Progress,
    scorers: LikelihoodLoader | None = None,
    perturbed: PerturbedTexts | None = None,
) -> dict[str, Any]:
    """The monitor's steps in order: monitor.json's findings and verdict. `scorers` and
    `perturbed` replace the attribution's model and perturbations (tests)."""
    run = prepare(settings, store, request, model, out_dir, runner, steps)
    explain = window_explainer(settings, model, runner, steps, scorers, perturbed)
    if not run.recent:  # monitor.model_id has no samples, or none since the last run
        return no_current_window(run, steps)
    live = pd.DataFrame(steps.compute(served_signals, run.recent, run.tools, settings))
    windows, attribution = windows_of(run, live, steps, explain)
    served = steps.compute(served_comparison, live, run.reference, settings)
    scores = rescore(run, live, runner, steps, progress)
    checks = steps.compute(
        run_monitor_checks,
        scores.current,
        settings.gate,
        out_dir / "data_docs",
        run.served_only,
        settings.score.confidence,
    )
    checker = {"checker": run.tools.checker.fingerprint}
    return checker | attribution | decide_monitor(run, windows, served, scores, checks, steps)


def run_monitor(
    load_settings: Callable[[], HssSettings],
    request: MonitorRequest,
    *,
    runner: ModelRunner,
    steps: Steps = DIRECT,
    progress: Progress = no_progress,
    scorers: LikelihoodLoader | None = None,
    perturbed: PerturbedTexts | None = None,
) -> Outcome[dict[str, Any]]:
    """Run the monitor's steps in order, record the run and write the reports; fails closed.
    `scorers` and `perturbed` replace the attribution's model and perturbations (tests).

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
            result |= monitor_steps(
                settings,
                store,
                request,
                model,
                out_dir,
                runner=runner,
                steps=steps,
                progress=progress,
                scorers=scorers,
                perturbed=perturbed,
            )
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


def record_run(store: Any, result: dict[str, Any], started: dt.datetime) -> list[dict]:
    """Append this run to the store's history; return the recent runs (the trend)."""
    store.record_run(run_record(result, started))
    return [r.model_dump(mode="json") for r in store.runs(TREND_RUNS)]


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


def write_monitor_reports(out_dir: Path, result: dict[str, Any]) -> None:
    """monitor.json, monitor.md and monitor.html (each written atomically)."""
    write_json_atomic(out_dir / "monitor.json", result)
    write_text_atomic(out_dir / "monitor.md", reports.monitor_markdown(result))
    write_text_atomic(out_dir / "monitor.html", reports.monitor_html(result))


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


def pin_reference(
    url: str, model_id: str | None, since: dt.datetime, until: dt.datetime
) -> tuple[str, int]:
    """Pin a model id's reference window to [since, until) (scored on the next run); the
    model id defaults to the newest sample's. Returns (model id, samples in the range)."""
    if since >= until:
        raise InputError(f"--since {since.isoformat()} is not before --until {until.isoformat()}")
    with open_store(url) as store:
        if model_id is None:
            newest = store.recent(1)
            if not newest:
                raise InputError("the sample store has no samples; run `hss samples ingest`")
            model_id = newest[0].model_id
        samples = store.between(model_id, since, until)
        if not samples:
            raise InputError(
                f"no samples of {model_id!r} between {since.isoformat()} and {until.isoformat()}"
            )
        store.save_reference(model_id, pinned=True, since=since, until=until)
    return model_id, len(samples)
