"""One typed settings source: params.yaml, overridden by HSS_* environment variables.

Nested keys use a double underscore: HSS_PERTURB__TAU=0.7 overrides perturb.tau. Layers, the
first that sets a key wins: explicit overrides (CLI options) > HSS_* environment > ./params.yaml
> the packaged params.yaml of an installed wheel (hss_gate/common/packaged.py) > the defaults below.

This module holds `HssSettings` and its loading; the sections are declared beside it, by what
they set: `scoring.py` (perturb, generate, score, consistency; a candidate's own generation
settings), `decisions.py` (gate, monitor, alert) and `jobs.py` (run, baseline, checker,
experiment). Every name is imported from here: `from hss_gate.settings import GateSettings`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, Field, ValidationError
from pydantic.fields import FieldInfo
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

from hss_gate.common.errors import InputError
from hss_gate.common.packaged import packaged_path
from hss_gate.settings.decisions import (
    AlertSettings,
    GateAttributionSettings,
    GateSettings,
    MonitorSettings,
)
from hss_gate.settings.jobs import (
    BaselineSettings,
    CheckerDocuments,
    CheckerSettings,
    CheckerStage,
    ExperimentSettings,
    RunSettings,
)
from hss_gate.settings.scoring import (
    CANDIDATE_GENERATE_KEYS,
    CHECKER_NAMES,
    JUDGE_PREFIX,
    STRENGTH_ORDER,
    TOKENS_PER_WORD,
    WORDS_PER_SENTENCE,
    ConsistencySettings,
    GenerateSettings,
    PerturbSettings,
    ScoreSettings,
    candidate_generate,
    judge_endpoint,
    read_candidate_file,
)

__all__ = [
    "CANDIDATE_GENERATE_KEYS",
    "CHECKER_NAMES",
    "JUDGE_PREFIX",
    "PACKAGED_BASELINE",
    "PACKAGED_INPUTS",
    "SCHEMA_CHANGES",
    "SCHEMA_VERSION",
    "STRENGTH_ORDER",
    "TOKENS_PER_WORD",
    "TOP_LEVEL_KEYS",
    "UNVERSIONED",
    "WORDS_PER_SENTENCE",
    "AlertSettings",
    "BaselineSettings",
    "CheckerDocuments",
    "CheckerSettings",
    "CheckerStage",
    "ConsistencySettings",
    "ExperimentSettings",
    "GateAttributionSettings",
    "GateSettings",
    "GenerateSettings",
    "HssSettings",
    "MonitorSettings",
    "PerturbSettings",
    "RunSettings",
    "ScoreSettings",
    "candidate_generate",
    "check_schema",
    "is_project",
    "judge_endpoint",
    "load_settings",
    "read_candidate_file",
    "setting_default",
    "setting_field",
    "use_packaged_inputs",
    "user_cache_dir",
    "version_mismatch",
    "with_param",
]

SCHEMA_VERSION = 3
"""The layout of params.yaml this version reads (its top-level key `schema_version`)."""
UNVERSIONED = 1
"""A params.yaml without `schema_version` has the layout of version 1 (before the key existed)."""
SCHEMA_CHANGES: dict[int, tuple[str, ...]] = {
    2: (
        "consistency.top_k and consistency.chunk_words removed (the entail checker reads each "
        "summary sentence against its evidence: consistency.evidence_top, "
        "consistency.evidence_neighbours)",
        "consistency.aggregate: min made the default (softmin added)",
        "checker.snli_pairs, checker.documents, checker.epochs and checker.learning_rate moved "
        "into checker.stages (each stage: snli_pairs, documents, labelled, epochs, "
        "learning_rate); checker.documents' per_document and llm_per_document became "
        "sentences and summaries; checker.llm_model, llm_claims, llm_words removed (hss checker "
        "claims is gone)",
    ),
    3: (
        "gate.consistency_margin changed units: gate.consistency_margin_scale defaults to "
        "standardized (0.45 of production's per-document standard deviation, never below "
        "gate.consistency_margin_floor 0.05; about the old 0.10 on the reference corpus); to "
        "keep a margin in the checker's units set gate.consistency_margin_scale: checker",
    ),
}
"""For each schema_version after the first: the keys it renamed, moved or changed in meaning
(e.g. "run.corpus -> run.corpora"), named in the error a params.yaml of an older version gets
when it holds one of their sections (the text before the first dot)."""

CHANGED_SETTINGS: dict[int, tuple[str, ...]] = {3: ("gate.consistency_margin",)}
"""The versions whose change is one setting's meaning: a file that sets another key of its
section reads the same, so only the named settings are refused."""

TOP_LEVEL_KEYS = ("schema_version", "hss_gate_version")
"""params.yaml's top-level keys that hold a value, not a section of settings."""

PACKAGED_INPUTS = ("run.corpus", "run.baseline_dir", "score.normalization", "monitor.reference")
"""The input paths a command without them in the working folder reads from the packaged data."""
PACKAGED_BASELINE = ("run.baseline_dir", "score.normalization", "monitor.reference")
"""Of those, the baseline's: production's run on the packaged corpus."""


class HssSettings(BaseSettings):
    """All settings of hss-gate. Source order: init args > env (HSS_*) > params.yaml > defaults."""

    model_config = SettingsConfigDict(env_prefix="HSS_", env_nested_delimiter="__", extra="ignore")

    schema_version: int = Field(
        SCHEMA_VERSION, ge=1, description="the params.yaml layout (settings.SCHEMA_CHANGES)"
    )
    hss_gate_version: str | None = Field(
        None,
        description="the hss-gate version a project's baseline is built with (`hss init` writes "
        "the installed one; its dvc.yaml stages depend on it, so an upgrade is a change)",
    )
    run: RunSettings = Field(default_factory=RunSettings)
    baseline: BaselineSettings = Field(default_factory=BaselineSettings)
    perturb: PerturbSettings = Field(default_factory=PerturbSettings)
    generate: GenerateSettings = Field(default_factory=GenerateSettings)
    score: ScoreSettings = Field(default_factory=ScoreSettings)
    consistency: ConsistencySettings = Field(default_factory=ConsistencySettings)
    checker: CheckerSettings = Field(default_factory=CheckerSettings)
    gate: GateSettings = Field(default_factory=GateSettings)
    monitor: MonitorSettings = Field(default_factory=MonitorSettings)
    experiment: ExperimentSettings = Field(default_factory=ExperimentSettings)
    alert: AlertSettings = Field(default_factory=AlertSettings)

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        return (init_settings, env_settings)


def setting_field(key: str) -> FieldInfo:
    """The declaration of the setting `key` ("section.name", or deeper: "gate.attribution.method"):
    its default and description. KeyError when no setting has that name."""
    model: Any = HssSettings
    *sections, name = key.split(".")
    for section in sections:
        model = model.model_fields[section].annotation
        if not (isinstance(model, type) and issubclass(model, BaseModel)):
            raise KeyError(f"{key}: {section} is not a section of settings")
    return model.model_fields[name]


def setting_default(key: str) -> Any:
    """The built-in default of the setting `key` (what it is when no params.yaml, HSS_* variable
    or option sets it)."""
    return setting_field(key).get_default(call_default_factory=True)


def _read_params(path: Path) -> dict[str, Any]:
    if not path.exists():
        return {}
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as exc:  # one line: the line number and the problem, no excerpt
        mark = getattr(exc, "problem_mark", None)
        where = f"{path}:{mark.line + 1}" if mark is not None else str(path)
        problem = getattr(exc, "problem", None) or type(exc).__name__
        raise InputError(f"{where}: invalid YAML ({problem})") from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: cannot read the params file ({exc})") from exc
    if not isinstance(data, dict):
        raise InputError(f"{path}: expected a mapping at the top level")
    data = {section: _on_key(values) for section, values in data.items() if values is not None}
    _check_keys(path, data)
    return data


def _on_key(values: Any) -> Any:
    """YAML 1.1 reads a bare `on:` key (alert.on) as the boolean true: give it its name back."""
    if isinstance(values, dict) and True in values and "on" not in values:
        return {("on" if key is True else key): v for key, v in values.items()}
    return values


def _check_keys(path: Path, data: dict[str, Any]) -> None:
    """Unknown sections and keys are refused: a misspelt key would silently keep its default."""
    sections = HssSettings.model_fields
    for section, values in data.items():
        if section in TOP_LEVEL_KEYS:
            continue  # values, not sections: schema_version is checked by check_schema
        if section not in sections:
            known = ", ".join(name for name in sections if name not in TOP_LEVEL_KEYS)
            hint = (
                ""
                if is_project(data)
                else "; another tool's file? give hss-gate its own: --params FILE"
            )
            raise InputError(f"{path}: unknown section '{section}' (known: {known}){hint}")
        if not isinstance(values, dict):
            raise InputError(f"{path}: section '{section}' must be a mapping of settings")
        model = sections[section].annotation
        if isinstance(model, type) and issubclass(model, BaseModel):
            for key in values:
                if key not in model.model_fields:
                    raise InputError(
                        f"{path}: unknown setting '{section}.{key}' "
                        f"(a typo? known: {', '.join(model.model_fields)})"
                    )


def with_param(text: str, section: str, key: str, value: str, note: str) -> str:
    """params.yaml's text with `section.key` set to `value` (its line's comment replaced by
    `note`; the key is added to the section when missing, the section when absent)."""
    lines = text.splitlines()
    line = f"  {key}: {value}"
    entry = f"{line:<41}# {note}"
    start = next((i for i, t in enumerate(lines) if t.rstrip() == f"{section}:"), None)
    if start is None:
        return text.rstrip("\n") + f"\n\n{section}:\n{entry}\n"
    end = next(
        (i for i in range(start + 1, len(lines)) if lines[i] and not lines[i][0].isspace()),
        len(lines),
    )
    for i in range(start + 1, end):
        if lines[i].startswith(f"  {key}:"):
            lines[i] = entry
            break
    else:
        lines.insert(start + 1, entry)
    return "\n".join(lines) + "\n"


def _holds(data: Mapping[str, Any], version: int) -> bool:
    """Does a params.yaml hold what schema `version` changed?"""
    if version in CHANGED_SETTINGS:
        return any(
            isinstance(data.get(section), Mapping) and key in data[section]
            for section, key in (name.split(".", 1) for name in CHANGED_SETTINGS[version])
        )
    return any(change.split(".", 1)[0] in data for change in SCHEMA_CHANGES[version])


def check_schema(path: Path, data: Mapping[str, Any]) -> None:
    """Refuse a params.yaml of another layout: an older one with the keys that changed since,
    a newer one with the advice to upgrade hss-gate."""
    version = data.get("schema_version", UNVERSIONED)
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise InputError(f"{path}: schema_version must be a whole number >= 1, got {version!r}")
    if version > SCHEMA_VERSION:
        raise InputError(
            f"{path}: schema_version {version} is newer than this hss-gate reads "
            f"({SCHEMA_VERSION}): upgrade hss-gate"
        )
    later = range(version + 1, SCHEMA_VERSION + 1)
    changed = [key for v in later for key in SCHEMA_CHANGES[v]]
    # an older file is refused only when it holds what a later version changed (the setting
    # where CHANGED_SETTINGS names it, else its section): one that sets none means the same today
    if any(_holds(data, v) for v in later):
        raise InputError(
            f"{path}: schema_version {version} is older than {SCHEMA_VERSION}; changed since: "
            f"{'; '.join(changed)}: update them and set schema_version: {SCHEMA_VERSION}"
        )


def is_project(data: Mapping[str, Any]) -> bool:
    """Does this params.yaml's content make its folder an hss-gate project (a known section or
    the schema_version key)?"""
    return any(key in HssSettings.model_fields for key in data)


def user_cache_dir(environ: Mapping[str, str]) -> Path:
    """hss-gate's folder in the user's cache: $XDG_CACHE_HOME/hss-gate, else ~/.cache/hss-gate."""
    base = environ.get("XDG_CACHE_HOME") or str(Path(environ.get("HOME") or Path.home()) / ".cache")
    return Path(base) / "hss-gate"


def load_settings(
    params_path: str | Path = "params.yaml", *, defaults: str | Path | None = None, **overrides: Any
) -> HssSettings:
    """Read params.yaml (if present) over the packaged defaults file `defaults` (if given), apply
    HSS_* env vars, then explicit overrides. Outside a project (no params.yaml with an hss-gate
    section) run.models_dir, unless set, is the user's cache folder: models are shared between
    folders instead of landing in whatever folder the command runs in."""
    path = Path(params_path)
    data = _read_params(path)
    check_schema(path, data)
    project = is_project(data)
    own_run = dict(data.get("run") or {})
    if defaults is not None:
        data = _deep_merge(_read_params(Path(defaults)), data)
    data.pop("schema_version", None)  # the file's layout, checked above; not a setting to carry
    known = set(HssSettings.model_fields)
    try:
        from_env = HssSettings()  # env beats the file
        set_by_env = from_env.model_dump(exclude_unset=True)
        merged = _deep_merge(data, set_by_env)
        for key, value in overrides.items():
            section, _, field = key.partition("__")
            merged.setdefault(section, {})[field] = value
        chosen = {*own_run, *set_by_env.get("run", {})} | {
            k for k in overrides if k == "run__models_dir"
        }
        if not project and not chosen & {"models_dir", "run__models_dir"}:
            merged.setdefault("run", {})["models_dir"] = str(user_cache_dir(os.environ) / "models")
        return HssSettings(**{k: v for k, v in merged.items() if k in known})
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        why = first["msg"].removeprefix("Value error, ")
        raise InputError(f"{path}: invalid setting '{where}': {why}") from exc


def version_mismatch(settings: HssSettings, installed: str) -> str | None:
    """A project's baseline built with another hss-gate than the installed one: what to do."""
    pinned = settings.hss_gate_version
    if pinned is None or pinned == installed:
        return None
    return (
        f"params: hss_gate_version {pinned}, installed {installed}: set it to {installed} and "
        f"rebuild the baseline (dvc repro), or install hss-gate {pinned}"
    )


def use_packaged_inputs(
    settings: HssSettings,
    root: Path | None,
    keys: tuple[str, ...] = PACKAGED_INPUTS,
    cwd: Path | None = None,
) -> list[str]:
    """Point each input path of `keys` (section.key) that the working folder `cwd` lacks at its
    packaged copy (hss_gate/common/packaged.py), in place; returns "key (path)" for each one
    replaced.
    The baseline's paths only while the corpus is the packaged one too: the packaged baseline
    is production's run on that corpus, not on a corpus of the user's."""
    if root is None:
        return []
    here = Path.cwd() if cwd is None else cwd
    notes = []
    own_corpus = packaged_path(settings.run.corpus, root) is None or (
        (here / settings.run.corpus).exists()
    )
    for dotted in keys:
        if own_corpus and dotted in PACKAGED_BASELINE:
            continue  # the packaged baseline belongs to the packaged corpus only
        section, _, key = dotted.partition(".")
        part = getattr(settings, section)
        value = getattr(part, key)
        if not value or (here / value).exists():
            continue
        packaged = packaged_path(value, root)
        if packaged is not None:
            setattr(part, key, str(packaged))
            notes.append(f"{dotted} ({value})")
    return notes


def _deep_merge(base: dict[str, Any], top: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in top.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _deep_merge(out[key], value)
        else:
            out[key] = value
    return out
