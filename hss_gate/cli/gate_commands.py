"""`hss gate`: promote or block a candidate (exit 0, 1 or 2), a person's override recorded."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from hss_gate.cli.common import (
    DEFAULT_PARAMS,
    CorpusOpt,
    KOpt,
    LimitOpt,
    ParamsOpt,
    cli_settings,
    console,
    finish,
    guarded,
    named,
    out_option,
    say,
    setting_help,
)
from hss_gate.common.progress import progress_reporter

GateOutOpt = out_option("gate.out")
ProductionOpt = Annotated[
    str | None,
    typer.Option(
        "--production", "-p", help=setting_help("run.production_model", "production's URI")
    ),
]
SummaryWordsOpt = Annotated[
    int | None,
    typer.Option(
        help="the summary length the length checks judge against (and prompts ask for); "
        "default: the median of production's stored summaries, else "
        f"{named('generate.summary_words')}"
    ),
]
AttributionOpt = Annotated[
    int | None,
    typer.Option(
        help=setting_help(
            "gate.attribution_documents",
            "explain N documents of both sides with sentence-level SHAP and report the "
            "attribution instability (0: off; costly: docs/REFERENCE.md)",
        )
    ),
]


@guarded
def gate(
    candidate: Annotated[str | None, typer.Option("--candidate", "-c", help="URI")] = None,
    candidate_config: Annotated[Path | None, typer.Option(help="YAML: uri, generate")] = None,
    candidate_prompt: Annotated[str | None, typer.Option(help="the candidate's prompt")] = None,
    production: ProductionOpt = None,
    limit: LimitOpt = None,
    k: KOpt = None,
    corpus: CorpusOpt = None,
    out: GateOutOpt = None,
    junit: Annotated[Path | None, typer.Option(help="the checks as JUnit XML too")] = None,
    full: Annotated[bool, typer.Option(help="every document (no sequential stopping)")] = False,
    override_by: Annotated[str | None, typer.Option(help="who overrides a block")] = None,
    override_reason: Annotated[str | None, typer.Option(help="why (recorded)")] = None,
    summary_words: SummaryWordsOpt = None,
    attribution: AttributionOpt = None,
    params: ParamsOpt = DEFAULT_PARAMS,
) -> None:
    """Promote or block a candidate: exit 0 = promote, 1 = blocked, 2 = could not decide.
    A block overridden by a person (--override-by, --override-reason) is recorded and exits 0."""
    from hss_gate.decision import reports
    from hss_gate.scoring.runner import LocalRunner
    from hss_gate.workflows.gate import run_gate
    from hss_gate.workflows.gate_preparation import gate_request

    request = gate_request(
        candidate=candidate,
        production=production,
        corpus=None,  # in the settings: run__corpus below
        limit=limit,
        out=out,
        candidate_prompt=candidate_prompt,
        candidate_config=candidate_config,
        junit=junit,
        full=full,
        override_by=override_by,
        override_reason=override_reason,
        summary_words=summary_words,
    )
    with progress_reporter(console) as progress:
        outcome = run_gate(
            lambda: cli_settings(
                params, k, gate__attribution_documents=attribution, run__corpus=corpus
            ),
            request,
            runner=LocalRunner(),
            progress=progress,
            say=lambda line: console.print(f"[bold]{line}[/]", highlight=False),
        )
    decision = outcome.verdict
    if decision.decision == "error":
        console.print(f"[bold red]error:[/] {decision.reasons[0]}", highlight=False, soft_wrap=True)
    reasons = [] if decision.decision == "error" else decision.reasons
    for line in reports.headline(decision):
        say(line)
    written = outcome.out_dir / "decision.json"
    say(f"report: {outcome.out_dir / 'decision.html'}")
    finish(decision.decision, reasons, decision.exit_code, written, outcome.error)
