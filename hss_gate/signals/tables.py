"""The score tables' columns, declared once.

A scoring run writes four tables (`report.write_outputs`): documents.csv (one row a document),
perturbations.csv (one row a perturbed version), summaries.jsonl (one row a summary: the
original's, then each perturbed version's) and edits.jsonl (one row a swap). Every column of them
is declared here with its type, what it means and what produces it; the row builders
(hss_gate/signals/row_builders.py) return exactly the declared columns, in the declared order
(the order of the files' columns).

A summary's signals (facts, form, consistency) are declared once in `SIGNAL_COLUMNS` and appear
twice: with `base_` in the documents table (the original's summary) and with `summary_` in the
perturbations table (the perturbed version's summary); a third time with `live_` in the monitor's
table of served summaries (`SERVED_COLUMNS`).

The tables the checks read beside the score tables are declared here too: the gate's categories
table (`CATEGORY_COLUMNS`) and the served summaries' (`SERVED_COLUMNS`). A column's `bounds` is
the range of its values; which columns the checks require, in the order they are checked, is
`CHECKED_DOCUMENT_COLUMNS` and its siblings (hss_gate/decision/suites.py reads them).

Foundations floor: nothing from hss_gate is imported here.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Any, Literal

SCHEMA_VERSION = "4"
"""The score tables' schema, written into every run's summary.json. Bump it (and add a
CHANGELOG.md entry) when a column is added, renamed or removed or changes its meaning."""

Dtype = Literal["str", "int", "float", "bool", "list[str]", "json"]
"""`json`: a JSON text inside a CSV cell; `list[str]`: a JSON list in a JSONL row."""

Bounds = tuple[float | None, float | None]
"""A column's value range (min, max); None: that side is unbounded."""


@dataclass(frozen=True)
class Column:
    """One column of a score table.

    `producer` names the module whose result fills it. `optional`: the scoring run does not
    write it; a table may carry it when its producer has run (the checks use it when present).
    `normalized`: written only when the run has normalization constants (the baseline's
    reference run has none, so its documents table has no HSS). `bounds`: the range its values
    lie in, which the checks hold it to when they require it (a bool column is 0/1 without
    bounds; None: no range)."""

    name: str
    dtype: Dtype
    meaning: str
    producer: str
    optional: bool = False
    normalized: bool = False
    bounds: Bounds | None = None


def names(columns: Iterable[Column]) -> tuple[str, ...]:
    """The columns' names, in order."""
    return tuple(c.name for c in columns)


def prefixed(prefix: str, columns: Iterable[Column]) -> tuple[Column, ...]:
    """The columns renamed `{prefix}{name}` (the same signals of another summary)."""
    return tuple(replace(c, name=f"{prefix}{c.name}") for c in columns)


def written(columns: Iterable[Column], normalized: bool) -> tuple[Column, ...]:
    """The columns a scoring run writes (with or without normalization constants)."""
    return tuple(c for c in columns if not c.optional and (normalized or not c.normalized))


def picked(columns: Iterable[Column], chosen: Iterable[str]) -> tuple[Column, ...]:
    """The `chosen` columns, in the order they are named (a name not declared: KeyError)."""
    by_name = {c.name: c for c in columns}
    return tuple(by_name[name] for name in chosen)


# ---------------------------------------------------------------------------------------------
# The declarations
# ---------------------------------------------------------------------------------------------

SIGNAL_MODULES = "signals"
"""The producer of a signal column computed by its own module (hss_gate/signals/): the
gate's documents, the perturbations and the served summaries all carry it."""

SIGNAL_COLUMNS: tuple[Column, ...] = (
    Column(
        "unsupported_share",
        "float",
        "share of the summary's entity and number mentions the source does not support",
        "text.mentions",
        bounds=(0.0, 1.0),
    ),
    Column("unsupported", "str", "those unsupported mentions, joined by '; '", "text.mentions"),
    Column(
        "novel_ngram_share",
        "float",
        "share of the summary's n-grams (score.ngram) absent from the source: 0 = copying",
        "text.mentions",
        bounds=(0.0, 1.0),
    ),
    Column("truncated", "bool", "the summary ends mid-sentence", "text.sentences"),
    Column("empty", "bool", "the summary is empty or whitespace", "scoring.pipeline"),
    Column("n_sentences", "int", "sentences in the summary", "text.sentences", bounds=(0, None)),
    Column(
        "n_words", "int", "whitespace words in the summary", "scoring.pipeline", bounds=(0, None)
    ),
    Column(
        "near_empty",
        "bool",
        "under score.near_empty_share of generate.summary_words",
        "signals.summary_flags",
    ),
    Column(
        "copies_source", "bool", "a long source copied (score.copy_ratio)", "signals.summary_flags"
    ),
    Column(
        "overlong",
        "bool",
        "over score.overlong_ratio times generate.summary_words",
        "signals.summary_flags",
    ),
    Column(
        "other_language",
        "bool",
        "not English while its source is English",
        "signals.summary_flags",
    ),
    Column("length_ratio", "float", "summary words / source words", "signals.summary_flags"),
    Column(
        "consistency",
        "float",
        "the consistency checker's score of the summary",
        "consistency",
        bounds=(0.0, 1.0),
    ),
    Column(
        "mean_support",
        "float",
        "the mean of the checker's scores of the summary's sentences (the gate's paired "
        "statistic; the checker's own score where it has no sentence scores)",
        "consistency",
        bounds=(0.0, 1.0),
    ),
    Column(
        "low_consistency",
        "bool",
        "consistency below the checker's threshold",
        "consistency",
    ),
    Column(
        "unsupported_sentences",
        "json",
        "the sentences the checker finds unsupported, each with its best-matching source "
        "passage and its words the source does not contain (names, numbers, content words): "
        "[[sentence, passage, [word, ...]], ...]; cells written before the words read as "
        "[[sentence, passage], ...] (`unsupported_evidence` reads both)",
        "consistency",
    ),
    Column(
        "lead_coverage",
        "float",
        "share of the content words of the source's first three sentences the summary contains "
        "(NaN: a source without any)",
        SIGNAL_MODULES,
        bounds=(0.0, 1.0),
    ),
)
"""The signals of one summary against the text its summarizer was given."""

DOCUMENT_COLUMNS: tuple[Column, ...] = (
    Column("doc_id", "str", "the document's id in the corpus", "text.corpus"),
    Column("category", "str", "its category (normalization is per category)", "text.corpus"),
    Column("tier", "str", "its tier in the corpus", "text.corpus"),
    Column(
        "hss_aware",
        "float",
        "HSS from the perturbation-aware distances",
        "scoring.severity",
        normalized=True,
        bounds=(0.0, 1.0),
    ),
    Column(
        "hss_raw",
        "float",
        "HSS from the raw distances",
        "scoring.severity",
        normalized=True,
        bounds=(0.0, 1.0),
    ),
    Column(
        "hss",
        "float",
        "HSS of the configured variant (score.perturbation_aware)",
        "scoring.severity",
        normalized=True,
        bounds=(0.0, 1.0),
    ),
    Column(
        "normalization_constant",
        "float",
        "the constant M_c HSS was normalized by (the variant's)",
        "scoring.normalization",
        normalized=True,
    ),
    Column(
        "constant_source",
        "str",
        "'category', or 'global' when the category has no constant",
        "scoring.normalization",
        normalized=True,
    ),
    Column(
        "mean_distance",
        "float",
        "mean distance of the configured variant over the perturbations",
        "scoring.distance",
        bounds=(0.0, None),
    ),
    Column(
        "mean_distance_aware",
        "float",
        "mean perturbation-aware distance",
        "scoring.distance",
        bounds=(0.0, None),
    ),
    Column(
        "mean_distance_raw", "float", "mean raw distance", "scoring.distance", bounds=(0.0, None)
    ),
    Column("n_perturbations", "int", "perturbed versions scored", "text.perturb", bounds=(1, None)),
    *prefixed("base_", SIGNAL_COLUMNS),
    Column(
        "consistency_drop_mean",
        "float",
        "mean fall of consistency from the original's summary to the perturbed versions'",
        "consistency",
    ),
    Column(
        "attribution_instability",
        "float",
        "rank instability (1 - Spearman, 0-2) of the summarizer's sentence attributions under "
        "perturbation (gate.attribution_documents; NaN where not explained)",
        "decision.attribution",
        optional=True,
        bounds=(0.0, 2.0),
    ),
)

PERTURBATION_COLUMNS: tuple[Column, ...] = (
    Column("doc_id", "str", "the document's id in the corpus", "text.corpus"),
    Column("category", "str", "its category", "text.corpus"),
    Column(
        "strength", "str", "the perturbation strength (a band of perturb.strengths)", "text.perturb"
    ),
    Column(
        "index",
        "int",
        "which perturbation of that strength (0 .. perturb.k - 1)",
        "text.perturb",
        bounds=(0, None),
    ),
    Column(
        "distance",
        "float",
        "distance of the configured variant (score.perturbation_aware)",
        "scoring.distance",
        bounds=(0.0, None),
    ),
    Column(
        "distance_aware",
        "float",
        "Wasserstein distance of the summaries, swapped words mapped back first",
        "scoring.distance",
        bounds=(0.0, None),
    ),
    Column(
        "distance_raw",
        "float",
        "Wasserstein distance of the summaries as written",
        "scoring.distance",
        bounds=(0.0, None),
    ),
    Column(
        "share", "float", "share of the document's words swapped", "text.perturb", bounds=(0.0, 1.0)
    ),
    Column("n_edits", "int", "words swapped", "text.perturb", bounds=(0, None)),
    Column(
        "n_words", "int", "words of the document that could count (the ones read)", "text.perturb"
    ),
    Column("band_low", "float", "the strength's lowest share", "text.perturb"),
    Column("band_high", "float", "the strength's highest share", "text.perturb"),
    Column("reached", "bool", "the share reached the band", "text.perturb"),
    Column("note", "str", "why the band was not reached (empty when it was)", "text.perturb"),
    Column(
        "mentions_not_in_base_summary",
        "float",
        "share of the summary's mentions the original's summary does not have",
        "text.mentions",
    ),
    Column(
        "mentions_unsupported_by_source_or_base",
        "float",
        "share of the summary's mentions neither the document nor the original's summary has",
        "text.mentions",
    ),
    *prefixed("summary_", SIGNAL_COLUMNS),
    Column(
        "consistency_drop",
        "float",
        "consistency of the original's summary minus this summary's",
        "consistency",
    ),
)

SUMMARY_COLUMNS: tuple[Column, ...] = (
    Column("doc_id", "str", "the document's id in the corpus", "text.corpus"),
    Column("strength", "str", "'base' (the original) or the perturbation strength", "text.perturb"),
    Column(
        "index", "int", "which perturbation of that strength (0 for the original)", "text.perturb"
    ),
    Column("summary", "str", "the summary as generated", "models.summarizers"),
    Column("restored", "str", "the summary with the swapped words mapped back", "text.swap_back"),
    Column("consistency", "float", "the consistency checker's score", "consistency"),
    Column(
        "unsupported_sentences",
        "list[str]",
        "the sentences the checker finds unsupported",
        "consistency",
    ),
)

EDIT_COLUMNS: tuple[Column, ...] = (
    Column("doc_id", "str", "the document's id in the corpus", "text.corpus"),
    Column("strength", "str", "the perturbation strength", "text.perturb"),
    Column("index", "int", "which perturbation of that strength", "text.perturb"),
    Column("position", "int", "the swapped token's index in the document", "text.perturb"),
    Column("char_start", "int", "its first character's offset in the document", "text.perturb"),
    Column("original", "str", "the word swapped out", "text.perturb"),
    Column("replacement", "str", "the word swapped in", "text.perturb"),
    Column("word_cosine", "float", "word-vector cosine of the two words", "text.perturb"),
    Column(
        "sentence_similarity",
        "float",
        "SBERT similarity of the sentence before and after the swap",
        "text.perturb",
    ),
)

TABLES: dict[str, tuple[Column, ...]] = {
    "documents": DOCUMENT_COLUMNS,
    "perturbations": PERTURBATION_COLUMNS,
    "summaries": SUMMARY_COLUMNS,
    "edits": EDIT_COLUMNS,
}
"""Each table's columns, by the name of its file (documents.csv, ..., edits.jsonl)."""

OPTIONAL_COLUMNS: tuple[str, ...] = names(
    c for columns in TABLES.values() for c in columns if c.optional
)
"""Columns the scoring run does not write; the checks use them when a table has them."""

REFERENCE_PERTURBATION_COLUMNS: tuple[str, ...] = (
    "doc_id",
    "category",
    "distance_aware",
    "distance_raw",
)
"""The perturbations columns a reference run's HSS is computed from (baseline.document_scores)."""

HSS_DOCUMENT_COLUMNS: frozenset[str] = frozenset(
    {"hss", "hss_aware", "hss_raw", "mean_distance", "mean_distance_aware"}
    | {"mean_distance_raw", "n_perturbations"}
)
"""The documents columns measured from the perturbed summaries: NaN when HSS is not measured."""


# ---------------------------------------------------------------------------------------------
# The tables the checks read beside the score tables
# ---------------------------------------------------------------------------------------------

CATEGORY_COLUMNS: tuple[Column, ...] = (
    Column("category", "str", "a category of the paired documents", "workflows.gate"),
    Column(
        "candidate_hss",
        "float",
        "the candidate's mean HSS on the category's documents",
        "workflows.gate",
        bounds=(0.0, 1.0),
    ),
    Column(
        "production_hss",
        "float",
        "production's mean HSS on the same documents",
        "workflows.gate",
        bounds=(0.0, 1.0),
    ),
    Column(
        "delta", "float", "candidate_hss - production_hss", "workflows.gate", bounds=(-1.0, 1.0)
    ),
    Column("n", "int", "the category's paired documents", "workflows.gate", bounds=(1, None)),
)
"""The gate's categories table: one row a category (gate.compare's `categories`)."""

SERVED_COLUMNS: tuple[Column, ...] = (
    Column("doc_id", "str", "the served sample's sample_id", "monitoring.store"),
    Column("model_id", "str", "the model id that served it", "monitoring.store"),
    Column("timestamp", "str", "when it was served (ISO 8601, UTC)", "monitoring.store"),
    *prefixed(
        "live_",
        picked(
            SIGNAL_COLUMNS,
            (
                "consistency",
                "low_consistency",
                "unsupported_sentences",
                "unsupported_share",
                "unsupported",
                "novel_ngram_share",
                "truncated",
                "n_words",
                "near_empty",
                "copies_source",
                "overlong",
                "other_language",
                "length_ratio",
            ),
        ),
    ),
    *prefixed("live_", (c for c in SIGNAL_COLUMNS if c.producer == SIGNAL_MODULES)),
)
"""The monitor's table of the summaries production served (monitor.live_summary_signals): one
row a sample, its summary's signals against its document."""


def flag_columns(chosen: Iterable[str]) -> tuple[str, ...]:
    """Of the `chosen` columns, those declared 0/1 flags (dtype bool) in a table here, in the
    order chosen: the drift report tests them as proportions, every other numeric column as a
    distribution (a column not declared, such as a frame's per-band mean distances, is none)."""
    declared = (*(c for columns in TABLES.values() for c in columns), *SERVED_COLUMNS)
    flags = {c.name for c in declared if c.dtype == "bool"}
    return tuple(name for name in chosen if name in flags)


# ---------------------------------------------------------------------------------------------
# The columns the checks require (hss_gate/decision/suites.py), in the order they are checked
# ---------------------------------------------------------------------------------------------

CHECKED_DOCUMENT_COLUMNS: tuple[str, ...] = (
    "doc_id",
    "category",
    "tier",
    "hss",
    "hss_aware",
    "hss_raw",
    "mean_distance",
    "mean_distance_aware",
    "mean_distance_raw",
    "n_perturbations",
    "base_unsupported_share",
    "base_novel_ngram_share",
    "base_truncated",
    "base_empty",
    "base_n_words",
    "base_n_sentences",
    "base_consistency",
    "base_low_consistency",
    "base_near_empty",
    "base_copies_source",
    "base_overlong",
    "base_other_language",
)
"""The documents columns every scored table must have (the optional ones are checked when a
table has them)."""

CHECKED_PERTURBATION_COLUMNS: tuple[str, ...] = (
    "doc_id",
    "category",
    "strength",
    "index",
    "distance",
    "distance_aware",
    "distance_raw",
    "share",
    "n_edits",
    "reached",
)

CHECKED_CATEGORY_COLUMNS: tuple[str, ...] = names(CATEGORY_COLUMNS)

CHECKED_SERVED_COLUMNS: tuple[str, ...] = (
    "doc_id",
    "live_consistency",
    "live_low_consistency",
    "live_unsupported_share",
    "live_truncated",
    "live_n_words",
    "live_near_empty",
    "live_copies_source",
    "live_overlong",
    "live_other_language",
)
"""The served summaries' signals the monitor's served-summary checks require."""

LIVE_UNKNOWN_COLUMNS: frozenset[str] = frozenset({"category", "tier"})
"""Documents columns live traffic has no meaningful value for: the monitor does not require
them."""


# ---------------------------------------------------------------------------------------------
# The `unsupported_sentences` cell (SIGNAL_COLUMNS), written and read here only
# ---------------------------------------------------------------------------------------------

Evidence = tuple[str, str, tuple[str, ...]]
"""(sentence, best-matching source passage, the sentence's words the source does not contain)."""


def unsupported_cell(unsupported: Iterable[Any]) -> str:
    """The JSON cell of a verdict's unsupported sentences (`Unsupported` records):
    [[sentence, passage, [word, ...]], ...]."""
    return json.dumps(
        [[u.sentence, u.passage, list(u.words)] for u in unsupported], ensure_ascii=False
    )


def unsupported_evidence(value: Any) -> list[Evidence]:
    """The (sentence, passage, words) of an `unsupported_sentences` cell: its JSON text or the
    parsed list; an old two-element entry has no words; anything else (empty, NaN, malformed)
    reads as nothing."""
    if isinstance(value, str):
        try:
            value = json.loads(value) if value else []
        except ValueError:
            return []
    if not isinstance(value, list):
        return []
    out: list[Evidence] = []
    for entry in value:
        if not isinstance(entry, list | tuple) or len(entry) not in (2, 3):
            continue
        found = entry[2] if len(entry) == 3 else []
        if not isinstance(found, list | tuple):
            continue
        out.append((str(entry[0]), str(entry[1]), tuple(str(w) for w in found)))
    return out
