"""The `monitor` flow: `hss monitor` as a Prefect flow. Fails closed.

The steps, their order and the fail-closed handling are hss_gate.workflows.monitor's: take the
most recent production samples from the sample store, score them with the deployed model,
compare with the production reference scores (Evidently drift, severity rise with a bootstrap
CI, Great Expectations checks), record the run in the store (the severity trend) and write
monitor.json / monitor.md / monitor.html. This flow runs each step as a Prefect task (I/O
retried), scores on Dask when asked, and publishes the verdict as an artifact. Any error
becomes the verdict "error" (recorded and written like any other); the flow returns it.

    python -m flows.monitor --samples sqlite:///.hss/samples.sqlite --out outputs/monitor
    (exit code 0 = healthy, 1 = unhealthy, 2 = error, as `hss monitor`)

prefect.yaml schedules it as a deployment (see flows/README.md).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from prefect import flow, get_run_logger

from flows.scoring import DaskRunner, add_common_arguments
from flows.tasks import PREFECT_STEPS, publish
from hss_gate.common.errors import error_message


@flow(name="monitor", log_prints=True)
def monitor_flow(
    samples: str | None = None,
    model: str | None = None,
    sample_size: int | None = None,
    served_only: bool = False,
    params: str = "params.yaml",
    out: str | None = None,
    overrides: dict[str, Any] | None = None,
    workers: int = 1,
    dask_address: str | None = None,
    chunk_size: int | None = None,
    attribution: int | None = None,
) -> dict[str, Any]:
    """Score recent production traffic; report drift and the severity trend (as `hss monitor`).

    `samples` is the store's SQLAlchemy URL (default monitor.samples_url; keep passwords out of
    flow parameters: use HSS_MONITOR__SAMPLES_URL or libpq's PGPASSWORD/.pgpass on the worker).
    Returns the result written to monitor.json: decision "healthy", "unhealthy", "error" or
    (too little traffic for two windows) "insufficient_data",
    reasons, severity, drift, checks, samples and the trend of recent runs.
    `attribution` explains that many served samples of each window with sentence-level SHAP,
    reported only (monitor.attribution_documents; None: as configured, default off).
    """
    from hss_gate.decision.reports import monitor_markdown
    from hss_gate.settings import load_settings
    from hss_gate.workflows.alerts import alert_monitor
    from hss_gate.workflows.monitor import MonitorRequest, run_monitor

    logger = get_run_logger()

    def load_monitor_settings() -> Any:
        chosen = {"monitor__attribution_documents": attribution, **(overrides or {})}
        return load_settings(params, **{k: v for k, v in chosen.items() if v is not None})

    outcome = run_monitor(
        load_monitor_settings,
        MonitorRequest(samples, model, sample_size, out, served_only),
        runner=DaskRunner(workers, dask_address, chunk_size),
        steps=PREFECT_STEPS,
    )
    result = outcome.verdict
    if outcome.error is not None:
        logger.error("the monitor could not run: %s", error_message(outcome.error))
    alerts = alert_monitor(load_monitor_settings, result, outcome.out_dir)  # never raises
    for line in alerts.lines():
        (logger.warning if line.startswith("warning") else logger.info)(line)
    publish(
        monitor_markdown(result), "hss-monitor", f"hss-gate monitor: {result['decision']}", logger
    )
    logger.info(
        "%s; wrote %s/monitor.json, monitor.md, monitor.html",
        result["decision"].upper(),
        outcome.out_dir,
    )
    return result


def main(argv: list[str] | None = None) -> int:
    """Command line: python -m flows.monitor [--samples URL] [...]; returns the exit code."""
    from hss_gate.monitoring.rules import EXIT_CODES

    parser = argparse.ArgumentParser(prog="python -m flows.monitor", description=__doc__)
    parser.add_argument("--samples", default=None, help="store URL (default: monitor.samples_url)")
    parser.add_argument("--model", "-m", default=None, help="deployed model (default: production)")
    parser.add_argument("--sample-size", type=int, default=None, help="most recent samples")
    parser.add_argument("--out", default=None, help="default: monitor.out")
    parser.add_argument(
        "--served-only", action="store_true", help="check the served summaries alone (cheap)"
    )
    parser.add_argument(
        "--attribution", type=int, default=None, help="SHAP instability of N samples per window"
    )
    add_common_arguments(parser)
    args = parser.parse_args(argv)
    try:
        result = monitor_flow(
            samples=args.samples,
            model=args.model,
            sample_size=args.sample_size,
            served_only=args.served_only,
            params=args.params,
            out=args.out,
            workers=args.workers,
            dask_address=args.dask_address,
            chunk_size=args.chunk_size,
            attribution=args.attribution,
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
