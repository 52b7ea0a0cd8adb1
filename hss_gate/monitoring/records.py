"""The production sample store's records: a served sample, a row of a sample file that was not
accepted, what an ingest did, and a run of the live monitor as its history keeps it.

Timestamps are timezone-aware UTC: a naive one is taken as UTC (`as_utc`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

DEFAULT_CATEGORY = "unspecified"
SAMPLE_FIELDS = ("sample_id", "document", "summary", "model_id", "timestamp", "category")
REQUIRED_FIELDS = SAMPLE_FIELDS[:5]


def as_utc(value: datetime) -> datetime:
    """Naive datetimes are taken as UTC; aware ones are converted to UTC."""
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


class Sample(BaseModel):
    """One production request: the source document and the deployed model's summary."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    sample_id: str
    document: str
    summary: str
    model_id: str
    timestamp: datetime
    category: str = DEFAULT_CATEGORY

    @field_validator("sample_id", "document", "model_id", "category")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must not be blank")
        return value

    @field_validator("timestamp", mode="before")
    @classmethod
    def _iso_timestamp(cls, value: Any) -> datetime:
        if isinstance(value, datetime):
            return as_utc(value)
        if isinstance(value, str):
            try:
                return as_utc(datetime.fromisoformat(value.strip()))
            except ValueError:
                raise ValueError(f"not an ISO 8601 timestamp: {value[:60]!r}") from None
        raise ValueError(f"expected an ISO 8601 timestamp string, got {type(value).__name__}")


@dataclass(frozen=True)
class RowError:
    """A row of a sample file that was not accepted; ``line`` is 1-based."""

    line: int
    message: str

    def __str__(self) -> str:
        return f"line {self.line}: {self.message}"


@dataclass(frozen=True)
class IngestOutcome:
    """What an ingest did: rows added, and rows skipped because their sample_id was stored."""

    added: int
    duplicates: int


class MonitorRun(BaseModel):
    """One run of the live monitor, as kept in the store's history."""

    model_config = ConfigDict(extra="forbid")

    run_id: str = Field(min_length=1)
    started_at: datetime
    model: str
    n_samples: int = Field(ge=0)
    mean_hss: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    drift: bool = False
    drifted_columns: list[str] = Field(default_factory=list)
    decision: Literal["healthy", "unhealthy", "error", "insufficient_data"]
    details: dict[str, Any] = Field(default_factory=dict)

    @field_validator("started_at")
    @classmethod
    def _aware(cls, value: datetime) -> datetime:
        return as_utc(value)

    COLUMNS: ClassVar[tuple[str, ...]] = (
        "started",
        "kind",
        "model",
        "samples",
        "unsupported",
        "mean HSS",
        "CI",
        "drift",
        "decision",
    )

    @property
    def kind(self) -> str:
        """ "served" (the served summaries' checks alone) or "full" (with HSS)."""
        return str(self.details.get("kind", "full"))

    def row(self) -> tuple[str, ...]:
        """The run as a table row (COLUMNS), as `hss samples runs` shows it."""
        ci = "" if self.ci_low is None else f"{self.ci_low:.3f}-{self.ci_high:.3f}"
        mean = "" if self.mean_hss is None else f"{self.mean_hss:.3f}"
        share = self.details.get("unsupported_share")
        unsupported = "" if share is None else f"{share:.0%}"
        drift = ", ".join(self.drifted_columns) or ("" if self.kind == "served" else "no")
        started = self.started_at.isoformat(timespec="seconds")
        return (
            started,
            self.kind,
            self.model,
            str(self.n_samples),
            unsupported,
            mean,
            ci,
            drift,
            self.decision,
        )

    @field_validator("mean_hss", "ci_low", "ci_high")
    @classmethod
    def _finite_or_none(cls, value: float | None) -> float | None:
        """NaN/inf (e.g. the mean of no scores) is stored as None."""
        return value if value is None or math.isfinite(value) else None
