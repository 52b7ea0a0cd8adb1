"""Help texts say the true defaults: every setting a help text names exists, and every default
it states ("key = value") is the setting's own, read from the settings (issue 45)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import click
import pytest
import typer.main
import yaml
from pydantic import BaseModel

from hss_gate.cli import app
from hss_gate.cli.common import shown
from hss_gate.settings import HssSettings, setting_default, setting_field
from tests.conftest import REPO

pytestmark = pytest.mark.unit

SECTIONS = [
    name
    for name, field in HssSettings.model_fields.items()
    if isinstance(field.annotation, type) and issubclass(field.annotation, BaseModel)
]
KEY = re.compile(rf"\b((?:{'|'.join(SECTIONS)})(?:\.[a-z_]+)+)(?: = ([^\s)]+))?")
"""A setting named in a text ("consistency.model"), with the value it states (" = entail")."""


def _commands(command: click.Command, path: str = "hss") -> Iterator[tuple[str, click.Command]]:
    yield path, command
    for name, sub in getattr(command, "commands", {}).items():
        yield from _commands(sub, f"{path} {name}")


def _help_texts() -> list[tuple[str, str, bool]]:
    """(where, text, is an option's) for every command's help and every parameter's help."""
    texts = []
    for path, command in _commands(typer.main.get_command(app)):
        texts.append((path, command.help or "", False))
        for param in command.params:
            where = f"{path} {'/'.join(param.opts)}"
            texts.append((where, getattr(param, "help", None) or "", True))
    return texts


def _stated(text: str) -> list[tuple[str, str | None]]:
    """The settings a text names, each with the value it states (None: no value stated)."""
    found = []
    for match in KEY.finditer(" ".join(text.split())):
        value = match.group(2)
        found.append((match.group(1), value.rstrip(",;.") if value is not None else None))
    return found


def _packaged_params(key: str) -> object:
    """The value the repository's params.yaml (the packaged one) gives `key`, or KeyError."""
    value: object = yaml.safe_load((REPO / "params.yaml").read_text(encoding="utf-8"))
    for part in key.split("."):
        if not isinstance(value, dict) or part not in value:
            raise KeyError(key)
        value = value[part]
    return value


def test_every_setting_a_help_text_names_exists():
    named = [(where, key) for where, text, _ in _help_texts() for key, _ in _stated(text)]
    assert len(named) >= 20  # the parser finds them (a broken pattern would find none)
    missing = []
    for where, key in named:
        try:
            setting_field(key)
        except KeyError:
            missing.append(f"{where}: {key}")
    assert missing == []


def test_every_stated_default_is_the_settings_own():
    """An option's help that names a setting as a default states its value, and that value is
    the setting's built-in default, which the repository's (packaged) params.yaml keeps."""
    wrong, checked = [], 0
    for where, text, is_option in _help_texts():
        for key, value in _stated(text):
            if value is None:
                if is_option and "default" in text:
                    wrong.append(f"{where}: names {key} as a default without its value")
                continue
            checked += 1
            actual = shown(setting_default(key))
            if value != actual:
                wrong.append(f"{where}: says {key} = {value}, the setting's default is {actual}")
            try:
                packaged = shown(_packaged_params(key))
            except KeyError:
                continue  # params.yaml leaves it to the built-in default
            if packaged != actual:
                wrong.append(f"{where}: params.yaml sets {key} = {packaged}, not {actual}")
    assert checked >= 15
    assert wrong == []


def test_the_check_catches_a_stale_default():
    """The issue's case: `--model` said invented-sbert was consistency.model's default."""
    assert _stated("invented-sbert (default: consistency.model), entail") == [
        ("consistency.model", None)
    ]
    ((key, value),) = _stated("the checker (default: consistency.model = invented-sbert)")
    assert shown(setting_default(key)) == "entail" != value


def test_factuality_help_in_a_pipe_names_the_true_default_on_one_line():
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "TERMINAL_WIDTH")}
    env["PYTHONPATH"] = str(REPO)
    done = subprocess.run(
        [sys.executable, "-m", "hss_gate", "factuality", "--help"],
        capture_output=True,
        text=True,
        env=env,
        cwd=Path(REPO),
        timeout=120,
        check=True,
    )
    (line,) = [line for line in done.stdout.splitlines() if "--model" in line]
    assert line.rstrip().endswith("(default: consistency.model = entail)")
    assert "invented-sbert (default" not in done.stdout and "\x1b[" not in done.stdout
