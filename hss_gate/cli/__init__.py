"""The `hss` command line: arguments, console output and exit codes. The work is done by the
workflows (hss_gate/workflows/); every user-facing error is one line and exit code 2.

One module per command group, each command parsing its arguments and calling a workflow:
common.py (the consoles, shared options, settings, one-line errors), score_commands.py (score,
perturb, baseline), gate_commands.py (gate), monitor_commands.py (monitor, samples),
factuality_commands.py (factuality, checker), research_commands.py (experiment, bench,
systems: the only importers of hss_gate/research/), model_commands.py (models) and
init_command.py (init). Here the app registers them, in the order `hss --help` lists them."""

from __future__ import annotations

import sys

import typer

from hss_gate import __version__
from hss_gate.cli.common import PIPE_WIDTH, console, out_console
from hss_gate.cli.factuality_commands import checker_train, factuality
from hss_gate.cli.gate_commands import gate
from hss_gate.cli.init_command import init
from hss_gate.cli.model_commands import models_install, models_list, models_verify
from hss_gate.cli.monitor_commands import monitor, samples_ingest, samples_runs
from hss_gate.cli.research_commands import bench, experiment, systems
from hss_gate.cli.score_commands import baseline, perturb, score

__all__ = ["app", "console", "main", "out_console"]

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

TOP = (score, perturb, baseline, gate, monitor, factuality, experiment, bench, systems, init)
for command in TOP:
    app.command()(command)
for group, name, command in (
    (samples_app, "ingest", samples_ingest),
    (samples_app, "runs", samples_runs),
    (checker_app, "train", checker_train),
    (models_app, "list", models_list),
    (models_app, "install", models_install),
    (models_app, "verify", models_verify),
):
    group.command(name)(command)


@app.command()
def version() -> None:
    """Print the version."""
    out_console.print(__version__)


def plain_help_off_terminal() -> None:
    """Help written to a pipe or a log is click's plain text, one line an option: typer's rich
    panels would cut a long default value short with "..." at 80 columns, and wrapped text
    would break a model name at its hyphens."""
    if not sys.stdout.isatty():
        app.rich_markup_mode = None
        app.info.context_settings = {"terminal_width": PIPE_WIDTH, "max_content_width": PIPE_WIDTH}


def main() -> None:  # pragma: no cover - console entry
    plain_help_off_terminal()
    sys.exit(app())
