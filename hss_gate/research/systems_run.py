"""`hss systems`: the system-level evaluation run (research/systems.py has the rule's side).

Reads a documents file and a file of several systems' human-judged summaries (frank_cnndm's
form), checks every summary with the chosen checker (verdicts cached by content and the
checker's fingerprint, hss_gate.scoring.pipeline.verdicts_cached, so a rerun is cheap), tags its
entities/numbers (cached too), then for every ordered pair of systems compares the humans'
paired difference with the gate's decision. Writes OUT/systems.md and OUT/systems.json.
`through_gate` also runs every pair through the real gate workflow (research/systems_gate.py).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hss_gate.common.cache import Cache
from hss_gate.common.errors import InputError
from hss_gate.common.io import write_json_atomic, write_text_atomic
from hss_gate.common.progress import Progress, no_progress
from hss_gate.research.systems import (
    HUMAN_LEVEL,
    SHARE_MARGIN,
    SHARE_MARGINS,
    agreement,
    document_row,
    evaluate_pairs,
    read_documents,
    read_judgements,
    read_summaries,
)
from hss_gate.research.systems_gate import GATE_KEY, gate_settings, spearman, through_gate
from hss_gate.scoring.pipeline import mentions_cached, verdicts_cached
from hss_gate.settings import GateSettings, HssSettings
from hss_gate.text.mentions import unsupported_share

BATCH = 25  # summaries checked between progress updates (and cache writes)
INVENTED = ("invented", "invented-sbert")


@dataclass(kw_only=True)
class SystemsRequest:
    """What to evaluate, with which checker, and where the tables go."""

    summaries: Path
    documents: Path
    out: Path
    checker: str | None = None  # default: consistency.model
    weights: Path | None = None  # invented kinds: a weights JSON instead of the shipped one
    threshold: float | None = None  # default: the checker's own
    consistency_margin: float | None = None  # default: the weights' margin, else gate's
    max_low_share: float | None = None  # default: the weights' max_low_share, else gate's
    label: str = "factual"
    entities: bool = True  # tag entities/numbers with spaCy (else their share is 0)
    through_gate: bool = False  # also run every pair through the real gate (`hss gate`)


@dataclass
class SystemsResult:
    """The pairs, the agreement counts per rule, and what was run."""

    rows: list[dict[str, Any]]
    agreement: dict[str, dict[str, int]]
    meta: dict[str, Any] = field(default_factory=dict)


def build_checker(
    settings: HssSettings, request: SystemsRequest, cache: Cache
) -> tuple[Any, GateSettings]:
    """The checker (the real one, built as hss_gate.scoring.toolkit.LazyChecker does, or an invented
    kind with `request.weights`) and the gate settings it decides with: its consistency margin
    and bound on the share it finds unsupported come from the request, else the weights (which
    state them in their score's units), else the settings."""
    from hss_gate.consistency.checker import CHECKERS, load_checker
    from hss_gate.consistency.model import cached_encoder
    from hss_gate.models.embedding import SbertEmbedder

    kind = request.checker or settings.consistency.model
    if kind not in CHECKERS:
        raise InputError(f"--checker: unknown '{kind}'; choose from {', '.join(CHECKERS)}")
    embedder = SbertEmbedder(settings.score.embedder)
    encode = cached_encoder(embedder, cache)
    if request.weights is None:
        checker = load_checker(
            kind,
            settings.consistency.weights_dir,
            request.threshold,
            encode,
            embedder.fingerprint,
            **settings.consistency.entail_options(),
        )
    elif kind not in INVENTED:
        raise InputError(f"--weights is for the checkers {', '.join(INVENTED)}, not '{kind}'")
    else:
        checker = _invented(kind, request, encode, embedder.fingerprint)
    return checker, gate_for(settings.gate, checker, request)


def _invented(kind: str, request: SystemsRequest, encode: Any, embedder: str) -> Any:
    from hss_gate.consistency.checker import load_checker
    from hss_gate.consistency.invented import load_invented_checker

    path = request.weights
    assert path is not None
    if not path.is_file():
        raise InputError(f"--weights {path}: no such file")
    sbert = load_checker("sbert", "", None, encode, embedder) if kind == "invented-sbert" else None
    try:
        return load_invented_checker(path, request.threshold, sbert=sbert)
    except (ValueError, KeyError, TypeError) as exc:
        raise InputError(f"--weights {path}: not usable invented weights ({exc})") from exc


def gate_for(gate: GateSettings, checker: Any, request: SystemsRequest) -> GateSettings:
    """The gate settings for this checker (see build_checker)."""
    weights = getattr(checker, "weights", None)
    margin, scale = request.consistency_margin, None
    if margin is None and weights is not None:
        margin, scale = weights.margin, "checker"  # the weights state it in their score's units
    share = request.max_low_share
    if share is None and weights is not None:
        share = weights.max_low_share
    update = {
        "consistency_margin": margin,
        "consistency_margin_scale": scale,
        "max_low_consistency_share": share,
    }
    return gate.model_copy(update={k: v for k, v in update.items() if v is not None})


def measure(
    documents: Mapping[str, str],
    summaries: Mapping[str, Mapping[str, str]],
    checker: Any,
    tagger: Any,
    cache: Cache,
    progress: Progress = no_progress,
) -> dict[str, list[dict[str, Any]]]:
    """system -> the gate's document rows of its summaries: each checked against its document
    (cached verdicts), its entities/numbers tagged (cached; without a tagger their share is 0)."""
    missing = sorted({d for s in summaries.values() for d in s if d not in documents})
    if missing:
        raise InputError(f"summaries of documents the documents file lacks: {missing[:5]}")
    items = [(s, d) for s in sorted(summaries) for d in sorted(summaries[s])]
    pairs = [(documents[d], summaries[s][d]) for s, d in items]
    advance = progress("check", len(pairs), 0)
    verdicts = []
    for start in range(0, len(pairs), BATCH):
        chunk = pairs[start : start + BATCH]
        verdicts += verdicts_cached(chunk, checker, cache)
        advance(len(chunk))
    shares = [0.0] * len(pairs)
    if tagger is not None:
        advance = progress("entities", len(pairs), 0)
        mentions = []
        for start in range(0, len(pairs), BATCH * 4):
            chunk = [summary for _, summary in pairs[start : start + BATCH * 4]]
            mentions += mentions_cached(chunk, tagger, cache)
            advance(len(chunk))
        shares = [unsupported_share(m, doc) for m, (doc, _) in zip(mentions, pairs, strict=True)]
    rows: dict[str, list[dict[str, Any]]] = {}
    for (system, doc_id), verdict, share in zip(items, verdicts, shares, strict=True):
        row = document_row(doc_id, verdict.consistency, checker.threshold, share, verdict.support)
        rows.setdefault(system, []).append(row)
    return rows


RULES = {
    "decision": "gate, sequential (as `hss gate`)",
    "single": "gate, single look (`hss gate --full`)",
    **{f"share_{m:g}": f"share rule alone, margin {m:g}" for m in SHARE_MARGINS},
    GATE_KEY: "`hss gate` itself (run_gate on summaries: URIs, sequential)",
}
"""The decisions compared with the humans', by the key they have in a row."""


def run_systems(
    request: SystemsRequest,
    settings: HssSettings,
    *,
    checker: Any = None,
    gate: GateSettings | None = None,
    tagger: Any = None,
    cache_dir: str | None = None,
    runner: Any = None,
    progress: Progress = no_progress,
    say: Callable[[str], None] = lambda line: None,
) -> SystemsResult:
    """Read, check, decide every ordered pair and write OUT/systems.md and systems.json.
    `checker` (with `gate`) and `tagger` replace the real ones (tests); `cache_dir`: default
    run.cache_dir; `runner`: the gate's model runner with `request.through_gate` (default a
    LocalRunner)."""
    if request.through_gate and request.weights is not None:
        raise InputError("--through-gate runs `hss gate`, which has no --weights: drop one")
    started = time.monotonic()
    documents = read_documents(request.documents)
    summaries = read_summaries(request.summaries)
    judgements = read_judgements(request.summaries, request.label)
    cache = Cache(cache_dir or settings.run.cache_dir)
    try:
        if checker is None:
            checker, gate = build_checker(settings, request, cache)
            if request.entities and tagger is None:
                from hss_gate.models.language import SpacyTagger

                tagger = SpacyTagger()
        gate = gate or settings.gate
        say(f"checker {checker.fingerprint}; threshold {checker.threshold:g}")
        rows = measure(documents, summaries, checker, tagger, cache, progress)
    finally:
        cache.close()
    measured = time.monotonic() - started
    n_pairs = len(rows) * (len(rows) - 1)
    advance = progress("pairs", n_pairs, 0)
    pairs = evaluate_pairs(
        rows, judgements, gate, confidence=settings.score.confidence, advance=advance
    )
    gated = time.monotonic()
    if request.through_gate:
        real = gate_settings(settings, gate, cache_dir, request.checker, request.threshold)
        runs = through_gate(
            pairs,
            summaries=request.summaries,
            documents=request.documents,
            out=request.out,
            settings=real,
            runner=runner,
            progress=progress,
            say=say,
        )
        for row in pairs:
            run = runs[(row["candidate"], row["production"])]
            row[GATE_KEY] = run["decision"]
            row["gate_run"] = run
    gated = time.monotonic() - gated
    rules = [k for k in RULES if k != GATE_KEY or request.through_gate]
    result = SystemsResult(
        pairs,
        {key: agreement(pairs, key) for key in rules},
        {
            "summaries": str(request.summaries),
            "documents": str(request.documents),
            "label": request.label,
            "systems": sorted(rows),
            "documents_per_system": {s: len(r) for s, r in rows.items()},
            "checker": checker.fingerprint,
            "threshold": checker.threshold,
            "weights": str(request.weights) if request.weights else None,
            "consistency_margin": gate.consistency_margin,
            "consistency_margin_scale": gate.consistency_margin_scale,
            "max_low_consistency_share": gate.max_low_consistency_share,
            "unsupported_margin": gate.unsupported_margin,
            "confidence": settings.score.confidence,
            "human_level": HUMAN_LEVEL,
            "entities": tagger is not None,
            "share_means": {
                s: sum(r["base_low_consistency"] for r in rs) / len(rs) for s, rs in rows.items()
            },
            "spearman": spearman(rows, request.summaries),
            "through_gate": request.through_gate,
            "seconds_measure": round(measured, 1),
            "seconds_through_gate": round(gated, 1) if request.through_gate else None,
            "seconds_total": round(time.monotonic() - started, 1),
        },
    )
    request.out.mkdir(parents=True, exist_ok=True)
    write_json_atomic(request.out / "systems.json", _jsonable(result))
    write_text_atomic(request.out / "systems.md", markdown(result))
    return result


def _jsonable(result: SystemsResult) -> dict[str, Any]:
    return json.loads(
        json.dumps(
            {"meta": result.meta, "agreement": result.agreement, "pairs": result.rows},
            default=float,
        )
    )


def _ci(value: Mapping[str, Any] | None, digits: int = 3) -> str:
    if not value:
        return "-"
    low, high = value["ci"]
    return f"{value['difference']:+.{digits}f} [{low:+.{digits}f}, {high:+.{digits}f}]"


def agreement_lines(counts: Mapping[str, Mapping[str, int]]) -> list[str]:
    """The agreement table (markdown), one row per rule."""
    lines = [
        "| rule | must block: blocked | must promote: promoted | neither: blocked / promoted "
        "| right of the settled pairs |",
        "|---|---|---|---|---|",
    ]
    for key, label in RULES.items():
        if key not in counts:
            continue
        c = counts[key]
        lines.append(
            f"| {label} | {c['worse_blocked']}/{c['worse']} | {c['better_promoted']}/{c['better']} "
            f"| {c['neither_blocked']} / {c['neither_promoted']} of {c['neither']} "
            f"| {c['right']}/{c['worse'] + c['better']} |"
        )
    return lines


def summary_line(counts: Mapping[str, Mapping[str, int]], key: str = "decision") -> str:
    """One line: the agreement counts of one rule."""
    c = counts[key]
    return (
        f"{RULES[key]}: must-block blocked {c['worse_blocked']}/{c['worse']}, must-promote "
        f"promoted {c['better_promoted']}/{c['better']}, neither: blocked {c['neither_blocked']}"
        f", promoted {c['neither_promoted']} of {c['neither']}"
    )


def _gate_cell(run: Mapping[str, Any] | None) -> str:
    """A pair's `hss gate` cell: decision, what decided, documents used, wall time."""
    if not run:
        return "-"
    by = ", ".join(run["decided_by"]) or "-"
    return f"{run['decision']} ({by}; {run['documents_used']}) {run['seconds']:.0f} s"


def spearman_lines(rank: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """The systems ranked by mean checker consistency against their human means (markdown)."""
    if not rank:
        return []
    labels = list(rank)
    first = rank[labels[0]]["means"]
    lines = [
        "| system | mean checker consistency | "
        + " | ".join(f"human mean `{label}`" for label in labels)
        + " |",
        "|---|---|" + "---|" * len(labels),
    ]
    for system in sorted(first, key=lambda s: -first[s]["consistency"]):
        cells = [f"{rank[label]['means'][system]['human']:.3f}" for label in labels]
        lines.append(f"| {system} | {first[system]['consistency']:.3f} | {' | '.join(cells)} |")
    lines.append("")
    lines += [
        f"Spearman rank correlation, mean consistency against human `{label}`: "
        + (
            f"rho {r['rho']:+.2f} (p {r['p']:.2f}, {r['systems']} systems)"
            if r["rho"] is not None
            else f"not defined (a constant ranking, {r['systems']} systems)"
        )
        for label, r in rank.items()
    ]
    return lines


def gate_agreement_line(rows: Sequence[Mapping[str, Any]]) -> str:
    """How often `hss gate` itself decided as the function-level sequential rule did, and its
    wall time per decision."""
    runs = [r for r in rows if r.get("gate_run")]
    if not runs:
        return ""
    same = sum(r[GATE_KEY] == r["decision"] for r in runs)
    seconds = [r["gate_run"]["seconds"] for r in runs]
    return (
        f"`hss gate` decided as the function-level sequential rule on {same} of {len(runs)} "
        f"pairs; {sum(seconds):.0f} s for {len(runs)} decisions ({min(seconds):.1f}-"
        f"{max(seconds):.1f} s, median {sorted(seconds)[len(seconds) // 2]:.1f} s per decision)."
    )


def summary_lines(result: SystemsResult, through_gate: bool) -> list[str]:
    """What `hss systems` prints under the agreement table: each rule's agreement counts, how
    often `hss gate` itself decided as the sequential rule (`through_gate`) and the systems'
    rank correlation."""
    lines = [
        summary_line(result.agreement, key)
        for key in ("decision", "single", "gate")
        if key in result.agreement
    ]
    if through_gate:
        lines.append(gate_agreement_line(result.rows))
    return lines + spearman_lines(result.meta["spearman"])


def _scale_text(meta: Mapping[str, Any]) -> str:
    """The margin's units when they are not the checker's own."""
    scale = meta.get("consistency_margin_scale", "checker")
    return "" if scale == "checker" else f" ({scale}: gate.consistency_margin_scale)"


def markdown(result: SystemsResult) -> str:
    """systems.md: what was run, the agreement table, the rank correlation and every pair."""
    m = result.meta
    gated = bool(m.get("through_gate"))
    lines = [
        "# System level: the gate against human judgements",
        "",
        f"Summaries {m['summaries']} (human label `{m['label']}`), documents {m['documents']}; "
        f"checker `{m['checker']}` (threshold {m['threshold']:g}"
        + (f", weights {m['weights']}" if m["weights"] else "")
        + f"); consistency margin {m['consistency_margin']:g}{_scale_text(m)}, max "
        "low-consistency share "
        f"{m['max_low_consistency_share']:g} (the floor; the bound is production's own share "
        "plus headroom), "
        f"unsupported margin {m['unsupported_margin']:g}; gate confidence {m['confidence']:g}; "
        f"human CI {m['human_level']:.0%} paired t; entities tagged: "
        f"{'yes' if m['entities'] else 'no'}. {m['seconds_total']:.0f} s "
        f"({m['seconds_measure']:.0f} s reading and checking"
        + (f", {m['seconds_through_gate']:.0f} s through `hss gate`" if gated else "")
        + ").",
        "",
        *agreement_lines(result.agreement),
        "",
    ]
    if gated:
        lines += [
            "`hss gate` column: each pair run through the gate workflow (run_gate) with "
            "`--candidate summaries:FILE?system=A --production summaries:FILE?system=B --corpus "
            "DOCUMENTS` and the margins above; decision (what decided; documents used) and its "
            "wall time. Outputs in OUT/gates/A-vs-B/.",
            "",
            gate_agreement_line(result.rows),
            "",
        ]
    lines += spearman_lines(m.get("spearman") or {})
    lines += [
        "",
        "| candidate vs production | human factual share | human diff [95% CI] | must | "
        "consistency diff [CI], one look | share unsupported diff [CI] | gate, sequential "
        "(documents) | gate, single look | share rule +0.02 |" + (" hss gate |" if gated else ""),
        "|---|---|---|---|---|---|---|---|---|" + ("---|" if gated else ""),
    ]
    for r in result.rows:
        low, high = r["human_ci"]
        lines.append(
            f"| {r['candidate']} vs {r['production']} | {r['human_candidate']:.2f} vs "
            f"{r['human_production']:.2f} | {r['human_difference']:+.3f} [{low:+.3f}, {high:+.3f}]"
            f" | {r['expected']} | {_ci(r['consistency'])} | {_ci(r['low_share'])} | "
            f"{r['decision']} ({r['documents_used']}) | {r['single']} | "
            f"{r[f'share_{SHARE_MARGIN:g}']} |"
            + (f" {_gate_cell(r.get('gate_run'))} |" if gated else "")
        )
    return "\n".join(lines) + "\n"
