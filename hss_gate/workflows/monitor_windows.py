"""The monitor's two windows: a model id's current window against its own reference window.

The current window is the model id's newest samples (or, monitor.current_window since_last_run,
those since the previous run); the reference window is the model id's own (pinned, its first
monitor.reference_days or its first monitor.reference_window samples), else its predecessor's
until its own is complete. The served summaries of both get the same signals
(`served_signals`); the blocking and reported tests compare them, Evidently reports their drift
(OUT/drift_windows.html) and, on request (monitor.attribution_documents), the attribution
instability of their newest samples is measured, reported only. `windowed_verdict` lets the
windows decide; `window_comparison_notes` says what they report (never blocking). The steps of
workflows.monitor.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

import pandas as pd

from hss_gate.common.errors import error_message
from hss_gate.common.io import write_text_atomic
from hss_gate.monitoring.rules import CONTINUOUS_COLUMNS, live_summary_signals, samples_to_documents
from hss_gate.scoring.toolkit import Toolkit
from hss_gate.settings import HssSettings, MonitorSettings
from hss_gate.signals.summary_flags import LengthPolicy
from hss_gate.signals.tables import flag_columns
from hss_gate.workflows.steps import ModelRunner, Say, Steps, silent

if TYPE_CHECKING:
    from hss_gate.workflows.gate_explanation import LikelihoodLoader, PerturbedTexts

Explain = Callable[[list[Any], list[Any]], dict[str, Any]]
"""The attribution instability of a reference and a current window's samples (monitor.json's
`attribution`)."""


RUNS_SCANNED = 500  # recorded runs searched for the previous run's current window


def current_samples(
    store: Any, monitor: MonitorSettings, size: int, model_id: str, kind: str
) -> tuple[list[Any], dict[str, Any]]:
    """The current window of a model id, newest first, and how it was chosen: its newest
    `size` samples, or (monitor.current_window since_last_run) those newer than the current
    window of the previous recorded run of this kind, at most monitor.max_current_window (the
    first such run takes the newest `size`)."""
    from hss_gate.monitoring.rules import previous_current_last

    if monitor.current_window == "since_last_run":
        runs = [r.model_dump(mode="json") for r in store.runs(RUNS_SCANNED)]
        last = previous_current_last(runs, model_id, kind)
        if last is not None:
            samples = store.after(model_id, last, monitor.max_current_window)
            return samples, {"selection": "since_last_run", "after": last.isoformat()}
    return store.recent(size, model_id), {"selection": "newest", "after": None}


def served_signals(
    samples: list[Any], tools: Toolkit, settings: HssSettings
) -> list[dict[str, Any]]:
    """The checker's verdicts, mentions and length flags of the summaries production served."""
    from hss_gate.common.cache import Cache
    from hss_gate.scoring.pipeline import verdicts_cached

    cache = Cache(settings.run.cache_dir)
    try:
        verdicts = verdicts_cached([(s.document, s.summary) for s in samples], tools.checker, cache)
    finally:
        cache.close()
    return live_summary_signals(
        samples,
        tools.tagger.mentions([s.summary for s in samples]),
        verdicts,
        settings.score.ngram,
        served_length_policy(settings),
        tools.checker.threshold,
    )


def served_length_policy(settings: HssSettings) -> LengthPolicy:
    """What the served summaries' form flags judge their length against: the length the served
    product asks for (monitor.summary_words), else the one the gate's prompt asks for
    (generate.summary_words)."""
    words = settings.monitor.summary_words
    return LengthPolicy(
        settings.generate.summary_words if words is None else words,
        settings.score.near_empty_share,
        settings.score.overlong_ratio,
        settings.score.copy_ratio,
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
    from hss_gate.monitoring.rules import WINDOW_COLUMNS, window_signal_values

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
    from hss_gate.monitoring.rules import (
        compare_blocking_windows,
        compare_reported_windows,
        window_distributions,
        window_signal_values,
    )

    monitor = settings.monitor
    ref, source = steps.io(reference_window, store, model_id, monitor)
    current = [s for s in recent if s.model_id == model_id]
    paired = Windows(model_id, ref, source, current, selection)
    windows = describe_windows(paired)
    reasons = too_little_data(paired, monitor)
    if reasons:
        return windows | {"status": "insufficient_data", "reasons": reasons}
    values = reference_values(store, ref, source, tools, settings, steps)
    current_values = window_signal_values(live[live["model_id"] == model_id].to_dict("records"))
    tests = steps.compute(compare_blocking_windows, values, current_values, monitor.window_alpha)
    tests += steps.compute(compare_reported_windows, values, current_values, monitor.reported_alpha)
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


class Windows(NamedTuple):
    """One served model's two windows: its reference window's samples and where they came from
    (`source`), and the current window's samples and how they were chosen (`selection`)."""

    model_id: str
    reference: list[Any]
    source: dict[str, Any]
    current: list[Any]
    selection: dict[str, Any] | None


def describe_windows(windows: Windows) -> dict[str, Any]:
    """monitor.json's description of the two windows: the model id, the reference window
    (where it came from, its size and span) and the current one (size, span, how chosen)."""
    reference, current = windows.reference, windows.current
    return {
        "model_id": windows.model_id,
        "reference": windows.source | {"n": len(reference), **_span(reference)},
        "current": {"n": len(current), **_span(current), **(windows.selection or {})},
    }


def too_little_data(windows: Windows, monitor: MonitorSettings) -> list[str]:
    """Why the windows cannot be compared (empty: they can): no current samples, a reference
    window not complete yet, or windows that share samples."""
    model_id, reference, source, current, selection = windows
    overlap = {s.sample_id for s in reference} & {s.sample_id for s in current}
    if not current:
        since = (selection or {}).get("after")
        return [
            f"insufficient data: no samples of {model_id!r} in the current window"
            + (f" (none after the previous run's, {since})" if since else "")
        ]
    if not source["complete"]:
        return [_incomplete(model_id, len(reference), source, monitor)]
    if overlap:
        return [
            f"insufficient data: the current window shares {len(overlap)} samples with the "
            f"reference window of {source['model_id']!r}; a window needs "
            f"{len(reference)} + {len(current)} samples that do not overlap"
        ]
    return []


def reference_values(
    store: Any,
    reference: list[Any],
    source: dict[str, Any],
    tools: Toolkit,
    settings: HssSettings,
    steps: Steps,
) -> dict[str, list[float]]:
    """The reference window's signals (window_values): the stored ones, else scored now and
    stored with the checker that scored them (a pinned window keeps its range)."""
    stored = steps.io(store.reference, source["model_id"])
    values, fresh = steps.compute(window_values, reference, stored, tools, settings)
    if fresh:
        steps.io(
            store.save_reference,
            source["model_id"],
            pinned=source["pinned"],
            since=stored["since"] if source["pinned"] else None,
            until=stored["until"] if source["pinned"] else None,
            sample_ids=[s.sample_id for s in reference],
            checker=tools.checker.fingerprint,
            values=values,
        )
    return values


def newest_samples(samples: list[Any], n: int) -> list[Any]:
    """The n newest samples, newest first."""
    return sorted(samples, key=lambda s: s.timestamp, reverse=True)[:n]


def attribute_windows(
    settings: HssSettings,
    model: str,
    reference: list[Any],
    current: list[Any],
    perturbed: PerturbedTexts,
    scorers: LikelihoodLoader,
    steps: Steps,
    say: Say = silent,
) -> dict[str, Any]:
    """On request (monitor.attribution_documents = N > 0): the attribution instability of the
    newest N served samples of each window with the deployed model's likelihood, the served
    summary as the target, each sample's document perturbed by the gate's perturbations (the
    gate's explainer settings, gate.attribution; results cached per sample), and the reported
    one-sided Mann-Whitney test that it rose. A model without a likelihood is not measured,
    with the reason. `perturbed` and `scorers` are the gate's (workflows.gate)."""
    from hss_gate.decision.attribution import windows_record
    from hss_gate.monitoring.rules import attribution_window_test
    from hss_gate.workflows.gate_explanation import attribute_side
    from hss_gate.workflows.gate_preparation import Role

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


def window_explainer(
    settings: HssSettings,
    model: str,
    runner: ModelRunner,
    steps: Steps,
    scorers: LikelihoodLoader | None = None,
    perturbed: PerturbedTexts | None = None,
) -> Explain | None:
    """On request (monitor.attribution_documents > 0), how the windows' attribution instability
    is measured: attribute_windows with the deployed model, the gate's perturbations and
    scorer unless `perturbed` and `scorers` replace them (tests); a failure is "not measured"
    with the reason (reported only: it never changes the verdict). None when not requested."""
    requested = settings.monitor.attribution_documents
    if requested <= 0:
        return None
    from hss_gate.decision.attribution import load_attribution_scorer
    from hss_gate.workflows.gate_explanation import gate_perturbations

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

    return explain


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
WINDOW_DRIFT_COLUMNS = CONTINUOUS_COLUMNS


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
    from hss_gate.monitoring.drift import DriftError, drift_report

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
            flags=flag_columns(columns),
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


def windowed_verdict(
    decision: str, reasons: list[str], windows: dict[str, Any]
) -> tuple[str, list[str]]:
    """The windows decide (their blocking tests), with the suite checks (and the floor where
    configured, already in `decision`); too little data is "insufficient_data" unless
    something else already made the run unhealthy."""
    from hss_gate.monitoring.rules import window_reasons

    if windows["status"] == "insufficient_data":
        if decision == "unhealthy":
            return decision, reasons + windows["reasons"]
        return "insufficient_data", reasons + windows["reasons"]
    worse = window_reasons(windows["tests"])
    return ("unhealthy" if worse else decision), worse + reasons


def window_comparison_notes(windows: dict[str, Any]) -> list[str]:
    """The reported (never blocking) findings of the windows: significant reported tests and
    Evidently drift of the windows."""
    from hss_gate.monitoring.rules import reported_test_notes

    notes = reported_test_notes(windows.get("tests", []))
    drift = windows.get("drift") or {}
    if drift.get("drifted"):
        notes.append(
            "reported (not blocking): Evidently finds the current window drifted from the "
            f"model's reference window in {', '.join(drift['drifted_columns'])} "
            f"(share {drift['share']:.2f}; {drift['report']})"
        )
    return notes
