"""`hss systems --through-gate`: every ordered pair of systems through the real gate workflow
(hss_gate.workflows.gate.run_gate, as `hss gate --candidate summaries:FILE?system=A --production
summaries:FILE?system=B --corpus DOCUMENTS` runs it), in this process, one model runner and one
cache for every pair (each system's verdicts are computed once), beside the function-level
decisions of research/systems.py; and the rank correlation of the systems by mean checker
consistency with their human means.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from scipy import stats

from hss_gate.common.errors import InputError
from hss_gate.common.progress import Progress, no_progress
from hss_gate.models.summarizers.stored import SCHEME
from hss_gate.research.systems import read_judgements
from hss_gate.settings import GateSettings, HssSettings

GATE_KEY = "gate"
"""A pair's key for the real gate's decision (as `decision`, `single`, ... for the others)."""
HUMAN_LABELS = ("factual", "factuality")


def gate_settings(
    settings: HssSettings,
    gate: GateSettings,
    cache_dir: str | None,
    checker: str | None,
    threshold: float | None,
) -> HssSettings:
    """The settings the real gate runs with: the command's (params.yaml, HSS_* variables), with
    the gate settings the function-level rule used (its margins), the chosen checker and its
    threshold, and the shared cache."""
    update: dict[str, Any] = {"gate": gate}
    consistency = {"model": checker, "threshold": threshold}
    consistency = {k: v for k, v in consistency.items() if v is not None}
    if consistency:
        update["consistency"] = settings.consistency.model_copy(update=consistency)
    if cache_dir:
        update["run"] = settings.run.model_copy(update={"cache_dir": cache_dir})
    return settings.model_copy(update=update)


def uri(summaries: Path, system: str) -> str:
    """The `summaries:` URI of one system's summaries in the file."""
    return f"{SCHEME}:{summaries}?system={system}"


def gate_pair(
    candidate: str,
    production: str,
    *,
    summaries: Path,
    documents: Path,
    out: Path,
    settings: HssSettings,
    runner: Any,
    progress: Progress = no_progress,
) -> dict[str, Any]:
    """One pair through run_gate: decision, the rule that decided, documents used of those
    available, looks taken, wall time, and where decision.json is."""
    from hss_gate.workflows.gate import run_gate
    from hss_gate.workflows.gate_preparation import GateRequest

    request = GateRequest(
        candidate=uri(summaries, candidate),
        production=uri(summaries, production),
        corpus=str(documents),
        out=str(out),
    )
    started = time.monotonic()
    outcome = run_gate(lambda: settings, request, runner=runner, progress=progress)
    seconds = time.monotonic() - started
    decision = outcome.verdict
    sequential = decision.metrics.get("sequential") or {}
    return {
        "decision": decision.decision,
        "decided_by": list(decision.decided_by),
        "reasons": list(decision.reasons),
        "documents_used": sequential.get("documents_used"),
        "documents_available": sequential.get("documents_available"),
        "looks": len(sequential.get("looks", [])),
        "seconds": round(seconds, 1),
        "decision_json": str(outcome.out_dir / "decision.json"),
    }


def through_gate(
    pairs: Sequence[Mapping[str, Any]],
    *,
    summaries: Path,
    documents: Path,
    out: Path,
    settings: HssSettings,
    runner: Any = None,
    progress: Progress = no_progress,
    say: Callable[[str], None] = lambda line: None,
) -> dict[tuple[str, str], dict[str, Any]]:
    """Every pair (candidate, production) of `pairs` through the real gate, into
    OUT/gates/{candidate}-vs-{production}/; one progress line per pair with its wall time."""
    if runner is None:
        from hss_gate.scoring.runner import LocalRunner

        runner = LocalRunner()  # the models load once for every pair
    advance = progress("gate pairs", len(pairs), 0)
    out_of: dict[tuple[str, str], dict[str, Any]] = {}
    for i, row in enumerate(pairs, 1):
        a, b = str(row["candidate"]), str(row["production"])
        got = gate_pair(
            a,
            b,
            summaries=summaries,
            documents=documents,
            out=out / "gates" / f"{a}-vs-{b}",
            settings=settings,
            runner=runner,
            progress=progress,
        )
        out_of[(a, b)] = got
        advance(1)
        by = ", ".join(got["decided_by"]) or "-"
        say(
            f"gate {i}/{len(pairs)}: {a} vs {b}: {got['decision']} (by {by}; "
            f"{got['documents_used']}/{got['documents_available']} documents, {got['looks']} "
            f"look(s)) in {got['seconds']:.1f} s; function-level: {row.get('decision')}"
        )
    return out_of


def spearman(
    rows: Mapping[str, Sequence[Mapping[str, Any]]], summaries: Path
) -> dict[str, dict[str, Any]]:
    """The systems ranked by mean checker consistency against their human means (`factual`, and
    `factuality` when the file has it): Spearman's rho with each system's two means."""
    consistency = {s: float(np.mean([r["base_consistency"] for r in rs])) for s, rs in rows.items()}
    out: dict[str, dict[str, Any]] = {}
    for label in HUMAN_LABELS:
        try:
            judged = read_judgements(summaries, label)
        except (InputError, TypeError, ValueError):  # not a number on every summary: unused
            continue
        systems = sorted(s for s in consistency if judged.get(s))
        if len(systems) < 3:
            continue
        human = {s: float(np.mean(list(judged[s].values()))) for s in systems}
        x, y = [consistency[s] for s in systems], [human[s] for s in systems]
        if len(set(x)) < 2 or len(set(y)) < 2:  # a constant ranking: rho is not defined
            rho, p = None, None
        else:
            test = stats.spearmanr(x, y)
            rho, p = float(test.statistic), float(test.pvalue)
        out[label] = {
            "rho": rho,
            "p": p,
            "systems": len(systems),
            "means": {s: {"consistency": consistency[s], "human": human[s]} for s in systems},
        }
    return out
