"""Readers of the human-labelled factuality benchmarks (SummaC subsets, QAGS CNN/DM), used to
measure the checkers (scripts/factuality_benchmark.py); never read on the gate's path."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class LabelledPair:
    """A (document, summary) pair with a human label: 1 = consistent, 0 = inconsistent."""

    id: str
    document: str
    summary: str
    label: int


def _record(value: object) -> dict:
    """A record that may be a dict or its Python-repr / JSON string."""
    if isinstance(value, dict):
        return value
    if isinstance(value, str):
        import ast
        import json

        try:
            parsed = json.loads(value)
        except ValueError:
            parsed = ast.literal_eval(value)
        if isinstance(parsed, dict):
            return parsed
    raise ValueError(f"not a record: {str(value)[:60]!r}")


def summac_pairs(data: dict[str, object]) -> list[LabelledPair]:
    """The SummaC benchmark's per-dataset dict (key -> record with document, claim, label)."""
    out = []
    for key, value in data.items():
        rec = _record(value)
        if "claim" not in rec or "label" not in rec:
            raise ValueError(f"{key}: a record without 'claim' and 'label' (unlabelled subset?)")
        out.append(
            LabelledPair(str(key), str(rec["document"]), str(rec["claim"]), int(rec["label"]))
        )
    return out


def qags_label(sentences: Sequence[dict]) -> int:
    """A QAGS summary is inconsistent (0) if any sentence has a majority of "no" answers."""
    for sentence in sentences:
        answers = [str(r["response"]).strip().lower() for r in sentence["responses"]]
        if sum(a == "no" for a in answers) * 2 > len(answers):
            return 0
    return 1


def qags_pairs(lines: Sequence[str]) -> list[LabelledPair]:
    """QAGS (CNN/DM or XSum) JSON lines: article, summary_sentences with workers' yes/no."""
    import json

    out = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        rec = json.loads(line)
        sentences = rec["summary_sentences"]
        summary = " ".join(str(s["sentence"]).strip() for s in sentences)
        out.append(
            LabelledPair(f"qags_{number}", str(rec["article"]), summary, qags_label(sentences))
        )
    return out
