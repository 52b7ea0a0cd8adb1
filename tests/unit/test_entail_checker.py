"""The `entail` checker's claims, evidence, aggregation, caching and adapter checks, on fakes: a
bag-of-words hashing encoder and a model that supports a hypothesis whose words all occur in the
premise (no torch; the cross-encoder itself: tests/integration/test_entail_checker.py)."""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np
import pytest

from hss_gate.common.errors import InputError, ModelError
from hss_gate.consistency import entail_checker, entail_release
from hss_gate.consistency.checker import load_checker
from hss_gate.consistency.entail_checker import ClaimChecker, aggregate_scores, claims_of
from hss_gate.consistency.entail_release import EVIDENCE_VERSION, entail_fingerprint
from hss_gate.consistency.evidence import choose_evidence
from hss_gate.models.embedding import HashingEmbedder
from hss_gate.settings import ConsistencySettings

pytestmark = pytest.mark.unit

SOURCE = (
    "The council approved a new budget on Monday. The mayor said the city could not afford "
    "new roads. Heavy rain fell across the region overnight. The river rose by two metres. "
    "The local bakery sells fresh bread every morning. The team won the final match in May."
)
COPIED = "The river rose two metres."  # its words are the source's, not quoted
INVENTED = "Aliens landed beside the stadium yesterday."
SHA = "ab" * 32


def _words(text: str) -> set[str]:
    return set(re.findall(r"[a-z0-9]+", text.lower()))


class ContainmentModel:
    """1.0 when every word of the hypothesis is in the premise, else 0.0; counts the pairs. Its
    tokens are words and its window `max_length` of them."""

    def __init__(self, max_length: int = 40) -> None:
        self.pairs: list[tuple[str, str]] = []
        self.batches: list[list[tuple[str, str]]] = []
        self.max_length = max_length

    def count_tokens(self, text: str) -> int:
        return len(text.split())

    def __call__(self, premises: Sequence[str], hypotheses: Sequence[str]) -> np.ndarray:
        self.pairs.extend(zip(premises, hypotheses, strict=True))
        self.batches.append(list(zip(premises, hypotheses, strict=True)))
        return np.array(
            [float(_words(h) <= _words(p)) for p, h in zip(premises, hypotheses, strict=True)]
        )


def _checker(
    model: ContainmentModel, aggregate: str = "mean", top: int = 1, neighbours: int = 1
) -> ClaimChecker:
    encode = HashingEmbedder(256).encode
    return ClaimChecker(model, encode, "test", 0.5, aggregate, top, neighbours)


def test_aggregates_mean_min_and_a_soft_minimum_between_them():
    scores = [0.9, 0.95, 0.1]
    assert aggregate_scores(scores, "mean") == pytest.approx(np.mean(scores))
    assert aggregate_scores(scores, "min") == pytest.approx(0.1)
    soft = aggregate_scores(scores, "softmin")
    assert 0.1 < soft < 0.15  # one sentence far below the rest: near the minimum
    close = [0.8, 0.82, 0.84]
    assert aggregate_scores(close, "softmin") == pytest.approx(np.mean(close), abs=0.02)
    assert aggregate_scores([], "softmin") == 1.0
    with pytest.raises(ValueError, match="aggregate"):
        aggregate_scores(scores, "median")


def test_claims_are_the_sentences_that_hold_a_word_or_number():
    assert claims_of("The river rose. 42 people came.") == ["The river rose.", "42 people came."]
    assert claims_of("... ?! --") == []


def test_evidence_is_the_top_sentences_and_their_neighbours_in_document_order_within_budget():
    sentences = ["s0 a", "s1 b", "s2 c", "s3 d", "s4 e", "s5 f"]
    similarity = np.array([0.1, 0.2, 0.3, 0.9, 0.4, 0.0])
    words = lambda t: len(t.split())  # noqa: E731
    found = choose_evidence(sentences, similarity, 100, words, top=2, neighbours=1)
    assert found.indices == (2, 3, 4, 5)  # the tops 3 and 4, and their neighbours 2 and 5
    assert found.text == "s2 c s3 d s4 e s5 f"
    tight = choose_evidence(sentences, similarity, 4, words, top=2, neighbours=1)
    assert tight.indices == (3, 4)  # the budget keeps the best-ranked first
    one = choose_evidence(sentences, similarity, 0, words, top=2, neighbours=1)
    assert one.indices == (3,)  # at least the best sentence, whatever its length
    assert choose_evidence([], np.zeros(0), 10, words).text == ""


def test_copied_and_invented_sentence_the_invented_one_listed_beside_its_evidence():
    summary = f"{COPIED} {INVENTED}"
    mean = _checker(ContainmentModel(), "mean").check([(SOURCE, summary)])[0]
    low = _checker(ContainmentModel(), "min").check([(SOURCE, summary)])[0]
    soft = _checker(ContainmentModel(), "softmin").check([(SOURCE, summary)])[0]
    assert mean.consistency == pytest.approx(0.5)
    assert low.consistency == pytest.approx(0.0)
    assert 0.0 < soft.consistency < 0.1
    for verdict in (mean, low, soft):
        assert [u.sentence for u in verdict.unsupported] == [INVENTED]
        evidence = verdict.unsupported[0].passage
        assert evidence and evidence in SOURCE  # consecutive source sentences, as written
        assert {"aliens", "landed"} <= {w.lower() for w in verdict.unsupported[0].words}


def test_the_claim_is_read_against_its_own_evidence_not_the_whole_source():
    model = ContainmentModel()
    _checker(model, top=1, neighbours=0).check([(SOURCE, COPIED)])
    assert model.pairs == [
        ("The river rose by two metres.", COPIED)
    ]  # the one closest sentence, nothing else
    model = ContainmentModel()
    _checker(model, top=1, neighbours=1).check([(SOURCE, COPIED)])
    premise = model.pairs[0][0]
    assert (
        premise == "Heavy rain fell across the region overnight. The river rose by two "
        "metres. The local bakery sells fresh bread every morning."
    )


def test_an_empty_or_punctuation_only_summary_claims_nothing_and_scores_no_pair():
    model = ContainmentModel()
    verdicts = _checker(model).check([(SOURCE, ""), (SOURCE, "... !!")])
    assert [v.consistency for v in verdicts] == [1.0, 1.0]
    assert all(v.unsupported == () for v in verdicts)
    assert model.pairs == []


def test_a_one_sentence_source_a_long_claim_and_an_empty_source_have_defined_scores():
    model = ContainmentModel(max_length=12)
    long_claim = "The river rose " + " ".join(["by two metres"] * 20) + "."
    verdicts = _checker(model).check(
        [("The river rose by two metres.", COPIED), (SOURCE, long_claim), ("", COPIED)]
    )
    assert verdicts[0].consistency == 1.0
    assert 0.0 <= verdicts[1].consistency <= 1.0
    assert verdicts[2].consistency == 0.0  # nothing in the source supports a claim
    assert [u.sentence for u in verdicts[2].unsupported] == [COPIED]


def test_a_stop_word_summary_and_a_source_in_another_language_have_defined_scores():
    model = ContainmentModel()
    german = "Der Stadtrat hat am Montag einen neuen Haushalt beschlossen. Es regnete stark."
    stop_words, foreign = _checker(model).check(
        [(SOURCE, "The of and it was."), (german, "The council approved a new budget.")]
    )
    assert stop_words.consistency == 1.0 and stop_words.unsupported == ()  # nothing claimed
    assert foreign.consistency == 0.0  # read against the German evidence: not supported
    assert [u.sentence for u in foreign.unsupported] == ["The council approved a new budget."]
    assert "Stadtrat" in foreign.unsupported[0].passage


def test_a_one_word_summary_and_numbers_written_as_words_have_defined_scores():
    model = ContainmentModel()
    one_word, spelled, invented_word = _checker(model).check(
        [(SOURCE, "Budget."), (SOURCE, "The river rose by two metres."), (SOURCE, "Tornado.")]
    )
    assert one_word.consistency == 1.0 and one_word.unsupported == ()  # its word is the source's
    assert spelled.consistency == 1.0  # "two" as the source writes it
    assert invented_word.consistency == 0.0
    assert [u.sentence for u in invented_word.unsupported] == ["Tornado."]
    digits = _checker(ContainmentModel()).check([(SOURCE, "The river rose by 2 metres.")])[0]
    assert 0.0 <= digits.consistency <= 1.0  # "2" against "two": a defined score, no crash


def test_scores_are_cached_per_evidence_and_claim_across_summaries_and_batched():
    model = ContainmentModel()
    checker = _checker(model)
    checker.check([(SOURCE, f"{COPIED} {INVENTED}"), (SOURCE, COPIED)])
    assert len(model.pairs) == 2  # the repeated claim scored once, both in one batch
    assert len(model.batches) == 1
    checker.check([(SOURCE, f"{COPIED} The river rose by three metres.")])  # a perturbed one
    assert len(model.pairs) == 3  # the copied sentence's pair was kept
    assert len(set(model.pairs)) == len(model.pairs)


def test_batches_are_per_summary_so_scores_do_not_depend_on_how_calls_group_summaries():
    together, apart = ContainmentModel(), ContainmentModel()
    first, second = (SOURCE, f"{COPIED} {INVENTED}"), (SOURCE, "Heavy rain fell overnight.")
    _checker(together).check([first, second])
    _checker(apart).check([first])
    _checker(apart).check([second])
    assert together.batches == apart.batches  # the same inputs padded together: same digits


def test_the_fingerprint_names_adapter_encoder_splitter_evidence_and_decision():
    from hss_gate.text.sentences import SPLITTER_VERSION

    found = entail_fingerprint(SHA, "sbert:all-minilm-l6-v2", 3, 1, "softmin", 0.5)
    assert found == (
        f"entail:{SHA[:12]}:sbert:all-minilm-l6-v2:{SPLITTER_VERSION}:{EVIDENCE_VERSION}:"
        "t3n1:softmin:t0.5"
    )


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
    checker = _load(evidence_top=4, evidence_neighbours=0, aggregate="min")
    assert checker.fingerprint == entail_fingerprint(
        digest, "hashing:64", 4, 0, "min", entail_release.ENTAIL_THRESHOLD
    )
    assert checker.threshold == entail_release.ENTAIL_THRESHOLD
    assert checker.check([(SOURCE, "")])[0].consistency == 1.0  # nothing to score: no model
    own = tmp_path / "own.safetensors"  # a user's adapter: recorded by its digest, not pinned
    own.write_bytes(b"my adapter")
    mine = _load(adapter=str(own))
    assert mine.fingerprint.startswith(f"entail:{hashlib.sha256(b'my adapter').hexdigest()[:12]}:")
    with pytest.raises(InputError, match="aggregate"):
        _load(aggregate="median")


def test_settings_carry_the_entail_options_to_load_checker():
    settings = ConsistencySettings(
        model="entail", evidence_top=4, evidence_neighbours=2, aggregate="min"
    )
    assert settings.entail_options() == {
        "adapter": None,
        "aggregate": "min",
        "evidence_top": 4,
        "evidence_neighbours": 2,
    }
    assert ConsistencySettings().model == "entail"  # the default since issue 33


def test_verified_adapter_returns_the_digest_of_a_user_file(tmp_path):
    import hashlib

    path = tmp_path / "a.safetensors"
    path.write_bytes(b"x")
    assert entail_checker.verified_adapter(path, None) == hashlib.sha256(b"x").hexdigest()


def test_reports_state_the_shipped_checkers_measured_trust_and_no_number_for_another():
    shipped = entail_release.measured_fingerprint()
    said = entail_release.checker_trust(shipped)
    assert f"ROC AUC {entail_release.ENTAIL_LODO_AUC:.2f}" in said
    assert f"balanced accuracy {entail_release.ENTAIL_LODO_BALANCED_ACCURACY:.2f}" in said
    for other in (f"entail:{'0' * 12}:sbert", "sbert-zs:x", "judge:openai:http://h/v1"):
        assert "not measured" in entail_release.checker_trust(other)
        assert "ROC AUC" not in entail_release.checker_trust(other)


def test_the_shipped_adapter_read_another_way_is_not_measured():
    sha = entail_release.ENTAIL_ADAPTER_SHA256
    embedder = entail_release.ENTAIL_MEASURED_EMBEDDER
    threshold = entail_release.ENTAIL_THRESHOLD
    for reading in (
        {"top": 3, "neighbours": 1, "aggregate": "mean", "threshold": threshold},
        {"top": 4, "neighbours": 1, "aggregate": "min", "threshold": threshold},
        {"top": 3, "neighbours": 1, "aggregate": "min", "threshold": 0.5},
    ):
        other = entail_fingerprint(sha, embedder, **reading)
        said = entail_release.checker_trust(other)
        assert "not measured" in said and "ROC AUC" not in said, reading


def test_the_measured_fingerprint_is_the_default_settings_and_the_baselines():
    import json
    from pathlib import Path

    from hss_gate.settings import HssSettings

    consistency = HssSettings().consistency
    reading = entail_release.ENTAIL_MEASURED_READING
    assert consistency.aggregate == reading["aggregate"]
    assert (consistency.evidence_top, consistency.evidence_neighbours) == (
        reading["top"],
        reading["neighbours"],
    )
    assert consistency.threshold is None and consistency.adapter is None
    metrics = Path(__file__).parents[2] / "data" / "baseline" / "metrics.json"
    recorded = json.loads(metrics.read_text())["checker"]
    assert recorded == entail_release.measured_fingerprint()


def test_a_claim_its_evidence_quotes_word_for_word_is_supported_without_the_model():
    model = ContainmentModel()
    never = lambda premises, hypotheses: np.zeros(len(premises))  # noqa: E731
    never.count_tokens, never.max_length = model.count_tokens, model.max_length  # type: ignore[attr-defined]
    checker = ClaimChecker(never, HashingEmbedder(256).encode, "test", 0.5, "min", 1, 1)
    quote, reworded = "the river ROSE by two metres!", "The river climbed two metres."
    verdicts = checker.check([(SOURCE, quote), (SOURCE, reworded)])
    assert verdicts[0].consistency == 1.0  # case and punctuation aside, the source says it
    assert verdicts[1].consistency == 0.0  # a rewording still goes to the encoder
    assert entail_checker.quoted("The river rose by two metres.", "rose by two") is True
    assert entail_checker.quoted("The river rose by two metres.", "rose by twenty") is False
    assert entail_checker.quoted("The riverside.", "river") is False  # whole words only
