"""The score tables' columns, declared once.

A scoring run writes four tables (`report.write_outputs`): documents.csv (one row a document),
perturbations.csv (one row a perturbed version), summaries.jsonl (one row a summary: the
original's, then each perturbed version's) and edits.jsonl (one row a swap). Every column of them
is declared here with its type, what it means and what produces it; the row builders
(hss_gate/table_rows.py) return exactly the declared columns, in the declared order (the order of
the files' columns).

A summary's signals (facts, form, consistency) are declared once in `SIGNAL_COLUMNS` and appear
twice: with `base_` in the documents table (the original's summary) and with `summary_` in the
perturbations table (the perturbed version's summary).

Foundations floor: nothing from hss_gate is imported here.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Any, Literal

SCHEMA_VERSION = "2"
"""The score tables' schema, written into every run's summary.json. Bump it (and add a
CHANGELOG.md entry) when a column is added, renamed or removed or changes its meaning."""

Dtype = Literal["str", "int", "float", "bool", "list[str]", "json"]
"""`json`: a JSON text inside a CSV cell; `list[str]`: a JSON list in a JSONL row."""


@dataclass(frozen=True)
class Column:
    """One column of a score table.

    `producer` names the module whose result fills it. `optional`: the scoring run does not
    write it; a table may carry it when its producer has run (the checks use it when present).
    `normalized`: written only when the run has normalization constants (the baseline's
    reference run has none, so its documents table has no HSS)."""

    name: str
    dtype: Dtype
    meaning: str
    producer: str
    optional: bool = False
    normalized: bool = False


def names(columns: Iterable[Column]) -> tuple[str, ...]:
    """The columns' names, in order."""
    return tuple(c.name for c in columns)


def prefixed(prefix: str, columns: Iterable[Column]) -> tuple[Column, ...]:
    """The columns renamed `{prefix}{name}` (the same signals of another summary)."""
    return tuple(replace(c, name=f"{prefix}{c.name}") for c in columns)


def written(columns: Iterable[Column], normalized: bool) -> tuple[Column, ...]:
    """The columns a scoring run writes (with or without normalization constants)."""
    return tuple(c for c in columns if not c.optional and (normalized or not c.normalized))


# ---------------------------------------------------------------------------------------------
# The declarations
# ---------------------------------------------------------------------------------------------

SIGNAL_COLUMNS: tuple[Column, ...] = (
    Column(
        "unsupported_share",
        "float",
        "share of the summary's entity and number mentions the source does not support",
        "signals",
    ),
    Column("unsupported", "str", "those unsupported mentions, joined by '; '", "signals"),
    Column(
        "novel_ngram_share",
        "float",
        "share of the summary's n-grams (score.ngram) absent from the source: 0 = copying",
        "signals",
    ),
    Column("truncated", "bool", "the summary ends mid-sentence", "sentences"),
    Column("empty", "bool", "the summary is empty or whitespace", "pipeline"),
    Column("n_sentences", "int", "sentences in the summary", "sentences"),
    Column("n_words", "int", "whitespace words in the summary", "pipeline"),
    Column(
        "near_empty",
        "bool",
        "under score.near_empty_share of generate.summary_words",
        "summary_checks",
    ),
    Column("copies_source", "bool", "a long source copied (score.copy_ratio)", "summary_checks"),
    Column(
        "overlong",
        "bool",
        "over score.overlong_ratio times generate.summary_words",
        "summary_checks",
    ),
    Column(
        "other_language",
        "bool",
        "not English while its source is English",
        "summary_checks",
    ),
    Column("length_ratio", "float", "summary words / source words", "summary_checks"),
    Column("consistency", "float", "the consistency checker's score of the summary", "consistency"),
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
)
"""The signals of one summary against the text its summarizer was given."""

DOCUMENT_COLUMNS: tuple[Column, ...] = (
    Column("doc_id", "str", "the document's id in the corpus", "corpus"),
    Column("category", "str", "its category (normalization is per category)", "corpus"),
    Column("tier", "str", "its tier in the corpus", "corpus"),
    Column(
        "hss_aware",
        "float",
        "HSS from the perturbation-aware distances",
        "severity",
        normalized=True,
    ),
    Column("hss_raw", "float", "HSS from the raw distances", "severity", normalized=True),
    Column(
        "hss",
        "float",
        "HSS of the configured variant (score.perturbation_aware)",
        "severity",
        normalized=True,
    ),
    Column(
        "normalization_constant",
        "float",
        "the constant M_c HSS was normalized by (the variant's)",
        "normalization",
        normalized=True,
    ),
    Column(
        "constant_source",
        "str",
        "'category', or 'global' when the category has no constant",
        "normalization",
        normalized=True,
    ),
    Column(
        "mean_distance",
        "float",
        "mean distance of the configured variant over the perturbations",
        "distance",
    ),
    Column("mean_distance_aware", "float", "mean perturbation-aware distance", "distance"),
    Column("mean_distance_raw", "float", "mean raw distance", "distance"),
    Column("n_perturbations", "int", "perturbed versions scored", "perturb"),
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
        "attribution",
        optional=True,
    ),
)

PERTURBATION_COLUMNS: tuple[Column, ...] = (
    Column("doc_id", "str", "the document's id in the corpus", "corpus"),
    Column("category", "str", "its category", "corpus"),
    Column("strength", "str", "the perturbation strength (a band of perturb.strengths)", "perturb"),
    Column("index", "int", "which perturbation of that strength (0 .. perturb.k - 1)", "perturb"),
    Column(
        "distance",
        "float",
        "distance of the configured variant (score.perturbation_aware)",
        "distance",
    ),
    Column(
        "distance_aware",
        "float",
        "Wasserstein distance of the summaries, swapped words mapped back first",
        "distance",
    ),
    Column("distance_raw", "float", "Wasserstein distance of the summaries as written", "distance"),
    Column("share", "float", "share of the document's words swapped", "perturb"),
    Column("n_edits", "int", "words swapped", "perturb"),
    Column("n_words", "int", "words of the document that could count (the ones read)", "perturb"),
    Column("band_low", "float", "the strength's lowest share", "perturb"),
    Column("band_high", "float", "the strength's highest share", "perturb"),
    Column("reached", "bool", "the share reached the band", "perturb"),
    Column("note", "str", "why the band was not reached (empty when it was)", "perturb"),
    Column(
        "mentions_not_in_base_summary",
        "float",
        "share of the summary's mentions the original's summary does not have",
        "signals",
    ),
    Column(
        "mentions_unsupported_by_source_or_base",
        "float",
        "share of the summary's mentions neither the document nor the original's summary has",
        "signals",
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
    Column("doc_id", "str", "the document's id in the corpus", "corpus"),
    Column("strength", "str", "'base' (the original) or the perturbation strength", "perturb"),
    Column("index", "int", "which perturbation of that strength (0 for the original)", "perturb"),
    Column("summary", "str", "the summary as generated", "summarizers"),
    Column("restored", "str", "the summary with the swapped words mapped back", "restore"),
    Column("consistency", "float", "the consistency checker's score", "consistency"),
    Column(
        "unsupported_sentences",
        "list[str]",
        "the sentences the checker finds unsupported",
        "consistency",
    ),
)

EDIT_COLUMNS: tuple[Column, ...] = (
    Column("doc_id", "str", "the document's id in the corpus", "corpus"),
    Column("strength", "str", "the perturbation strength", "perturb"),
    Column("index", "int", "which perturbation of that strength", "perturb"),
    Column("position", "int", "the swapped token's index in the document", "perturb"),
    Column("char_start", "int", "its first character's offset in the document", "perturb"),
    Column("original", "str", "the word swapped out", "perturb"),
    Column("replacement", "str", "the word swapped in", "perturb"),
    Column("word_cosine", "float", "word-vector cosine of the two words", "perturb"),
    Column(
        "sentence_similarity",
        "float",
        "SBERT similarity of the sentence before and after the swap",
        "perturb",
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
