"""A run's outputs: CSV tables, the edit log, summary.json and a Markdown report."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from hss_gate.common.io import (
    write_csv_atomic,
    write_json_atomic,
    write_jsonl_atomic,
    write_text_atomic,
)
from hss_gate.scoring.pipeline import ScoreResult
from hss_gate.signals.tables import SCHEMA_VERSION


def _fmt(stat: dict[str, float] | None, missing: str = "n/a") -> str:
    if not stat:
        return missing
    return f"{stat['mean']:.3f} [{stat['ci_low']:.3f}, {stat['ci_high']:.3f}]"


def category_rows(aggregates: dict[str, Any]) -> list[tuple[str, str, str, str]]:
    """(category, HSS, CI, n) per category and, last, for the whole model."""

    def row(name: str, s: dict[str, Any] | None) -> tuple[str, str, str, str]:
        if not s:  # HSS not measured (no perturbed summaries): said, never 0
            return (name, "not measured", "-", "0")
        return (name, f"{s['mean']:.3f}", f"{s['ci_low']:.3f}-{s['ci_high']:.3f}", str(s["n"]))

    rows = [row(c, s) for c, s in aggregates["by_category"].items()]
    return [*rows, row("model", aggregates["hss"])]


def headline(aggregates: dict[str, Any]) -> str:
    """The run's evidence beside HSS, in one line."""
    return (
        "unsupported entities/numbers (base summaries): "
        f"{aggregates['base_unsupported_share']['mean']:.3f}   "
        f"rewriting (novel 4-grams): {aggregates['base_novel_ngram_share']['mean']:.3f}   "
        f"ending mid-sentence: {aggregates['truncated_share']:.1%}   "
        f"HSS raw: {_mean(aggregates.get('hss_raw'))}"
    )


def _mean(stat: dict[str, float] | None) -> str:
    return f"{stat['mean']:.3f}" if stat else "not measured"


def _table_section(title: str, columns: Sequence[str], rows: Iterable[str]) -> list[str]:
    """A `## title` section of the report: a blank line, the heading and a Markdown table."""
    header = "| " + " | ".join(columns) + " |"
    return ["", f"## {title}", "", header, "|" + "---|" * len(columns), *rows]


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
    if agg.get("hss_not_measured"):
        lines += [
            f"**{agg['hss_not_measured']}** ({agg.get('hss_measured_documents', 0)} of "
            f"{agg['documents']} documents measured); the facts and form signals below are "
            "measured as usual.",
            "",
        ]
    if "hss" in agg:
        lines += [
            "| signal | value |",
            "|---|---|",
            f"| **HSS** | {_fmt(agg['hss'], 'not measured')} |",
            f"| HSS, raw distance | {_fmt(agg['hss_raw'], 'not measured')} |",
            f"| entities/numbers unsupported by the source (base summaries) | "
            f"{_fmt(agg['base_unsupported_share'])} |",
            "| rewriting: novel 4-gram share (0 = copying) | "
            f"{_fmt(agg['base_novel_ngram_share'])} |",
            f"| summaries ending mid-sentence | {agg['truncated_share']:.1%} |",
            f"| perturbations short of their band | {agg['perturbations_short_of_band']} |",
            "",
            "HSS measures instability under meaning-preserving swaps; read it next to the "
            "rewriting share: a model that paraphrases more moves more.",
        ]
        lines += _table_section(
            "By category",
            ("category", "HSS", "n"),
            (
                f"| {c} | {_fmt(s, 'not measured')} | {s['n'] if s else 0} |"
                for c, s in agg["by_category"].items()
            ),
        )
    lines += _table_section(
        "By strength",
        ("strength", "mean share changed", "mean distance"),
        (
            f"| {st} | {v['mean_share']:.3f} | {v['mean_distance']:.4f} |"
            for st, v in agg["by_strength"].items()
        ),
    )
    if result.warnings:
        lines += ["", "## Warnings", ""] + [f"- {w}" for w in result.warnings]
    return "\n".join(lines) + "\n"


def write_outputs(out: Path, result: ScoreResult, meta: dict[str, Any]) -> None:
    """Write every file of a run (each one atomically)."""
    out.mkdir(parents=True, exist_ok=True)
    write_csv_atomic(out / "documents.csv", result.documents)
    write_csv_atomic(out / "perturbations.csv", result.perturbations)
    write_jsonl_atomic(out / "edits.jsonl", result.edits)
    write_jsonl_atomic(out / "summaries.jsonl", result.summaries)
    write_json_atomic(
        out / "summary.json",
        {
            "schema_version": SCHEMA_VERSION,
            **meta,
            "aggregates": result.aggregates,
            "warnings": result.warnings,
        },
    )
    write_text_atomic(out / "report.md", markdown_report(result, meta))
