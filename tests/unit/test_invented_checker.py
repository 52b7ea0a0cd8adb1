"""The `invented` checker: word keys, novelty signals and the Checker contract
(no model: word ranks and weights are fakes)."""

from __future__ import annotations

import json

import pytest

from hss_gate.consistency.checker import Verdict
from hss_gate.consistency.invented import (
    InventedChecker,
    InventedWeights,
    load_invented_checker,
    load_weights,
)
from hss_gate.consistency.novelty import (
    NOVELTY_FEATURES,
    novelty_features,
    prepare,
    sentence_novelty,
    words,
)

pytestmark = pytest.mark.unit

SOURCE = (
    "Paul Merson has restarted his row with Andros Townsend after the Tottenham midfielder "
    "came on in the 0-0 draw with Burnley on Sunday. Two million fans watched. "
    "Townsend scored 12 goals for England last season, and 5.0 percent of tickets were unsold."
)


# ----------------------------------------------------------------------------- keys


def test_number_normalization() -> None:
    keys = [w.key for w in words("two million fans, 1,000 cars, 5.0 percent, 3% and 25 per cent")]
    assert "#2000000" in keys and "#1000" in keys and "#5" in keys and "#3" in keys
    assert keys.count("percent") == 3
    assert [w.key for w in words("2 million")] == [w.key for w in words("two million")]
    assert [w.key for w in words("first")] == [w.key for w in words("1st")]


def test_stems_and_case_match() -> None:
    src = prepare("The officials were running. Americans voted.")
    s = sentence_novelty("official runs as american voting", src, None)
    assert s.unsupported == ()  # stems (official/officials, run/running) and the 6-letter prefix


# ----------------------------------------------------------------------------- signals


def _rank(word: str) -> int | None:
    return {"fans": 900, "draw": 2000, "brazil": 1500}.get(word)


def test_invented_name_and_number_are_unsupported_in_any_case() -> None:
    src = prepare(SOURCE)
    for summary in (
        "Townsend scored 15 goals for Brazil.",
        "townsend scored 15 goals for brazil .",
    ):
        s = sentence_novelty(summary, src, _rank)
        assert s.unsupported == ("15", "Brazil") if summary[0].isupper() else ("15", "brazil")
        assert s.novel_numbers == 1
    faithful = sentence_novelty("townsend scored twelve goals for england .", src, _rank)
    assert faithful.unsupported == ()
    assert faithful.novel_weight == 0.0


def test_rare_words_weigh_more() -> None:
    src = prepare(SOURCE)
    common = sentence_novelty("Merson watched the fans and the draw.", src, lambda w: 10)
    rare = sentence_novelty("Merson watched the fans and the draw.", src, lambda w: 300_000)
    # all words present: no novelty whatever the weights
    assert common.novel_weight == rare.novel_weight == 0.0
    a = sentence_novelty("Merson praised Zidane.", src, lambda w: 10)
    b = sentence_novelty("Merson praised Zidane.", src, lambda w: 300_000 if w == "zidane" else 10)
    fa, fb = novelty_features([a]), novelty_features([b])
    assert fb["novel_wshare"] > fa["novel_wshare"]


def test_bigram_and_local_novelty() -> None:
    src = prepare(SOURCE)
    copied = novelty_features(
        [sentence_novelty("Townsend scored 12 goals for England.", src, None)]
    )
    recombined = novelty_features(
        [sentence_novelty("Burnley scored 12 goals for Tottenham.", src, None)]
    )
    assert copied["bigram_novel"] == 0.0
    # every word is in the source; two of its four content-word pairs are not
    assert recombined["bigram_novel"] == 0.5
    assert recombined["bigram_recombined"] == 0.5
    assert recombined["novel_share"] == 0.0
    assert set(copied) == set(NOVELTY_FEATURES)


# ----------------------------------------------------------------------------- checker


def _weights(**extra: object) -> InventedWeights:
    # consistency falls with bigram novelty and word novelty (score = sigmoid(2 - 6 x))
    data = {
        "features": ["bigram_novel", "novel_wshare"],
        "mean": [0.0, 0.0],
        "std": [1.0, 1.0],
        "coef": [-4.0, -4.0],
        "intercept": 2.0,
        "threshold": 0.5,
        **extra,
    }
    return InventedWeights.from_dict(data)


def test_checker_scores_and_flags_the_invented_sentence() -> None:
    checker = InventedChecker(_weights(), _rank)
    good = "Townsend scored 12 goals for England. Two million fans watched."
    bad = "Townsend scored 12 goals for England. Zidane bought 40 horses in Peru."
    v_good, v_bad = checker.check([(SOURCE, good), (SOURCE, bad)])
    assert isinstance(v_good, Verdict)
    assert v_good.consistency > 0.85 and v_good.unsupported == ()
    assert v_bad.consistency < v_good.consistency
    assert [u.sentence for u in v_bad.unsupported] == ["Zidane bought 40 horses in Peru."]
    assert v_bad.unsupported[0].score < 0.5
    assert v_bad.unsupported[0].passage  # the best-aligned source passage is shown
    words_ = dict(checker.unsupported_words(SOURCE, bad))
    assert words_["Zidane bought 40 horses in Peru."] == (
        "Zidane",
        "bought",
        "40",
        "horses",
        "Peru",
    )
    assert words_["Townsend scored 12 goals for England."] == ()
    # Verdicts round-trip through the cache format unchanged
    assert Verdict.from_dict(v_bad.to_dict()) == v_bad


def test_checker_lower_cased_equals_cased() -> None:
    checker = InventedChecker(_weights(), _rank)
    summary = "Townsend scored 12 goals for Brazil. Two million fans watched."
    cased, lower = checker.check([(SOURCE, summary), (SOURCE.lower(), summary.lower())])
    assert cased.consistency == pytest.approx(lower.consistency, abs=1e-9)
    assert len(cased.unsupported) == len(lower.unsupported)


def test_checker_edge_cases_and_fingerprint() -> None:
    checker = InventedChecker(_weights(), None, threshold=0.7)
    assert checker.threshold == 0.7 and checker.sentence_threshold == 0.7
    assert checker.check([(SOURCE, "")])[0] == Verdict(1.0, (), 1.0)  # nothing claimed
    empty_source = checker.check([("", "Zidane won.")])[0]
    assert empty_source.consistency == 0.0 and len(empty_source.unsupported) == 1
    other = InventedChecker(_weights(intercept=1.0), None, threshold=0.7)
    assert other.fingerprint != checker.fingerprint  # different weights, different cache key


def test_weights_file_round_trip_and_validation(tmp_path) -> None:
    w = _weights(margin=0.05, max_low_share=0.4)
    path = tmp_path / "w.json"
    path.write_text(json.dumps(w.to_dict()))
    assert load_weights(path) == w
    bad = w.to_dict() | {"coef": [1.0]}
    with pytest.raises(ValueError, match="coef"):
        InventedWeights.from_dict(bad)
    checker = load_invented_checker(path, word_rank=None)
    assert checker.threshold == 0.5


def test_shipped_weights_are_valid() -> None:
    w = load_weights()
    assert set(w.features) <= set(NOVELTY_FEATURES)
    assert 0.0 < w.threshold < 1.0
    assert all(s > 0 for s in w.std)
    assert w.provenance  # which data chose the numbers


def test_sbert_feature_uses_the_given_checker() -> None:
    class FakeSbert:
        fingerprint = "fake-sbert"

        def __init__(self, value: float) -> None:
            self.value = value

        def check(self, pairs):
            return [Verdict(self.value) for _ in pairs]

    weights = InventedWeights.from_dict(
        {
            "features": ["sbert"],
            "mean": [0.5],
            "std": [0.1],
            "coef": [2.0],
            "intercept": 0.0,
            "threshold": 0.5,
        }
    )
    with pytest.raises(ValueError, match="sbert"):
        InventedChecker(weights, None)
    high = InventedChecker(weights, None, sbert=FakeSbert(0.9)).check([(SOURCE, "Merson won.")])[0]
    low = InventedChecker(weights, None, sbert=FakeSbert(0.1)).check([(SOURCE, "Merson won.")])[0]
    assert high.consistency > 0.99 and low.consistency < 0.01
    assert low.unsupported and not high.unsupported


def test_alternative_weights_need_sbert_and_use_precision() -> None:
    from hss_gate.consistency.invented import WEIGHTS_PATH

    path = WEIGHTS_PATH.with_name("invented_sbert_weights.json")
    w = load_weights(path)
    assert set(w.features) == {"bigram_recombined", "precision", "sbert"}
    with pytest.raises(ValueError, match="sbert"):
        load_invented_checker(path, word_rank=None)

    class FakeSbert:
        fingerprint = "fake-sbert"

        def check(self, pairs):
            return [Verdict(0.9) for _ in pairs]

    checker = load_invented_checker(path, word_rank=None, sbert=FakeSbert())
    copied, padded = checker.check(
        [
            (SOURCE, "Townsend scored 12 goals for England."),
            (SOURCE, "Townsend scored 12 goals goals goals goals for England England."),
        ]
    )
    # repetition lowers clipped content-word precision and adds bigrams the source never writes
    assert copied.consistency > padded.consistency
