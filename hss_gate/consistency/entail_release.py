"""The shipped adapter of the `entail` checker: its file, the sha256 it must have and the
checker's threshold and its measured trust (the numbers a release pins, from the measurements
in docs/FACTUALITY.md).

The adapter is verified against ENTAIL_ADAPTER_SHA256 before it is loaded: a missing file, a
file of another digest or an empty pin each stop the checker with a ModelError (the gate fails
closed, exit 2).
"""

from __future__ import annotations

from pathlib import Path

from hss_gate.text.sentences import SPLITTER_VERSION

ENTAIL_ADAPTER_PATH = Path(__file__).with_name("entail_adapter.safetensors")

EVIDENCE_VERSION = "ev4"  # ev2: function words claim nothing; ev3: one batch a summary;
# ev4: a claim its evidence quotes word for word is supported (1.0)
"""Goes into the fingerprint: bump it when the evidence a claim is read against changes."""


def entail_fingerprint(
    adapter_sha256: str,
    embedder: str,
    top: int,
    neighbours: int,
    aggregate: str,
    threshold: float,
) -> str:
    """What the checker's verdicts depend on: adapter, SBERT, splitter, evidence, aggregation."""
    return (
        f"entail:{adapter_sha256[:12]}:{embedder}:{SPLITTER_VERSION}:{EVIDENCE_VERSION}:"
        f"t{top}n{neighbours}:{aggregate}:t{threshold:g}"
    )


# The sha256 of the trained entail_adapter.safetensors (dvc stage checker, 2026-12-07, issue 54:
# the 2026-12-03 adapter, entail_base_adapter.safetensors, trained on 5,358 pairs of every
# labelled row of SummEdits' four development domains, 727 steps on 2 cores). Retrained: pin
# the new digest.
ENTAIL_ADAPTER_SHA256 = "84fd88ec5c612029987f2217f1220431483251764c0669c0f4d1e61e538098e5"

# A summary (and a summary sentence) below is unsupported (consistency.threshold overrides it):
# the score below which 20% of production's 48 reference summaries fall under the shipped
# adapter (aggregate min), the ceiling on the share flagged. No label chose it: a
# threshold chosen on the other folds' labels did worse on the left-out domain (balanced
# accuracy 0.560 against 0.591, leave one domain out) and flagged 25% of production's summaries
# on average, up to 40%. The adapter's probabilities are not calibrated: read it as a rank, not a P.
ENTAIL_THRESHOLD = 0.0739

# How far a verdict of the shipped checker can be trusted, as every report states it: the
# shipped recipe's leave-one-domain-out figures on the four SummEdits development domains (each
# domain's AUC and balanced accuracy on all its rows with an adapter trained without it,
# aggregate min, the threshold production's 20% quantile under that adapter;
# scripts/checker_folds.py, then checker_benchmark.py lodo --rule production --aggregate min).
ENTAIL_LODO_AUC: float | None = 0.63  # per domain 0.603, 0.773, 0.574, 0.562
ENTAIL_LODO_BALANCED_ACCURACY: float | None = 0.59  # per domain 0.590, 0.696, 0.522, 0.555

# The settings those figures were measured under, besides the adapter: the embedded SBERT for
# evidence, params.yaml's default evidence (3 sentences, 1 neighbour), aggregate and threshold.
# A checker read any other way (`mean` moves one domain from 0.645 to 0.465) was not measured.
ENTAIL_MEASURED_EMBEDDER = "sbert:all-minilm-l6-v2"
ENTAIL_MEASURED_READING = {"top": 3, "neighbours": 1, "aggregate": "min"}


def measured_fingerprint() -> str:
    """The whole fingerprint the trust figures above belong to."""
    return entail_fingerprint(
        ENTAIL_ADAPTER_SHA256,
        ENTAIL_MEASURED_EMBEDDER,
        threshold=ENTAIL_THRESHOLD,
        **ENTAIL_MEASURED_READING,  # type: ignore[arg-type]
    )


def checker_trust(fingerprint: str) -> str:
    """One sentence for a report: how well the checker of `fingerprint` tells a summary that
    changed one fact from one that only reworded it, as measured for that whole fingerprint
    (adapter, evidence, aggregate, threshold), or that it was not."""
    name = fingerprint.split(":", 1)[0] or "n/a"
    measured = ENTAIL_LODO_AUC is not None and ENTAIL_LODO_BALANCED_ACCURACY is not None
    if measured and fingerprint == measured_fingerprint():
        return (
            "the shipped entail checker tells a one-fact change from a rewording of an LLM's "
            f"summary at ROC AUC {ENTAIL_LODO_AUC:.2f} and balanced accuracy "
            f"{ENTAIL_LODO_BALANCED_ACCURACY:.2f} (SummEdits, four domains, each left out of "
            "its training; 0.5 is chance): read its verdicts as a noisy signal "
            "(docs/FACTUALITY.md)"
        )
    if fingerprint.startswith(f"entail:{ENTAIL_ADAPTER_SHA256[:12]}:"):
        return (
            "how well the shipped entail checker read with these settings (evidence, aggregate "
            "or threshold other than the defaults) tells a one-fact change of an LLM's summary "
            "from a rewording is not measured (docs/FACTUALITY.md has the figures of the "
            "default reading)"
        )
    return (
        f"how well the {name} checker tells a one-fact change of an LLM's summary from a "
        "rewording is not measured (docs/FACTUALITY.md has the shipped entail checker's figures)"
    )
