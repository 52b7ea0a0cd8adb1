"""The checker's finding on one summary, as a plain record (pure): its consistency with the
source and the summary sentences the source does not support, each with its best passage and
the words of it the source does not contain (the evidence a reviewer checks).

The records the checker (`consistency/checker.py`) returns, the cache stores (`to_dict`) and the
monitor's rules read.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass(frozen=True)
class Unsupported:
    """A summary sentence the source does not support, the passage that matches it best, and
    the surface forms of its content words, names and numbers that the whole source does not
    contain (`novelty.unsupported_words`; empty when every word is there, e.g. facts
    recombined)."""

    sentence: str
    passage: str
    score: float
    words: tuple[str, ...] = ()


@dataclass(frozen=True)
class Verdict:
    """The checker's finding on one summary: `consistency`, its sentences' scores aggregated
    (consistency.aggregate: the flag's statistic), and `mean_support`, their plain mean (the
    gate's paired statistic; None: a checker without sentence scores, the consistency is used)."""

    consistency: float
    unsupported: tuple[Unsupported, ...] = field(default_factory=tuple)
    mean_support: float | None = None

    @property
    def support(self) -> float:
        """The mean of the sentences' scores, else the consistency."""
        return self.consistency if self.mean_support is None else self.mean_support

    def to_dict(self) -> dict[str, Any]:
        return {
            "consistency": self.consistency,
            "mean_support": self.mean_support,
            "unsupported": [asdict(u) | {"words": list(u.words)} for u in self.unsupported],
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Verdict:
        """From `to_dict`'s record; a record cached before `words` existed loads with none."""
        return cls(
            float(data["consistency"]),
            tuple(
                Unsupported(
                    str(u["sentence"]),
                    str(u["passage"]),
                    float(u["score"]),
                    tuple(str(w) for w in u.get("words", ())),
                )
                for u in data["unsupported"]
            ),
            None if data.get("mean_support") is None else float(data["mean_support"]),
        )
