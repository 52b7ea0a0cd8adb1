"""`hss experiment`, `hss bench` and `hss systems`: the research wing's commands, and the only
code outside hss_gate/research/ that imports it (lazily, inside the commands)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from hss_gate.cli.common import (
    DEFAULT_PARAMS,
    KOpt,
    LimitOpt,
    ParamsOpt,
    choices,
    cli_settings,
    console,
    guarded,
    named,
    out_console,
    out_option,
    say,
    setting_help,
    wide,
)
from hss_gate.common.errors import InputError
from hss_gate.common.progress import progress_reporter

CheckerOpt = Annotated[
    str | None,
    typer.Option(help=setting_help("consistency.model", choices("consistency.model"))),
]
WeightsOpt = Annotated[
    Path | None, typer.Option(help="invented kinds: this weights JSON, not the shipped one")
]
ConsistencyMarginOpt = Annotated[
    float | None,
    typer.Option(help=f"default: the weights', else {named('gate.consistency_margin')}"),
]
MaxLowShareOpt = Annotated[
    float | None,
    typer.Option(help=f"default: the weights', else {named('gate.max_low_consistency_share')}"),
]
CacheDirOpt = Annotated[str | None, typer.Option(help=setting_help("run.cache_dir", "the cache"))]
ExperimentOutOpt = out_option("experiment.out")
BenchOutOpt = out_option("run.bench_out")
EntitiesOpt = Annotated[
    bool, typer.Option(help="tag entities/numbers (spaCy) for the unsupported share")
]
ThroughGateOpt = Annotated[
    bool,
    typer.Option(
        help="also run every pair through `hss gate` itself (summaries: URIs), to OUT/gates/"
    ),
]


@guarded
def experiment(
    limit: LimitOpt = None,
    k: KOpt = None,
    out: ExperimentOutOpt = None,
    params: ParamsOpt = DEFAULT_PARAMS,
) -> None:
    """The paper's analysis: correlations with bootstrap CIs, strength, domains, ablations,
    models, hand-counted errors and extractiveness; DIR/report.md, report.html, CSVs, PNGs."""
    from hss_gate.research.experiment_run import run_and_report

    settings = cli_settings(params, k)
    with progress_reporter(console) as progress:
        out_dir = run_and_report(settings, limit=limit, out=out, progress=progress)
    say(f"wrote {out_dir}/report.md, report.html, CSVs and figures")


@guarded
def bench(
    quick: Annotated[bool, typer.Option("--quick", help="2 documents, minutes")] = False,
    out: BenchOutOpt = None,
    model: Annotated[str | None, typer.Option("--model", "-m", help="summarizer to time")] = None,
    documents: Annotated[int | None, typer.Option(help="first N documents")] = None,
    quickstart: Annotated[bool, typer.Option(help="time `make quickstart` too")] = True,
    targets: Annotated[
        bool,
        typer.Option(
            "--targets",
            help="only the speed targets: floor_ratio on the whole corpus, the checker, "
            "the Qwen-size cold gate, generation's prefill/decode split (~50 min)",
        ),
    ] = False,
    attribution: Annotated[
        bool,
        typer.Option(
            "--attribution",
            help="only sentence-level attribution: fidelity against a 10x reference on 10 "
            "documents, noise floor, seconds per document (~50 min)",
        ),
    ] = False,
    params: ParamsOpt = DEFAULT_PARAMS,
) -> None:
    """Time the pipeline against the generation floor, a naive pipeline, a warm rerun, a cold
    gate and the quickstart."""
    from hss_gate.research.bench import plan_for
    from hss_gate.research.bench_run import markdown, run_bench

    out_dir = Path(out or cli_settings(params).run.bench_out)
    plan = plan_for(quick, model, documents, quickstart, targets, attribution)
    result = run_bench(plan, params, out_dir, say=say)
    say(markdown(result))
    console.print(f"wrote {out_dir}/bench.json, bench.md and figures/")


@guarded
def systems(
    summaries: Annotated[
        Path, typer.Option(help="JSONL: doc_id, system, summary and the human label")
    ],
    documents: Annotated[Path, typer.Option(help="JSONL: doc_id, document")],
    checker: CheckerOpt = None,
    weights: WeightsOpt = None,
    threshold: Annotated[float | None, typer.Option(help="default: the checker's")] = None,
    consistency_margin: ConsistencyMarginOpt = None,
    max_low_share: MaxLowShareOpt = None,
    label: Annotated[str, typer.Option(help="the human label: 1 = no factual error")] = "factual",
    entities: EntitiesOpt = True,
    cache_dir: CacheDirOpt = None,
    through_gate: ThroughGateOpt = False,
    out: Annotated[Path, typer.Option(help="output folder")] = Path("outputs/systems"),
    params: ParamsOpt = DEFAULT_PARAMS,
) -> None:
    """System level: for every ordered pair of systems, the humans' paired difference in the
    share of summaries judged factual (95% CI) beside the gate's decision (sequential and
    single-look) and the share rule's (--through-gate: and `hss gate`'s own); the systems' rank
    correlation by mean consistency with the human means; OUT/systems.md and systems.json."""
    from hss_gate.research.systems_run import (
        SystemsRequest,
        agreement_lines,
        run_systems,
        summary_lines,
    )

    for name, path in (("--summaries", summaries), ("--documents", documents)):
        if not path.is_file():
            raise InputError(f"{name} {path}: no such file")
    request = SystemsRequest(
        summaries=summaries,
        documents=documents,
        out=out,
        checker=checker,
        weights=weights,
        threshold=threshold,
        consistency_margin=consistency_margin,
        max_low_share=max_low_share,
        label=label,
        entities=entities,
        through_gate=through_gate,
    )
    settings = cli_settings(params)
    with progress_reporter(console) as progress:
        result = run_systems(request, settings, cache_dir=cache_dir, progress=progress, say=wide)
    out_console.print("\n".join(agreement_lines(result.agreement)), highlight=False, soft_wrap=True)
    for line in summary_lines(result, through_gate):
        wide(line)
    say(f"wrote {out}/systems.md and systems.json ({result.meta['seconds_total']:.0f} s)")
