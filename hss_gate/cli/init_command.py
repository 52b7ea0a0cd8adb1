"""`hss init`: set up a repository to gate its own summarizer."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from hss_gate import __version__
from hss_gate.cli.common import (
    guarded,
    named,
    say,
    wide,
)


@guarded
def init(
    folder: Annotated[Path, typer.Argument(help="the repository to set up")] = Path("."),
    production: Annotated[
        str | None,
        typer.Option(help=f"production model URI (default: {named('run.production_model')})"),
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
    from hss_gate.common.inputs import load_corpus
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
        wide(line)
    if not result.created and not result.appended:
        say("nothing to do: everything hss init writes is there already")
