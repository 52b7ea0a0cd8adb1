import numpy as np
import pytest

from hss_gate.models.embedding import HashingEmbedder
from hss_gate.settings import PerturbSettings
from hss_gate.text.perturb import apply_edits, find_candidates, match_case, perturb
from tests.conftest import FakeLexicon, FakeTagger, FakeVectors

pytestmark = pytest.mark.unit

TEXT = (
    "Rapid growth helped residents. The council praised rapid growth. "
    "Officials expected large gains and rapid decline in Leeds. Residents bought 3 homes."
)
VECTORS = FakeVectors(
    {
        "rapid": [("swift", 0.9), ("slow", 0.95), ("rapidly", 0.97)],
        "growth": [("expansion", 0.8), ("growing", 0.9)],
        "residents": [("inhabitants", 0.75), ("locals", 0.6)],
        "large": [("small", 0.97), ("big", 0.85)],
        "gains": [("increases", 0.72)],
        "leeds": [("manchester", 0.9)],
    }
)
LEXICON = FakeLexicon(
    {
        "rapid": {"swift", "slow"},
        "growth": {"expansion"},
        "residents": {"inhabitants", "locals"},
        "large": {"big", "small"},
        "gains": {"increases"},
        "leeds": {"manchester"},
    },
    antonyms={("rapid", "slow"), ("large", "small")},
)


def _candidates(settings):
    tagger, embedder = FakeTagger(), HashingEmbedder()
    tokens = tagger.tokens(TEXT)
    return tokens, find_candidates(
        TEXT,
        tokens,
        settings,
        vectors=VECTORS,
        lexicon=LEXICON,
        tagger=tagger,
        encode=embedder.encode,
    )


def _replacements(candidates, tokens):
    return {
        tokens[i].text.lower(): {c.replacement.lower() for c in cs} for i, cs in candidates.items()
    }


def test_candidates_respect_tau_antonyms_same_stem_and_proper_nouns():
    settings = PerturbSettings(tau=0.7, gamma=0.0)
    tokens, cands = _candidates(settings)
    found = _replacements(cands, tokens)
    assert found["rapid"] == {"swift"}  # slow is an antonym, rapidly shares the stem
    assert found["residents"] == {"inhabitants"}  # locals is below tau
    assert found["large"] == {"big"}
    assert "leeds" not in found  # capitalized mid-sentence: a proper noun
    assert "3" not in found
    assert "growth" in found and found["growth"] == {"expansion"}


def test_gamma_filters_swaps_that_move_the_sentence():
    _, loose = _candidates(PerturbSettings(tau=0.7, gamma=0.0))
    _, strict = _candidates(PerturbSettings(tau=0.7, gamma=0.999))
    assert sum(map(len, strict.values())) < sum(map(len, loose.values()))
    for cands in strict.values():
        assert all(c.sentence_similarity >= 0.999 for c in cands)


def test_candidates_case_is_kept():
    tokens, cands = _candidates(PerturbSettings(tau=0.7, gamma=0.0))
    first = next(i for i, t in enumerate(tokens) if t.text == "Rapid")
    assert cands[first][0].replacement == "Swift"
    assert match_case("USA", "abc") == "ABC"


def test_perturbation_in_band_with_edit_log_and_deterministic():
    settings = PerturbSettings(tau=0.7, gamma=0.0, strengths={"x": (0.1, 0.3)})
    tokens, cands = _candidates(settings)
    encode = HashingEmbedder().encode
    one = perturb("d1", TEXT, tokens, cands, "x", 0, settings, encode=encode)
    two = perturb("d1", TEXT, tokens, cands, "x", 0, settings, encode=encode)
    assert one.text == two.text and one.edits == two.edits
    assert 0.1 <= one.share <= 0.3 and one.reached
    assert apply_edits(TEXT, one.edits) == one.text
    for edit in one.edits:
        assert TEXT[edit.char_start : edit.char_start + len(edit.original)] == edit.original
    assert "Leeds" in one.text and "3 homes" in one.text


def test_unreachable_band_is_reported_not_hidden():
    settings = PerturbSettings(tau=0.7, gamma=0.0, strengths={"x": (0.5, 0.9)})
    tokens, cands = _candidates(settings)
    result = perturb("d1", TEXT, tokens, cands, "x", 0, settings, encode=HashingEmbedder().encode)
    assert not result.reached
    assert "only" in result.note and result.share < 0.5


def test_different_seeds_or_indices_change_positions():
    settings = PerturbSettings(tau=0.7, gamma=0.0, strengths={"x": (0.05, 0.1)})
    tokens, cands = _candidates(settings)
    encode = HashingEmbedder().encode
    texts = {
        perturb("d1", TEXT, tokens, cands, "x", i, settings, encode=encode).text for i in range(6)
    }
    assert len(texts) > 1


def test_multi_swap_sentences_keep_gamma():
    settings = PerturbSettings(tau=0.7, gamma=0.6, strengths={"x": (0.2, 0.3)})
    tokens, cands = _candidates(settings)
    embedder = HashingEmbedder()
    result = perturb("d1", TEXT, tokens, cands, "x", 0, settings, encode=embedder.encode)
    for edit in result.edits:
        assert edit.sentence_similarity >= 0.6
    vec = np.asarray(embedder.encode(["x"]))
    assert vec.shape == (1, embedder.dim)
