"""The settings of the decisions: the gate's thresholds and explainer, the monitor and its alerts
(params.yaml sections `gate`, `monitor`, `alert`)."""

from __future__ import annotations

import re
from itertools import pairwise
from typing import Annotated, Literal

from pydantic import (
    BaseModel,
    Field,
    SecretStr,
    StringConstraints,
    field_serializer,
    field_validator,
    model_validator,
)


class GateAttributionSettings(BaseModel):
    """The explainer the gate uses for attribution instability (gate.attribution_documents > 0):
    sentence-level SHAP of the summarizer's teacher-forced log-likelihood of its base summary
    (hss_gate.models.sentence_explainer; docs/ATTRIBUTION.md section 7)."""

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
        0.45,
        ge=0.0,
        le=5.0,
        description="block when the summaries' mean sentence support falls significantly by "
        "more, in gate.consistency_margin_scale's units (standardized: 0.45 of production's "
        "per-document standard deviation, 0.10 on the reference corpus; chosen by replay, "
        "docs/REFERENCE.md 'Every number of the rule')",
    )
    consistency_margin_scale: Literal["checker", "standardized", "relative"] = Field(
        "standardized",
        description="the units of gate.consistency_margin: standardized (production's "
        "per-document standard deviation of the mean support on the gate's documents), checker "
        "(the checker's mean support itself) or relative (a share of production's mean of it)",
    )
    consistency_margin_floor: float = Field(
        0.05,
        ge=0.0,
        le=1.0,
        description="the least consistency margin, in the checker's units, under the "
        "standardized and relative scales (a production whose summaries are all supported has "
        "no spread, and a margin of 0 would block any significant fall)",
    )
    max_low_consistency_share: float = Field(
        0.29,
        ge=0.0,
        le=1.0,
        description="max share of summaries the checker finds unsupported (reference corpus: "
        "production's 0.19 under entail plus 0.10; invented-sbert 0.66, sbert 0.50)",
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
    block_on_drift: bool = Field(False, description="drift of score distributions blocks too")
    looks: list[Annotated[int, Field(ge=1)]] | None = Field(
        None,
        min_length=1,
        description="the document counts at which the gate looks, increasing (the last one the "
        "most a gate uses; counts beyond the corpus give way to its size, said in the decision); "
        "None: the first look every category once and at least 8 documents, each next look "
        "twice the last, at most 5 looks (hss_gate.decision.sequential.look_sizes)",
    )
    alpha_spending: Literal["bonferroni", "haybittle-peto", "pocock", "obrien-fleming"] = Field(
        "obrien-fleming",
        description="how the looks share the error rate 1 - score.confidence: equal shares "
        "(bonferroni), 0.001 at each interim look and the rest at the last (haybittle-peto), "
        "or the Lan-DeMets increments of Pocock's (more early) or "
        "O'Brien-Fleming's (little early, most late) spending function at each look's share of "
        "the last look's documents",
    )
    hss_documents: Literal["first_look", "all"] | Annotated[int, Field(ge=1)] | None = Field(
        None,
        description="the documents HSS is measured on (each needs its perturbed summaries): "
        "first_look (the first look's documents, at least one a category), all, or the first N "
        "documents of the looks' order; None: first_look when HSS does not block, all when it "
        "does. The other documents get only their original's summary (facts first)",
    )

    @model_validator(mode="after")
    def _looks_and_hss_documents(self) -> GateSettings:
        looks = self.looks or []
        if any(b <= a for a, b in pairwise(looks)):
            raise ValueError(f"gate.looks must increase, got {looks}")
        if self.hss_blocks and self.hss_documents not in (None, "all"):
            raise ValueError(
                f"gate.hss_documents is {self.hss_documents!r} but gate.hss_blocks is true: HSS "
                "that blocks is measured on every document of every look; unset "
                "gate.hss_documents (or set it to all), or set gate.hss_blocks to false"
            )
        return self

    def hss_subset(self) -> Literal["first_look", "all"] | int:
        """The documents HSS is measured on, the default resolved (hss_documents)."""
        if self.hss_documents is not None:
            return self.hss_documents
        return "all" if self.hss_blocks else "first_look"


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
        from hss_gate.common.redact import masked_url

        return masked_url(url)


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
