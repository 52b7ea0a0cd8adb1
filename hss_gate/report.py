"""Write a run's outputs: CSV tables, the edit log, summary.json and a Markdown report."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

import pandas as pd

from hss_gate.errors import InputError
from hss_gate.normalization import write_json_atomic
from hss_gate.pipeline import ScoreResult


def write_csv_atomic(path: Path, rows: list[dict[str, Any]] | pd.DataFrame) -> None:
    """Write a table as CSV through a temporary file and an atomic rename."""
    frame = rows if isinstance(rows, pd.DataFrame) else pd.DataFrame(rows)
    with tempfile.NamedTemporaryFile(
        "w", dir=path.parent, delete=False, suffix=".tmp", encoding="utf-8", newline=""
    ) as handle:
        frame.to_csv(handle, index=False, float_format="%.6f")
    os.replace(handle.name, path)


def read_score_table(path: str | Path) -> pd.DataFrame:
    """A CSV score table (missing or unreadable: InputError naming the file)."""
    path = Path(path)
    if not path.exists():
        raise InputError(f"{path}: missing; run `hss baseline` (or `dvc repro`) first")
    try:
        return pd.read_csv(path, keep_default_na=False, na_values=[""])
    except (ValueError, pd.errors.ParserError) as exc:
        raise InputError(f"{path}: not a readable score table ({exc})") from exc


def read_json(path: str | Path) -> Any:
    """A JSON file (missing or invalid: InputError naming the file)."""
    path = Path(path)
    if not path.exists():
        raise InputError(f"{path}: missing; run `hss baseline` (or `dvc repro`) first")
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise InputError(f"{path}: invalid JSON ({exc})") from exc


def _write_jsonl(path: Path, rows: list[dict[str, Any]]) -> None:
    with tempfile.NamedTemporaryFile(
        "w", dir=path.parent, delete=False, suffix=".tmp", encoding="utf-8"
    ) as handle:
        for row in rows:
            handle.write(json.dumps(row, ensure_ascii=False) + "\n")
    os.replace(handle.name, path)


def _fmt(stat: dict[str, float] | None) -> str:
    if not stat:
        return "n/a"
    return f"{stat['mean']:.3f} [{stat['ci_low']:.3f}, {stat['ci_high']:.3f}]"


def markdown_report(result: ScoreResult, meta: dict[str, Any]) -> str:
    """A short human-readable report of one run."""
    agg = result.aggregates
    lines = [
        f"# HSS report: `{meta['model']}`",
        "",
        f"{agg['documents']} documents, {agg['perturbations']} perturbations, "
        f"distance variant: **{agg['variant']}** (perturbation-aware = swapped words mapped "
        "back before embedding). Means with "
        f"{int(meta['settings']['score']['confidence'] * 100)}% bootstrap CIs.",
        "",
    ]
    if "hss" in agg:
        lines += [
            "| signal | value |",
            "|---|---|",
            f"| **HSS** | {_fmt(agg['hss'])} |",
            f"| HSS, raw distance | {_fmt(agg['hss_raw'])} |",
            f"| entities/numbers unsupported by the source (base summaries) | "
            f"{_fmt(agg['base_unsupported_share'])} |",
            "| rewriting: novel 4-gram share (0 = copying) | "
            f"{_fmt(agg['base_novel_ngram_share'])} |",
            f"| summaries ending mid-sentence | {agg['truncated_share']:.1%} |",
            f"| perturbations short of their band | {agg['perturbations_short_of_band']} |",
            "",
            "HSS measures instability under meaning-preserving swaps; read it next to the "
            "rewriting share: a model that paraphrases more moves more.",
            "",
            "## By category",
            "",
            "| category | HSS | n |",
            "|---|---|---|",
        ]
        lines += [f"| {c} | {_fmt(s)} | {s['n']} |" for c, s in agg["by_category"].items()]
    lines += [
        "",
        "## By strength",
        "",
        "| strength | mean share changed | mean distance |",
        "|---|---|---|",
    ]
    lines += [
        f"| {st} | {v['mean_share']:.3f} | {v['mean_distance']:.4f} |"
        for st, v in agg["by_strength"].items()
    ]
    if result.warnings:
        lines += ["", "## Warnings", ""] + [f"- {w}" for w in result.warnings]
    return "\n".join(lines) + "\n"


def write_outputs(out: Path, result: ScoreResult, meta: dict[str, Any]) -> None:
    """Write every file of a run (each one atomically)."""
    out.mkdir(parents=True, exist_ok=True)
    write_csv_atomic(out / "documents.csv", result.documents)
    write_csv_atomic(out / "perturbations.csv", result.perturbations)
    _write_jsonl(out / "edits.jsonl", result.edits)
    _write_jsonl(out / "summaries.jsonl", result.summaries)
    write_json_atomic(
        out / "summary.json", {**meta, "aggregates": result.aggregates, "warnings": result.warnings}
    )
    (out / "report.md.tmp").write_text(markdown_report(result, meta), encoding="utf-8")
    os.replace(out / "report.md.tmp", out / "report.md")
