"""The promotion decision: paired comparison with production, threshold checks, drift (pure)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, Field

from hss_gate.errors import InputError
from hss_gate.settings import GateSettings
from hss_gate.severity import bootstrap_ci, paired_bootstrap_ci

EXIT_CODES = {"promote": 0, "block": 1, "error": 2}

# per-document signals compared between candidate and production: (column, label)
PAIRED_SIGNALS = (
    ("hss", "HSS"),
    ("hss_raw", "HSS, raw distance"),
    ("base_unsupported_share", "entities/numbers unsupported by the source"),
    ("base_novel_ngram_share", "rewriting: novel n-gram share (1 - extractiveness)"),
    ("base_truncated", "summary ends mid-sentence"),
    ("base_n_words", "summary length (words)"),
)


class Decision(BaseModel):
    """decision.json: the contract the CI workflow and reviewers read."""

    decision: Literal["promote", "block", "error"]
    reasons: list[str]
    metrics: dict[str, Any] = Field(default_factory=dict)
    notes: list[str] = Field(default_factory=list)
    checks: list[dict[str, Any]] = Field(default_factory=list)
    drift: dict[str, Any] | None = None
    candidate: str = ""
    production: str = ""
    created: str = ""
    hss_gate_version: str = ""

    @property
    def exit_code(self) -> int:
        return EXIT_CODES[self.decision]


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
    """Block when a suite check fails, HSS or the unsupported share rises significantly beyond
    its margin, or (if configured) the score distributions drift; otherwise promote."""
    signals = comparison["signals"]
    n = comparison["documents"]
    level = f"{round(comparison['confidence'] * 100)}%"
    reasons: list[str] = []
    notes: list[str] = []

    hss = signals["hss"]
    hss_rise = hss["ci_low"] > gate.margin
    if hss_rise:
        reasons.append(
            f"HSS rose significantly beyond the margin {gate.margin}: {_fmt_diff(hss)}, "
            f"paired bootstrap {level} CI over {n} documents"
        )
    unsupported = signals.get("base_unsupported_share")
    if unsupported and unsupported["ci_low"] > gate.unsupported_margin:
        reasons.append(
            "the share of summary entities/numbers unsupported by the source rose beyond the "
            f"margin {gate.unsupported_margin}: {_fmt_diff(unsupported)}"
        )
    failed = [c for c in checks if not c["success"]]
    for check in failed:
        reasons.append(
            f"{check['kind']} check failed on {check['table']}: {check['description']} "
            f"(observed {_observed(check['observed'])})"
        )
    if drift and drift.get("drifted"):
        message = "score distributions drifted from production: " + ", ".join(
            drift.get("drifted_columns", [])
        )
        (reasons if gate.block_on_drift else notes).append(message)

    rewriting = signals.get("base_novel_ngram_share")
    if rewriting:
        notes.append(
            f"HSS {_fmt_diff(hss)} beside rewriting (novel n-gram share) {_fmt_diff(rewriting)}: "
            "HSS moves with paraphrasing, so read an HSS change next to the rewriting change."
        )
        factual_rise = unsupported is not None and unsupported["ci_low"] > gate.unsupported_margin
        if hss_rise and rewriting["ci_low"] > 0 and not factual_rise:
            notes.append(
                "the HSS rise comes with more rewriting and no significant rise in unsupported "
                "entities/numbers: it may be paraphrase rather than factual error; review the "
                "summaries before overriding."
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
    return Decision(
        decision="block" if reasons else "promote",
        reasons=reasons or ["no check failed and HSS did not rise significantly beyond the margin"],
        metrics=metrics,
        notes=notes,
        checks=[dict(c) for c in checks],
        drift=dict(drift) if drift else None,
        **context,
    )


def _observed(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.3f}"
    return str(value)
