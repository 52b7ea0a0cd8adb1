"""The shipped `entail` checker on the real encoder (the embedded MiniLM with the sha256-pinned
adapter) and real SBERT evidence: plainly supported claims score above their one-fact edits."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.slow

SOURCE = (
    "The city council approved a budget of 12 million dollars on Tuesday. "
    "Mayor Anna Lopez said the money would repair roads and schools. "
    "The vote was seven to two, and the plan starts in March. "
    "Opposition leader Mark Green called the budget too small."
)

# (supported in other words, the same claim with one fact changed): rewordings, so the encoder
# reads each (a claim the source quotes word for word is supported without it)
TWINS = [
    (
        "On Tuesday the council approved a 12 million dollar budget.",
        "On Tuesday the council approved a 40 million dollar budget.",
    ),
    (
        "According to Mayor Anna Lopez, the money will repair roads and schools.",
        "According to Mark Green, the money will repair roads and schools.",
    ),
    (
        "The plan begins in March.",
        "The plan does not begin in March.",
    ),
    (
        "Mark Green said the budget was too small.",
        "Mark Green said the budget was too large.",
    ),
]


@pytest.fixture(scope="module")
def checker():
    from hss_gate.consistency.checker import load_checker
    from hss_gate.models import model_store
    from hss_gate.models.embedding import SbertEmbedder
    from hss_gate.settings import HssSettings

    settings = HssSettings()
    if not model_store.is_installed(model_store.resolve_name("all-minilm-l6-v2")):
        pytest.skip("the embedded SBERT is not installed (hss models install)")
    # installed: a failure to load it (a broken install, a wrong digest) fails the test
    embedder = SbertEmbedder(settings.score.embedder)
    embedder.encode(["warm up"])
    options = settings.consistency.entail_options()
    return load_checker("entail", "", None, embedder.encode, embedder.fingerprint, **options)


def test_each_supported_claim_scores_above_its_one_fact_edit(checker) -> None:
    pairs = [(SOURCE, claim) for twin in TWINS for claim in twin]
    verdicts = checker.check(pairs)
    scores = [v.consistency for v in verdicts]
    for (good, bad), k in zip(TWINS, range(0, len(scores), 2), strict=True):
        assert scores[k] > scores[k + 1], (good, scores[k], bad, scores[k + 1])


def test_a_copied_summary_passes_and_an_invented_one_is_flagged_beside_its_evidence(
    checker,
) -> None:
    copied = "The city council approved a budget of 12 million dollars on Tuesday."
    invented = "The council banned all cars from the city centre after a vote of nine to zero."
    good, bad = checker.check([(SOURCE, copied), (SOURCE, invented)])
    assert good.consistency >= checker.threshold > bad.consistency
    assert [u.sentence for u in bad.unsupported] == [invented]
    assert "council" in bad.unsupported[0].passage  # read against the source's closest sentences
