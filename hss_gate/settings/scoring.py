"""The settings of a scoring run: perturbation, generation, scores and the consistency checker
(params.yaml sections `perturb`, `generate`, `score`, `consistency`), and a candidate's own
generation settings."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, Field, ValidationError, field_validator, model_validator

from hss_gate.common.errors import InputError

STRENGTH_ORDER = ("low", "moderate", "high")

TOKENS_PER_WORD = 1.35
"""Subword tokens per English word (Qwen2.5's tokenizer on production's summaries: 1.24-1.34)."""
WORDS_PER_SENTENCE = 20
"""Words per summary sentence, for the sentence count a length asks for."""


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
    sentence_grammar: Literal["v1", "v2"] = Field(
        "v2",
        description="the sentence limit's grammar (hss_gate.models.summarizers.base): v2, "
        "the production "
        "baseline's since 2026-12-05, keeps abbreviations, titles, decimals and times whole; v1 "
        "ended a sentence at every stop but a decimal point (it split 'a.m.' into 'a. m.' and "
        "let a closing bracket follow). Part of the summaries' fingerprint",
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
    flash_attention: Literal["auto", "on", "off"] = Field(
        "auto", description="GGUF: llama.cpp's flash attention (auto: its own choice)"
    )
    ubatch: int = Field(
        512, ge=32, le=8192, description="GGUF: tokens a prefill step computes at once"
    )
    kv_cache: Literal["f16", "q8_0"] = Field(
        "f16", description="GGUF: the KV cache's number type (q8_0: int8 blocks)"
    )

    @field_validator("speculative", "flash_attention", mode="before")
    @classmethod
    def _yaml_off(cls, value: object) -> object:
        """YAML 1.1 reads an unquoted `off` as false (and `on` as true)."""
        return {False: "off", True: "on"}.get(value, value) if isinstance(value, bool) else value

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


CHECKER_NAMES = ("entail", "invented-sbert", "invented", "sbert", "factcc")
"""The built-in checkers `consistency.model` names (besides a judge URI)."""
JUDGE_PREFIX = "judge"
JUDGE_SCHEMES = ("openai",)
"""The endpoints a judge may sit behind: `judge:openai:<base url>`, the summarizers' URI of an
OpenAI-compatible server (vLLM, TGI, llama.cpp server, Ollama, a hosted API)."""


def judge_endpoint(uri: str) -> tuple[str, str]:
    """(scheme, base URL) of a judge URI `judge:openai:<http(s) base url>`; ValueError naming
    what is wrong with a malformed one (a credential in it included: URIs go into
    fingerprints and reports, keys come from the environment)."""
    from urllib.parse import urlsplit

    from hss_gate.common.redact import redacted_uri

    shown = redacted_uri(uri)
    form = f"expected {JUDGE_PREFIX}:openai:<base url>, e.g. judge:openai:http://127.0.0.1:8080/v1"
    prefix, _, rest = uri.partition(":")
    scheme, sep, base = rest.partition(":")
    if prefix != JUDGE_PREFIX or not sep or scheme not in JUDGE_SCHEMES:
        raise ValueError(f"invalid judge URI '{shown}': {form}")
    try:
        parts = urlsplit(base)
        valid = parts.scheme in ("http", "https") and bool(parts.hostname) and parts.port != 0
    except ValueError:  # a port that is not a number
        valid = False
    if not valid or any(c.isspace() for c in base):
        raise ValueError(
            f"invalid judge URI '{shown}': '{redacted_uri(base)}' is not an http(s) URL; {form}"
        )
    if shown != uri:
        raise ValueError(
            f"judge URI '{shown}' carries a credential; URIs are written into fingerprints and "
            "reports, so pass the key through the environment (HSS_JUDGE_API_KEY)"
        )
    return scheme, base.rstrip("/")


class ConsistencySettings(BaseModel):
    """The factual-consistency checker (`hss factuality`; docs/FACTUALITY.md)."""

    model: str = Field(
        "entail",
        description="the checker decisions use: entail, invented-sbert, invented, sbert, factcc, "
        "or judge:openai:<base url> (an LLM behind an OpenAI-compatible endpoint; "
        "docs/FACTUALITY.md)",
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
    aggregate: Literal["min", "softmin", "mean"] = Field(
        "min",
        description="model entail: the summary sentences' scores -> the consistency (min: its "
        "least supported sentence, so one unsupported sentence shows; softmin: a soft minimum)",
    )
    evidence_top: int = Field(
        3, ge=1, description="model entail: source sentences SBERT ranks closest to a claim"
    )
    evidence_neighbours: int = Field(
        1, ge=0, description="model entail: sentences on each side of each one, as its context"
    )

    @field_validator("model")
    @classmethod
    def _known_checker(cls, value: str) -> str:
        if value.startswith(f"{JUDGE_PREFIX}:"):
            judge_endpoint(value)  # ValueError with what is wrong
        elif value not in CHECKER_NAMES:
            raise ValueError(
                f"unknown checker '{value}'; choose from {', '.join(CHECKER_NAMES)} or "
                f"{JUDGE_PREFIX}:openai:<base url>"
            )
        return value

    def entail_options(self) -> dict[str, Any]:
        """The keyword arguments of `consistency.checker.load_checker` for model entail."""
        return {
            "adapter": self.adapter,
            "aggregate": self.aggregate,
            "evidence_top": self.evidence_top,
            "evidence_neighbours": self.evidence_neighbours,
        }


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
