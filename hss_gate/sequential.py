"""A sequential gate: look at the documents in a fixed stratified order and stop as soon as the
decision is settled (pure).

Design: a group-sequential test with Bonferroni alpha spending. The documents are ordered
round-robin over their categories (every category in each look, the same order every run), and
looked at after every `look_size` documents, K looks in all. Each look's paired bootstrap CIs are
at level 1 - alpha/K, so the chance that any look wrongly finds a significant fall (a false
block) is at most alpha by the union bound, whatever the number of looks that are actually run.
A look settles the decision when

- the candidate is significantly worse (the gate's rule at that look's level): block, or
- it is clearly not worse on the signals that decide: every always-blocking margin's CI lies on
  the good side of it and no blocking check failed: promote (hss_gate.decision_rule).

Otherwise the next look adds documents. A corpus that runs out unsettled keeps the plain rule
(promote unless a fall is significant). tests/unit/test_sequential.py measures both error rates
by simulation.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any, TypeVar

T = TypeVar("T")

MIN_LOOK = 8
MAX_LOOKS = 5
"""At most this many looks: each look's CIs are at level 1 - alpha/K, so many small looks (a
corpus without categories has one) would cost more power than stopping early saves."""


def stratified_order(items: Sequence[T], category_of: Any) -> list[T]:
    """Round-robin over categories (in order of first appearance), each category's items in
    their own order: every prefix of the result covers the categories as evenly as it can."""
    by_category: dict[str, list[T]] = defaultdict(list)
    for item in items:
        by_category[category_of(item)].append(item)
    queues = list(by_category.values())
    out: list[T] = []
    for i in range(max((len(q) for q in queues), default=0)):
        out.extend(q[i] for q in queues if i < len(q))
    return out


def look_sizes(n_items: int, n_categories: int, full: bool = False) -> list[int]:
    """The document counts at which the gate looks: every category once per look, at least
    MIN_LOOK documents a look and at most MAX_LOOKS looks, the last look being all of them. A
    corpus without categories (one category) is looked at in MAX_LOOKS equal steps."""
    if full or n_items <= MIN_LOOK:
        return [n_items]
    step = max(n_categories, MIN_LOOK, math.ceil(n_items / MAX_LOOKS))
    sizes = list(range(step, n_items, step))
    return [*sizes, n_items] if sizes else [n_items]


def look_confidence(confidence: float, n_looks: int) -> float:
    """The per-look confidence level that keeps the overall error rate at 1 - confidence."""
    return 1.0 - (1.0 - confidence) / n_looks


def look_record(
    n: int, level: float, signals: Mapping[str, Mapping[str, float]], verdict: str
) -> dict[str, Any]:
    """One look as decision.json keeps it."""
    out: dict[str, Any] = {"documents": n, "confidence": round(level, 6), "verdict": verdict}
    for column, name in (
        ("base_consistency", "consistency"),
        ("base_unsupported_share", "unsupported"),
    ):
        s = signals.get(column)
        if s is not None:
            out[name] = {
                "difference": s["difference"],
                "ci": [s["ci_low"], s["ci_high"]],
            }
    return out
