"""A gate run prepared: what to gate, who is compared, and the run the gate's steps share.

The request (`GateRequest`, built by `gate_request` from `hss gate`'s and the gate flow's
options), where the decision goes (`Where`, completed as the settings load so that a
fail-closed decision says what is known), and the gate's first two steps (hss_gate.workflows.gate):

1. `prepare`: load the settings, the candidate's own generation settings, the documents (only
   those both sides have, with stored summaries) and the production constants; the length target
   of the length checks; build both summarizers (a bad URI fails before any scoring);
2. `restore_production`: production's stored summaries back into the cache when its
   fingerprint matches the baseline's.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from hss_gate import __version__
from hss_gate.common.errors import InputError
from hss_gate.common.inputs import load_normalization
from hss_gate.common.redact import redacted_uri
from hss_gate.models.summarizers.stored import SCHEME as SUMMARIES_SCHEME
from hss_gate.models.summarizers.stored import Pairing, StoredSummarizer, pair_documents
from hss_gate.scoring.normalization import Normalization
from hss_gate.settings import HssSettings, candidate_generate, read_candidate_file
from hss_gate.text.corpus import Document
from hss_gate.workflows.shared import check_model, load_documents, restore_summaries
from hss_gate.workflows.steps import ModelRunner, Say, Steps


@dataclass(kw_only=True)
class GateRequest:
    """What to gate: the candidate, production (default run.production_model) and where.
    Built by field name only, so a new field cannot shift the others."""

    candidate: str | None
    production: str | None = None
    corpus: str | None = None
    limit: int | None = None
    out: str | None = None
    candidate_generate: dict[str, Any] = field(default_factory=dict)  # its own prompt, budget
    candidate_file: str | Path | None = None  # models/candidate.yaml: uri, generate
    junit: str | Path | None = None  # also write the checks as JUnit XML here
    full: bool = False  # every document, no sequential stopping
    override: tuple[str, str] | None = None  # (who, why): a human's override of a block
    summary_words: int | None = None  # the length target of the length checks (and prompts)


def override_request(by: str | None, reason: str | None) -> tuple[str, str] | None:
    """A GateRequest's override from --override-by and --override-reason: None when neither is
    given; one without the other is refused when the override is applied."""
    return (by or "", reason or "") if by or reason else None


def gate_request(
    *,
    candidate: str | None,
    production: str | None = None,
    corpus: str | None = None,
    limit: int | None = None,
    out: str | None = None,
    candidate_prompt: str | None = None,
    candidate_config: str | Path | None = None,
    junit: str | Path | None = None,
    full: bool = False,
    override_by: str | None = None,
    override_reason: str | None = None,
    summary_words: int | None = None,
) -> GateRequest:
    """The GateRequest from the user's options, `hss gate`'s and the gate flow's alike: the
    candidate's own prompt (--candidate-prompt) as its generation settings, its YAML file
    (--candidate-config), and the override from --override-by and --override-reason."""
    return GateRequest(
        candidate=candidate,
        production=production,
        corpus=corpus,
        limit=limit,
        out=out,
        candidate_generate={"prompt": candidate_prompt} if candidate_prompt else {},
        candidate_file=candidate_config,
        junit=junit,
        full=full,
        override=override_request(override_by, override_reason),
        summary_words=summary_words,
    )


def decision_context(candidate: str, production: str | None) -> dict[str, str]:
    """Who was compared, when, by which hss-gate version (a Decision's context fields)."""
    return {
        "candidate": redacted_uri(candidate),
        "production": redacted_uri(production or ""),
        "created": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "hss_gate_version": __version__,
    }


@dataclass
class Where:
    """Who is compared and where the decision goes: known before anything can fail and
    completed as the settings load, so that a fail-closed decision says what is known."""

    candidate: str
    production: str | None
    out_dir: Path

    def context(self) -> dict[str, str]:
        """The Decision's context fields."""
        return decision_context(self.candidate, self.production)


@dataclass
class Role:
    """One of the two compared models: its role, URI and the settings it generates with."""

    name: str
    uri: str
    settings: HssSettings


@dataclass
class GateRun:
    """What the gate's steps share once the settings, documents and constants are loaded."""

    settings: HssSettings
    out_dir: Path
    candidate: Role
    production: Role
    docs: list[Document]
    norm: Normalization
    pairing: Pairing | None = None  # stored summaries: the documents both sides have
    length_target: tuple[int, str] | None = None  # (words, where it came from)

    @property
    def roles(self) -> tuple[Role, Role]:
        """The candidate, then production (the order they are scored in)."""
        return self.candidate, self.production


def candidate_settings(settings: HssSettings, own: Mapping[str, Any]) -> HssSettings:
    """The settings the candidate generates with: production's, with its own generation
    settings (prompt, system prompt, token budget) on top."""
    generate = candidate_generate(settings.generate, dict(own))
    return settings.model_copy(update={"generate": generate})


def prepare(
    load_settings: Callable[[], HssSettings],
    request: GateRequest,
    where: Where,
    runner: ModelRunner,
    steps: Steps,
) -> GateRun:
    """Load the settings, the candidate (its URI and own generation settings, from the request
    or its file), the documents and the production constants; build both summarizers, so a
    bad URI fails before any scoring."""
    settings = steps.io(load_settings)
    where.out_dir = Path(request.out or settings.gate.out)
    where.production = where.production or settings.run.production_model
    file_uri, file_generate = (
        read_candidate_file(request.candidate_file) if request.candidate_file else (None, {})
    )
    where.candidate = request.candidate or file_uri or ""
    if not where.candidate:
        raise InputError("no candidate: give --candidate URI or a candidate file with a `uri`")
    corpus = request.corpus or settings.run.corpus
    docs = steps.io(load_documents, corpus, request.limit)
    norm = steps.io(load_normalization, settings.score.normalization)
    own = candidate_settings(settings, file_generate | request.candidate_generate)
    run = GateRun(
        settings,
        where.out_dir,
        Role("candidate", where.candidate, own),
        Role("production", where.production, settings),
        docs,
        norm,
    )
    for role in run.roles:
        steps.compute(check_model, role.uri, role.settings, runner.toolkit(settings).embedder)
    held = {role.name: steps.io(stored_document_ids, role.uri) for role in run.roles}
    if any(ids is not None for ids in held.values()):
        run.pairing = steps.compute(pair_documents, [d.doc_id for d in docs], held)
        run.docs = paired_documents(docs, run.pairing, settings.gate.max_dropped_share)
    stored = steps.io(stored_summary_words, run.production.uri, [d.doc_id for d in run.docs])
    run.length_target = length_target(request.summary_words, stored, settings)
    if request.summary_words is not None or stored:  # else each side keeps its own
        for role in run.roles:
            update = {"summary_words": run.length_target[0]}
            generate = role.settings.generate.model_copy(update=update)
            role.settings = role.settings.model_copy(update={"generate": generate})
    return run


def stored_summary_words(uri: str, doc_ids: Sequence[str]) -> list[int] | None:
    """The word counts of a `summaries:` URI's summaries of these documents; None for a model
    that generates its own."""
    scheme, _, target = uri.partition(":")
    if scheme != SUMMARIES_SCHEME:
        return None
    summaries = StoredSummarizer.from_target(target).summaries
    return [len(summaries[d].split()) for d in doc_ids if d in summaries]


def length_target(
    stated: int | None, production_words: Sequence[int] | None, settings: HssSettings
) -> tuple[int, str]:
    """The length the summarizes checks (near-empty, overlong) judge against: the stated one
    (--summary-words), else the median length of production's stored summaries, else the length
    the prompt asks for (generate.summary_words)."""
    if stated is not None:
        if stated < 1:
            raise InputError("--summary-words must be at least 1")
        return stated, "--summary-words"
    if production_words:
        median = max(1, round(float(np.median(production_words))))
        return median, "the median length of production's stored summaries"
    return settings.generate.summary_words, "generate.summary_words (the length asked for)"


def stored_document_ids(uri: str) -> set[str] | None:
    """The doc_ids a `summaries:` URI's file has summaries of; None for a model that generates
    its own summaries (it has every document)."""
    scheme, _, target = uri.partition(":")
    if scheme != SUMMARIES_SCHEME:
        return None
    return StoredSummarizer.from_target(target).document_ids()


def paired_documents(docs: list[Document], pairing: Pairing, max_share: float) -> list[Document]:
    """The documents both runs have summaries of; a one-line error when more than
    gate.max_dropped_share of the corpus is dropped (never a silent mismatch)."""
    if not pairing.kept or pairing.share_dropped() > max_share:
        raise InputError(
            f"{pairing.text()}: more than gate.max_dropped_share {max_share:.0%} of the corpus "
            "(check that both summaries files and the corpus share doc_ids)"
        )
    kept = set(pairing.kept)
    return [d for d in docs if d.doc_id in kept]


def restore_production(run: GateRun, runner: ModelRunner, steps: Steps, say: Say) -> str:
    """Production's stored summaries and perturbations back into the cache when its
    fingerprint matches the baseline's; one line saying what happened."""
    production = run.production
    if production.uri.partition(":")[0] == SUMMARIES_SCHEME:
        restored = "read from its summaries file (nothing generated, nothing restored)"
        say(f"production: {restored}")
        return restored
    stored = Path(run.settings.run.baseline_dir) / "reference"
    tools = runner.toolkit(run.settings)
    restored = steps.io(
        restore_summaries, stored, production.uri, run.docs, production.settings, tools
    )
    say(f"production: {restored}")
    return restored
