"""The one decision rule (pure): a look's paired comparison, check results and drift into a
verdict. Every margin is read by name from the registered signals' `Margin`s
(hss_gate.signals: which setting, which direction is worse, which switch makes it
block); which check kinds block is `check_blocks`; early looks block only on `EARLY_KINDS`.
`hss gate`'s looks and `hss systems` both judge a look with `judge_look`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from hss_gate.decision.paired_comparison import NOT_MEASURED_TEXT, difference_text, observed_text
from hss_gate.decision.record import Decision, Effect, Finding, texts_of
from hss_gate.settings import GateSettings
from hss_gate.signals import margins, relative_bounds, rewriting

MARGINS = margins()  # every paired comparison that can block, from the registered signals
HSS_MARGIN = next(m for m in MARGINS if m.signal == "hss")
CONSISTENCY_MARGIN = next(m for m in MARGINS if m.signal == "consistency")
REWRITING = rewriting.SIGNAL.paired[0].column  # read beside HSS

# check kinds reported, not blocking, unless their GateSettings switch is on
KIND_SWITCHES = {"hss": "hss_blocks", "output": "form_blocks"}

# the deciding signal (a `decided_by` value) a failed check of each kind gives
SIGNAL_OF_KIND = {
    "summarizes": "not_summarizing",
    "facts": "facts",
    "output": "form",
    "data": "data",
    "hss": "hss",
}

# check kinds that may block before the last look: an absolute share measured on a few
# documents is too noisy to block on (it only holds back an early promotion)
EARLY_KINDS = ("data", "summarizes")


def advisory_kinds(gate: GateSettings) -> tuple[str, ...]:
    """The check kinds that are reported but do not block."""
    return tuple(kind for kind, switch in KIND_SWITCHES.items() if not getattr(gate, switch))


def check_blocks(kind: str, gate: GateSettings) -> bool:
    """Whether a failed check of this kind blocks a promotion (the rest are reported)."""
    return kind not in advisory_kinds(gate)


def signal_of(kind: str) -> str:
    """The deciding signal a failed check of this kind gives."""
    return SIGNAL_OF_KIND.get(kind, kind)


def check_code(check: Mapping[str, Any]) -> str:
    """A check result's code (a result without one, e.g. from an older decision.json, gets
    `<signal>.<name>`)."""
    return str(check.get("code") or f"{signal_of(check['kind'])}.{check.get('name', '')}")


def enough_documents(n: int, gate: GateSettings) -> bool:
    """Whether a category has enough documents for its own check (gate.min_category_documents)."""
    return n >= gate.min_category_documents


# the order in which deciding signals are reported: a candidate that does not summarize first
PRIORITY = (
    "not_summarizing",
    "consistency",
    "unsupported_entities",
    "facts",
    "form",
    "data",
    "hss",
    "drift",
)


def facts_bounds_relative_to(
    gate: GateSettings, production: Sequence[Mapping[str, Any]]
) -> tuple[GateSettings, str]:
    """The facts bounds that block, relative to production on the same documents (the
    registered signals' `RelativeBound`s): production's own value plus a headroom, never below
    the absolute setting (the reported floor). So the decision rests on the paired comparison on
    any corpus, cased or lower-cased: production gated against itself always passes them.
    Returns the settings and a note saying so."""
    bounds, parts, floors = {}, [], []
    for bound in relative_bounds():
        own = float(np.mean([float(r[bound.column]) for r in production]))
        floor = float(getattr(gate, bound.setting))
        value = max(floor, min(1.0, own + bound.headroom_of(gate)))
        bounds[bound.setting] = value
        d = bound.digits
        parts.append(f"{bound.label} <= {value:.{d}f}, production {own:.{d}f}")
        floors.append(f"{floor:.{d}f}")
    note = (
        "the facts bounds follow production's own values on the same documents ("
        + "; ".join(parts)
        + f"; floors {' and '.join(floors)}); the paired comparison decides"
    )
    return gate.model_copy(update=bounds), note


def _fmt_diff(signal: Mapping[str, Any]) -> str:
    return f"{difference_text(signal)} ({signal['candidate']:.3f} vs {signal['production']:.3f})"


def decide(
    comparison: Mapping[str, Any],
    checks: Sequence[Mapping[str, Any]],
    gate: GateSettings,
    *,
    drift: Mapping[str, Any] | None = None,
    **context: Any,
) -> Decision:
    """Block when the candidate does not summarize, when its summaries' facts get worse
    (consistency falls or unsupported entities rise significantly beyond their margins, or a
    facts check fails), or when a data or form check fails; HSS rises and HSS checks block only
    with `gate.hss_blocks` (otherwise they are reported beside the facts); drift blocks only
    with `gate.block_on_drift`. `decided_by` names the signals that decided."""
    findings = [
        *check_findings(checks, gate),
        *category_findings(comparison["categories"], gate, comparison.get("hss_documents")),
        *paired_findings(comparison, gate),
        *drift_findings(drift, gate),
    ]
    blocks = sorted((f for f in findings if f.effect == "block"), key=_priority)
    findings += reading_notes(comparison["signals"], gate, blocks)
    findings += not_measured_findings(comparison)
    promoted = Finding(
        code="within_margins",
        signal="checks",
        effect="promote",
        text="no check failed; the summaries' consistency did not fall and their unsupported "
        "entities/numbers did not rise significantly beyond the margins",
    )
    ordered = (blocks or [promoted]) + [f for f in findings if f.effect != "block"]
    decided_by = list(dict.fromkeys(f.signal for f in blocks))
    return Decision(
        decision="block" if blocks else "promote",
        **texts_of(ordered),
        findings=ordered,
        metrics=_metrics(comparison, checks, gate),
        checks=[dict(c) for c in checks],
        drift=dict(drift) if drift else None,
        decided_by=decided_by or ["consistency", "unsupported_entities", "checks"],
        **context,
    )


def _priority(finding: Finding) -> int:
    return PRIORITY.index(finding.signal) if finding.signal in PRIORITY else len(PRIORITY)


def _judged(code: str, signal: str, text: str, blocks: bool, check: str | None = None) -> Finding:
    """A finding that blocks, or is reported as advisory."""
    if blocks:
        return Finding(code=code, signal=signal, effect="block", text=text, check=check)
    text = f"advisory (reported, not blocking): {text}"
    return Finding(code=code, signal=signal, effect="advisory", text=text, check=check)


def check_findings(checks: Sequence[Mapping[str, Any]], gate: GateSettings) -> list[Finding]:
    """A finding for every failed check: blocking, or advisory for the kinds that are only
    reported (`check_blocks`)."""
    findings = []
    for check in checks:
        if check["success"]:
            continue
        observed = observed_text(check)
        if check["kind"] == "summarizes":
            text = f"the candidate does not summarize: {check['description']} (observed {observed})"
        else:
            text = (
                f"{check['kind']} check failed on {check['table']}: {check['description']} "
                f"(observed {observed})"
            )
        where = f"{check['table']}.{check.get('name', '')}"
        blocks = check_blocks(check["kind"], gate)
        findings.append(
            _judged(check_code(check), signal_of(check["kind"]), text, blocks, check=where)
        )
    return findings


def category_findings(
    categories: Sequence[Mapping[str, Any]], gate: GateSettings, hss_documents: int | None = None
) -> list[Finding]:
    """One note when some categories have too few documents to be checked on their own (their
    per-category checks are not declared: hss_gate.decision.checks.category_checks), counted
    among the `hss_documents` HSS was measured on when it was measured on fewer (facts first)."""
    small = [c for c in categories if not enough_documents(int(c["n"]), gate)]
    if not small:
        return []
    where = (
        "in this look"
        if hss_documents is None
        else f"among the {hss_documents} documents HSS was measured on (gate.hss_documents)"
    )
    text = (
        "per-category HSS not checked where a category has fewer than "
        f"{gate.min_category_documents} documents (gate.min_category_documents): "
        f"{len(small)} of {len(categories)} categories, at most {max(c['n'] for c in small)} "
        f"document(s) each {where}"
    )
    return [Finding(code="categories.too_small", signal="hss", effect="note", text=text)]


def paired_findings(comparison: Mapping[str, Any], gate: GateSettings) -> list[Finding]:
    """The paired differences that go beyond their margins with confidence (`MARGINS`):
    consistency falls and unsupported entities/numbers rise (blocking), HSS rises (advisory
    unless gate.hss_blocks)."""
    signals, n = comparison["signals"], comparison["documents"]
    level = f"{round(comparison['confidence'] * 100)}%"
    findings = []
    for margin in MARGINS:
        stats = signals.get(margin.column)
        if stats and margin.beyond(stats, gate):
            text = margin.text.format(
                margin=margin.text_of(gate, stats),
                diff=_fmt_diff(stats),
                level=level,
                n=stats.get("documents", n),
            )
            findings.append(_judged(margin.code, margin.signal, text, margin.blocks(gate)))
    return findings


def not_measured_findings(comparison: Mapping[str, Any]) -> list[Finding]:
    """A note when HSS was not measured: its comparison and checks were skipped (not passed,
    not failed) and the facts, form and the candidate summarizing decided."""
    if comparison.get("hss_measured", True):
        return []
    text = (
        f"{comparison.get('hss_not_measured') or NOT_MEASURED_TEXT}; the HSS comparison and the "
        "HSS checks were skipped (neither passed nor failed): the facts, form and "
        "summarizes checks decided"
    )
    return [Finding(code="hss.not_measured", signal="hss", effect="note", text=text)]


def drift_findings(drift: Mapping[str, Any] | None, gate: GateSettings) -> list[Finding]:
    """Drift of the score distributions: blocking with gate.block_on_drift, else reported."""
    if not (drift and drift.get("drifted")):
        return []
    text = "score distributions drifted from production: " + ", ".join(
        drift.get("drifted_columns", [])
    )
    effect: Effect = "block" if gate.block_on_drift else "advisory"
    return [Finding(code="drift", signal="drift", effect=effect, text=text)]


def reading_notes(
    signals: Mapping[str, Any], gate: GateSettings, blocks: Sequence[Finding]
) -> list[Finding]:
    """HSS beside rewriting, and whether an HSS rise looks like paraphrase (more rewriting and
    no fact got worse)."""
    rewriting_change = signals.get(REWRITING)
    hss = signals.get(HSS_MARGIN.column)
    if not rewriting_change or not hss:
        return []
    notes = [
        Finding(
            code="hss.rewriting",
            signal="hss",
            effect="note",
            text=f"HSS {_fmt_diff(hss)} beside rewriting (novel n-gram share) "
            f"{_fmt_diff(rewriting_change)}: HSS moves with paraphrasing, so read an HSS change "
            "next to the rewriting change.",
        )
    ]
    facts_worse = any(f.signal in {"consistency", "unsupported_entities", "facts"} for f in blocks)
    if HSS_MARGIN.beyond(hss, gate) and rewriting_change["ci_low"] > 0 and not facts_worse:
        text = (
            "the HSS rise comes with more rewriting and no significant loss of consistency or "
            "rise in unsupported entities/numbers: it looks like paraphrase, not factual error."
        )
        notes.append(Finding(code="hss.paraphrase", signal="hss", effect="note", text=text))
    return notes


def _metrics(
    comparison: Mapping[str, Any], checks: Sequence[Mapping[str, Any]], gate: GateSettings
) -> dict[str, Any]:
    signals, hss = comparison["signals"], comparison["signals"].get(HSS_MARGIN.column)
    failed = sum(not c["success"] for c in checks)
    metrics = {
        "documents": comparison["documents"],
        **({"hss_documents": comparison["hss_documents"]} if "hss_documents" in comparison else {}),
        "hss_measured": hss is not None,
        "hss_candidate": hss["candidate"] if hss else None,
        "hss_production": hss["production"] if hss else None,
        "hss_difference": hss["difference"] if hss else None,
        "hss_difference_ci": [hss["ci_low"], hss["ci_high"]] if hss else None,
        "hss_candidate_ci": comparison["candidate_hss_ci"],
        "margin": gate.margin,
        "checks_passed": len(checks) - failed,
        "checks_failed": failed,
        "signals": signals,
        "categories": comparison["categories"],
    }
    if hss is None:
        metrics["hss_not_measured"] = comparison.get("hss_not_measured") or NOT_MEASURED_TEXT
    consistency = signals.get(CONSISTENCY_MARGIN.column)
    if consistency:
        metrics["consistency"] = {
            "candidate": consistency["candidate"],
            "production": consistency["production"],
            "difference": consistency["difference"],
            "difference_ci": [consistency["ci_low"], consistency["ci_high"]],
            "margin": CONSISTENCY_MARGIN.of(gate, consistency),
            "margin_scale": CONSISTENCY_MARGIN.scale_of(gate),
        }
    return metrics


def clearly_not_worse(
    signals: Mapping[str, Mapping[str, float]],
    checks: Sequence[Mapping[str, Any]],
    gate: GateSettings,
) -> bool:
    """Every margin that always blocks is inside with confidence and no blocking check failed:
    more documents would not change a promotion."""
    deciding = [m for m in MARGINS if m.switch is None]
    if any(signals.get(m.column) is None for m in deciding):
        return False
    failed = [c for c in checks if not c["success"] and check_blocks(c["kind"], gate)]
    return not failed and all(m.inside(signals[m.column], gate) for m in deciding)


def look_verdict(
    comparison: Mapping[str, Any],
    checks: Sequence[Mapping[str, Any]],
    gate: GateSettings,
    last: bool,
) -> str:
    """One look's verdict (hss_gate.decision.sequential): "block" (significantly worse at this
    look's
    level), "promote" (clearly not worse, or the corpus ran out unsettled), or "continue".
    Before the last look only the paired signals and the EARLY_KINDS checks (data, the
    candidate not summarizing) can block: an absolute share measured on a few documents is too
    noisy to block on (it only holds back an early promotion)."""
    early = [c for c in checks if c["kind"] in EARLY_KINDS]
    if decide(comparison, checks if last else early, gate).decision == "block":
        return "block"
    if last or clearly_not_worse(comparison["signals"], checks, gate):
        return "promote"
    return "continue"


@dataclass(frozen=True)
class LookJudgement:
    """A look's verdict, its check results and the settings (facts bounds) they were run at."""

    verdict: str
    checks: list[dict[str, Any]]
    gate: GateSettings


def judge_look(
    comparison: Mapping[str, Any],
    production: Sequence[Mapping[str, Any]],
    gate: GateSettings,
    run_checks: Callable[[GateSettings], Sequence[Mapping[str, Any]]],
    *,
    last: bool,
    relative: bool = True,
) -> LookJudgement:
    """One look of the gate, as `hss gate` and `hss systems` both take it: the facts bounds
    relative to production on the same documents (`relative`), the checks run at them, the
    verdict."""
    at = facts_bounds_relative_to(gate, production)[0] if relative else gate
    checks = [dict(c) for c in run_checks(at)]
    return LookJudgement(look_verdict(comparison, checks, at, last=last), checks, at)
