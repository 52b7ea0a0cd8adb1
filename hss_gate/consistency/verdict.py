"""The checker's finding on one summary, as a plain record (pure): its consistency with the
source and the summary sentences the source does not support, each with its best passage.

The records the checker (`consistency/checker.py`) returns, the cache stores (`to_dict`) and the
monitor's rules read.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass(frozen=True)
class Unsupported:
    """A summary sentence the source does not support, and the passage that matches it best."""

    sentence: str
    passage: str
    score: float


@dataclass(frozen=True)
class Verdict:
    """The checker's finding on one summary."""

    consistency: float
    unsupported: tuple[Unsupported, ...] = field(default_factory=tuple)

    def to_dict(self) -> dict[str, Any]:
        return {
            "consistency": self.consistency,
            "unsupported": [asdict(u) for u in self.unsupported],
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Verdict:
        return cls(float(data["consistency"]), tuple(Unsupported(**u) for u in data["unsupported"]))
