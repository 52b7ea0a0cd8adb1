"""How a workflow runs its steps, and the callables it is given.

A workflow calls every step through a `Steps` runner: `compute` for arithmetic, `io` for reading
and writing. The command line runs them directly (DIRECT); the Prefect flows run each one as a
task, with retries on I/O (`PREFECT_STEPS` in flows/tasks.py). The order of the steps and what
happens when one fails live in the workflow alone.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar

from hss_gate.common.progress import Progress, no_progress

if TYPE_CHECKING:  # the ModelRunner protocol's types only: running a step imports no engine
    from hss_gate.scoring.normalization import Normalization
    from hss_gate.scoring.pipeline import ScoreResult
    from hss_gate.scoring.toolkit import Toolkit
    from hss_gate.settings import HssSettings
    from hss_gate.text.corpus import Document

T = TypeVar("T")

Say = Callable[[str], None]
"""Where a workflow reports a line of what it did (console, log)."""


class ModelRunner(Protocol):
    """Runs the model a URI names on documents and scores its summaries, with the models of
    its toolkit: one model's run (`runner.LocalRunner` in this process, `flows.scoring.DaskRunner`
    on Dask)."""

    def toolkit(self, settings: HssSettings) -> Toolkit:
        """The models besides the summarizer (tagger, vectors, lexicon, embedder), shared."""
        ...

    def __call__(
        self,
        uri: str,
        docs: Sequence[Document],
        settings: HssSettings,
        normalization: Normalization | None,
        progress: Progress = no_progress,
        hss_documents: Collection[str] | None = None,
    ) -> tuple[ScoreResult, dict[str, Any]]:
        """(result, run metadata); `hss_documents`: the doc_ids whose HSS is measured (None:
        every document; the others get only their original's summary)"""
        ...


class Steps(Protocol):
    """Runs one step of a workflow."""

    def compute(self, step: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """A step that computes (no retries)."""
        ...

    def io(self, step: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """A step that reads or writes (retried where the runner retries)."""
        ...


@dataclass
class Outcome(Generic[T]):
    """A fail-closed workflow's verdict, the folder it was written to, and the error that made
    the verdict "error" (if one did)."""

    verdict: T
    out_dir: Path
    error: BaseException | None = field(default=None, repr=False)


class DirectSteps:
    """Runs each step as a plain call (the command line)."""

    def compute(self, step: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        return step(*args, **kwargs)

    def io(self, step: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        return step(*args, **kwargs)


DIRECT = DirectSteps()


def silent(line: str) -> None:
    """A Say that says nothing."""
