"""The `monitor` flow: what `hss monitor` does, as Prefect tasks. Fails closed.

Take the most recent production samples from the sample store, score them with the deployed
model, compare with the production reference scores (Evidently drift, severity rise with a
bootstrap CI, Great Expectations checks), record the run in the store (the severity trend) and
write monitor.json / monitor.md / monitor.html. Any error becomes the verdict "error" (recorded
and written like any other); the flow returns the result and does not raise.

    python -m flows.monitor --samples sqlite:///.hss/samples.sqlite --out outputs/monitor
    (exit code 0 = healthy, 1 = unhealthy, 2 = error, as `hss monitor`)

prefect.yaml schedules it as a deployment (see flows/README.md).
"""

from __future__ import annotations

import argparse
import datetime as dt
import sys
import uuid
from pathlib import Path
from typing import Any

from prefect import flow, get_run_logger

from flows.scoring import (
    add_common_arguments,
    compute_task,
    error_message,
    io_task,
    load_normalization_task,
    load_settings_task,
    markdown_artifact_task,
    process_toolkit,
    read_table_task,
    score_drift_task,
    score_frame_task,
    score_subflow,
    write_json_task,
    write_outputs_task,
)

TREND_RUNS = 20


@io_task
def open_store_task(url: str) -> Any:
    """The production sample store (SQLite or PostgreSQL)."""
    from hss_gate.samples import SampleStore

    return SampleStore(url)


@io_task
def recent_samples_task(store: Any, n: int, model_id: str | None) -> list[Any]:
    """The n newest samples (of one model id, if given)."""
    return store.recent(n, model_id)


@compute_task
def samples_to_documents_task(samples: list[Any]) -> list[Any]:
    """Samples as documents to score (doc_id = sample_id)."""
    from hss_gate.monitor import samples_to_documents

    return samples_to_documents(samples)


@compute_task
def mentions_task(texts: list[str], settings: Any) -> list[list[str]]:
    """Entity and number mentions of each text (spaCy)."""
    return process_toolkit(settings).tagger.mentions(texts)


@compute_task
def live_signals_task(
    samples: list[Any], mentions: list[list[str]], ngram: int
) -> list[dict[str, Any]]:
    """Signals of the summaries production actually served."""
    from hss_gate.monitor import live_summary_signals

    return live_summary_signals(samples, mentions, ngram)


@compute_task
def join_live_task(scores: Any, live: list[dict[str, Any]]) -> Any:
    """The scored documents joined with the live summary signals, by doc_id."""
    from hss_gate.promotion import live_frame

    return live_frame(scores, live)


@compute_task
def severity_rise_task(current: Any, reference: Any, settings: Any) -> dict[str, Any]:
    """Live mean HSS against the production reference (bootstrap CI against the margin)."""
    from hss_gate.promotion import monitor_severity

    return monitor_severity(current, reference, settings)


@compute_task
def monitor_checks_task(current: Any, settings: Any, docs_dir: str) -> list[dict[str, Any]]:
    """The monitor's Great Expectations suite on the scored samples (Data Docs into docs_dir)."""
    from hss_gate.promotion import run_monitor_checks

    return run_monitor_checks(current, settings, Path(docs_dir))


@compute_task
def monitor_verdict_task(
    rise: dict[str, Any], drift: dict[str, Any] | None, checks: list[dict[str, Any]]
) -> tuple[str, list[str]]:
    """'healthy' or 'unhealthy', with the reasons."""
    from hss_gate.monitor import monitor_verdict

    return monitor_verdict(rise, drift, checks)


@compute_task
def sample_rows_task(current: Any, samples: list[Any]) -> list[dict[str, Any]]:
    """One row per scored sample for the report: HSS, unsupported mentions, served summary."""
    from hss_gate.monitor import sample_rows

    return sample_rows(current.to_dict("records"), samples)


@io_task
def record_run_task(store: Any, result: dict[str, Any], started: dt.datetime) -> list[dict]:
    """Append this run to the store's history; return the recent runs (the trend)."""
    from hss_gate.monitor import run_record

    store.record_run(run_record(result, started))
    return [r.model_dump(mode="json") for r in store.runs(TREND_RUNS)]


@io_task
def write_monitor_reports_task(out_dir: str, result: dict[str, Any]) -> str:
    """monitor.md and monitor.html."""
    from hss_gate.decision_report import monitor_html, monitor_markdown, write_text_atomic

    write_text_atomic(Path(out_dir) / "monitor.md", monitor_markdown(result))
    write_text_atomic(Path(out_dir) / "monitor.html", monitor_html(result))
    return out_dir


@flow(name="monitor", log_prints=True)
def monitor_flow(
    samples: str | None = None,
    model: str | None = None,
    sample_size: int | None = None,
    params: str = "params.yaml",
    out: str | None = None,
    overrides: dict[str, Any] | None = None,
    workers: int = 1,
    dask_address: str | None = None,
    chunk_size: int | None = None,
) -> dict[str, Any]:
    """Score recent production traffic; report drift and the severity trend (as `hss monitor`).

    `samples` is the store's SQLAlchemy URL (default monitor.samples_url; keep passwords out of
    flow parameters: use HSS_MONITOR__SAMPLES_URL or libpq's PGPASSWORD/.pgpass on the worker).
    Returns the result written to monitor.json: decision "healthy", "unhealthy" or "error",
    reasons, severity, drift, checks, samples and the trend of recent runs.
    """
    from hss_gate.decision_report import monitor_markdown
    from hss_gate.errors import InputError

    logger = get_run_logger()
    started = dt.datetime.now(dt.UTC)
    from hss_gate.summarizers import redacted_uri

    result: dict[str, Any] = {"run_id": uuid.uuid4().hex[:12], "model": redacted_uri(model or "")}
    out_dir, store = out or "outputs/monitor", None
    try:
        settings = load_settings_task(params, overrides)
        out_dir = out or settings.monitor.out
        model = model or settings.run.production_model
        result["model"] = redacted_uri(model)
        size = sample_size or settings.monitor.sample_size
        if size < 1:
            raise InputError("sample_size must be at least 1")
        store = open_store_task(samples or settings.monitor.samples_url)
        reference = read_table_task(settings.monitor.reference)
        norm = load_normalization_task(settings.score.normalization)
        recent = recent_samples_task(store, size, settings.monitor.model_id)
        docs = samples_to_documents_task(recent)
        scored, meta = score_subflow(
            model,
            docs,
            settings,
            norm,
            workers=workers,
            dask_address=dask_address,
            chunk_size=chunk_size,
        )
        write_outputs_task(str(Path(out_dir) / "scores"), scored, meta)
        live = live_signals_task(
            recent, mentions_task([s.summary for s in recent], settings), settings.score.ngram
        )
        variant = "aware" if settings.score.perturbation_aware else "raw"
        current = join_live_task(score_frame_task(scored, variant), live)
        drift = score_drift_task(
            reference,
            current,
            settings,
            out_dir,
            f"live traffic of {model} against the production reference",
        )
        rise = severity_rise_task(current, reference, settings)
        checks = monitor_checks_task(current, settings, str(Path(out_dir) / "data_docs"))
        decision, reasons = monitor_verdict_task(rise, drift, checks)
        result |= {
            "decision": decision,
            "reasons": reasons,
            "severity": rise,
            "drift": drift,
            "checks": checks,
            "warnings": scored.warnings,
            "samples": sample_rows_task(current, recent),
        }
    except Exception as exc:  # fail closed; the stored samples are never touched
        logger.error("the monitor could not run: %s", error_message(exc))
        result |= {"decision": "error", "reasons": [f"could not monitor: {error_message(exc)}"]}
    result["n_samples"] = len(result.get("samples", []))
    try:
        if store is not None:
            try:
                result["trend"] = record_run_task(store, result, started)
            except Exception as exc:  # e.g. the store went away: the run is an error, not a crash
                result["reasons"].append(f"could not record the run in the sample store: {exc}")
                result["decision"] = "error"
                result["trend"] = []
        write_json_task(str(Path(out_dir) / "monitor.json"), result)
        try:
            write_monitor_reports_task(out_dir, result)
        except Exception as exc:  # a verdict without its report fails closed, in the store too
            result["decision"] = "error"
            result["reasons"].append(f"could not write the report: {error_message(exc)}")
            write_json_task(str(Path(out_dir) / "monitor.json"), result)
            if result.get("trend"):
                store.mark_run_failed(result["run_id"], result["reasons"])
            raise
    finally:
        if store is not None:
            store.close()
    try:
        markdown_artifact_task(
            monitor_markdown(result), "hss-monitor", f"hss-gate monitor: {result['decision']}"
        )
    except Exception as exc:  # the report files are the contract; the artifact is a courtesy
        logger.warning("could not create the monitor artifact: %s", exc)
    logger.info(
        "%s; wrote %s/monitor.json, monitor.md, monitor.html", result["decision"].upper(), out_dir
    )
    return result


def main(argv: list[str] | None = None) -> int:
    """Command line: python -m flows.monitor [--samples URL] [...]; returns the exit code."""
    from hss_gate.monitor import EXIT_CODES

    parser = argparse.ArgumentParser(prog="python -m flows.monitor", description=__doc__)
    parser.add_argument("--samples", default=None, help="store URL (default: monitor.samples_url)")
    parser.add_argument("--model", "-m", default=None, help="deployed model (default: production)")
    parser.add_argument("--sample-size", type=int, default=None, help="most recent samples")
    parser.add_argument("--out", default=None, help="default: monitor.out")
    add_common_arguments(parser)
    args = parser.parse_args(argv)
    try:
        result = monitor_flow(
            samples=args.samples,
            model=args.model,
            sample_size=args.sample_size,
            params=args.params,
            out=args.out,
            workers=args.workers,
            dask_address=args.dask_address,
            chunk_size=args.chunk_size,
        )
    except Exception as exc:  # e.g. the reports could not be written: never exit 0 or 1
        print(f"ERROR (exit 2): {error_message(exc)}", file=sys.stderr)
        return 2
    for reason in result["reasons"]:
        print(f"- {reason}")
    code = EXIT_CODES[result["decision"]]
    print(f"{result['decision'].upper()} (exit {code})")
    return code


if __name__ == "__main__":
    sys.exit(main())
