"""The experiment's report: CSV of every table, PNG figures, report.md and report.html."""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from hss_gate.common.io import write_csv_atomic, write_text_atomic
from hss_gate.research.experiment import COMPARATORS

KNOWLEDGE_HEAVY = ("science", "legal", "medical")
LIGHT = ("social_media", "product_reviews")


def paper_table(
    correlations: pd.DataFrame, strengths: pd.DataFrame, domains: pd.DataFrame
) -> pd.DataFrame:
    """Our numbers beside the paper's (METHOD.md section 6)."""
    rows = []
    by_column = correlations.set_index("column") if len(correlations) else pd.DataFrame()
    for column, (label, paper) in COMPARATORS.items():
        if paper is None:
            continue
        ours = by_column["pearson"].get(column, np.nan) if len(by_column) else np.nan
        rows.append({"claim": f"Pearson r(HSS, {label})", "paper": paper, "ours": ours})
    for model, group in strengths.groupby("model", sort=False):
        levels = group.set_index("strength")["severity"]
        if {"low", "high"} <= set(levels.index):
            rows.append(
                {
                    "claim": f"HSS low -> high strength ({model})",
                    "paper": "0.38 -> 0.62",
                    "ours": f"{levels['low']:.2f} -> {levels['high']:.2f}",
                }
            )
    for model, group in domains.groupby("model", sort=False):
        means = group.set_index("category")["mean"]
        heavy = [means[c] for c in KNOWLEDGE_HEAVY if c in means]
        light = [means[c] for c in LIGHT if c in means]
        if heavy and light:
            rows.append(
                {
                    "claim": f"knowledge-heavy minus light domains ({model})",
                    "paper": "> 0",
                    "ours": float(np.mean(heavy) - np.mean(light)),
                }
            )
    return pd.DataFrame(rows)


# what HSS should follow (invented entities/numbers) and what it should not (mere rewriting)
EVIDENCE = {
    "base_novel_ngram_share": "rewriting: share of summary n-grams not in the source",
    "base_unsupported_share": "invention: share of summary entities/numbers not in the source",
}


def _figure(path: Path, draw) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig = draw(plt)
    fig.tight_layout()
    tmp = path.with_suffix(".tmp.png")
    fig.savefig(tmp, dpi=110)
    plt.close(fig)
    tmp.replace(path)


def figures(out: Path, documents: pd.DataFrame, strengths: pd.DataFrame) -> list[str]:
    """Scatter plots of HSS against each comparator, and HSS by strength; returns file names."""
    present = [c for c in COMPARATORS if c in documents and documents[c].notna().sum() >= 3]
    names = []
    if present:

        def scatter(plt):
            cols = min(3, len(present))
            rows = int(np.ceil(len(present) / cols))
            fig, axes = plt.subplots(rows, cols, figsize=(4.2 * cols, 3.4 * rows), squeeze=False)
            for ax, column in zip(axes.flat, present, strict=False):
                for model, group in documents.groupby("model"):
                    ax.scatter(group[column], group["hss"], s=12, alpha=0.7, label=model)
                ax.set_xlabel(COMPARATORS[column][0])
                ax.set_ylabel("HSS")
            for ax in list(axes.flat)[len(present) :]:
                ax.axis("off")
            axes.flat[0].legend(fontsize=7)
            return fig

        _figure(out / "hss_vs_comparators.png", scatter)
        names.append("hss_vs_comparators.png")

    def by_strength(plt):
        fig, ax = plt.subplots(figsize=(6, 3.6))
        for model, group in strengths.groupby("model", sort=False):
            ax.plot(group["mean_share"], group["severity"], marker="o", label=model)
        ax.set_xlabel("share of words swapped")
        ax.set_ylabel("mean severity min(D/M_c, 1)")
        ax.legend(fontsize=7)
        return fig

    if len(strengths):
        _figure(out / "hss_by_strength.png", by_strength)
        names.append("hss_by_strength.png")

    def by_domain(plt):
        table = documents.pivot_table(index="category", columns="model", values="hss")
        fig, ax = plt.subplots(figsize=(max(6, 0.7 * len(table)), 3.8))
        width = 0.8 / max(len(table.columns), 1)
        x = np.arange(len(table))
        for i, model in enumerate(table.columns):
            ax.bar(x + i * width, table[model], width, label=model)
        ax.set_xticks(x + 0.4 - width / 2, table.index, rotation=30, ha="right", fontsize=8)
        ax.set_ylabel("mean HSS")
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))  # beside the bars
        return fig

    if documents["category"].nunique() > 1:
        _figure(out / "hss_by_domain.png", by_domain)
        names.append("hss_by_domain.png")

    evidence = [c for c in EVIDENCE if c in documents and documents[c].notna().sum() >= 3]

    def against_evidence(plt):
        fig, axes = plt.subplots(
            1, len(evidence), figsize=(4.4 * len(evidence), 3.6), squeeze=False
        )
        for ax, column in zip(axes.flat, evidence, strict=True):
            for model, group in documents.groupby("model"):
                ax.scatter(group[column], group["hss"], s=12, alpha=0.7, label=model)
            ax.set_xlabel(EVIDENCE[column])
            ax.set_ylabel("HSS")
        axes.flat[0].legend(fontsize=7)
        return fig

    if evidence:
        _figure(out / "hss_vs_rewriting_and_invention.png", against_evidence)
        names.append("hss_vs_rewriting_and_invention.png")
    return names


def _md(frame: pd.DataFrame) -> list[str]:
    if frame.empty:
        return ["(none)"]
    cols = list(frame.columns)
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for row in frame.itertuples(index=False):
        cells = [f"{v:.3f}" if isinstance(v, float) else str(v) for v in row]
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    return lines


def write_report(
    out: Path,
    tables: Mapping[str, pd.DataFrame],
    settings_text: str,
    notes: Sequence[str],
    localization_html: str = "",
    documents: pd.DataFrame | None = None,
    strengths: pd.DataFrame | None = None,
) -> None:
    """Every table as CSV, figures as PNG, report.md and report.html (text escaped)."""
    out.mkdir(parents=True, exist_ok=True)
    for name, table in tables.items():
        write_csv_atomic(out / f"{name}.csv", table)
    pngs = figures(out, documents, strengths) if documents is not None else []
    md = ["# HSS experiment: the paper's analysis on our models", ""]
    md += [f"- {n}" for n in notes]
    md += [
        "",
        "Perturbation settings (fixed in params.yaml before the run):",
        "",
        "```",
        settings_text,
        "```",
    ]
    for name, table in tables.items():
        md += ["", f"## {name.replace('_', ' ')}", "", *_md(table)]
    md += ["", *[f"![{p}]({p})" for p in pngs]]
    write_text_atomic(out / "report.md", "\n".join(md) + "\n")
    esc = html.escape
    body = [
        "<!doctype html><html><head><meta charset='utf-8'><title>HSS experiment</title>",
        "<style>body{font-family:system-ui,sans-serif;max-width:75rem;margin:2rem auto;"
        "padding:0 1rem}table{border-collapse:collapse}td,th{border:1px solid #ccc;"
        "padding:.2rem .5rem}mark{padding:0 .1rem}</style></head><body>",
        "<h1>HSS experiment: the paper's analysis on our models</h1>",
        "<ul>" + "".join(f"<li>{esc(n)}</li>" for n in notes) + "</ul>",
        f"<pre>{esc(settings_text)}</pre>",
    ]
    for name, table in tables.items():
        body.append(f"<h2>{esc(name.replace('_', ' '))}</h2>")
        body.append(_html_table(table))
    body += [f"<p><img src='{esc(p)}' alt='{esc(p)}'></p>" for p in pngs]
    if localization_html:
        body.append(localization_html)
    body.append("</body></html>")
    write_text_atomic(out / "report.html", "\n".join(body))


def _html_table(frame: pd.DataFrame) -> str:
    if frame.empty:
        return "<p>(none)</p>"
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in frame.columns)
    rows = []
    for row in frame.itertuples(index=False):
        cells = "".join(
            f"<td>{html.escape(f'{v:.3f}' if isinstance(v, float) else str(v))}</td>" for v in row
        )
        rows.append(f"<tr>{cells}</tr>")
    return f"<table><tr>{head}</tr>{''.join(rows)}</table>"


def highlight(words: Sequence[str], weights: Sequence[float], color: str = "255,170,0") -> str:
    """Words as escaped HTML, each shaded by its weight in [0, 1]."""
    peak = max([abs(w) for w in weights] or [0.0]) or 1.0
    parts = []
    for word, weight in zip(words, weights, strict=True):
        alpha = min(abs(weight) / peak, 1.0)
        if alpha < 0.05:
            parts.append(html.escape(word))
        else:
            parts.append(
                f"<mark style='background:rgba({color},{alpha:.2f})' "
                f"title='{abs(weight):.3f}'>{html.escape(word)}</mark>"
            )
    return " ".join(parts)


def localization_section(items: Sequence[Mapping[str, Any]]) -> str:
    """Per document: summary sentences shaded by their share of the transport cost, and the
    source words shaded by how much their attribution changed (all text escaped)."""
    parts = ["<h2>Where summaries move: localization</h2>"]
    for item in items:
        parts.append(
            f"<h3>{html.escape(str(item['doc_id']))} &middot; "
            f"{html.escape(str(item['model']))} &middot; HSS {item['hss']:.3f}</h3>"
        )
        sentences = item["sentences"]
        shares = item["sentence_shares"]
        parts.append("<p><b>Summary</b> (shaded by share of the transport cost): ")
        parts.append(highlight(sentences, shares, "220,50,50") + "</p>")
        top = int(np.argmax(shares)) if len(shares) else None
        if top is not None:
            parts.append(
                f"<p>Moved most: sentence {top + 1} ({shares[top]:.0%} of the transport cost)"
                + (
                    f"; source words whose share of the attribution moved most (SHAP at "
                    f"{item['blocks']} blocks of {len(item['source_words'])} words): "
                    + ", ".join(
                        f"{html.escape(str(w))} (#{p}, {c:.2%})" for p, w, c in item["moved_words"]
                    )
                    if item.get("moved_words")
                    else ""
                )
                + "</p>"
            )
        if item.get("source_words"):
            parts.append("<p><b>Source</b> (shaded by attribution change): ")
            parts.append(highlight(item["source_words"], item["word_changes"]) + "</p>")
    return "\n".join(parts)
