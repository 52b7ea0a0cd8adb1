"""What every `hss` command shares: the two consoles, the common options, the settings as the
command line reads them, the one-line errors (exit 2) and the verdict's closing lines."""

from __future__ import annotations

import functools
import os
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from hss_gate import __version__
from hss_gate.common.errors import HssError, InputError
from hss_gate.settings import setting_default, setting_field

PIPE_WIDTH = 10_000
"""The width of a console whose output is not a terminal (a pipe, a CI log, `| tee`): wide
enough that no line is wrapped and no table cell is cut, so a path or a number never breaks
across lines (a terminal keeps its own width and rich's wrapping)."""


def line_console(stderr: bool = False) -> Console:
    """A rich console on stderr or stdout that wraps nothing when its output is not a
    terminal: every printed line is written whole (soft wrap) and tables take their natural
    width (PIPE_WIDTH)."""
    made = Console(stderr=stderr)
    if not made.is_terminal:
        made.soft_wrap = True
        made.width = PIPE_WIDTH
    return made


console = line_console(stderr=True)
out_console = line_console()


def shown(value: Any) -> str:
    """A setting's value as a help text states it (a list or a mapping: its items' names)."""
    if isinstance(value, dict | list | tuple):
        return ",".join(str(item) for item in value)
    if value is None:
        return "null"  # as params.yaml writes it
    return str(value).lower() if isinstance(value, bool) else str(value)


def named(key: str) -> str:
    """`key = <its built-in default>`: how a help text names a setting an option falls back to,
    the value read from the settings (hss_gate/settings), so it cannot drift from them."""
    return f"{key} = {shown(setting_default(key))}"


def setting_help(key: str, text: str = "") -> str:
    """The help of an option that stands for the setting `key` ("section.name"): `text` (else
    the setting's description) and its default, "(default: key = value)", both read from the
    settings. tests/unit/test_cli_help.py holds every help text to the settings."""
    about = text or setting_field(key).description
    if not about:
        raise ValueError(f"{key} has no description: give the option's help text")
    return f"{about} (default: {named(key)})"


def choices(key: str) -> str:
    """The values the setting `key` takes (a Literal), as a help text lists them."""
    from typing import get_args

    return ", ".join(str(value) for value in get_args(setting_field(key).annotation))


def out_option(key: str) -> Any:
    """The --out option of a command whose output folder is the setting `key`."""
    return Annotated[str | None, typer.Option(help=setting_help(key, "output folder"))]


DEFAULT_PARAMS = Path("params.yaml")  # optional: without it, the built-in defaults
ParamsOpt = Annotated[Path, typer.Option("--params", help="params.yaml to read")]
SamplesOpt = Annotated[
    str | None,
    typer.Option("--samples", help=setting_help("monitor.samples_url", "the sample store's URL")),
]
CorpusOpt = Annotated[
    str | None, typer.Option(help=setting_help("run.corpus", "JSONL file or folder"))
]
LimitOpt = Annotated[int | None, typer.Option(help="only the first N documents")]
KOpt = Annotated[int | None, typer.Option("-k", help=setting_help("perturb.k"))]
SeedOpt = Annotated[
    int | None, typer.Option(help=setting_help("perturb.seed", "perturbation seed"))
]
ModelOpt = Annotated[
    str, typer.Option("--model", "-m", help="gguf:<name|path>, hf:<id|dir>, extractive:, openai:")
]
PRODUCTION_HELP = setting_help("run.production_model", "the production model's URI")
ProductionOpt = Annotated[str | None, typer.Option("--model", "-m", help=PRODUCTION_HELP)]


def fail(message: str, code: int = 2) -> None:
    console.print(f"[bold red]error:[/] {message}", highlight=False, soft_wrap=True)
    raise typer.Exit(code)


def iso_time(value: str, option: str) -> Any:
    """An ISO 8601 option as an aware datetime (naive = UTC); a bad one exits 2."""
    from datetime import UTC, datetime

    try:
        parsed = datetime.fromisoformat(value.strip())
    except ValueError:
        raise InputError(f"{option}: not an ISO 8601 timestamp: {value[:60]!r}") from None
    return parsed.replace(tzinfo=UTC) if parsed.tzinfo is None else parsed.astimezone(UTC)


def say(line: str) -> None:
    console.print(line, highlight=False)


def wide(line: str) -> None:
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
            fail(str(exc))
        except KeyboardInterrupt:
            fail("interrupted; cached work is kept and a rerun resumes", 130)
        except Exception as exc:
            if os.environ.get("HSS_DEBUG"):
                traceback.print_exc()
            fail(f"internal error: {type(exc).__name__}: {exc} (set HSS_DEBUG=1 for a traceback)")

    return wrapper


def cli_settings(
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
    from hss_gate.common.packaged import packaged_root
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
        wide(f"warning: {mismatch}")
    replaced = use_packaged_inputs(settings, root, PACKAGED_INPUTS if inputs is None else inputs)
    if replaced:
        wide(f"not in this folder, read from the installed package: {', '.join(replaced)}")
    return settings


def print_table(columns: Sequence[str], rows: Sequence[Sequence[str]], title: str = "") -> None:
    table = Table(title=title or None)
    for column in columns:
        table.add_column(column)
    for row in rows:
        table.add_row(*row)
    out_console.print(table)


def finish(verdict: str, reasons: Sequence[str], code: int, written: Path, error: Any) -> None:
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
