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
    """One collection of unlabelled documents whose claims seed the checker's training pairs."""

    path: str = Field(
        description="JSON Lines (id, text|document|article), SummaC-style JSON (document, "
        "reference_summary) or a SummEdits file (its evaluation rows' documents and seeds)"
    )
    summaries: str | None = Field(
        None,
        description="stored summaries of these documents (JSON Lines: doc_id, summary, "
        "strength), e.g. a baseline's summaries.jsonl: their sentences are seed claims too",
    )
    sentences: int = Field(6, ge=0, description="source sentences per document taken as seeds")


class CheckerStage(BaseModel):
    """One stage of the checker's training: its data and its optimisation. A later stage starts
    from the adapter the stage before it wrote."""

    snli_pairs: int = Field(0, ge=0, description="SNLI pairs, half of them entailments")
    documents: list[CheckerDocuments] = Field(
        default_factory=list, description="collections whose claims are edited into pairs"
    )
    labelled: list[str] = Field(
        default_factory=list,
        description="human-labelled summaries read as labelled sentences on their evidence: "
        "SummEdits files (their rows of `splits`), QAGS JSON Lines, SummaC-style JSON (FactCC, "
        "SummEval) or FRANK's summaries.jsonl (consistency/labelled_summaries.py: which "
        "sentences' labels are known)",
    )
    exclude_documents: list[str] = Field(
        default_factory=list,
        description="files whose documents no pair of the stage reads (a set reported left "
        "out, e.g. frank_cnndm/documents.jsonl while `hss systems` replays FRANK; the CNN/DM "
        "sets share articles)",
    )
    splits: list[Literal["evaluation", "test"]] = Field(
        default_factory=lambda: ["evaluation"],
        min_length=1,
        description="the SummEdits rows a stage reads, for its labelled pairs and its seed "
        "documents (a fold that reports on a domain leaves that domain's file out)",
    )
    unique_pairs: bool = Field(
        False,
        description="take a labelled (evidence, sentence, label) once, not once a row (the "
        "shipped 2026-12-05 recipe kept the repeats)",
    )
    epochs: int = Field(1, ge=1)
    learning_rate: float = Field(5e-4, gt=0)


class CheckerSettings(BaseModel):
    """Training of the entailment checker's adapter (`hss checker train`, dvc stage `checker`;
    docs/FACTUALITY.md): the data recipe by stage and the optimisation."""

    out: str = Field(
        "hss_gate/consistency/entail_adapter.safetensors",
        description="the adapter written (the shipped one; its sha256 is pinned in "
        "consistency/entail_release.py)",
    )
    data_dir: str = Field(".hss/data", description="where the SNLI source distribution is kept")
    checkpoint_dir: str = Field(".hss/checker", description="checkpoints, to resume training")
    seed: int = 13
    init: str | None = Field(
        None,
        description="an adapter file the first stage starts from (null: fresh adapters), e.g. "
        "the shipped one, to train it further on your own documents",
    )
    stages: list[CheckerStage] = Field(
        default_factory=lambda: [
            CheckerStage(documents=[CheckerDocuments(path="data/reference/corpus.jsonl")])
        ],
        min_length=1,
        description="the training stages, in order",
    )
    rank: int = Field(
        16,
        ge=0,
        description="LoRA rank of the adapters (0: full fine-tuning of the encoder from "
        "checker.init merged into it; a file of the whole encoder, about 90 MB)",
    )
    alpha: float = Field(32.0, gt=0, description="LoRA scale numerator (scale alpha / rank)")
    max_length: int = Field(256, ge=32, description="word pieces of a (premise, claim) pair")
    marks: bool = Field(
        True, description="the claim's words its evidence lacks are marked for the encoder"
    )
    pair_margin: float = Field(
        1.0, ge=0, description="weight of the ranking loss between a seed claim's two labels"
    )
    batch_size: int = Field(16, ge=1)
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
    attribution_workers: int = Field(
        0,
        ge=0,
        description="forward passes of the transformers attribution scorer at once, each on one "
        "torch thread (0: one per core this process may use; 1: one pass on torch's own threads)",
    )
    shap_max_evals: int = Field(32, ge=8, description="model evaluations per SHAP explanation")
    lime_samples: int = Field(32, ge=8, description="model evaluations per LIME explanation")
    ablation_model: str = "gguf:smollm2-135m-instruct"
    ablation_documents: int = Field(12, ge=0, description="documents re-scored per ablation")
    localization_documents: int = Field(3, ge=0, description="documents shown highlighted")
