"""The live-traffic monitor (`hss monitor`, the `monitor` flow). Fails closed.

Steps, in order: load the settings; open the sample store; read the production reference scores
and constants; take the current window (one model id's newest samples, or those since the last
run); compute the signals of the summaries production served; compare them with the model id's
own reference window (the blocking and reported tests, Evidently drift of the windows to
OUT/drift_windows.html; on request, monitor.attribution_documents, the attribution instability
of the newest served samples of both windows, reported only); compare them with the production
reference corpus (the absolute floor); unless served-only, rescore the newest samples with the
deployed model (tables to OUT/scores/): drift against the reference (OUT/drift.html,
drift.json) and the severity rise (also the floor); the Great Expectations checks
(OUT/data_docs/); give the verdict; record the run in the store (the trend); write monitor.json,
monitor.md and monitor.html. Any error becomes the verdict "error", recorded and written like
any other; the stored samples are never changed.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

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
from hss_gate.progress import Progress, no_progress
from hss_gate.redact import redacted_uri
from hss_gate.settings import GateSettings, HssSettings, MonitorSettings, ScoreSettings
from hss_gate.summary_checks import LengthPolicy
from hss_gate.tables import OPTIONAL_COLUMNS
from hss_gate.toolkit import Toolkit
from hss_gate.workflows.shared import as_floats, score_drift, score_frame, validate_tables
from hss_gate.workflows.steps import DIRECT, ModelRunner, Outcome, Say, Steps, silent

if TYPE_CHECKING:
    from hss_gate.workflows.gate import PerturbedTexts, ScorerLoader

TREND_RUNS = 20

Explain = Callable[[list[Any], list[Any]], dict[str, Any]]
"""The attribution instability of a reference and a current window's samples (monitor.json's
`attribution`)."""


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


RUNS_SCANNED = 500  # recorded runs searched for the previous run's current window


def current_samples(
    store: Any, monitor: MonitorSettings, size: int, model_id: str, kind: str
) -> tuple[list[Any], dict[str, Any]]:
    """The current window of a model id, newest first, and how it was chosen: its newest
    `size` samples, or (monitor.current_window since_last_run) those newer than the current
    window of the previous recorded run of this kind, at most monitor.max_current_window (the
    first such run takes the newest `size`)."""
    from hss_gate.monitor import previous_current_last

    if monitor.current_window == "since_last_run":
        runs = [r.model_dump(mode="json") for r in store.runs(RUNS_SCANNED)]
        last = previous_current_last(runs, model_id, kind)
        if last is not None:
            samples = store.after(model_id, last, monitor.max_current_window)
            return samples, {"selection": "since_last_run", "after": last.isoformat()}
    return store.recent(size, model_id), {"selection": "newest", "after": None}


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


def own_reference(
    store: Any, model_id: str, monitor: MonitorSettings
) -> tuple[list[Any], dict[str, Any]]:
    """A model id's own reference window: the pinned range if one is stored; else its samples
    of the first monitor.reference_days after it first served (complete once a newer sample
    exists), or its first monitor.reference_window samples; with where it came from and
    whether it is complete."""
    stored = store.reference(model_id)
    if stored is not None and stored["pinned"]:
        samples = store.between(model_id, stored["since"], stored["until"])
        source = {
            "model_id": model_id,
            "pinned": True,
            "since": stored["since"].isoformat(),
            "until": stored["until"].isoformat(),
        }
        return samples, source | {"complete": bool(samples)}
    if monitor.reference_days is not None:
        first = store.first(1, model_id)
        if not first:
            return [], {
                "model_id": model_id,
                "pinned": False,
                "days": monitor.reference_days,
                "complete": False,
            }
        since = first[0].timestamp
        until = since + dt.timedelta(days=monitor.reference_days)
        samples = store.between(model_id, since, until)
        newest = store.recent(1, model_id)
        source = {
            "model_id": model_id,
            "pinned": False,
            "days": monitor.reference_days,
            "since": since.isoformat(),
            "until": until.isoformat(),
        }
        return samples, source | {"complete": newest[0].timestamp >= until}
    n = monitor.reference_window
    samples = store.first(n, model_id)
    return samples, {"model_id": model_id, "pinned": False, "complete": len(samples) >= n}


def reference_window(
    store: Any, model_id: str, monitor: MonitorSettings
) -> tuple[list[Any], dict[str, Any]]:
    """The reference window for a model id: its own when complete; else the previous model
    id's (the one that served before it first did), so a new deploy is compared with its
    predecessor until its own reference is complete and cannot become its own baseline."""
    samples, source = own_reference(store, model_id, monitor)
    if source["complete"]:
        return samples, source
    ids = store.model_ids()
    if model_id in ids and ids.index(model_id) > 0:
        previous = ids[ids.index(model_id) - 1]
        before, before_source = own_reference(store, previous, monitor)
        if before_source["complete"]:
            return before, before_source | {"instead_of": model_id}
    return samples, source


def window_values(
    samples: list[Any], stored: dict[str, Any] | None, tools: Toolkit, settings: HssSettings
) -> tuple[dict[str, list[float]], bool]:
    """The window signals of the reference window: the stored ones when they were scored by
    this checker for these samples and hold every window column (an older store's may not),
    else scored now (True: to be stored)."""
    from hss_gate.monitor import WINDOW_COLUMNS, window_signal_values

    ids = [s.sample_id for s in samples]
    if (
        stored is not None
        and stored.get("checker") == tools.checker.fingerprint
        and stored.get("sample_ids") == ids
        and stored.get("values")
        and set(WINDOW_COLUMNS) <= set(stored["values"])
    ):
        return {k: list(v) for k, v in stored["values"].items()}, False
    return window_signal_values(served_signals(samples, tools, settings)), True


def compare_windows(
    store: Any,
    settings: HssSettings,
    tools: Toolkit,
    model_id: str,
    recent: list[Any],
    live: pd.DataFrame,
    steps: Steps,
    out_dir: Path | None = None,
    selection: dict[str, Any] | None = None,
    explain: Explain | None = None,
) -> dict[str, Any]:
    """The current window (the model id's samples this run looks at) against the model's
    reference window: {"status": "compared" | "insufficient_data", the windows, the tests
    (blocking and reported), the Evidently drift of the windows, each signal's distribution,
    reasons}; with `explain`, also their attribution instability ("attribution", its reported
    test among the tests)."""
    from hss_gate.monitor import (
        reported_window_tests,
        window_distributions,
        window_signal_values,
        window_tests,
    )

    monitor = settings.monitor
    ref, source = steps.io(reference_window, store, model_id, monitor)
    current = [s for s in recent if s.model_id == model_id]
    windows = {
        "model_id": model_id,
        "reference": source | {"n": len(ref), **_span(ref)},
        "current": {"n": len(current), **_span(current), **(selection or {})},
    }
    overlap = {s.sample_id for s in ref} & {s.sample_id for s in current}
    reasons = []
    if not current:
        since = (selection or {}).get("after")
        reasons.append(
            f"insufficient data: no samples of {model_id!r} in the current window"
            + (f" (none after the previous run's, {since})" if since else "")
        )
    elif not source["complete"]:
        reasons.append(_incomplete(model_id, len(ref), source, monitor))
    elif overlap:
        reasons.append(
            f"insufficient data: the current window shares {len(overlap)} samples with the "
            f"reference window of {source['model_id']!r}; a window needs "
            f"{len(ref)} + {len(current)} samples that do not overlap"
        )
    if reasons:
        return windows | {"status": "insufficient_data", "reasons": reasons}
    stored = steps.io(store.reference, source["model_id"])
    values, fresh = steps.compute(window_values, ref, stored, tools, settings)
    if fresh:
        steps.io(
            store.save_reference,
            source["model_id"],
            pinned=source["pinned"],
            since=stored["since"] if source["pinned"] else None,
            until=stored["until"] if source["pinned"] else None,
            sample_ids=[s.sample_id for s in ref],
            checker=tools.checker.fingerprint,
            values=values,
        )
    cur = live[live["model_id"] == model_id]
    current_values = window_signal_values(cur.to_dict("records"))
    tests = steps.compute(window_tests, values, current_values, monitor.window_alpha)
    tests += steps.compute(reported_window_tests, values, current_values, monitor.reported_alpha)
    attribution = {} if explain is None else {"attribution": explain(ref, current)}
    if attribution and attribution["attribution"].get("test") is not None:
        tests.append(attribution["attribution"]["test"])
    return windows | {
        "status": "compared",
        "checker": tools.checker.fingerprint,
        "tests": tests,
        "drift": steps.compute(windows_drift, values, current_values, monitor, out_dir),
        "distributions": steps.compute(window_distributions, values, current_values),
        "reasons": [],
        **attribution,
    }


def newest_samples(samples: list[Any], n: int) -> list[Any]:
    """The n newest samples, newest first."""
    return sorted(samples, key=lambda s: s.timestamp, reverse=True)[:n]


def attribute_windows(
    settings: HssSettings,
    model: str,
    reference: list[Any],
    current: list[Any],
    perturbed: PerturbedTexts,
    scorers: ScorerLoader,
    steps: Steps,
    say: Say = silent,
) -> dict[str, Any]:
    """On request (monitor.attribution_documents = N > 0): the attribution instability of the
    newest N served samples of each window with the deployed model's likelihood, the served
    summary as the target, each sample's document perturbed by the gate's perturbations (the
    gate's explainer settings, gate.attribution; results cached per sample), and the reported
    one-sided Mann-Whitney test that it rose. A model without a likelihood is not measured,
    with the reason. `perturbed` and `scorers` are the gate's (workflows.gate)."""
    from hss_gate.gate_attribution import windows_record
    from hss_gate.monitor import attribution_window_test
    from hss_gate.workflows.gate import Role, attribute_side

    n = settings.monitor.attribution_documents
    loaded: dict[str, Any] = {}

    def once(uri: str, role_settings: HssSettings) -> Any:  # one model for both windows
        if "scorer" not in loaded:
            loaded["scorer"] = scorers(uri, role_settings)
        return loaded["scorer"]

    sides = {}
    for name, samples in (("reference", reference), ("current", current)):
        chosen = newest_samples(samples, n)
        docs = steps.compute(samples_to_documents, chosen) if chosen else []
        summaries = {s.sample_id: s.summary for s in chosen}
        role = Role(f"{name} window", model, settings)
        sides[name] = attribute_side(role, docs, summaries, perturbed, once, say)
    ref, cur = sides["reference"], sides["current"]
    test = steps.compute(
        attribution_window_test,
        list(ref.values().values()),
        list(cur.values().values()),
        settings.monitor.reported_alpha,
    )
    return steps.compute(
        windows_record,
        ref,
        cur,
        settings.gate.attribution,
        n,
        test,
        resamples=settings.score.bootstrap_resamples,
        confidence=settings.score.confidence,
        seed=settings.perturb.seed,
    )


def attribution_entry(requested: int, windows: dict[str, Any]) -> dict[str, Any]:
    """monitor.json's `attribution` when requested: the windows' record, or (the windows not
    compared) not measured with the reason, never 0."""
    if "attribution" in windows:
        return windows.pop("attribution")
    reasons = "; ".join(windows.get("reasons") or []) or "insufficient data"
    return not_measured(requested, f"the windows were not compared ({reasons})")


def not_measured(requested: int, reason: str) -> dict[str, Any]:
    """monitor.json's `attribution` when nothing was measured, with the reason (never 0)."""
    return {
        "requested_samples": requested,
        "measured": False,
        "not_measured": reason,
        "blocking": False,
    }


def _incomplete(model_id: str, n: int, source: dict[str, Any], monitor: MonitorSettings) -> str:
    if "days" in source:
        until = source.get("until", "its first sample")
        return (
            f"insufficient data: no reference window yet for {model_id!r}: its first "
            f"{source['days']} days (monitor.reference_days, until {until}) are not over; it has "
            f"{n} samples so far, or pin one with `hss monitor --set-reference`"
        )
    return (
        f"insufficient data: no reference window yet for {model_id!r}: it has "
        f"{n} of the {monitor.reference_window} samples its reference needs "
        "(monitor.reference_window), or pin one with `hss monitor --set-reference`"
    )


# the window columns Evidently compares between the two windows
WINDOW_DRIFT_COLUMNS = (
    "live_consistency",
    "live_unsupported_share",
    "live_novel_ngram_share",
    "live_n_words",
)


def windows_drift(
    reference: dict[str, list[Any]],
    current: dict[str, list[Any]],
    monitor: MonitorSettings,
    out_dir: Path | None,
) -> dict[str, Any]:
    """Evidently's drift report of the reference window against the current window
    (WINDOW_DRIFT_COLUMNS), written to out_dir/drift_windows.html; reported, never blocking.
    When Evidently cannot test (too few rows, a failure of its own) the reasons are in
    "skipped"."""
    from hss_gate.drift import DriftError, drift_report

    columns = list(WINDOW_DRIFT_COLUMNS)
    ref = pd.DataFrame({c: pd.array(reference[c], dtype="Float64") for c in columns})
    cur = pd.DataFrame({c: pd.array(current[c], dtype="Float64") for c in columns})
    summary: dict[str, Any] = {
        "columns": columns,
        "n_reference": len(ref),
        "n_current": len(cur),
        "report": None,
    }
    try:
        result = drift_report(
            ref.astype(float),
            cur.astype(float),
            columns,
            drift_share=monitor.drift_share,
            title="served signals: current window against the model's reference window",
        )
    except DriftError as exc:
        return summary | {
            "drifted": False,
            "drifted_columns": [],
            "share": 0.0,
            "skipped": [str(exc)],
        }
    if out_dir is not None and result.pages.get("html"):
        write_text_atomic(Path(out_dir) / "drift_windows.html", result.pages["html"])
        summary["report"] = "drift_windows.html"
    return summary | {
        "drifted": result.drifted,
        "drifted_columns": result.drifted_columns,
        "share": result.share,
        "methods": {c.column: c.method for c in result.columns},
        "scores": {c.column: c.score for c in result.columns},
        "skipped": list(result.skipped),
    }


def _span(samples: list[Any]) -> dict[str, str | None]:
    stamps = sorted(s.timestamp for s in samples)
    return {
        "first": stamps[0].isoformat() if stamps else None,
        "last": stamps[-1].isoformat() if stamps else None,
    }


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
    scorers: ScorerLoader | None = None,
    perturbed: PerturbedTexts | None = None,
) -> dict[str, Any]:
    """The current window against the model's own reference window and the served
    summaries' checks; unless served_only, also the deployed model's rescoring of the newest
    samples: severity rise and drift (with the served rises: the absolute floor) and the
    suite checks; on request (monitor.attribution_documents) the windows' attribution
    instability, reported only. `scorers` and `perturbed` replace the attribution's model and
    perturbations (tests)."""
    size = request.sample_size or settings.monitor.sample_size
    if size < 1:
        raise InputError("--sample-size must be at least 1")
    reference = steps.io(read_score_table, settings.monitor.reference)
    model_id = settings.monitor.model_id
    if model_id is None:  # the windows are of one model id: the newest sample's
        newest = steps.io(recent_samples, store, 1, None)
        steps.compute(samples_to_documents, newest)  # refuses an empty store
        model_id = newest[0].model_id
    kind = "served" if request.served_only else "full"
    recent, selection = steps.io(current_samples, store, settings.monitor, size, model_id, kind)
    tools = runner.toolkit(settings)
    scored_by = steps.io(reference_checker, settings.monitor.reference)
    steps.compute(
        require_same_checker, settings.monitor.reference, scored_by, tools.checker.fingerprint
    )
    requested = settings.monitor.attribution_documents
    explain: Explain | None = None
    if requested > 0:
        from hss_gate.workflows.gate import gate_perturbations, load_attribution_scorer

        def explain(ref: list[Any], current: list[Any]) -> dict[str, Any]:
            try:
                return attribute_windows(
                    settings,
                    model,
                    ref,
                    current,
                    perturbed or gate_perturbations(runner),
                    scorers or load_attribution_scorer,
                    steps,
                )
            except Exception as exc:  # reported only: its failure never changes the verdict
                return not_measured(requested, f"could not explain: {error_message(exc)}")

    if not recent:  # monitor.model_id has no samples, or none since the last run
        windows = compare_windows(
            store, settings, tools, model_id, recent, pd.DataFrame(), steps, out_dir, selection
        )
        extra = {"attribution": attribution_entry(requested, windows)} if requested > 0 else {}
        return extra | {
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
    live = pd.DataFrame(steps.compute(served_signals, recent, tools, settings))
    windows = compare_windows(
        store, settings, tools, model_id, recent, live, steps, out_dir, selection, explain
    )
    extra = {"attribution": attribution_entry(requested, windows)} if requested > 0 else {}
    served = steps.compute(served_comparison, live, reference, settings)
    if request.served_only:
        current, rise, drift, warnings = live, None, None, []
    else:  # the newest `size` samples of the window are rescored (recent is newest first)
        current, rise, drift, warnings = _rescore(
            settings, recent[:size], live, reference, model, out_dir, runner, steps, progress
        )
    checks = steps.compute(
        run_monitor_checks, current, settings.gate, out_dir / "data_docs", request.served_only
    )
    blocking = settings.monitor.floor_blocking
    decision, reasons = steps.compute(
        monitor_verdict,
        rise if blocking else None,
        drift if blocking else None,
        checks,
        served if blocking else (),
    )
    decision, reasons = windowed_verdict(decision, reasons, windows)
    notes = [] if blocking else floor_notes(served, rise, drift)
    return extra | {
        "windows": windows,
        "notes": notes + windows_notes(windows),
        "served": served,
        "decision": decision,
        "reasons": reasons,
        "severity": rise,
        "drift": drift,
        "checks": checks,
        "warnings": warnings,
        "samples": steps.compute(sample_rows, current.to_dict("records"), recent),
    }


def windowed_verdict(
    decision: str, reasons: list[str], windows: dict[str, Any]
) -> tuple[str, list[str]]:
    """The windows decide (their blocking tests), with the suite checks (and the floor where
    configured, already in `decision`); too little data is "insufficient_data" unless
    something else already made the run unhealthy."""
    from hss_gate.monitor import window_reasons

    if windows["status"] == "insufficient_data":
        if decision == "unhealthy":
            return decision, reasons + windows["reasons"]
        return "insufficient_data", reasons + windows["reasons"]
    worse = window_reasons(windows["tests"])
    return ("unhealthy" if worse else decision), worse + reasons


def windows_notes(windows: dict[str, Any]) -> list[str]:
    """The reported (never blocking) findings of the windows: significant reported tests and
    Evidently drift of the windows."""
    from hss_gate.monitor import window_notes

    notes = window_notes(windows.get("tests", []))
    drift = windows.get("drift") or {}
    if drift.get("drifted"):
        notes.append(
            "reported (not blocking): Evidently finds the current window drifted from the "
            f"model's reference window in {', '.join(drift['drifted_columns'])} "
            f"(share {drift['share']:.2f}; {drift['report']})"
        )
    return notes


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
        f"difference {s['difference']:+.3f} [{s['ci_low']:+.3f}, {s['ci_high']:+.3f}]"
        for s in served
        if s["rise"]
    ]
    if rise and rise["rise"]:
        notes.append(
            f"{why}: live mean HSS {rise['live_mean']:.3f} vs the production reference corpus "
            f"{rise['reference_mean']:.3f}, difference {rise['difference']:+.3f} "
            f"[{rise['ci_low']:+.3f}, {rise['ci_high']:+.3f}] beyond the margin {rise['margin']}"
        )
    if drift and drift.get("drifted"):
        notes.append(
            f"{why}: score distributions drifted from the production reference: "
            + ", ".join(drift.get("drifted_columns", []))
        )
    return notes


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
    scorers: ScorerLoader | None = None,
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
            result |= _check_live(
                settings,
                store,
                request,
                model,
                out_dir,
                runner,
                steps,
                progress,
                scorers,
                perturbed,
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
