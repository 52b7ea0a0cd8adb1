"""hss-gate: a quality gate for text summarizers based on the Hallucination Severity Score.

The Python API the docs show is importable from here (`from hss_gate import load_summarizer`),
loaded on first use so that `import hss_gate` stays light; its home modules are named below."""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

_API = {
    "load_settings": "hss_gate.settings",
    "load_corpus": "hss_gate.common.inputs",
    "load_summarizer": "hss_gate.models.summarizers",
    "explain_sentences": "hss_gate.models.sentence_explainer",
    "SentenceAttributionSettings": "hss_gate.models.sentence_explainer",
}
__all__ = ["__version__", *_API]


def __getattr__(name: str) -> Any:
    if name not in _API:
        raise AttributeError(f"module 'hss_gate' has no attribute {name!r}")
    return getattr(importlib.import_module(_API[name]), name)
