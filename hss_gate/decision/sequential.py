"""A sequential gate: look at the documents in a fixed stratified order and stop as soon as the
decision is settled (pure).

Design: a group-sequential test with alpha spending. The documents are ordered round-robin over
their categories (every category in each look, the same order every run), and looked at after
each planned number of documents (`look_plan`: gate.looks, or by default every `look_sizes`
step), K looks in all. Look k's paired CIs are at level 1 - alpha_k, the alpha_k summing to
alpha (`look_levels`: equal shares, Bonferroni, Haybittle-Peto's fixed small share at each
interim look, or the increments of a Lan-DeMets spending function), so the chance that any
look wrongly finds a significant fall (a false block) is at most alpha by the union bound,
whatever the number of looks that are actually run. A look settles the decision when

- the candidate is significantly worse (the gate's rule at that look's level): block, or
- it is clearly not worse on the signals that decide: every always-blocking margin's CI lies on
  the good side of it and no blocking check failed: promote (hss_gate.decision.rule).

Otherwise the next look adds documents. A corpus that runs out unsettled keeps the plain rule
(promote unless a fall is significant). tests/unit/test_sequential.py measures both error rates
by simulation; scripts/look_plan_simulation.py compares look plans and spending functions.

Facts first (`hss_plan`): HSS, which needs every document's perturbed summaries, is measured on
the first documents of the same order only (gate.hss_documents) unless it blocks; the other
documents get only their original's summary, which the deciding signals read.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import pairwise
from statistics import NormalDist
from typing import Any, TypeVar

T = TypeVar("T")

MIN_LOOK = 8
MAX_LOOKS = 5
"""At most this many looks (a corpus without categories has one category, so the first look
would otherwise be MIN_LOOK documents however large the corpus)."""


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
    """The document counts at which the gate looks (gate.looks unset): the first look every
    category once and at least MIN_LOOK documents, each next look twice the last, the last look
    all of them, at most MAX_LOOKS looks (48 documents in 12 categories: 12, 24, 48). Doubling
    with O'Brien-Fleming spending (the default) had the power of one look at the end and
    stopped clearly worse candidates at half the corpus (docs/FACTUALITY.md, look plan)."""
    if full or n_items <= MIN_LOOK:
        return [n_items]
    size = max(n_categories, MIN_LOOK, math.ceil(n_items / 2 ** (MAX_LOOKS - 1)))
    sizes = []
    while size < n_items:
        sizes.append(size)
        size *= 2
    return [*sizes, n_items]


def look_confidence(confidence: float, n_looks: int) -> float:
    """The per-look confidence level that keeps the overall error rate at 1 - confidence."""
    return 1.0 - (1.0 - confidence) / n_looks


@dataclass(frozen=True)
class LookPlan:
    """The document counts at which the gate looks, and what was changed from the setting to
    fit the corpus (empty when nothing was)."""

    sizes: list[int]
    note: str = ""


def look_plan(
    n_items: int, n_categories: int, configured: Sequence[int] | None, full: bool = False
) -> LookPlan:
    """The looks: `configured` (gate.looks) when set, else `look_sizes`; `full`: one look of
    every document. A configured count at or beyond the corpus's size gives way to it (the
    corpus is the last look, said in `note`); documents after the last configured look are
    not used."""
    if full or not configured:
        return LookPlan(look_sizes(n_items, n_categories, full))
    sizes = [n for n in configured if n < n_items]
    if len(sizes) == len(configured):
        return LookPlan(list(configured))
    sizes.append(n_items)
    beyond = [n for n in configured if n > n_items]
    note = (
        f"gate.looks {list(configured)}: {', '.join(map(str, beyond))} beyond the corpus's "
        f"{n_items} documents, so the looks are {sizes}"
        if beyond
        else ""
    )
    return LookPlan(sizes, note)


HAYBITTLE_PETO_INTERIM = 0.001
"""Haybittle-Peto's error rate at each interim look (z about 3.3 two-sided, Haybittle 1971,
Peto 1976), at most half the error rate shared over the interim looks; the last look keeps the
rest. The classic value, not tuned here."""


def spent(spending: str, alpha: float, t: float) -> float:
    """The error rate a Lan-DeMets spending function has spent by information fraction t
    (0-1): Pocock's alpha ln(1 + (e - 1) t), O'Brien-Fleming's 2 - 2 Phi(z_{1-alpha/2} / sqrt t)."""
    if t <= 0.0:
        return 0.0
    if spending == "pocock":
        return alpha * math.log(1.0 + (math.e - 1.0) * min(t, 1.0))
    if spending == "obrien-fleming":
        normal = NormalDist()
        return 2.0 - 2.0 * normal.cdf(normal.inv_cdf(1.0 - alpha / 2.0) / math.sqrt(min(t, 1.0)))
    raise ValueError(f"unknown alpha spending {spending!r}")


def look_levels(
    confidence: float, sizes: Sequence[int], spending: str = "bonferroni"
) -> list[float]:
    """Each look's confidence level, the looks' error rates summing to 1 - confidence:
    bonferroni gives every look the same share (`look_confidence`); haybittle-peto every interim
    look HAYBITTLE_PETO_INTERIM and the last look the rest; pocock and obrien-fleming give look
    k the increment of their spending function between the previous look's share of the last
    look's documents and its own."""
    if spending == "bonferroni":
        return [look_confidence(confidence, len(sizes))] * len(sizes)
    if spending == "haybittle-peto":
        alpha, interims = 1.0 - confidence, len(sizes) - 1
        each = min(HAYBITTLE_PETO_INTERIM, alpha / (2 * interims)) if interims else 0.0
        return [1.0 - each] * interims + [1.0 - (alpha - each * interims)]
    alpha, last = 1.0 - confidence, sizes[-1]
    spent_by = [spent(spending, alpha, n / last) for n in sizes]
    increments = [b - a for a, b in pairwise([0.0, *spent_by])]
    return [1.0 - a for a in increments]


@dataclass(frozen=True)
class HssPlan:
    """HSS measured on the first `documents` of the looks' order (every document when
    `every`), and what the decision says of it (empty when HSS is measured everywhere as
    asked)."""

    documents: int
    every: bool
    text: str


def hss_plan(
    subset: str | int, hss_blocks: bool, sizes: Sequence[int], n_items: int, n_categories: int
) -> HssPlan:
    """Which documents HSS is measured on (gate.hss_documents resolved: "first_look", "all" or
    a count). first_look: the first look's documents, or the first one of each category when
    the first look is smaller; a count below the number of categories would leave a category
    without HSS, a clear error; one beyond the corpus gives way to it (said)."""
    if hss_blocks and subset != "all":
        raise ValueError("HSS that blocks is measured on every document (gate.hss_documents)")
    if subset == "all" or n_items <= 0:
        return HssPlan(n_items, True, "")
    if subset == "first_look":
        n = min(max(sizes[0], n_categories), n_items)
        why = "the first look's documents" + (
            f", widened to one of each of the {n_categories} categories"
            if n_categories > sizes[0]
            else ""
        )
    else:
        if int(subset) < n_categories:
            raise ValueError(
                f"gate.hss_documents {subset} is fewer than the corpus's {n_categories} "
                "categories: HSS would have no document of some category (set at least "
                f"{n_categories}, or first_look)"
            )
        if int(subset) > n_items:
            return HssPlan(
                n_items,
                True,
                f"HSS measured on every document: gate.hss_documents {subset} is more than the "
                f"corpus's {n_items}",
            )
        n, why = int(subset), f"the first {subset} documents"
    if n >= n_items:
        return HssPlan(n_items, True, "")
    text = (
        f"HSS measured on {n} of {n_items} documents ({why}, gate.hss_documents); the other "
        "documents were summarized from their originals only (facts first)"
    )
    return HssPlan(n, False, text)


def look_record(
    n: int, level: float, signals: Mapping[str, Mapping[str, float]], verdict: str
) -> dict[str, Any]:
    """One look as decision.json keeps it."""
    out: dict[str, Any] = {"documents": n, "confidence": round(level, 6), "verdict": verdict}
    for column, name in (
        ("base_mean_support", "consistency"),  # the consistency margin's column
        ("base_unsupported_share", "unsupported"),
    ):
        s = signals.get(column)
        if s is not None:
            out[name] = {
                "difference": s["difference"],
                "ci": [s["ci_low"], s["ci_high"]],
            }
    return out
