"""The promotion decision: paired comparison with production, threshold checks, drift (pure)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, Field

from hss_gate.errors import InputError
from hss_gate.settings import GateSettings
from hss_gate.severity import bootstrap_ci, paired_bootstrap_ci, paired_t_ci

EXIT_CODES = {"promote": 0, "block": 1, "error": 2}

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

# what a failed check of each kind means for the decision: the deciding signal's name
CHECK_SIGNALS = {
    "summarizes": "not_summarizing",
    "facts": "facts",
    "output": "form",
    "data": "data",
    "hss": "hss",
}


class Decision(BaseModel):
    """decision.json: the contract the CI workflow and reviewers read."""

    decision: Literal["promote", "block", "error"]
    reasons: list[str]
    metrics: dict[str, Any] = Field(default_factory=dict)
    notes: list[str] = Field(default_factory=list)
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
    return decision.model_copy(
        update={
            "decision": "promote",
            "reasons": [f"block overridden by {record['by']}: {record['reason']}"]
            + [f"(the gate had blocked: {r})" for r in decision.reasons],
            "decided_by": ["override"],
            "override": record,
        }
    )


def error_decision(message: str, **context: Any) -> Decision:
    """The fail-closed decision when any step could not run."""
    return Decision(decision="error", reasons=[f"could not decide: {message}"], **context)


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


def compare(
    candidate: Sequence[Mapping[str, Any]],
    production: Sequence[Mapping[str, Any]],
    *,
    resamples: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
) -> dict[str, Any]:
    """Paired means, differences and bootstrap CIs of every compared signal, and by category."""
    pairs = paired_rows(candidate, production)
    signals: dict[str, Any] = {}
    for column, label in PAIRED_SIGNALS:
        if not all(column in c and column in p for c, p in pairs):
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
    signals = comparison["signals"]
    n = comparison["documents"]
    level = f"{round(comparison['confidence'] * 100)}%"
    blocking: list[tuple[str, str]] = []  # (signal, reason)
    notes: list[str] = []

    failed = [c for c in checks if not c["success"]]
    for check in failed:
        signal = CHECK_SIGNALS.get(check["kind"], check["kind"])
        observed = _observed(check["observed"])
        if check["kind"] == "summarizes":
            reason = (
                f"the candidate does not summarize: {check['description']} (observed {observed})"
            )
        else:
            reason = (
                f"{check['kind']} check failed on {check['table']}: {check['description']} "
                f"(observed {observed})"
            )
        if check["kind"] in gate.advisory_kinds():
            notes.append(f"advisory (reported, not blocking): {reason}")
        else:
            blocking.append((signal, reason))

    consistency = signals.get("base_consistency")
    if consistency and consistency["ci_high"] < -gate.consistency_margin:
        blocking.append(
            (
                "consistency",
                "the summaries' factual consistency fell beyond the margin "
                f"{gate.consistency_margin}: {_fmt_diff(consistency)}, paired Student-t {level} "
                f"CI over {n} documents",
            )
        )
    unsupported = signals.get("base_unsupported_share")
    if unsupported and unsupported["ci_low"] > gate.unsupported_margin:
        blocking.append(
            (
                "unsupported_entities",
                "the share of summary entities/numbers unsupported by the source rose beyond the "
                f"margin {gate.unsupported_margin}: {_fmt_diff(unsupported)}",
            )
        )
    hss = signals["hss"]
    hss_rise = hss["ci_low"] > gate.margin
    if hss_rise:
        reason = (
            f"HSS rose significantly beyond the margin {gate.margin}: {_fmt_diff(hss)}, "
            f"paired bootstrap {level} CI over {n} documents"
        )
        if gate.hss_blocks:
            blocking.append(("hss", reason))
        else:
            notes.append(f"advisory (reported, not blocking): {reason}")
    if drift and drift.get("drifted"):
        message = "score distributions drifted from production: " + ", ".join(
            drift.get("drifted_columns", [])
        )
        if gate.block_on_drift:
            blocking.append(("drift", message))
        else:
            notes.append(message)

    rewriting = signals.get("base_novel_ngram_share")
    if rewriting:
        notes.append(
            f"HSS {_fmt_diff(hss)} beside rewriting (novel n-gram share) {_fmt_diff(rewriting)}: "
            "HSS moves with paraphrasing, so read an HSS change next to the rewriting change."
        )
        facts_worse = any(
            s in {"consistency", "unsupported_entities", "facts"} for s, _ in blocking
        )
        if hss_rise and rewriting["ci_low"] > 0 and not facts_worse:
            notes.append(
                "the HSS rise comes with more rewriting and no significant loss of consistency or "
                "rise in unsupported entities/numbers: it looks like paraphrase, not factual error."
            )
    metrics = {
        "documents": n,
        "hss_candidate": hss["candidate"],
        "hss_production": hss["production"],
        "hss_difference": hss["difference"],
        "hss_difference_ci": [hss["ci_low"], hss["ci_high"]],
        "hss_candidate_ci": comparison["candidate_hss_ci"],
        "margin": gate.margin,
        "checks_passed": len(checks) - len(failed),
        "checks_failed": len(failed),
        "signals": signals,
        "categories": comparison["categories"],
    }
    if consistency:
        metrics["consistency"] = {
            "candidate": consistency["candidate"],
            "production": consistency["production"],
            "difference": consistency["difference"],
            "difference_ci": [consistency["ci_low"], consistency["ci_high"]],
            "margin": gate.consistency_margin,
        }
    blocking.sort(
        key=lambda item: PRIORITY.index(item[0]) if item[0] in PRIORITY else len(PRIORITY)
    )
    decided_by = list(dict.fromkeys(signal for signal, _ in blocking))
    return Decision(
        decision="block" if blocking else "promote",
        reasons=[r for _, r in blocking]
        or [
            "no check failed; the summaries' consistency did not fall and their unsupported "
            "entities/numbers did not rise significantly beyond the margins"
        ],
        metrics=metrics,
        notes=notes,
        checks=[dict(c) for c in checks],
        drift=dict(drift) if drift else None,
        decided_by=decided_by or ["consistency", "unsupported_entities", "checks"],
        **context,
    )


def _observed(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.3f}"
    return str(value)
