"""One typed settings source: params.yaml, overridden by HSS_* environment variables.

Nested keys use a double underscore: HSS_PERTURB__TAU=0.7 overrides perturb.tau. Layers, the
first that sets a key wins: explicit overrides (CLI options) > HSS_* environment > ./params.yaml
> the packaged params.yaml of an installed wheel (hss_gate/packaged.py) > the defaults below.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import (
    BaseModel,
    Field,
    SecretStr,
    StringConstraints,
    ValidationError,
    field_serializer,
    field_validator,
    model_validator,
)
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

from hss_gate.errors import InputError
from hss_gate.packaged import packaged_path

STRENGTH_ORDER = ("low", "moderate", "high")

TOKENS_PER_WORD = 1.35
"""Subword tokens per English word (Qwen2.5's tokenizer on production's summaries: 1.24-1.34)."""
WORDS_PER_SENTENCE = 20
"""Words per summary sentence, for the sentence count a length asks for."""

SCHEMA_VERSION = 1
"""The layout of params.yaml this version reads (its top-level key `schema_version`)."""
UNVERSIONED = 1
"""A params.yaml without `schema_version` has the layout of version 1 (before the key existed)."""
SCHEMA_CHANGES: dict[int, tuple[str, ...]] = {}
"""For each schema_version after the first: the keys it renamed, moved or changed in meaning
(e.g. "run.corpus -> run.corpora"), named in the error a params.yaml of an older version gets."""

TOP_LEVEL_KEYS = ("schema_version", "hss_gate_version")
"""params.yaml's top-level keys that hold a value, not a section of settings."""

PACKAGED_INPUTS = ("run.corpus", "run.baseline_dir", "score.normalization", "monitor.reference")
"""The input paths a command without them in the working folder reads from the packaged data."""
PACKAGED_BASELINE = ("run.baseline_dir", "score.normalization", "monitor.reference")
"""Of those, the baseline's: production's run on the packaged corpus."""


class PerturbSettings(BaseModel):
    """Meaning-preserving perturbation (METHOD.md section 1)."""

    word_vectors: str = Field("glove-6b-50d", description="embedded name or a word2vec file path")
    tau: float = Field(0.7, ge=0.0, le=1.0, description="min word-vector cosine of a swap")
    gamma: float = Field(
        0.9, ge=0.0, le=1.0, description="min SBERT cosine of the swapped sentence"
    )
    neighbours: int = Field(100, ge=1, le=1000, description="nearest neighbours tried per word")
    vocab_limit: int = Field(40000, ge=1000, description="only the N most frequent vector words")
    max_senses: int = Field(2, ge=1, le=20, description="WordNet senses of a word that count")
    protect_entities: bool = True
    protect_stopwords: bool = True
    semantic_filter: bool = True
    k: int = Field(1, ge=1, le=50, description="perturbations per strength band")
    strengths: dict[str, tuple[float, float]] = Field(
        default_factory=lambda: {
            "low": (0.02, 0.04),
            "moderate": (0.04, 0.07),
            "high": (0.07, 0.30),
        }
    )
    seed: int = 13

    def keep_strengths(self, names: list[str]) -> None:
        """Keep only the named strength bands (e.g. from --strengths low,high)."""
        available = list(self.strengths)
        chosen = [n.strip() for n in names if n.strip()]
        unknown = [n for n in chosen if n not in available]
        if unknown or not chosen:
            raise InputError(f"--strengths: unknown {unknown or names}; choose from {available}")
        self.strengths = {n: self.strengths[n] for n in chosen}

    @model_validator(mode="after")
    def _bands_valid(self) -> PerturbSettings:
        for name, (low, high) in self.strengths.items():
            if not 0.0 < low <= high <= 1.0:
                raise ValueError(
                    f"strengths.{name}: need 0 < low <= high <= 1, got [{low}, {high}]"
                )
        return self


class GenerateSettings(BaseModel):
    """Summary generation; part of every summary's cache key."""

    summary_words: int = Field(
        60,
        ge=5,
        le=2000,
        description="the summary length asked for: the prompt's {summary_words}"
        " and the length checks",
    )
    max_new_tokens: int | None = Field(
        None,
        ge=8,
        le=4096,
        description="most tokens a summary may have; empty = derived from summary_words "
        "(length_headroom x the words asked for, at TOKENS_PER_WORD)",
    )
    length_headroom: float = Field(
        2.5,
        ge=1.0,
        le=10.0,
        description="the derived token budget allows this many times summary_words",
    )
    stop: list[str] = Field(
        default_factory=lambda: ["\n\n"],
        max_length=4,
        description="generation ends at the first of these strings (not part of the summary)",
    )
    sentence_limit: bool = Field(
        True,
        description="GGUF: the model may write at most summary_sentences sentences of prose "
        "(a llama.cpp grammar: no lists, no line breaks); other engines stop at `stop`",
    )
    max_input_words: int = Field(
        1500, ge=50, description="longer documents are truncated (with a warning)"
    )
    system_prompt: str = "You are a helpful assistant that summarizes documents."
    prompt: str = (
        "Article:\n{document}\n\nSummarize the article above in at most {summary_sentences} "
        "sentences ({summary_words} words or fewer)."
    )
    n_ctx: int = Field(4096, ge=512)
    threads: int = Field(
        1, ge=0, description="llama.cpp threads (0 = all cores); outputs depend on it"
    )
    parallel: int = Field(
        1, ge=1, le=16, description="GGUF parallel slots (>1 is faster, not bit-stable)"
    )
    workers: int = Field(
        0,
        ge=0,
        le=64,
        description="GGUF: model copies generating at once (0 = cores / threads); "
        "outputs do not depend on it",
    )
    batch_size: int = Field(4, ge=1, le=64, description="hf: batch size")
    prefix_reuse: bool = Field(
        False,
        description="GGUF: reuse the KV cache of the prompt prefix a text shares with the "
        "previous one (faster; a reused prefix can change greedy ties, so not bit-stable)",
    )
    speculative: Literal["off", "ngram"] = Field(
        "off", description="draft tokens from n-grams of the prompt, verified by the model"
    )
    speculative_ngram: int = Field(3, ge=1, le=16, description="ngram: the n-gram looked up")
    speculative_draft: int = Field(8, ge=1, le=64, description="ngram: most drafted tokens")

    @field_validator("speculative", mode="before")
    @classmethod
    def _yaml_off(cls, value: object) -> object:
        """YAML 1.1 reads an unquoted `off` as false."""
        return "off" if value is False else value

    @property
    def summary_sentences(self) -> int:
        """The sentence count that goes with summary_words (one per 20 words, at least 1):
        the prompt's {summary_sentences}."""
        return max(1, round(self.summary_words / WORDS_PER_SENTENCE))

    @property
    def token_budget(self) -> int:
        """max_new_tokens, or the budget derived from the length asked for."""
        if self.max_new_tokens is not None:
            return self.max_new_tokens
        return math.ceil(self.summary_words * self.length_headroom * TOKENS_PER_WORD)

    @property
    def prompt_template(self) -> str:
        """The prompt with the summary length filled in ({document} left to fill)."""
        return self.prompt.replace("{summary_words}", str(self.summary_words)).replace(
            "{summary_sentences}", str(self.summary_sentences)
        )

    def user_prompt(self, document: str) -> str:
        """The prompt for one document."""
        return self.prompt_template.replace("{document}", document)

    timeout_s: float = Field(120.0, gt=0, description="openai: per-request timeout")
    retries: int = Field(3, ge=0, le=10, description="openai: retries on transport errors")
    openai_concurrency: int = Field(
        1,
        ge=1,
        le=64,
        description="openai: requests in flight at once (set it to the server's parallel "
        "slots); `workers` is GGUF copies, not this",
    )


class ScoreSettings(BaseModel):
    """Representation, distance and severity (METHOD.md sections 2-4)."""

    embedder: str = "all-minilm-l6-v2"
    perturbation_aware: bool = Field(True, description="map swapped words back before embedding")
    normalization: str = "data/baseline/normalization.json"
    quantile: float = Field(0.95, gt=0.0, le=1.0)
    bootstrap_resamples: int = Field(1000, ge=100)
    confidence: float = Field(0.95, gt=0.5, lt=1.0)
    ngram: int = Field(4, ge=1, le=8, description="n of the novel n-gram (rewriting) share")
    near_empty_share: float = Field(
        0.2, gt=0.0, lt=1.0, description="a summary under this share of summary_words is near-empty"
    )
    overlong_ratio: float = Field(
        3.0, gt=1.0, description="a summary over this many times summary_words is overlong"
    )
    copy_ratio: float = Field(
        0.8, gt=0.0, le=1.0, description="a summary this long relative to its source is a copy"
    )

    @property
    def variant(self) -> Literal["aware", "raw"]:
        """The distance HSS is built from: perturbation-aware or raw."""
        return "aware" if self.perturbation_aware else "raw"


class ConsistencySettings(BaseModel):
    """The factual-consistency checker (`hss factuality`; docs/FACTUALITY.md)."""

    model: Literal["sbert", "factcc", "invented", "invented-sbert", "entail"] = Field(
        "entail", description="the checker decisions use (docs/FACTUALITY.md)"
    )
    weights_dir: str = Field(
        ".hss/factcc", description="trained checker weights (kept out of git; dvc stage factcc)"
    )
    out: str = "outputs/factuality"
    threshold: float | None = Field(
        None, ge=0.0, le=1.0, description="a summary below is unsupported (None: calibrated)"
    )
    adapter: str | None = Field(
        None,
        description="model entail: the adapter file (None: the shipped one, sha256-pinned; a "
        "file of your own is recorded by its sha256)",
    )
    top_k: int = Field(
        2, ge=1, description="model entail: source chunks cross-encoded per summary sentence"
    )
    chunk_words: int = Field(
        120, ge=1, description="model entail: words per source chunk (a longer sentence: alone)"
    )
    aggregate: Literal["mean", "min"] = Field(
        "mean", description="model entail: summary sentences' best scores -> the consistency"
    )

    def entail_options(self) -> dict[str, Any]:
        """The keyword arguments of `consistency.checker.load_checker` for model entail."""
        return {
            "adapter": self.adapter,
            "top_k": self.top_k,
            "chunk_words": self.chunk_words,
            "aggregate": self.aggregate,
        }


class GateAttributionSettings(BaseModel):
    """The explainer the gate uses for attribution instability (gate.attribution_documents > 0):
    sentence-level SHAP of the summarizer's teacher-forced log-likelihood of its base summary
    (hss_gate.research.sentence_attribution; docs/ATTRIBUTION.md section 7)."""

    method: Literal["permutation", "kernel"] = Field(
        "permutation", description="permutation: the measured default (Spearman >= 0.94 at 2 x M)"
    )
    per_sentence: float = Field(
        2.0,
        gt=0.0,
        description="budget: evaluations per explained sentence (permutation spends at least "
        "2(M-1)+2)",
    )
    perturbations: int = Field(
        1,
        ge=1,
        description="perturbations explained per document, one per strength band in turn (each "
        "costs one more explanation)",
    )
    max_words: int | None = Field(
        None,
        ge=1,
        description="explain only the sentences that start within the first W words (the rest "
        "are kept, not explained): cost ~ their count; None: all the summarizer reads",
    )
    backend: Literal["transformers", "llama.cpp"] = Field(
        "transformers", description="teacher-forcing engine of GGUF weights"
    )
    dtype: Literal["float32", "bfloat16"] = Field(
        "bfloat16", description="precision of the transformers scorer"
    )
    batch_size: int = Field(8, ge=1, description="masked documents per scorer call")
    top_k: int = Field(3, ge=1, description="k of the top-k instability (sentences)")


class GateSettings(BaseModel):
    """Promotion thresholds (the Great Expectations suites are built from these)."""

    out: str = "outputs/gate"
    margin: float = Field(
        0.05, ge=0.0, le=1.0, description="block when mean HSS rises significantly beyond this"
    )
    max_mean_hss: float = Field(0.70, ge=0.0, le=1.0)
    max_p95_hss: float = Field(0.99, ge=0.0, le=1.0)
    severity_level: float = Field(0.9, ge=0.0, le=1.0, description="a 'severe' document's HSS")
    max_share_above: float = Field(
        0.25, ge=0.0, le=1.0, description="max share of documents above severity_level"
    )
    category_margin: float = Field(
        0.15, ge=0.0, le=1.0, description="per-category mean HSS may exceed production's by this"
    )
    min_category_documents: int = Field(
        5,
        ge=1,
        description="a category is checked on its own (its HSS rise, reported) only with this "
        "many documents in the look: at 5 the standard error of a category's mean HSS "
        "(within-category SD 0.33 on the production baseline) falls below category_margin",
    )
    max_unsupported_share: float = Field(
        0.05, ge=0.0, le=1.0, description="mean share of summary entities/numbers not in the source"
    )
    unsupported_margin: float = Field(
        0.02, ge=0.0, le=1.0, description="block when that share rises significantly beyond this"
    )
    max_truncated_share: float = Field(
        0.5, ge=0.0, le=1.0, description="max share of base summaries that end mid-sentence"
    )
    max_attribution_instability: float | None = Field(
        None,
        ge=0.0,
        le=2.0,
        description="blocks when the candidate's mean attribution instability (rank: 1 - "
        "Spearman, 0-2) exceeds it; needs attribution_documents > 0",
    )
    attribution_documents: int = Field(
        0,
        ge=0,
        description="explain the first N documents of the deciding look, both sides (0: off; "
        "each costs (1 + attribution.perturbations) explanations per side)",
    )
    attribution: GateAttributionSettings = Field(default_factory=GateAttributionSettings)
    consistency_margin: float = Field(
        0.05,
        ge=0.0,
        le=1.0,
        description="block when mean consistency falls significantly by more (in the units of "
        "consistency.model: entail 0.05, invented-sbert 0.07, sbert 0.03)",
    )
    max_low_consistency_share: float = Field(
        0.33,
        ge=0.0,
        le=1.0,
        description="max share of summaries the checker finds unsupported (reference corpus: "
        "production's 0.23 under entail plus 0.10; invented-sbert 0.66, sbert 0.50)",
    )
    max_not_summary_share: float = Field(
        0.2, ge=0.0, le=1.0, description="max share of summaries that are not summaries (each flag)"
    )
    max_dropped_share: float = Field(
        0.1,
        ge=0.0,
        le=1.0,
        description="stored summaries (summaries: URIs): a document without both summaries is "
        "dropped from the pairing and counted; above this share of the corpus the gate errors",
    )
    hss_blocks: bool = Field(
        False, description="HSS rises and HSS checks block too (default: reported beside the facts)"
    )
    form_blocks: bool = Field(
        False, description="form checks (summaries cut mid-sentence) block too (default: reported)"
    )

    def advisory_kinds(self) -> tuple[str, ...]:
        """The check kinds that are reported but do not block."""
        return tuple(
            kind
            for kind, blocks in (("hss", self.hss_blocks), ("output", self.form_blocks))
            if not blocks
        )

    block_on_drift: bool = Field(False, description="drift of score distributions blocks too")


class MonitorSettings(BaseModel):
    """Live-traffic monitoring of the deployed summarizer."""

    samples_url: str = Field(
        "sqlite:///.hss/samples.sqlite", description="SQLAlchemy URL of the production sample store"
    )
    sample_size: int = Field(
        20, ge=1, description="most recent samples scored per run (the current window)"
    )
    reference_window: int = Field(
        100,
        ge=1,
        description="a model id's reference window is its first N served samples (unless one is "
        "pinned with --set-reference, or reference_days is set); 100 from the power table in "
        "docs/MONITORING.md",
    )
    reference_days: float | None = Field(
        None,
        gt=0.0,
        description="when set: a model id's reference window is its samples of the first D days "
        "after it first served, complete once a sample newer than that exists (a pinned range "
        "still wins); None: the first reference_window samples",
    )
    current_window: Literal["newest", "since_last_run"] = Field(
        "newest",
        description="the current window: the newest sample_size samples of the model id, or its "
        "samples newer than the current window of the previous recorded run of the same kind "
        "(at most max_current_window; the first run takes the newest sample_size)",
    )
    max_current_window: int = Field(
        500, ge=1, description="since_last_run: at most this many (the newest) samples"
    )
    window_alpha: float = Field(
        0.001,
        gt=0.0,
        lt=1.0,
        description="one-sided Fisher p-value below which a blocking served signal of the "
        "current window is significantly worse than the reference window's (per signal); 0.001 "
        "from the false-alarm table in docs/MONITORING.md",
    )
    reported_alpha: float = Field(
        0.01,
        gt=0.0,
        lt=1.0,
        description="p-value below which a reported (never blocking) window comparison is noted: "
        "checker consistency, rewriting, length, form flags (per test)",
    )
    summary_words: int | None = Field(
        None,
        ge=1,
        description="the length (words) the served product asks its summaries for; the served "
        "summaries' form flags judge against it (near-empty under score.near_empty_share of it, "
        "overlong over score.overlong_ratio times it); None: generate.summary_words, the "
        "length the gate's prompt asks for",
    )
    floor_blocking: bool = Field(
        False,
        description="a rise above the production reference corpus (the absolute floor: served "
        "rises, and in a full run the severity rise and the score drift) makes the run unhealthy "
        "too; by default it is only reported",
    )
    attribution_documents: int = Field(
        0,
        ge=0,
        description="explain the newest N served samples of the current window and N of the "
        "reference window with the deployed model (sentence-level SHAP, the gate's explainer: "
        "gate.attribution) and report their attribution instability, never blocking (0: off; "
        "each sample costs (1 + gate.attribution.perturbations) explanations)",
    )
    model_id: str | None = Field(None, description="only samples of this model id (default any)")
    out: str = "outputs/monitor"
    margin: float = Field(
        0.05, ge=0.0, le=1.0, description="severity rise: live mean HSS above the reference's"
    )
    served_margin: float = Field(
        0.1,
        ge=0.0,
        le=1.0,
        description="the share of served summaries the checker finds unsupported may exceed the "
        "reference's by this before a significant rise is unhealthy",
    )
    served_unsupported_margin: float = Field(
        0.02, ge=0.0, le=1.0, description="the same for entities/numbers not in the source"
    )
    drift_columns: list[  # score table columns; the gate's drift report uses the same ones
        Annotated[str, StringConstraints(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")]
    ] = Field(
        default_factory=lambda: [
            "hss",
            "mean_distance",
            "distance_low",
            "distance_moderate",
            "distance_high",
            "base_n_words",
            "base_novel_ngram_share",
            "base_unsupported_share",
        ]
    )
    drift_share: float = Field(
        0.5, gt=0.0, le=1.0, description="share of drifted columns that means drift"
    )
    reference: str = Field(
        "data/baseline/production_scores.csv",
        description="per-document production scores on the reference corpus (dvc stage metrics)",
    )

    @field_serializer("samples_url", when_used="json")
    def _hide_password(self, url: str) -> str:
        """JSON dumps (summary.json of every run) show the store URL with its password masked."""
        from hss_gate.redact import masked_url

        return masked_url(url)


class ExperimentSettings(BaseModel):
    """The paper's analysis (`hss experiment`); fixed before a run, stated in its report."""

    out: str = "outputs/experiment"
    models: list[str] = Field(
        default_factory=lambda: [
            "gguf:qwen2.5-coder-0.5b-instruct",
            "gguf:smollm2-135m-instruct",
            "gguf:gemma3-270m",
            "extractive:lead-3",
        ]
    )
    external: str = Field(
        "../shared/data/external/qags_mturk_cnndm.jsonl",
        description="extra documents (JSONL with 'text' or 'article'); skipped when absent",
    )
    external_documents: int = Field(6, ge=0, description="how many external documents to add")
    external_category: str = "news"
    handcheck: str = Field(
        "docs/evidence/handcheck_errors.csv", description="hand-counted errors: doc_id,model,errors"
    )
    attribution_documents: int = Field(2, ge=0, description="SHAP/LIME on the first N documents")
    attribution_models: list[str] | None = Field(
        None, description="models explained (None: every model with token probabilities)"
    )
    attribution_perturbations: int = Field(
        3, ge=1, description="perturbations explained per document (one per band first)"
    )
    lime_perturbations: int | None = Field(
        None, ge=1, description="perturbations LIME explains (None: attribution_perturbations)"
    )
    attribution_backend: Literal["transformers", "llama.cpp"] = Field(
        "transformers", description="teacher forcing of gguf: models (likelihood.load_scorer)"
    )
    attribution_methods: list[
        Literal["shap", "lime", "smile", "attention", "sentence_shap", "sentence_lime"]
    ] = Field(
        default_factory=lambda: ["shap", "lime"],
        description="explainers run per document: word level, or sentence_shap / sentence_lime "
        "over source sentences (the gate's explainer, gate.attribution's budget)",
    )
    attribution_dtype: Literal["float32", "bfloat16"] = Field(
        "float32", description="precision of the transformers attribution scorer"
    )
    shap_max_evals: int = Field(32, ge=8, description="model evaluations per SHAP explanation")
    lime_samples: int = Field(32, ge=8, description="model evaluations per LIME explanation")
    ablation_model: str = "gguf:smollm2-135m-instruct"
    ablation_documents: int = Field(12, ge=0, description="documents re-scored per ablation")
    localization_documents: int = Field(3, ge=0, description="documents shown highlighted")


class RunSettings(BaseModel):
    """Where things are read and written."""

    corpus: str = "data/reference"
    production_model: str = "gguf:qwen2.5-coder-0.5b-instruct"
    cache_dir: str = ".hss/cache"
    models_dir: str = ".hss/models"
    out: str = "outputs/score"
    baseline_dir: str = Field(
        "data/baseline", description="the production baseline (dvc.yaml's outputs)"
    )
    bench_out: str = "outputs/bench"


class BaselineSettings(BaseModel):
    """The production baseline's stages beyond the reference scores (`hss baseline --stage`,
    dvc.yaml); where they write is run.baseline_dir."""

    attribution_documents: int = Field(
        4,
        ge=0,
        description="stage attribution: production's attribution results (the gate's explainer, "
        "gate.attribution) of the first N documents a gate explains, stored for every gate to "
        "restore instead of explaining production again (0: none)",
    )


class CheckerDocuments(BaseModel):
    """One collection of unlabelled documents the entailment checker's pairs are made from."""

    path: str = Field(description="JSON Lines (id, text|document|article) or SummaC-style JSON")
    per_document: int = Field(ge=1, description="pairs made per document")
    llm_per_document: int = Field(
        0, ge=0, description="passages per document the LLM restates (hss checker claims)"
    )


class CheckerSettings(BaseModel):
    """Training of the entailment checker's adapter (`hss checker train`, dvc stage `checker`;
    docs/FACTUALITY.md): the data recipe and the optimisation."""

    out: str = Field(
        "hss_gate/consistency/entail_adapter.safetensors",
        description="the adapter written (the shipped one; its sha256 is pinned in "
        "consistency/entail_release.py)",
    )
    data_dir: str = Field(".hss/data", description="where the SNLI source distribution is kept")
    checkpoint_dir: str = Field(".hss/checker", description="checkpoints, to resume training")
    seed: int = 13
    snli_pairs: int = Field(16000, ge=0, description="SNLI pairs, half of them entailments")
    documents: list[CheckerDocuments] = Field(
        default_factory=lambda: [
            CheckerDocuments(path="data/reference/corpus.jsonl", per_document=24)
        ],
        description="unlabelled document collections for the document-grounded pairs",
    )
    llm_model: str = Field(
        "gguf:qwen2.5-coder-0.5b-instruct",
        description="the local LLM that writes the abstractive claims (hss checker claims)",
    )
    llm_claims: str | None = Field(
        None,
        description="the claims file training reads (null: train without LLM claims; the stage "
        "checker-claims writes .hss/data/llm_claims.jsonl)",
    )
    llm_words: int = Field(25, ge=5, description="words asked for per LLM claim")
    rank: int = Field(16, ge=1, description="LoRA rank of the adapters")
    alpha: float = Field(32.0, gt=0, description="LoRA scale numerator (scale alpha / rank)")
    max_length: int = Field(256, ge=32, description="word pieces of a (premise, claim) pair")
    epochs: int = Field(1, ge=1)
    batch_size: int = Field(16, ge=1)
    learning_rate: float = Field(5e-4, gt=0)
    threads: int = Field(
        2,
        ge=1,
        description="torch threads: results are byte-identical only "
        "for the same seed and thread count",
    )
    checkpoint_every: int = Field(200, ge=1, description="steps between checkpoints")


class AlertSettings(BaseModel):
    """Notifications of a monitor verdict beyond the exit code (docs/ALERTING.md)."""

    webhook_url: SecretStr | None = Field(
        None,
        description="POST the verdict's JSON here (http or https); a URL can carry a token: give "
        "it as HSS_ALERT__WEBHOOK_URL, never in params.yaml (it is never printed)",
    )
    on: list[Literal["healthy", "unhealthy", "error", "insufficient_data"]] = Field(
        default_factory=lambda: ["unhealthy"], description="the verdicts that notify"
    )
    prefect_event: bool = Field(
        False,
        description="emit the Prefect event hss.monitor.<decision> with the same payload (a "
        "Prefect automation can match it; needs a Prefect API: PREFECT_API_URL or a flow run)",
    )
    timeout_s: float = Field(10.0, gt=0, le=300, description="webhook: per attempt")
    retries: int = Field(
        2, ge=0, le=10, description="webhook: more attempts on a network error, 429 or 5xx"
    )

    @field_validator("webhook_url", mode="before")
    @classmethod
    def _empty_is_none(cls, url: object) -> object:
        """An empty value (an unset CI secret exports "") means no webhook."""
        return None if url == "" else url

    @field_validator("webhook_url")
    @classmethod
    def _http_only(cls, url: SecretStr | None) -> SecretStr | None:
        if url is not None and not re.match(r"(?i)^https?://[^/\s]+", url.get_secret_value()):
            raise ValueError("webhook_url must be an http:// or https:// URL")
        return url


class HssSettings(BaseSettings):
    """All settings of hss-gate. Source order: init args > env (HSS_*) > params.yaml > defaults."""

    model_config = SettingsConfigDict(env_prefix="HSS_", env_nested_delimiter="__", extra="ignore")

    schema_version: int = Field(
        SCHEMA_VERSION, ge=1, description="the params.yaml layout (settings.SCHEMA_CHANGES)"
    )
    hss_gate_version: str | None = Field(
        None,
        description="the hss-gate version a project's baseline is built with (`hss init` writes "
        "the installed one; its dvc.yaml stages depend on it, so an upgrade is a change)",
    )
    run: RunSettings = Field(default_factory=RunSettings)
    baseline: BaselineSettings = Field(default_factory=BaselineSettings)
    perturb: PerturbSettings = Field(default_factory=PerturbSettings)
    generate: GenerateSettings = Field(default_factory=GenerateSettings)
    score: ScoreSettings = Field(default_factory=ScoreSettings)
    consistency: ConsistencySettings = Field(default_factory=ConsistencySettings)
    checker: CheckerSettings = Field(default_factory=CheckerSettings)
    gate: GateSettings = Field(default_factory=GateSettings)
    monitor: MonitorSettings = Field(default_factory=MonitorSettings)
    experiment: ExperimentSettings = Field(default_factory=ExperimentSettings)
    alert: AlertSettings = Field(default_factory=AlertSettings)

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        return (init_settings, env_settings)


def _read_params(path: Path) -> dict[str, Any]:
    if not path.exists():
        return {}
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as exc:  # one line: the line number and the problem, no excerpt
        mark = getattr(exc, "problem_mark", None)
        where = f"{path}:{mark.line + 1}" if mark is not None else str(path)
        problem = getattr(exc, "problem", None) or type(exc).__name__
        raise InputError(f"{where}: invalid YAML ({problem})") from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: cannot read the params file ({exc})") from exc
    if not isinstance(data, dict):
        raise InputError(f"{path}: expected a mapping at the top level")
    data = {section: _on_key(values) for section, values in data.items() if values is not None}
    _check_keys(path, data)
    return data


def _on_key(values: Any) -> Any:
    """YAML 1.1 reads a bare `on:` key (alert.on) as the boolean true: give it its name back."""
    if isinstance(values, dict) and True in values and "on" not in values:
        return {("on" if key is True else key): v for key, v in values.items()}
    return values


def _check_keys(path: Path, data: dict[str, Any]) -> None:
    """Unknown sections and keys are refused: a misspelt key would silently keep its default."""
    sections = HssSettings.model_fields
    for section, values in data.items():
        if section in TOP_LEVEL_KEYS:
            continue  # values, not sections: schema_version is checked by check_schema
        if section not in sections:
            known = ", ".join(name for name in sections if name not in TOP_LEVEL_KEYS)
            hint = (
                ""
                if is_project(data)
                else "; another tool's file? give hss-gate its own: --params FILE"
            )
            raise InputError(f"{path}: unknown section '{section}' (known: {known}){hint}")
        if not isinstance(values, dict):
            raise InputError(f"{path}: section '{section}' must be a mapping of settings")
        model = sections[section].annotation
        if isinstance(model, type) and issubclass(model, BaseModel):
            for key in values:
                if key not in model.model_fields:
                    raise InputError(
                        f"{path}: unknown setting '{section}.{key}' "
                        f"(a typo? known: {', '.join(model.model_fields)})"
                    )


def with_param(text: str, section: str, key: str, value: str, note: str) -> str:
    """params.yaml's text with `section.key` set to `value` (its line's comment replaced by
    `note`; the key is added to the section when missing, the section when absent)."""
    lines = text.splitlines()
    line = f"  {key}: {value}"
    entry = f"{line:<41}# {note}"
    start = next((i for i, t in enumerate(lines) if t.rstrip() == f"{section}:"), None)
    if start is None:
        return text.rstrip("\n") + f"\n\n{section}:\n{entry}\n"
    end = next(
        (i for i in range(start + 1, len(lines)) if lines[i] and not lines[i][0].isspace()),
        len(lines),
    )
    for i in range(start + 1, end):
        if lines[i].startswith(f"  {key}:"):
            lines[i] = entry
            break
    else:
        lines.insert(start + 1, entry)
    return "\n".join(lines) + "\n"


def check_schema(path: Path, data: Mapping[str, Any]) -> None:
    """Refuse a params.yaml of another layout: an older one with the keys that changed since,
    a newer one with the advice to upgrade hss-gate."""
    version = data.get("schema_version", UNVERSIONED)
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise InputError(f"{path}: schema_version must be a whole number >= 1, got {version!r}")
    if version > SCHEMA_VERSION:
        raise InputError(
            f"{path}: schema_version {version} is newer than this hss-gate reads "
            f"({SCHEMA_VERSION}): upgrade hss-gate"
        )
    if version < SCHEMA_VERSION:
        changed = [
            key for later in range(version + 1, SCHEMA_VERSION + 1) for key in SCHEMA_CHANGES[later]
        ]
        raise InputError(
            f"{path}: schema_version {version} is older than {SCHEMA_VERSION}; changed since: "
            f"{'; '.join(changed) or 'nothing renamed'}: update them and set "
            f"schema_version: {SCHEMA_VERSION}"
        )


def is_project(data: Mapping[str, Any]) -> bool:
    """Does this params.yaml's content make its folder an hss-gate project (a known section or
    the schema_version key)?"""
    return any(key in HssSettings.model_fields for key in data)


def user_cache_dir(environ: Mapping[str, str]) -> Path:
    """hss-gate's folder in the user's cache: $XDG_CACHE_HOME/hss-gate, else ~/.cache/hss-gate."""
    base = environ.get("XDG_CACHE_HOME") or str(Path(environ.get("HOME") or Path.home()) / ".cache")
    return Path(base) / "hss-gate"


def load_settings(
    params_path: str | Path = "params.yaml", *, defaults: str | Path | None = None, **overrides: Any
) -> HssSettings:
    """Read params.yaml (if present) over the packaged defaults file `defaults` (if given), apply
    HSS_* env vars, then explicit overrides. Outside a project (no params.yaml with an hss-gate
    section) run.models_dir, unless set, is the user's cache folder: models are shared between
    folders instead of landing in whatever folder the command runs in."""
    path = Path(params_path)
    data = _read_params(path)
    check_schema(path, data)
    project = is_project(data)
    own_run = dict(data.get("run") or {})
    if defaults is not None:
        data = _deep_merge(_read_params(Path(defaults)), data)
    data.pop("schema_version", None)  # the file's layout, checked above; not a setting to carry
    known = set(HssSettings.model_fields)
    try:
        from_env = HssSettings()  # env beats the file
        set_by_env = from_env.model_dump(exclude_unset=True)
        merged = _deep_merge(data, set_by_env)
        for key, value in overrides.items():
            section, _, field = key.partition("__")
            merged.setdefault(section, {})[field] = value
        chosen = {*own_run, *set_by_env.get("run", {})} | {
            k for k in overrides if k == "run__models_dir"
        }
        if not project and not chosen & {"models_dir", "run__models_dir"}:
            merged.setdefault("run", {})["models_dir"] = str(user_cache_dir(os.environ) / "models")
        return HssSettings(**{k: v for k, v in merged.items() if k in known})
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        why = first["msg"].removeprefix("Value error, ")
        raise InputError(f"{path}: invalid setting '{where}': {why}") from exc


def version_mismatch(settings: HssSettings, installed: str) -> str | None:
    """A project's baseline built with another hss-gate than the installed one: what to do."""
    pinned = settings.hss_gate_version
    if pinned is None or pinned == installed:
        return None
    return (
        f"params: hss_gate_version {pinned}, installed {installed}: set it to {installed} and "
        f"rebuild the baseline (dvc repro), or install hss-gate {pinned}"
    )


def use_packaged_inputs(
    settings: HssSettings,
    root: Path | None,
    keys: tuple[str, ...] = PACKAGED_INPUTS,
    cwd: Path | None = None,
) -> list[str]:
    """Point each input path of `keys` (section.key) that the working folder `cwd` lacks at its
    packaged copy (hss_gate/packaged.py), in place; returns "key (path)" for each one replaced.
    The baseline's paths only while the corpus is the packaged one too: the packaged baseline
    is production's run on that corpus, not on a corpus of the user's."""
    if root is None:
        return []
    here = Path.cwd() if cwd is None else cwd
    notes = []
    own_corpus = packaged_path(settings.run.corpus, root) is None or (
        (here / settings.run.corpus).exists()
    )
    for dotted in keys:
        if own_corpus and dotted in PACKAGED_BASELINE:
            continue  # the packaged baseline belongs to the packaged corpus only
        section, _, key = dotted.partition(".")
        part = getattr(settings, section)
        value = getattr(part, key)
        if not value or (here / value).exists():
            continue
        packaged = packaged_path(value, root)
        if packaged is not None:
            setattr(part, key, str(packaged))
            notes.append(f"{dotted} ({value})")
    return notes


def _deep_merge(base: dict[str, Any], top: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in top.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _deep_merge(out[key], value)
        else:
            out[key] = value
    return out


CANDIDATE_GENERATE_KEYS = ("prompt", "system_prompt", "max_new_tokens")
"""What a candidate may set for itself: its own prompt and token budget (production keeps its)."""


def candidate_generate(base: GenerateSettings, overrides: dict[str, Any]) -> GenerateSettings:
    """The candidate's generation settings: production's with the candidate's own prompt or
    token budget (other keys are refused: the summary length asked for is the gate's)."""
    unknown = sorted(set(overrides) - set(CANDIDATE_GENERATE_KEYS))
    if unknown:
        raise InputError(
            f"candidate generation settings: unknown or not overridable {unknown} "
            f"(a candidate may set {', '.join(CANDIDATE_GENERATE_KEYS)})"
        )
    try:
        return GenerateSettings.model_validate(base.model_dump() | overrides)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        raise InputError(f"candidate generation settings: '{where}': {first['msg']}") from exc


def read_candidate_file(path: str | Path) -> tuple[str | None, dict[str, Any]]:
    """models/candidate.yaml: the candidate's `uri` and its own `generate` settings."""
    path = Path(path)
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except (OSError, yaml.YAMLError) as exc:
        raise InputError(f"{path}: cannot read the candidate file ({exc})") from exc
    if not isinstance(data, dict) or set(data) - {"uri", "generate"}:
        raise InputError(f"{path}: expected a mapping with `uri` and optionally `generate`")
    generate = data.get("generate") or {}
    if not isinstance(generate, dict):
        raise InputError(f"{path}: `generate` must be a mapping")
    uri = data.get("uri")
    return (str(uri) if uri else None), generate
