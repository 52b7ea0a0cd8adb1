"""Shared flow pieces: the task runner choice, I/O tasks, and scoring fanned out over documents.

Scoring runs in a `score` subflow whose task runner is chosen per call (`score_subflow`): the
default thread runner for one chunk, prefect-dask's DaskTaskRunner for several (a local cluster
of `workers` threads, or an existing cluster at `dask_address`). Each chunk is one
`hss_gate.runner.score_model` call; the chunks are merged by `hss_gate.pipeline.merge_results`.

Every task has `cache_policy=NO_CACHE`: hss-gate keeps its own content-addressed cache (summaries,
embeddings, perturbations) under `run.cache_dir`, and Prefect's input hashing of whole corpora and
score tables would cost time and persist large results for nothing.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from prefect import flow, get_run_logger, task
from prefect.cache_policies import NO_CACHE

from hss_gate.corpus import Document
from hss_gate.normalization import Normalization
from hss_gate.pipeline import ScoreResult, Toolkit
from hss_gate.settings import HssSettings

IO_RETRIES = 2
IO_RETRY_DELAY_S = 2
DEFAULT_CHUNK_SIZE = 4
"""Documents per chunk on an existing Dask cluster when neither workers nor chunk_size is set."""

io_task = task(retries=IO_RETRIES, retry_delay_seconds=IO_RETRY_DELAY_S, cache_policy=NO_CACHE)
compute_task = task(cache_policy=NO_CACHE)


def error_message(exc: BaseException) -> str:
    """The one-line reason a flow failed closed (HssError messages are already user-facing)."""
    from hss_gate.errors import HssError

    return str(exc) if isinstance(exc, HssError) else f"{type(exc).__name__}: {exc}"


# ------------------------------------------------------------------------ per-process models

_TOOLKITS: dict[str, Toolkit] = {}
_TOOLKIT_LOCK = threading.Lock()


def toolkit_key(settings: HssSettings) -> str:
    """The settings that select the toolkit's models (word vectors, vocabulary, embedder)."""
    return settings.model_dump_json(
        include={"perturb": {"word_vectors", "vocab_limit"}, "score": {"embedder"}}
    )


def process_toolkit(settings: HssSettings) -> Toolkit:
    """The real toolkit (spaCy, word vectors, WordNet, SBERT), built once per worker process.

    The models load lazily on first use and are then shared by every chunk the process scores.
    """
    from hss_gate.toolkit import real_toolkit

    key = toolkit_key(settings)
    with _TOOLKIT_LOCK:
        if key not in _TOOLKITS:
            _TOOLKITS[key] = real_toolkit(settings)
        return _TOOLKITS[key]


# ------------------------------------------------------------------------ task runners


def task_runner(workers: int = 1, dask_address: str | None = None) -> Any:
    """DaskTaskRunner for an existing cluster (address) or a local one (workers > 1), else None.

    The local cluster runs `workers` single-threaded workers inside this process
    (processes=False): no worker process needs its own Prefect API, and the models are loaded
    once. A remote cluster's workers are separate processes: they need PREFECT_API_URL of a real
    Prefect server and hss-gate installed with its models.
    """
    if workers < 1:
        from hss_gate.errors import InputError

        raise InputError(f"workers must be at least 1, got {workers}")
    if not dask_address and workers == 1:
        return None
    from prefect_dask import DaskTaskRunner

    if dask_address:
        return DaskTaskRunner(address=dask_address)
    return DaskTaskRunner(
        cluster_kwargs={"n_workers": workers, "threads_per_worker": 1, "processes": False}
    )


def n_chunks(
    n_documents: int,
    workers: int = 1,
    dask_address: str | None = None,
    chunk_size: int | None = None,
) -> int:
    """How many chunks to score: by chunk_size if given, else one per worker.

    On an existing cluster with workers left at 1, chunks hold DEFAULT_CHUNK_SIZE documents.
    """
    if n_documents < 1:
        return 1
    if chunk_size is not None:
        if chunk_size < 1:
            from hss_gate.errors import InputError

            raise InputError(f"chunk_size must be at least 1, got {chunk_size}")
        return math.ceil(n_documents / chunk_size)
    if dask_address and workers == 1:
        return math.ceil(n_documents / DEFAULT_CHUNK_SIZE)
    return min(workers, n_documents)


def split_documents(docs: Sequence[Document], chunks: int) -> list[list[Document]]:
    """Documents in `chunks` contiguous, near-equal parts, in order (none empty)."""
    chunks = max(1, min(chunks, len(docs)))
    size, extra = divmod(len(docs), chunks)
    parts, start = [], 0
    for i in range(chunks):
        end = start + size + (1 if i < extra else 0)
        parts.append(list(docs[start:end]))
        start = end
    return parts


# ------------------------------------------------------------------------ I/O tasks


@io_task
def load_settings_task(params: str, overrides: dict[str, Any] | None = None) -> HssSettings:
    """params.yaml + HSS_* environment + explicit `section__key` overrides."""
    from hss_gate.settings import load_settings

    return load_settings(params, **{k: v for k, v in (overrides or {}).items() if v is not None})


@io_task
def load_corpus_task(path: str, limit: int | None = None) -> list[Document]:
    """The documents of a JSONL file or directory."""
    from hss_gate.corpus import load_corpus

    return load_corpus(path, limit)


@io_task
def load_normalization_task(path: str) -> Normalization:
    """The normalization constants M_c."""
    from hss_gate.normalization import load_normalization

    return load_normalization(path)


@io_task
def write_outputs_task(out: str, result: ScoreResult, meta: dict[str, Any]) -> str:
    """A run's score tables, summary.json and report.md."""
    from hss_gate.report import write_outputs

    write_outputs(Path(out), result, meta)
    return out


# ------------------------------------------------------------------------ scoring


@compute_task
def score_chunk(
    uri: str,
    docs: Sequence[Document],
    settings: HssSettings,
    normalization: Normalization | None,
) -> tuple[ScoreResult, dict[str, Any]]:
    """Score one chunk of documents with the model a URI names."""
    from hss_gate.runner import score_model

    return score_model(uri, docs, settings, normalization, tools=process_toolkit(settings))


@compute_task
def merge_chunks(parts: Sequence[ScoreResult], settings: HssSettings) -> ScoreResult:
    """One result from the chunks' results, in chunk order."""
    from hss_gate.pipeline import merge_results

    return merge_results(parts, settings)


@flow(name="score", validate_parameters=False)
def score_flow(
    uri: str,
    docs: list[Document],
    settings: HssSettings,
    normalization: Normalization | None = None,
    chunks: int = 1,
) -> tuple[ScoreResult, dict[str, Any]]:
    """Score documents in `chunks` parts on this flow's task runner and merge the parts."""
    logger = get_run_logger()
    parts = split_documents(docs, chunks)
    started = time.perf_counter()
    if len(parts) == 1:
        return score_chunk(uri, parts[0], settings, normalization)
    logger.info("scoring %d documents with %s in %d chunks", len(docs), uri, len(parts))
    futures = [score_chunk.submit(uri, part, settings, normalization) for part in parts]
    outputs = [f.result() for f in futures]
    result = merge_chunks([r for r, _ in outputs], settings)
    meta = dict(outputs[0][1])
    meta.update(
        documents=len(docs),
        chunks=len(parts),
        wall_time_s=round(time.perf_counter() - started, 1),
    )
    return result, meta


def score_subflow(
    uri: str,
    docs: list[Document],
    settings: HssSettings,
    normalization: Normalization | None = None,
    *,
    workers: int = 1,
    dask_address: str | None = None,
    chunk_size: int | None = None,
) -> tuple[ScoreResult, dict[str, Any]]:
    """Run `score_flow` as a subflow on the task runner the parallelism options ask for."""
    runner = task_runner(workers, dask_address)
    chunks = n_chunks(len(docs), workers, dask_address, chunk_size)
    scorer = score_flow.with_options(task_runner=runner) if runner is not None else score_flow
    return scorer(uri, docs, settings, normalization, chunks=chunks)


@io_task
def markdown_artifact_task(markdown: str, key: str, description: str) -> None:
    """A Markdown artifact in the Prefect UI (the decision or the monitor verdict)."""
    from prefect.artifacts import create_markdown_artifact

    create_markdown_artifact(markdown=markdown, key=key, description=description)


@io_task
def read_table_task(path: str) -> Any:
    """A CSV score table as a DataFrame (missing or unreadable: InputError)."""
    from hss_gate.report import read_score_table

    return read_score_table(path)


@io_task
def read_json_task(path: str) -> Any:
    """A JSON file (missing or invalid: InputError)."""
    from hss_gate.report import read_json

    return read_json(path)


@io_task
def write_json_task(path: str, data: Any) -> str:
    """JSON written atomically."""
    from hss_gate.normalization import write_json_atomic

    write_json_atomic(path, data)
    return path


@io_task
def write_csv_task(path: str, table: Any) -> str:
    """A table written atomically as CSV."""
    from hss_gate.report import write_csv_atomic

    Path(path).parent.mkdir(parents=True, exist_ok=True)
    write_csv_atomic(Path(path), table)
    return path


@compute_task
def score_frame_task(result: Any, variant: str) -> Any:
    """A run's documents with per-band mean distances."""
    from hss_gate.promotion import score_frame

    return score_frame(result, variant)


@compute_task
def score_drift_task(
    reference: Any, current: Any, settings: Any, out_dir: str, title: str
) -> dict[str, Any]:
    """Evidently drift of the current score distributions against the reference (HTML + JSON)."""
    from hss_gate.promotion import score_drift

    return score_drift(
        reference,
        current,
        settings.monitor.drift_columns,
        settings.monitor.drift_share,
        Path(out_dir),
        title,
    )


def add_common_arguments(parser: Any) -> None:
    """--params, --workers, --dask-address and --chunk-size for a flow's command line."""
    parser.add_argument(
        "--workers", type=int, default=1, help="local Dask workers (threads); 1 = no Dask"
    )
    parser.add_argument(
        "--dask-address", default=None, help="existing Dask scheduler, e.g. tcp://host:8786"
    )
    parser.add_argument("--chunk-size", type=int, default=None, help="documents per chunk")
    parser.add_argument("--params", default="params.yaml", help="params.yaml to read")
