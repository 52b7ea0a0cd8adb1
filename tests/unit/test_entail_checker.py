"""The `entail` checker's chunking, retrieval, matrix, aggregation and adapter checks, on fakes:
a bag-of-words hashing encoder and a scorer that supports a hypothesis whose words all occur in
the premise (no torch; the cross-encoder itself: tests/integration/test_entail_checker.py)."""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np
import pytest

from hss_gate.consistency import entail_checker, entail_release
from hss_gate.consistency.checker import MatrixChecker, load_checker
from hss_gate.consistency.entail_checker import EntailMatrix, chunk_source, entail_fingerprint
from hss_gate.embedding import HashingEmbedder
from hss_gate.errors import InputError, ModelError
from hss_gate.settings import ConsistencySettings

pytestmark = pytest.mark.unit

SOURCE = (
    "The council approved a new budget on Monday. The mayor said the city could not afford "
    "new roads. Heavy rain fell across the region overnight. The river rose by two metres. "
    "The local bakery sells fresh bread every morning. The team won the final match in May."
)
COPIED = "The river rose by two metres."
INVENTED = "Aliens landed beside the stadium yesterday."
SHA = "ab" * 32


def _words(text: str) -> set[str]:
    return set(re.findall(r"[a-z0-9]+", text.lower()))


class ContainmentScorer:
    """1.0 when every word of the hypothesis is in the premise, else 0.0; counts the pairs."""

    def __init__(self) -> None:
        self.pairs: list[tuple[str, str]] = []

    def __call__(self, premises: Sequence[str], hypotheses: Sequence[str]) -> np.ndarray:
        self.pairs.extend(zip(premises, hypotheses, strict=True))
        return np.array(
            [float(_words(h) <= _words(p)) for p, h in zip(premises, hypotheses, strict=True)]
        )


def _checker(
    scorer: ContainmentScorer, aggregate: str = "mean", top_k: int = 2, chunk_words: int = 20
) -> MatrixChecker:
    matrix = EntailMatrix(scorer, HashingEmbedder(256).encode, SHA, top_k, chunk_words)
    return MatrixChecker(matrix, matrix.passages, "test", 0.5, aggregate=aggregate)


def test_chunks_are_consecutive_non_overlapping_and_bounded_a_long_sentence_alone():
    long_sentence = "The report " + " ".join(f"word{i}" for i in range(30)) + " ends here."
    source = f"{SOURCE} {long_sentence} A short one follows."
    chunks = chunk_source(source, 20)
    flat = [s for a, b in chunks.spans for s in chunks.sentences[a:b]]
    assert flat == list(chunks.sentences) and len(chunks.sentences) == 8
    assert [a for a, _ in chunks.spans[1:]] == [b for _, b in chunks.spans[:-1]]  # no gap
    for (a, b), text in zip(chunks.spans, chunks.texts, strict=True):
        assert b - a == 1 or len(text.split()) <= 20
    alone = [t for t in chunks.texts if long_sentence in t]
    assert alone == [long_sentence]  # its own chunk, nothing joined to it
    assert len(chunks.texts) == 5  # 8+10 | 7+6 | 8+8 | 34 | 4 words: each as full as allowed
    assert chunk_source("", 20).spans == ()


def test_copied_and_invented_sentence_mean_half_min_zero_invented_listed_beside_a_chunk():
    summary = f"{COPIED} {INVENTED}"
    mean = _checker(ContainmentScorer(), "mean").check([(SOURCE, summary)])[0]
    low = _checker(ContainmentScorer(), "min").check([(SOURCE, summary)])[0]
    assert mean.consistency == pytest.approx(0.5)
    assert low.consistency == pytest.approx(0.0)
    for verdict in (mean, low):
        assert [u.sentence for u in verdict.unsupported] == [INVENTED]
        passage = verdict.unsupported[0].passage
        assert passage and passage in chunk_source(SOURCE, 20).texts
        assert {"aliens", "landed"} <= {w.lower() for w in verdict.unsupported[0].words}


def test_an_empty_summary_is_consistent_and_claims_nothing():
    scorer = ContainmentScorer()
    verdict = _checker(scorer).check([(SOURCE, "")])[0]
    assert verdict.consistency == 1.0 and verdict.unsupported == ()
    assert scorer.pairs == []


def test_only_the_top_k_chunks_by_sbert_are_scored_the_rest_stay_zero():
    scorer = ContainmentScorer()
    matrix = EntailMatrix(scorer, HashingEmbedder(256).encode, SHA, top_k=1, chunk_words=20)
    texts = matrix.passages(SOURCE)
    scores = matrix(SOURCE, [COPIED, INVENTED])
    assert scores.shape == (2, len(texts)) and len(texts) >= 3
    assert (scores != 0).sum() == 1  # the invented sentence's one chunk scored 0
    assert len(scorer.pairs) == 2
    assert COPIED in texts[int(scores[0].argmax())]  # SBERT picked the chunk that holds it
    wide = EntailMatrix(ContainmentScorer(), HashingEmbedder(256).encode, SHA, 99, 20)
    assert sorted(wide.chosen(SOURCE, [COPIED])[0]) == list(range(len(texts)))


def test_scores_are_cached_per_chunk_and_sentence_across_summaries():
    scorer = ContainmentScorer()
    checker = _checker(scorer)
    checker.check([(SOURCE, f"{COPIED} {INVENTED}")])
    first = len(scorer.pairs)
    assert first == 4  # 2 sentences x top 2 chunks
    checker.check([(SOURCE, f"{COPIED} The river rose by three metres.")])  # a perturbed one
    assert len(scorer.pairs) == first + 2  # the copied sentence's pairs were kept
    assert len(set(scorer.pairs)) == len(scorer.pairs)


def test_the_fingerprint_names_adapter_encoder_splitter_retrieval_and_decision():
    from hss_gate.sentences import SPLITTER_VERSION

    found = entail_fingerprint(SHA, "sbert:all-minilm-l6-v2", 2, 120, "mean", 0.5)
    assert found == f"entail:{SHA[:12]}:sbert:all-minilm-l6-v2:{SPLITTER_VERSION}:k2:w120:mean:t0.5"


def _pin(monkeypatch: pytest.MonkeyPatch, path, sha256: str) -> None:
    monkeypatch.setattr(entail_release, "ENTAIL_ADAPTER_PATH", path)
    monkeypatch.setattr(entail_release, "ENTAIL_ADAPTER_SHA256", sha256)


def _load(**options):
    encode = HashingEmbedder(64).encode
    return load_checker("entail", "", None, encode, "hashing:64", **options)


def test_a_missing_or_unpinned_shipped_adapter_stops_the_checker_naming_the_file(
    tmp_path, monkeypatch
):
    path = tmp_path / "entail_adapter.safetensors"
    _pin(monkeypatch, path, SHA)
    with pytest.raises(ModelError) as missing:
        _load()
    assert str(path) in str(missing.value) and "\n" not in str(missing.value)
    path.write_bytes(b"not the pinned adapter")
    with pytest.raises(ModelError) as other:
        _load()
    assert str(path) in str(other.value) and "sha256" in str(other.value)
    assert "\n" not in str(other.value)
    _pin(monkeypatch, path, "")  # the placeholder: nothing loads
    with pytest.raises(ModelError, match="no sha256 pinned"):
        _load()


def test_a_pinned_adapter_gives_a_checker_without_loading_the_model(tmp_path, monkeypatch):
    import hashlib

    path = tmp_path / "entail_adapter.safetensors"
    path.write_bytes(b"adapter bytes")
    digest = hashlib.sha256(b"adapter bytes").hexdigest()
    _pin(monkeypatch, path, digest)
    checker = _load(top_k=3, chunk_words=80, aggregate="min")
    assert checker.fingerprint == entail_fingerprint(digest, "hashing:64", 3, 80, "min", 0.5)
    assert checker.threshold == entail_release.ENTAIL_THRESHOLD
    assert checker.check([(SOURCE, "")])[0].consistency == 1.0  # nothing to score: no model
    own = tmp_path / "own.safetensors"  # a user's adapter: recorded by its digest, not pinned
    own.write_bytes(b"my adapter")
    mine = _load(adapter=str(own))
    assert mine.fingerprint.startswith(f"entail:{hashlib.sha256(b'my adapter').hexdigest()[:12]}:")
    with pytest.raises(InputError, match="aggregate"):
        _load(aggregate="median")


def test_settings_carry_the_entail_options_to_load_checker():
    settings = ConsistencySettings(model="entail", top_k=4, chunk_words=60, aggregate="min")
    assert settings.entail_options() == {
        "adapter": None,
        "top_k": 4,
        "chunk_words": 60,
        "aggregate": "min",
    }
    assert ConsistencySettings().model == "entail"  # the default since issue 33


def test_verified_adapter_returns_the_digest_of_a_user_file(tmp_path):
    import hashlib

    path = tmp_path / "a.safetensors"
    path.write_bytes(b"x")
    assert entail_checker.verified_adapter(path, None) == hashlib.sha256(b"x").hexdigest()
