"""The shipped adapter of the `entail` checker: its file, the sha256 it must have and the
checker's threshold (the numbers a release pins; filled in when the trained adapter lands).

The adapter is verified against ENTAIL_ADAPTER_SHA256 before it is loaded: a missing file, a
file of another digest or an empty pin each stop the checker with a ModelError (the gate fails
closed, exit 2).
"""

from __future__ import annotations

from pathlib import Path

ENTAIL_ADAPTER_PATH = Path(__file__).with_name("entail_adapter.safetensors")

# The sha256 of the trained entail_adapter.safetensors (dvc stage checker, 2026-12-03: 27,944
# pairs, 1,747 steps, 2,830 s on 2 cores beside other jobs). Retrained: pin the new digest.
ENTAIL_ADAPTER_SHA256 = "2358d54c7e066dadbe0ea9cceb6c86b3b35b418c18c7f36e1d468e55a5274229"

# PLACEHOLDER: a summary (and a summary sentence) below is unsupported; to be chosen by
# measurement on labelled data, as SBERT_THRESHOLD was (consistency.threshold overrides it).
ENTAIL_THRESHOLD = 0.5
