"""Live-traffic monitoring: samples as documents, live summary signals, the verdict (pure)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from typing import Any

from hss_gate.corpus import Document
from hss_gate.errors import InputError
from hss_gate.sentences import ends_mid_sentence
from hss_gate.severity import bootstrap_ci, difference_bootstrap_ci
from hss_gate.signals import novel_ngram_share, unsupported_mentions, unsupported_share

EXIT_CODES = {"healthy": 0, "unhealthy": 1, "error": 2}


def samples_to_documents(samples: Sequence[Any]) -> list[Document]:
    """Production samples as documents to score (doc_id = sample_id)."""
    if not samples:
        raise InputError("the sample store has no samples to monitor; run `hss samples ingest`")
    return [
        Document(doc_id=s.sample_id, category=s.category, tier="live", text=s.document)
        for s in samples
    ]


def live_summary_signals(
    samples: Sequence[Any], mentions: Sequence[list[str]], ngram: int
) -> list[dict[str, Any]]:
    """Signals of the summaries production actually served (entity support, rewriting, cuts)."""
    return [
        {
            "doc_id": s.sample_id,
            "model_id": s.model_id,
            "timestamp": s.timestamp.isoformat(),
            "live_unsupported_share": unsupported_share(m, s.document),
            "live_unsupported": "; ".join(unsupported_mentions(m, s.document)),
            "live_novel_ngram_share": novel_ngram_share(s.summary, s.document, ngram),
            "live_truncated": ends_mid_sentence(s.summary),
            "live_n_words": len(s.summary.split()),
        }
        for s, m in zip(samples, mentions, strict=True)
    ]


def severity_rise(
    live: Sequence[float],
    reference: Sequence[float],
    *,
    margin: float,
    resamples: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
) -> dict[str, Any]:
    """Live mean HSS against the production reference: a rise is a CI above the margin."""
    diff, low, high = difference_bootstrap_ci(
        live, reference, resamples=resamples, level=confidence, seed=seed
    )
    live_low, live_high = bootstrap_ci(live, resamples=resamples, level=confidence, seed=seed)
    return {
        "live_mean": float(sum(live) / len(live)),
        "live_ci_low": live_low,
        "live_ci_high": live_high,
        "reference_mean": float(sum(reference) / len(reference)),
        "difference": diff,
        "ci_low": low,
        "ci_high": high,
        "margin": margin,
        "rise": low > margin,
        "n_live": len(live),
        "n_reference": len(reference),
    }


def monitor_verdict(
    rise: Mapping[str, Any],
    drift: Mapping[str, Any] | None,
    checks: Sequence[Mapping[str, Any]],
) -> tuple[str, list[str]]:
    """'unhealthy' on a significant severity rise, drift, or a failed suite check."""
    reasons = []
    if rise["rise"]:
        reasons.append(
            f"severity rise: live mean HSS {rise['live_mean']:.3f} vs reference "
            f"{rise['reference_mean']:.3f}, difference {rise['difference']:+.3f} "
            f"[{rise['ci_low']:+.3f}, {rise['ci_high']:+.3f}] beyond the margin {rise['margin']}"
        )
    if drift and drift.get("drifted"):
        reasons.append(
            "score distributions drifted from the production reference: "
            + ", ".join(drift.get("drifted_columns", []))
        )
    for check in checks:
        if not check["success"]:
            reasons.append(
                f"{check['kind']} check failed: {check['description']} "
                f"(observed {check['observed']})"
            )
    return ("unhealthy" if reasons else "healthy"), reasons


def sample_rows(
    scored: Sequence[Mapping[str, Any]], samples: Sequence[Any]
) -> list[dict[str, Any]]:
    """One report row per scored sample: HSS, unsupported mentions, the summary served."""
    served = {s.sample_id: s.summary for s in samples}
    return [
        {
            "doc_id": row["doc_id"],
            "category": row["category"],
            "hss": row["hss"],
            "live_unsupported": row["live_unsupported"],
            "live_summary": served[row["doc_id"]],
        }
        for row in scored
    ]


def run_record(result: Mapping[str, Any], started: dt.datetime) -> Any:
    """The store's record of one monitor run (the severity trend)."""
    from hss_gate.samples import MonitorRun

    rise = result.get("severity") or {}
    drift = result.get("drift") or {}
    return MonitorRun(
        run_id=result["run_id"],
        started_at=started,
        model=result["model"],
        n_samples=result["n_samples"],
        mean_hss=rise.get("live_mean"),
        ci_low=rise.get("live_ci_low"),
        ci_high=rise.get("live_ci_high"),
        drift=bool(drift.get("drifted")),
        drifted_columns=list(drift.get("drifted_columns", [])),
        decision=result["decision"],
        details={"reasons": list(result["reasons"])},
    )
