"""Does the gate agree with humans on real systems? Every ordered pair of systems in a file of
human-judged summaries (one as production, one as candidate), the humans' paired difference with
its CI, and what the gate decided.

The human signal is `factual` (1 when annotators found no factual error in the summary); a
candidate is significantly worse when the paired 95% CI of its difference lies entirely below
zero (the gate must block), significantly better when it lies entirely above (it must promote).
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy import stats

from hss_gate.errors import InputError
from hss_gate.jsonl import read_jsonl

HUMAN_LEVEL = 0.95


@dataclass(frozen=True)
class HumanDifference:
    """Candidate minus production in the share of summaries humans judged fully factual."""

    candidate: str
    production: str
    documents: int
    candidate_share: float
    production_share: float
    difference: float
    ci_low: float
    ci_high: float

    @property
    def verdict(self) -> str:
        """worse / better / neither, by the paired CI."""
        if self.ci_high < 0:
            return "worse"
        if self.ci_low > 0:
            return "better"
        return "neither"

    @property
    def expected(self) -> str:
        """What the gate must decide: block / promote / either."""
        return {"worse": "block", "better": "promote"}.get(self.verdict, "either")


def read_judgements(path: str | Path, label: str = "factual") -> dict[str, dict[str, float]]:
    """system -> doc_id -> human label, from a summaries file with a `system` field."""
    out: dict[str, dict[str, float]] = {}
    for number, record in read_jsonl(path):
        if label not in record or "system" not in record:
            raise InputError(f"{path}:{number}: needs 'system' and '{label}' for human judgements")
        out.setdefault(str(record["system"]), {})[str(record["doc_id"])] = float(record[label])
    return out


def paired_t(a: Sequence[float], b: Sequence[float], level: float) -> tuple[float, float, float]:
    """Mean of a - b with its paired Student-t CI."""
    diff = np.asarray(a, float) - np.asarray(b, float)
    mean = float(diff.mean())
    if len(diff) < 2 or float(diff.std(ddof=1)) == 0.0:
        return mean, mean, mean
    half = float(
        stats.t.ppf(0.5 + level / 2, len(diff) - 1) * diff.std(ddof=1) / np.sqrt(len(diff))
    )
    return mean, mean - half, mean + half


def human_differences(
    judgements: Mapping[str, Mapping[str, float]], level: float = HUMAN_LEVEL
) -> list[HumanDifference]:
    """Every ordered (candidate, production) pair on the documents both systems summarized."""
    out = []
    for candidate, production in itertools.permutations(sorted(judgements), 2):
        shared = sorted(set(judgements[candidate]) & set(judgements[production]))
        a = [judgements[candidate][d] for d in shared]
        b = [judgements[production][d] for d in shared]
        diff, low, high = paired_t(a, b, level)
        out.append(
            HumanDifference(
                candidate,
                production,
                len(shared),
                float(np.mean(a)),
                float(np.mean(b)),
                diff,
                low,
                high,
            )
        )
    return out


def agreement(rows: Sequence[Mapping[str, object]]) -> dict[str, int]:
    """Counts of the agreement table: must-block / must-promote pairs the gate got right."""
    worse = [r for r in rows if r["human"] == "worse"]
    better = [r for r in rows if r["human"] == "better"]
    neither = [r for r in rows if r["human"] == "neither"]
    return {
        "worse": len(worse),
        "worse_blocked": sum(r["decision"] == "block" for r in worse),
        "better": len(better),
        "better_promoted": sum(r["decision"] == "promote" for r in better),
        "neither": len(neither),
        "neither_blocked": sum(r["decision"] == "block" for r in neither),
    }
