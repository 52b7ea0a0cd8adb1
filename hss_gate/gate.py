"""The promotion decision: paired comparison with production, threshold checks, drift (pure).

Which signal blocks, at what threshold and at which look lives here and in hss_gate.gate_checks
(the checks); hss_gate.expectations only runs the checks. Every reason and note of a decision is
a `Finding` with a stable code (FINDING_CODES and hss_gate.gate_checks.CODES): reports, JUnit and
users' CI read the codes, never the English text.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, Field

from hss_gate.errors import InputError
from hss_gate.gate_checks import (
    EARLY_KINDS,
    check_blocks,
    check_code,
    enough_documents,
    signal_of,
)
from hss_gate.sequential import clearly_not_worse
from hss_gate.settings import GateSettings
from hss_gate.severity import bootstrap_ci, paired_bootstrap_ci, paired_t_ci

EXIT_CODES = {"promote": 0, "block": 1, "error": 2}
SCHEMA_VERSION = "2"  # of decision.json and monitor.json: 2 added schema_version and findings

# per-document signals compared between candidate and production: (column, label)
PAIRED_SIGNALS = (
    ("base_consistency", "factual consistency with the source (checker, 0-1)"),
    ("base_low_consistency", "summaries the checker finds unsupported"),
    ("base_unsupported_share", "entities/numbers unsupported by the source"),
    ("hss", "HSS"),
    ("hss_raw", "HSS, raw distance"),
    ("consistency_drop_mean", "consistency lost under meaning-preserving perturbation"),
    ("base_novel_ngram_share", "rewriting: novel n-gram share (1 - extractiveness)"),
    ("base_truncated", "summary ends mid-sentence"),
    ("base_n_words", "summary length (words)"),
)

# the paired signals measured from the perturbed summaries: "not measured" when either side has
# none (stored summaries without perturbed ones), never compared on NaN or made up
HSS_SIGNALS = ("hss", "hss_raw", "consistency_drop_mean")

NOT_MEASURED_TEXT = (
    "HSS not measured: the summaries file has no perturbed summaries (export them with "
    "`hss perturb`)"
)

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

# the paired signals that decide get a Student-t CI (calibrated at small n, simulated in
# tests/unit/test_sequential.py); the others a percentile bootstrap CI
DECIDING = ("base_consistency", "base_unsupported_share")

# the codes of the findings that do not come from a check (those have the check's code)
FINDING_CODES = {
    "consistency": "consistency fell significantly beyond gate.consistency_margin",
    "unsupported_entities": "unsupported entities/numbers rose beyond gate.unsupported_margin",
    "hss.rise": "HSS rose significantly beyond gate.margin",
    "drift": "the score distributions drifted from production",
    "hss.rewriting": "HSS read beside the rewriting (novel n-gram share)",
    "hss.paraphrase": "an HSS rise that looks like paraphrase, not factual error",
    "hss.not_measured": "HSS not measured (no perturbed summaries): its comparison and checks "
    "are skipped, the facts and form decide",
    "categories.too_small": "categories with fewer than gate.min_category_documents documents",
    "within_margins": "promoted: nothing blocked",
    "production.restored": "how production's summaries were obtained (the workflow)",
    "length.target": "the summary length the near-empty and overlong checks judge against, and "
    "where it came from (the workflow)",
    "documents.dropped": "stored summaries: documents without both summaries, dropped from "
    "the pairing, and summaries of doc_ids not in the corpus (the workflow)",
    "sequential.documents": "how many documents and looks decided (the workflow)",
    "facts.relative": "the facts bounds follow production's own values on the same documents",
    "override": "a person overrode a block",
    "error": "the gate could not decide",
}

RELATIVE_SHARE_HEADROOM = 0.10
"""A candidate's share of summaries the checker finds unsupported may exceed production's own
share on the same documents by this much before the facts check fails (the headroom the
reference calibration gave: bound 0.66 over production's 0.56 under the invented-sbert
checker, 0.50 over 0.40 under sbert; kept for entail: 0.33 over 0.23)."""


def facts_bounds_relative_to(
    gate: GateSettings, production: Sequence[Mapping[str, Any]]
) -> tuple[GateSettings, str]:
    """The facts bounds that block, relative to production on the same documents: production's
    own value plus a headroom, never below the absolute setting (the reported floor). So the
    decision rests on the paired comparison on any corpus, cased or lower-cased: production
    gated against itself always passes them. Returns the settings and a note saying so."""
    low = float(np.mean([float(r["base_low_consistency"]) for r in production]))
    unsupported = float(np.mean([float(r["base_unsupported_share"]) for r in production]))
    bounds = {
        "max_low_consistency_share": max(
            gate.max_low_consistency_share, min(1.0, low + RELATIVE_SHARE_HEADROOM)
        ),
        "max_unsupported_share": max(
            gate.max_unsupported_share, min(1.0, unsupported + gate.unsupported_margin)
        ),
    }
    note = (
        "the facts bounds follow production's own values on the same documents (unsupported "
        f"by the checker "
        f"<= {bounds['max_low_consistency_share']:.2f}, production {low:.2f}; unsupported "
        f"entities/numbers <= {bounds['max_unsupported_share']:.3f}, production "
        f"{unsupported:.3f}; floors {gate.max_low_consistency_share:.2f} and "
        f"{gate.max_unsupported_share:.3f}); the paired comparison decides"
    )
    return gate.model_copy(update=bounds), note


Effect = Literal["block", "advisory", "note", "promote", "error", "override", "overridden"]
REASON_EFFECTS = ("block", "promote", "error", "override", "overridden")


class Finding(BaseModel):
    """One reason or note of a decision: its stable code, the deciding signal it is about (a
    `decided_by` value), what it did to the decision, and its text. `check` names the check
    it comes from (table.name), if any."""

    code: str
    signal: str
    effect: Effect
    text: str
    check: str | None = None

    @property
    def is_reason(self) -> bool:
        """A reason (the decision's why) rather than a note (read with it)."""
        return self.effect in REASON_EFFECTS


class Decision(BaseModel):
    """decision.json: the contract the CI workflow and reviewers read. `reasons` and `notes`
    are the English texts of `findings`, which carry their codes."""

    schema_version: str = SCHEMA_VERSION
    decision: Literal["promote", "block", "error"]
    reasons: list[str]
    metrics: dict[str, Any] = Field(default_factory=dict)
    notes: list[str] = Field(default_factory=list)
    findings: list[Finding] = Field(default_factory=list)
    checks: list[dict[str, Any]] = Field(default_factory=list)
    drift: dict[str, Any] | None = None
    decided_by: list[str] = Field(default_factory=list)
    override: dict[str, Any] | None = None
    candidate: str = ""
    production: str = ""
    checker: str = ""
    created: str = ""
    hss_gate_version: str = ""

    @property
    def exit_code(self) -> int:
        return EXIT_CODES[self.decision]

    def add_note(self, code: str, text: str, signal: str = "") -> None:
        """Append a note (and its finding)."""
        self.notes.append(text)
        self.findings.append(Finding(code=code, signal=signal, effect="note", text=text))


def _texts(findings: Sequence[Finding]) -> dict[str, list[str]]:
    """The reasons and notes of findings, as a Decision keeps them."""
    return {
        "reasons": [f.text for f in findings if f.is_reason],
        "notes": [f.text for f in findings if not f.is_reason],
    }


def apply_override(decision: Decision, by: str, reason: str) -> Decision:
    """A human's recorded override of a block: the candidate is promoted, and the record keeps
    who overrode it, why, and what the gate had found. An error is never overridden (the gate
    could not decide, so there is nothing to override)."""
    if not by.strip() or not reason.strip():
        raise InputError("an override needs who (--override-by) and why (--override-reason)")
    if decision.decision != "block":
        return decision
    record = {
        "by": by.strip(),
        "reason": reason.strip(),
        "blocked_by": list(decision.decided_by),
        "blocked_reasons": list(decision.reasons),
    }
    text = f"block overridden by {record['by']}: {record['reason']}"
    findings = [Finding(code="override", signal="override", effect="override", text=text)]
    findings += [
        f.model_copy(update={"effect": "overridden", "text": f"(the gate had blocked: {f.text})"})
        if f.is_reason
        else f
        for f in _findings_of(decision)
    ]
    return decision.model_copy(
        update={
            "decision": "promote",
            "reasons": _texts(findings)["reasons"],
            "findings": findings,
            "decided_by": ["override"],
            "override": record,
        }
    )


def _findings_of(decision: Decision) -> list[Finding]:
    """A decision's findings; one made without them (e.g. by hand) gets uncoded ones."""
    if decision.findings:
        return list(decision.findings)
    effect: Effect = "block" if decision.decision == "block" else "promote"
    return [Finding(code="", signal="", effect=effect, text=r) for r in decision.reasons] + [
        Finding(code="", signal="", effect="note", text=n) for n in decision.notes
    ]


def error_decision(message: str, **context: Any) -> Decision:
    """The fail-closed decision when any step could not run."""
    text = f"could not decide: {message}"
    finding = Finding(code="error", signal="error", effect="error", text=text)
    return Decision(decision="error", reasons=[text], findings=[finding], **context)


def paired_rows(
    candidate: Sequence[Mapping[str, Any]], production: Sequence[Mapping[str, Any]]
) -> list[tuple[Mapping[str, Any], Mapping[str, Any]]]:
    """Candidate and production document rows paired by doc_id (both must cover the same set)."""
    prod = {r["doc_id"]: r for r in production}
    cand_ids = [r["doc_id"] for r in candidate]
    if set(cand_ids) != set(prod) or len(cand_ids) != len(prod):
        missing = sorted(set(prod) ^ set(cand_ids))[:5]
        raise InputError(f"candidate and production were scored on different documents: {missing}")
    if not cand_ids:
        raise InputError("no documents to compare")
    return [(r, prod[r["doc_id"]]) for r in candidate]


def _measured(row: Mapping[str, Any]) -> bool:
    value = row.get("hss")
    return value is not None and not np.isnan(float(value))


def hss_measured(
    candidate: Sequence[Mapping[str, Any]], production: Sequence[Mapping[str, Any]]
) -> bool:
    """Whether both sides measured HSS on every document (a run of stored summaries without
    perturbed ones has NaN there)."""
    return all(_measured(r) for r in (*candidate, *production))


def compare(
    candidate: Sequence[Mapping[str, Any]],
    production: Sequence[Mapping[str, Any]],
    *,
    resamples: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
) -> dict[str, Any]:
    """Paired means, differences and bootstrap CIs of every compared signal, and by category.
    When either side did not measure HSS (`hss_measured` false), the HSS signals, the
    categories' HSS and the candidate's HSS CI are left out: "not measured", never NaN or 0."""
    pairs = paired_rows(candidate, production)
    measured = hss_measured(candidate, production)
    signals: dict[str, Any] = {}
    for column, label in PAIRED_SIGNALS:
        if not all(column in c and column in p for c, p in pairs):
            continue
        if column in HSS_SIGNALS and not measured:
            continue
        a = [float(c[column]) for c, _ in pairs]
        b = [float(p[column]) for _, p in pairs]
        if column in DECIDING:
            diff, low, high = paired_t_ci(a, b, level=confidence)
        else:
            diff, low, high = paired_bootstrap_ci(
                a, b, resamples=resamples, level=confidence, seed=seed
            )
        signals[column] = {
            "label": label,
            "candidate": float(np.mean(a)),
            "production": float(np.mean(b)),
            "difference": diff,
            "ci_low": low,
            "ci_high": high,
        }
    if not measured:
        return {
            "documents": len(pairs),
            "confidence": confidence,
            "signals": signals,
            "categories": [],
            "candidate_hss_ci": None,
            "hss_measured": False,
            "hss_not_measured": NOT_MEASURED_TEXT,
        }
    categories = []
    for category in sorted({c["category"] for c, _ in pairs}):
        members = [(c, p) for c, p in pairs if c["category"] == category]
        cand = float(np.mean([c["hss"] for c, _ in members]))
        prod = float(np.mean([p["hss"] for _, p in members]))
        categories.append(
            {
                "category": category,
                "candidate_hss": cand,
                "production_hss": prod,
                "delta": cand - prod,
                "n": len(members),
            }
        )
    hss = [float(c["hss"]) for c, _ in pairs]
    low, high = bootstrap_ci(hss, resamples=resamples, level=confidence, seed=seed)
    return {
        "documents": len(pairs),
        "confidence": confidence,
        "signals": signals,
        "categories": categories,
        "candidate_hss_ci": [low, high],
        "hss_measured": True,
    }


def _fmt_diff(signal: Mapping[str, Any]) -> str:
    return (
        f"{signal['difference']:+.3f} [{signal['ci_low']:+.3f}, {signal['ci_high']:+.3f}] "
        f"({signal['candidate']:.3f} vs {signal['production']:.3f})"
    )


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
        *category_findings(comparison["categories"], gate),
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
        **_texts(ordered),
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
    reported (hss_gate.gate_checks.check_blocks)."""
    findings = []
    for check in checks:
        if check["success"]:
            continue
        observed = _observed(check["observed"])
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


def category_findings(categories: Sequence[Mapping[str, Any]], gate: GateSettings) -> list[Finding]:
    """One note when some categories have too few documents to be checked on their own (their
    per-category checks are not declared: hss_gate.gate_checks.category_checks)."""
    small = [c for c in categories if not enough_documents(int(c["n"]), gate)]
    if not small:
        return []
    text = (
        "per-category HSS not checked where a category has fewer than "
        f"{gate.min_category_documents} documents (gate.min_category_documents): "
        f"{len(small)} of {len(categories)} categories, at most {max(c['n'] for c in small)} "
        "document(s) each in this look"
    )
    return [Finding(code="categories.too_small", signal="hss", effect="note", text=text)]


def paired_findings(comparison: Mapping[str, Any], gate: GateSettings) -> list[Finding]:
    """The paired differences that go beyond their margins with confidence: consistency falls
    and unsupported entities/numbers rise (blocking), HSS rises (advisory unless
    gate.hss_blocks)."""
    signals, n = comparison["signals"], comparison["documents"]
    level = f"{round(comparison['confidence'] * 100)}%"
    findings = []
    consistency = signals.get("base_consistency")
    if consistency and consistency["ci_high"] < -gate.consistency_margin:
        text = (
            "the summaries' factual consistency fell beyond the margin "
            f"{gate.consistency_margin}: {_fmt_diff(consistency)}, paired Student-t {level} "
            f"CI over {n} documents"
        )
        findings.append(_judged("consistency", "consistency", text, blocks=True))
    unsupported = signals.get("base_unsupported_share")
    if unsupported and unsupported["ci_low"] > gate.unsupported_margin:
        text = (
            "the share of summary entities/numbers unsupported by the source rose beyond the "
            f"margin {gate.unsupported_margin}: {_fmt_diff(unsupported)}"
        )
        findings.append(_judged("unsupported_entities", "unsupported_entities", text, True))
    hss = signals.get("hss")
    if hss and hss["ci_low"] > gate.margin:
        text = (
            f"HSS rose significantly beyond the margin {gate.margin}: {_fmt_diff(hss)}, "
            f"paired bootstrap {level} CI over {n} documents"
        )
        findings.append(_judged("hss.rise", "hss", text, blocks=gate.hss_blocks))
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
    rewriting = signals.get("base_novel_ngram_share")
    hss = signals.get("hss")
    if not rewriting or not hss:
        return []
    notes = [
        Finding(
            code="hss.rewriting",
            signal="hss",
            effect="note",
            text=f"HSS {_fmt_diff(hss)} beside rewriting (novel n-gram share) "
            f"{_fmt_diff(rewriting)}: HSS moves with paraphrasing, so read an HSS change next "
            "to the rewriting change.",
        )
    ]
    facts_worse = any(f.signal in {"consistency", "unsupported_entities", "facts"} for f in blocks)
    if hss["ci_low"] > gate.margin and rewriting["ci_low"] > 0 and not facts_worse:
        text = (
            "the HSS rise comes with more rewriting and no significant loss of consistency or "
            "rise in unsupported entities/numbers: it looks like paraphrase, not factual error."
        )
        notes.append(Finding(code="hss.paraphrase", signal="hss", effect="note", text=text))
    return notes


def _metrics(
    comparison: Mapping[str, Any], checks: Sequence[Mapping[str, Any]], gate: GateSettings
) -> dict[str, Any]:
    signals, hss = comparison["signals"], comparison["signals"].get("hss")
    failed = sum(not c["success"] for c in checks)
    metrics = {
        "documents": comparison["documents"],
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
    consistency = signals.get("base_consistency")
    if consistency:
        metrics["consistency"] = {
            "candidate": consistency["candidate"],
            "production": consistency["production"],
            "difference": consistency["difference"],
            "difference_ci": [consistency["ci_low"], consistency["ci_high"]],
            "margin": gate.consistency_margin,
        }
    return metrics


def look_verdict(
    comparison: Mapping[str, Any],
    checks: Sequence[Mapping[str, Any]],
    gate: GateSettings,
    last: bool,
) -> str:
    """One look's verdict (hss_gate.sequential): "block" (significantly worse at this look's
    level), "promote" (clearly not worse, or the corpus ran out unsettled), or "continue".
    Before the last look only the paired signals and the EARLY_KINDS checks (data, the
    candidate not summarizing) can block: an absolute share measured on a few documents is too
    noisy to block on (it only holds back an early promotion)."""
    early = [c for c in checks if c["kind"] in EARLY_KINDS]
    if decide(comparison, checks if last else early, gate).decision == "block":
        return "block"
    margins = (gate.consistency_margin, gate.unsupported_margin)
    advisory = gate.advisory_kinds()
    if last or clearly_not_worse(comparison["signals"], checks, *margins, advisory):
        return "promote"
    return "continue"


def _observed(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.3f}"
    return str(value)
