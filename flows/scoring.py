"""Scoring fanned out over documents: what Prefect and Dask add to the workflows' scoring.

`DaskRunner` is the model runner the flows give the workflows (hss_gate.workflows). It runs
a `score` subflow whose task runner is chosen per call: the default thread runner for one chunk,
prefect-dask's DaskTaskRunner for several (a local cluster of `workers` threads, or an existing
cluster at `dask_address`). Each chunk is one `hss_gate.scoring.runner.score_model` call with the
models loaded once per worker process; the chunks are merged by
`hss_gate.scoring.pipeline.merge_results`.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Collection, Sequence
from typing import Any

from prefect import flow, get_run_logger, task
from prefect.cache_policies import NO_CACHE

from hss_gate.common.progress import Progress, no_progress
from hss_gate.scoring.normalization import Normalization
from hss_gate.scoring.pipeline import ScoreResult
from hss_gate.scoring.runner import LocalRunner
from hss_gate.scoring.toolkit import Toolkit
from hss_gate.settings import HssSettings
from hss_gate.text.corpus import Document

DEFAULT_CHUNK_SIZE = 4
"""Documents per chunk on an existing Dask cluster when neither workers nor chunk_size is set."""

compute_task = task(cache_policy=NO_CACHE)


# ------------------------------------------------------------------------ per-process models

_PROCESS_RUNNER = LocalRunner()
_SCORER_LOCK = threading.Lock()


def process_toolkit(settings: HssSettings) -> Toolkit:
    """The real toolkit (spaCy, word vectors, WordNet, SBERT), built once per worker process.

    The models load lazily on first use and are then shared by every chunk the process scores.
    """
    with _SCORER_LOCK:
        return _PROCESS_RUNNER.toolkit(settings)


# ------------------------------------------------------------------------ task runners


def task_runner(workers: int = 1, dask_address: str | None = None) -> Any:
    """DaskTaskRunner for an existing cluster (address) or a local one (workers > 1), else None.

    The local cluster runs `workers` single-threaded workers inside this process
    (processes=False): no worker process needs its own Prefect API, and the models are loaded
    once. A remote cluster's workers are separate processes: they need PREFECT_API_URL of a real
    Prefect server and hss-gate installed with its models.
    """
    if workers < 1:
        from hss_gate.common.errors import InputError

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
            from hss_gate.common.errors import InputError

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


# ------------------------------------------------------------------------ scoring


@compute_task
def score_chunk(
    uri: str,
    docs: Sequence[Document],
    settings: HssSettings,
    normalization: Normalization | None,
    progress: Progress = no_progress,
    hss_documents: list[str] | None = None,
) -> tuple[ScoreResult, dict[str, Any]]:
    """Score one chunk of documents with the model a URI names (`hss_documents`: the doc_ids
    whose HSS is measured; None: all)."""
    from hss_gate.scoring import runner

    tools = process_toolkit(settings)
    return runner.score_model(
        uri,
        docs,
        settings,
        normalization,
        tools=tools,
        progress=progress,
        hss_documents=hss_documents,
    )


@compute_task
def merge_chunks(parts: Sequence[ScoreResult], settings: HssSettings) -> ScoreResult:
    """One result from the chunks' results, in chunk order."""
    from hss_gate.scoring.pipeline import merge_results

    return merge_results(parts, settings)


@flow(name="score", validate_parameters=False)
def score_flow(
    uri: str,
    docs: list[Document],
    settings: HssSettings,
    normalization: Normalization | None = None,
    chunks: int = 1,
    progress: Progress = no_progress,
    hss_documents: list[str] | None = None,
) -> tuple[ScoreResult, dict[str, Any]]:
    """Score documents in `chunks` parts on this flow's task runner and merge the parts."""
    logger = get_run_logger()
    parts = split_documents(docs, chunks)
    started = time.perf_counter()
    if len(parts) == 1:
        return score_chunk(uri, parts[0], settings, normalization, progress, hss_documents)
    logger.info("scoring %d documents with %s in %d chunks", len(docs), uri, len(parts))
    futures = [
        score_chunk.submit(uri, part, settings, normalization, hss_documents=hss_documents)
        for part in parts
    ]
    advance = progress("chunks", len(futures), 0)
    outputs = []
    for future in futures:
        outputs.append(future.result())
        advance(1)
    result = merge_chunks([r for r, _ in outputs], settings)
    meta = dict(outputs[0][1])
    meta.update(
        documents=len(docs),
        chunks=len(parts),
        wall_time_s=round(time.perf_counter() - started, 1),
        # each chunk counts its cache's new summaries, and concurrent chunks sharing one cache
        # count each other's: unknown rather than wrong
        summaries_generated=None,
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
    progress: Progress = no_progress,
    hss_documents: list[str] | None = None,
) -> tuple[ScoreResult, dict[str, Any]]:
    """Run `score_flow` as a subflow on the task runner the parallelism options ask for."""
    runner = task_runner(workers, dask_address)
    chunks = n_chunks(len(docs), workers, dask_address, chunk_size)
    if runner is None:  # in this process: the progress reporter can be passed along
        return score_flow(
            uri,
            docs,
            settings,
            normalization,
            chunks=chunks,
            progress=progress,
            hss_documents=hss_documents,
        )
    # Dask pickles what its tasks get and a reporter holds a lock: the flow logs its chunks
    return score_flow.with_options(task_runner=runner)(
        uri, docs, settings, normalization, chunks, hss_documents=hss_documents
    )


class DaskRunner:
    """The flows' model runner (hss_gate.workflows.steps.ModelRunner): `score_subflow` with
    the parallelism asked for, and the process's shared toolkit."""

    def __init__(
        self, workers: int = 1, dask_address: str | None = None, chunk_size: int | None = None
    ) -> None:
        self.workers, self.dask_address, self.chunk_size = workers, dask_address, chunk_size

    def toolkit(self, settings: HssSettings) -> Toolkit:
        return process_toolkit(settings)

    def __call__(
        self,
        uri: str,
        docs: Sequence[Document],
        settings: HssSettings,
        normalization: Normalization | None,
        progress: Progress = no_progress,
        hss_documents: Collection[str] | None = None,
    ) -> tuple[ScoreResult, dict[str, Any]]:
        return score_subflow(
            uri,
            list(docs),
            settings,
            normalization,
            workers=self.workers,
            dask_address=self.dask_address,
            chunk_size=self.chunk_size,
            progress=progress,
            hss_documents=None if hss_documents is None else sorted(hss_documents),
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
