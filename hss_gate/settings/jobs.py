"""The settings of the runs and the other jobs: where runs read and write, the baseline's stages,
the checker's training and the paper's experiment (params.yaml sections `run`, `baseline`,
`checker`, `experiment`)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field


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
