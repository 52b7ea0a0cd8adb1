"""Per-category normalization constants M_c: computed from a reference run, stored versioned."""

from __future__ import annotations

import hashlib
import math
from collections import defaultdict
from collections.abc import Iterable

from pydantic import BaseModel, ValidationError, model_validator

from hss_gate.common.errors import NormalizationError
from hss_gate.scoring.severity import percentile_constant

VARIANTS = ("aware", "raw")


class Normalization(BaseModel):
    """M_c per category and a global fallback, for each distance variant."""

    version: int = 1
    quantile: float
    model: str
    settings_digest: str
    created: str
    constants: dict[str, dict[str, float]]  # variant -> category -> M_c
    global_constant: dict[str, float]  # variant -> M
    counts: dict[str, int] = {}

    @model_validator(mode="after")
    def _usable(self) -> Normalization:
        for variant in VARIANTS:
            if variant not in self.global_constant:
                raise ValueError(f"no global constant for the '{variant}' distance")
        values = [("global", v, m) for v, m in self.global_constant.items()] + [
            (c, v, m) for v, per in self.constants.items() for c, m in per.items()
        ]
        for category, variant, value in values:
            if not math.isfinite(value) or value < 0:
                raise ValueError(f"constant {variant}/{category} is {value}; need finite and >= 0")
        return self

    def constant(self, category: str, variant: str) -> tuple[float, bool]:
        """(M_c, True) for a known category, else (global M, False)."""
        per_category = self.constants.get(variant, {})
        if category in per_category:
            return per_category[category], True
        return self.global_constant[variant], False


def compute_normalization(
    rows: Iterable[tuple[str, float, float]],
    *,
    quantile: float,
    model: str,
    settings_digest: str,
    created: str,
) -> Normalization:
    """From (category, aware distance, raw distance) rows of a reference run."""
    by_cat: dict[str, dict[str, list[float]]] = defaultdict(lambda: {v: [] for v in VARIANTS})
    every: dict[str, list[float]] = {v: [] for v in VARIANTS}
    for category, aware, raw in rows:
        for variant, value in zip(VARIANTS, (aware, raw), strict=True):
            by_cat[category][variant].append(value)
            every[variant].append(value)
    if not every["aware"]:
        raise NormalizationError("no reference distances to normalize by")
    return Normalization(
        quantile=quantile,
        model=model,
        settings_digest=settings_digest,
        created=created,
        constants={
            v: {c: percentile_constant(d[v], quantile) for c, d in sorted(by_cat.items())}
            for v in VARIANTS
        },
        global_constant={v: percentile_constant(every[v], quantile) for v in VARIANTS},
        counts={c: len(d["aware"]) for c, d in sorted(by_cat.items())},
    )


def normalization_from_run(
    rows: Iterable[tuple[str, float, float]], meta: dict, quantile: float
) -> Normalization:
    """M_c from a reference run's (category, aware, raw) distances and its summary.json meta."""
    return compute_normalization(
        rows,
        quantile=quantile,
        model=meta["fingerprint"],
        settings_digest=hashlib.sha256(str(meta["settings"]).encode()).hexdigest()[:16],
        created=meta["created"],
    )


def parse_normalization(text: str, source: str) -> Normalization:
    """A normalization file's text as constants; `source` names it in the one-line error."""
    try:
        return Normalization.model_validate_json(text)
    except ValidationError as exc:  # one line: the first problem and where it is
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        why = first["msg"].removeprefix("Value error, ")
        raise NormalizationError(
            f"{source}: not a valid normalization file ({where + ': ' if where else ''}{why})"
        ) from exc
    except ValueError as exc:
        raise NormalizationError(f"{source}: not a valid normalization file ({exc})") from exc
