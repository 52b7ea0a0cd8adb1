"""`hss monitor` and `hss samples`: production traffic's verdict (exit 0, 1, 2 or 3), the
reference window, and the sample store the monitor reads (ingest, the recorded runs)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from hss_gate.cli.common import (
    DEFAULT_PARAMS,
    ParamsOpt,
    ProductionOpt,
    SamplesOpt,
    cli_settings,
    console,
    fail,
    finish,
    guarded,
    iso_time,
    named,
    out_option,
    print_table,
    say,
    setting_help,
    wide,
)
from hss_gate.common.progress import progress_reporter

ServedOnlyOpt = Annotated[
    bool,
    typer.Option(
        help="the served summaries alone: the current window against the model's own "
        "reference window"
    ),
]
SetReferenceOpt = Annotated[
    bool,
    typer.Option(help="pin the model id's reference window to --since/--until (stored) and exit"),
]
ModelIdOpt = Annotated[
    str | None,
    typer.Option(
        help="with --set-reference: the model id (default: "
        f"{named('monitor.model_id')}, else the newest sample's)"
    ),
]
AttributionOpt = Annotated[
    int | None,
    typer.Option(
        help=setting_help(
            "monitor.attribution_documents",
            "explain the newest N served samples of each window with sentence-level SHAP "
            "and report their attribution instability, never blocking "
            "(0: off; costly: docs/REFERENCE.md)",
        )
    ),
]
SampleSizeOpt = Annotated[int | None, typer.Option(help=setting_help("monitor.sample_size"))]
MonitorOutOpt = out_option("monitor.out")


@guarded
def monitor(
    samples: SamplesOpt = None,
    model: ProductionOpt = None,
    sample_size: SampleSizeOpt = None,
    served_only: ServedOnlyOpt = False,
    set_reference: SetReferenceOpt = False,
    since: Annotated[
        str | None, typer.Option(help="with --set-reference: from (ISO 8601; naive = UTC)")
    ] = None,
    until: Annotated[
        str | None, typer.Option(help="with --set-reference: until, excluded (ISO 8601)")
    ] = None,
    model_id: ModelIdOpt = None,
    attribution: AttributionOpt = None,
    out: MonitorOutOpt = None,
    params: ParamsOpt = DEFAULT_PARAMS,
) -> None:
    """Check recent production traffic: exit 0 = healthy, 1 = served summaries significantly
    worse than the model's own reference window (or a failed check, or the floor where
    monitor.floor_blocking), 2 = error, 3 = insufficient data (no reference window yet, or too
    few samples for a reference and a current window that do not overlap). What the windows can
    see: each report's window tests give the smallest flagged share a current window of its size
    detects with 80% power (docs/MONITORING.md)."""
    from hss_gate.monitoring.rules import EXIT_CODES
    from hss_gate.scoring.runner import LocalRunner
    from hss_gate.workflows.alerts import alert_monitor
    from hss_gate.workflows.monitor import MonitorRequest, pin_reference, run_monitor

    if set_reference:
        if since is None or until is None:
            fail("--set-reference needs --since and --until")
        url = samples or cli_settings(params).monitor.samples_url
        start, end = iso_time(since, "--since"), iso_time(until, "--until")
        pinned, n = pin_reference(
            url, model_id or cli_settings(params).monitor.model_id, start, end
        )
        say(f"reference window of {pinned!r}: {n} samples from {start} until {end} (pinned)")
        return
    request = MonitorRequest(samples, model, sample_size, out, served_only)
    with progress_reporter(console) as progress:
        outcome = run_monitor(
            lambda: cli_settings(params, monitor__attribution_documents=attribution),
            request,
            runner=LocalRunner(),
            progress=progress,
        )
    result, written = outcome.verdict, outcome.out_dir / "monitor.json"
    code = EXIT_CODES[result["decision"]]
    for line in alert_monitor(lambda: cli_settings(params), result, outcome.out_dir).lines():
        wide(line)  # alerting never changes the verdict or the exit code
    finish(result["decision"], result["reasons"], code, written, outcome.error)


@guarded
def samples_ingest(
    file: Annotated[
        Path,
        typer.Argument(
            help="JSONL or CSV: sample_id, document, summary, model_id, timestamp, category"
        ),
    ],
    samples: SamplesOpt = None,
    skip_bad: Annotated[bool, typer.Option(help="store the good rows, list the bad")] = False,
    corpus: Annotated[
        Path | None,
        typer.Option(
            help="FILE is a summaries file (doc_id, summary[, system, timestamp]); documents "
            "and categories come from this corpus by doc_id"
        ),
    ] = None,
    model_id: Annotated[
        str | None, typer.Option(help="with --corpus: the model id (default: each `system`)")
    ] = None,
    system: Annotated[
        str | None, typer.Option(help="with --corpus: only this system's summaries")
    ] = None,
    params: ParamsOpt = DEFAULT_PARAMS,
) -> None:
    """Validate every row and store the samples; bad rows are reported with their line."""
    from hss_gate.common.redact import masked_url
    from hss_gate.monitoring.store import from_summaries, ingest_file

    url = samples or cli_settings(params).monitor.samples_url
    joined = None
    if corpus is not None:
        from hss_gate.common.inputs import load_corpus

        documents = {doc.doc_id: doc for doc in load_corpus(corpus)}
        joined = from_summaries(documents, model_id, system)
    elif model_id is not None or system is not None:
        fail("--model-id and --system need --corpus (they read a summaries file)")
    report, errors = ingest_file(file, url, skip_bad=skip_bad, summaries=joined)
    for error in errors:
        console.print(f"[yellow]skipped[/] {file}:{error.line}: {error.message}", highlight=False)
    say(
        f"ingested {report.added} samples into {masked_url(url)}"
        + (f"; {report.duplicates} already stored (kept)" if report.duplicates else "")
        + (f"; {len(errors)} bad rows skipped" if errors else "")
    )
    if errors:
        raise typer.Exit(1)


@guarded
def samples_runs(
    samples: SamplesOpt = None,
    limit: Annotated[int, typer.Option(help="most recent runs")] = 20,
    params: ParamsOpt = DEFAULT_PARAMS,
) -> None:
    """The monitor's recorded runs, newest first (the severity trend)."""
    from hss_gate.monitoring.store import MonitorRun, SampleStore

    with SampleStore(samples or cli_settings(params).monitor.samples_url) as store:
        print_table(MonitorRun.COLUMNS, [run.row() for run in store.runs(limit)])
