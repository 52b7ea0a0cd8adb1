"""How the flows run the workflows' steps: each step is a Prefect task.

`PREFECT_STEPS` is the `Steps` runner (hss_gate.workflows.steps) of every flow: `io` steps
(reading settings, corpora, constants and score tables, writing outputs, the sample store)
retry IO_RETRIES times, IO_RETRY_DELAY_S apart; `compute` steps don't. Every task has
`cache_policy=NO_CACHE`: hss-gate keeps its own content-addressed cache (summaries,
embeddings, perturbations) under `run.cache_dir`, and Prefect's input hashing of whole corpora
and score tables would cost time and persist large results for nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from prefect import task
from prefect.cache_policies import NO_CACHE

T = TypeVar("T")

IO_RETRIES = 2
IO_RETRY_DELAY_S = 2


def _as_task(step: Callable[..., Any], io: bool) -> Any:
    name = getattr(step, "__name__", type(step).__name__)
    if io:
        return task(
            step,
            name=name,
            retries=IO_RETRIES,
            retry_delay_seconds=IO_RETRY_DELAY_S,
            cache_policy=NO_CACHE,
        )
    return task(step, name=name, cache_policy=NO_CACHE)


class PrefectSteps:
    """Runs each workflow step as a Prefect task of the current flow run."""

    def compute(self, step: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        return _as_task(step, False)(*args, **kwargs)

    def io(self, step: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        return _as_task(step, True)(*args, **kwargs)


PREFECT_STEPS = PrefectSteps()


def settings_loader(params: str, overrides: dict[str, Any]) -> Callable[[], Any]:
    """The workflow's first step: params.yaml, HSS_* and the flow's `section__key` overrides
    (None values dropped)."""
    from hss_gate.settings import load_settings

    def load_flow_settings() -> Any:
        return load_settings(params, **{k: v for k, v in overrides.items() if v is not None})

    return load_flow_settings


def publish(markdown: str, key: str, description: str, logger: Any) -> None:
    """A Markdown artifact in the Prefect UI (the decision or the monitor verdict). A courtesy:
    the report files are the contract, so a failure here is only logged."""
    from prefect.artifacts import create_markdown_artifact

    try:
        create_markdown_artifact(markdown=markdown, key=key, description=description)
    except Exception as exc:
        logger.warning("could not create the %s artifact: %s", key, exc)
