"""Factuality comparators: aggregation, overlap, metrics, the weak-supervision transforms and the
FactCC-style classifier on hand-made pairs (fake encoder, no real models)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from hss_gate.common import io as hss_io
from hss_gate.common.errors import InputError, ModelError
from hss_gate.consistency import aggregation, calibration, features, training
from hss_gate.consistency import model as consistency_model
from hss_gate.consistency import scorer as pair_scorer
from hss_gate.models.embedding import HashingEmbedder
from hss_gate.research import factuality_data

pytestmark = pytest.mark.unit


# --------------------------------------------------------------------------- SummaC aggregation


def test_summac_zs_on_a_hand_built_matrix() -> None:
    # rows: summary sentences, columns: document sentences
    matrix = np.array([[0.10, 0.90, 0.30], [0.50, 0.20, 0.40], [0.05, 0.00, 0.65]])
    # best support per summary sentence: 0.90, 0.50, 0.65
    assert aggregation.summac_zs(matrix) == pytest.approx((0.90 + 0.50 + 0.65) / 3)
    assert aggregation.summac_zs(matrix, reduce="min") == pytest.approx(0.50)
    # the orientation matters: the transpose is a different question
    assert aggregation.summac_zs(matrix.T) == pytest.approx((0.50 + 0.90 + 0.65) / 3)
    assert aggregation.summac_zs(np.array([[0.2, 0.7]])) == pytest.approx(0.7)


def test_summac_zs_rejects_bad_input() -> None:
    assert math.isnan(aggregation.summac_zs(np.zeros((0, 3))))
    with pytest.raises(ValueError, match="2-D"):
        aggregation.summac_zs(np.array([0.1, 0.2]))
    with pytest.raises(ValueError, match="reduce"):
        aggregation.summac_zs(np.ones((2, 2)), reduce="max")


def test_row_histograms_and_conv_head_by_hand() -> None:
    matrix = np.array([[0.1, 0.2, 0.9, 1.0], [0.6, 0.7, 0.8, 0.3]])
    hist = aggregation.row_histograms(matrix, bins=2)
    np.testing.assert_allclose(hist, [[0.5, 0.5], [0.25, 0.75]])
    head = aggregation.ConvAggregator(weights=(-2.0, 3.0), bias=0.5)
    logits = [-1.0 + 1.5 + 0.5, -0.5 + 2.25 + 0.5]  # w . histogram + b per summary sentence
    np.testing.assert_allclose(head.sentence_logits(matrix), logits)
    assert head.score(matrix) == pytest.approx(1 / (1 + math.exp(-np.mean(logits))))
    assert math.isnan(head.score(np.zeros((0, 4))))


def test_fit_conv_learns_that_high_support_means_consistent() -> None:
    rng = np.random.default_rng(0)
    matrices, labels = [], []
    for i in range(60):
        label = i % 2
        m = rng.uniform(0.0, 0.4, size=(3, 8))
        if label:  # every summary sentence has one strongly supporting document sentence
            m[np.arange(3), rng.integers(0, 8, 3)] = rng.uniform(0.85, 1.0, 3)
        matrices.append(m)
        labels.append(label)
    head = aggregation.fit_conv(matrices[:40], labels[:40], bins=10, l2=1e-4)
    scores = [head.score(m) for m in matrices[40:]]
    assert calibration.roc_auc(labels[40:], scores) == 1.0
    assert head.weights[-1] > head.weights[0]  # mass in the top bin raises the score


# --------------------------------------------------------------------------- token overlap


def test_overlap_precision_recall_f1_on_hand_made_pairs() -> None:
    doc = "The council approved the budget on Monday."
    # content words: council, approved, budget, monday
    exact = features.overlap_scores(doc, "The council approved the budget.")
    assert (exact.precision, exact.recall) == (1.0, 0.75)
    assert exact.f1 == pytest.approx(2 * 0.75 / 1.75)
    invented = features.overlap_scores(doc, "The mayor approved the budget.")
    assert invented.precision == pytest.approx(2 / 3)
    assert invented.recall == pytest.approx(2 / 4)
    assert invented.f1 == pytest.approx(2 * (2 / 3) * 0.5 / (2 / 3 + 0.5))
    # clipped counts: repeating a supported word does not raise precision past the document's
    repeated = features.overlap_scores("Budget approved.", "Budget budget budget.")
    assert repeated.precision == pytest.approx(1 / 3)
    assert features.overlap_scores(doc, "The of and.") == features.Overlap(0.0, 0.0, 0.0)


def test_tokens_normalize_negations_and_numbers() -> None:
    assert features.tokens("It can't win; it won't; it cannot, didn't 1,200.50") == [
        "it",
        "can",
        "not",
        "win",
        "it",
        "will",
        "not",
        "it",
        "can",
        "not",
        "did",
        "not",
        "1200.5",
    ]
    assert features.content_tokens("The council did not meet in Leeds") == [
        "council",
        "meet",
        "leeds",
    ]


def test_split_sentences_handles_lower_cased_tokenized_summaries() -> None:
    text = "the team won 2-0 . andros scored twice . it rained in the u.s. on monday ."
    assert features.split_sentences(text) == [
        "the team won 2-0 .",
        "andros scored twice .",
        "it rained in the u.s. on monday .",
    ]
    assert features.split_sentences("Dr. Smith came. He left.") == ["Dr. Smith came.", "He left."]
    assert features.split_sentences("  ") == []


# --------------------------------------------------------------------------- evaluation metrics


def test_roc_auc_by_hand_and_against_sklearn() -> None:
    assert calibration.roc_auc([1, 0, 1, 0], [0.9, 0.1, 0.4, 0.5]) == pytest.approx(0.75)
    assert calibration.roc_auc([1, 0], [0.5, 0.5]) == pytest.approx(0.5)  # a tie counts half
    assert math.isnan(calibration.roc_auc([1, 1], [0.2, 0.3]))
    sklearn_metrics = pytest.importorskip("sklearn.metrics")
    rng = np.random.default_rng(3)
    y = rng.integers(0, 2, 200)
    s = np.round(rng.normal(size=200) + y, 1)  # with ties
    assert calibration.roc_auc(y, s) == pytest.approx(sklearn_metrics.roc_auc_score(y, s))
    assert calibration.balanced_accuracy(y, s > 0.5) == pytest.approx(
        sklearn_metrics.balanced_accuracy_score(y, s > 0.5)
    )


def test_balanced_accuracy_and_threshold_by_hand() -> None:
    labels = [1, 1, 1, 0]
    assert calibration.balanced_accuracy(labels, [1, 1, 1, 1]) == 0.5
    assert calibration.balanced_accuracy(labels, [1, 0, 1, 0]) == pytest.approx((2 / 3 + 1) / 2)
    t = calibration.best_threshold([0, 0, 1, 1], [0.1, 0.3, 0.6, 0.8])
    assert 0.3 < t < 0.6 and t == pytest.approx(0.45)


def test_cross_fit_threshold_is_not_fitted_on_the_scored_items() -> None:
    rng = np.random.default_rng(1)
    clusters = np.concatenate([rng.uniform(0, 1, 10), rng.uniform(3, 4, 10)])
    assert calibration.cross_fit_balanced_accuracy([0] * 10 + [1] * 10, clusters) == 1.0
    # noise: a threshold fitted on the scored items themselves looks better than chance
    in_sample, crossed = [], []
    for _ in range(30):
        y = rng.integers(0, 2, 40)
        s = rng.normal(size=40)
        in_sample.append(calibration.balanced_accuracy(y, s >= calibration.best_threshold(y, s)))
        crossed.append(calibration.cross_fit_balanced_accuracy(y, s, repeats=2))
    assert np.mean(in_sample) > 0.58
    assert np.mean(crossed) < 0.53


def test_fit_logistic_matches_sklearn() -> None:
    linear_model = pytest.importorskip("sklearn.linear_model")
    rng = np.random.default_rng(0)
    x = rng.normal(size=(300, 3)) * [1.0, 5.0, 0.2] + [0.0, 2.0, -1.0]
    y = (x @ [1.0, -0.3, 4.0] + rng.normal(size=300) > -2.5).astype(int)
    l2 = 0.01
    ours = training.fit_logistic(x, y, ("a", "b", "c"), l2=l2)
    z = (x - x.mean(axis=0)) / x.std(axis=0)
    # sklearn minimizes C * sum(logloss) + ||w||^2 / 2; ours mean(logloss) + l2 * ||w||^2
    ref = linear_model.LogisticRegression(C=1 / (2 * l2 * len(y)), tol=1e-10, max_iter=10000)
    ref.fit(z, y)
    np.testing.assert_allclose(ours.coef, ref.coef_[0], atol=2e-3)
    assert ours.intercept == pytest.approx(ref.intercept_[0], abs=2e-3)
    np.testing.assert_allclose(ours.predict_proba(x), ref.predict_proba(z)[:, 1], atol=1e-3)
    again = consistency_model.LogisticModel.from_dict(json.loads(json.dumps(ours.to_dict())))
    assert again == ours


# --------------------------------------------------------------------------- weak supervision

SENTENCE = "Maria Lopez opened the bakery in Leeds in 2019, and she sold 300 loaves."


def test_swap_entity_uses_a_different_entity_of_the_same_type() -> None:
    mentions = [training.Mention("Maria Lopez", "PERSON"), training.Mention("Leeds", "GPE")]
    pool = [
        training.Mention("Leeds", "GPE"),
        training.Mention("York", "GPE"),
        training.Mention("Tom Hale", "PERSON"),
    ]
    seen = {
        training.swap_entity(SENTENCE, mentions, pool, np.random.default_rng(s)) for s in range(12)
    }
    assert seen == {
        SENTENCE.replace("Maria Lopez", "Tom Hale"),
        SENTENCE.replace("Leeds", "York"),
    }
    assert (
        training.swap_entity(
            SENTENCE, mentions, [training.Mention("Lopez", "PERSON")], np.random.default_rng(0)
        )
        is None
    )  # same person: not a swap


def test_number_pronoun_negation_and_compression_transforms() -> None:
    for seed in range(10):
        changed = training.swap_number(SENTENCE, ["2019", "300", "45"], np.random.default_rng(seed))
        assert changed is not None and changed != SENTENCE
        assert features.tokens(changed) != features.tokens(SENTENCE)
        assert len(changed.split()) == len(SENTENCE.split())
    assert training.swap_number("No numbers here.", ["4"], np.random.default_rng(0)) is None
    assert training.swap_pronoun(SENTENCE, np.random.default_rng(0)) == SENTENCE.replace(
        "she", "he"
    )
    assert training.swap_pronoun("He said so.", np.random.default_rng(0)) == "She said so."
    assert training.negate("The council has approved it.") == "The council has not approved it."
    assert training.negate("The council did not approve it.") == "The council did approve it."
    assert training.negate("They can't stop.") == "They can stop."
    assert training.negate("Maria opened a bakery.") is None
    assert training.drop_clause("The mayor (a teacher) left.") == "The mayor left."
    assert training.lowercase_tokenized(
        'He paid $1.1 billion, about 18,000 (in 2025). It\'s "fine".'
    ) == ('he paid $1.1 billion , about 18,000 ( in 2025 ) . it \'s " fine " .')


DOCS = [
    "Maria Lopez opened a bakery in Leeds in 2019. She sold 300 loaves a day. The bakery was "
    "not profitable in its first year. Her brother Tom Hale joined the business in 2021. "
    "He will open a second shop in York next spring.",
    "The council approved a budget of 40 million pounds on Monday. The mayor, Ann Price, said "
    "the city could not afford new roads. She wants 12 new bus routes by 2026. The opposition "
    "leader, David Moss, has criticised the plan. He said it was a waste of money.",
    "Engineers in Bristol repaired the old bridge in 8 weeks. The work cost 2 million pounds. "
    "The bridge was closed to cars during the repairs. Local shop owner Priya Shah said her "
    "sales fell by 30 percent. She is not expecting any compensation from the city.",
    "The river Tees flooded 150 homes in Stockton last winter. Residents were moved to a school "
    "hall. The Environment Agency has built a new wall along the bank. Its manager, Paul Grant, "
    "said the wall will protect 900 homes. He has warned that storms are getting stronger.",
    "A new library opened in Cardiff on Saturday with 60000 books. It was designed by the "
    "architect Lina Berg. She used wood from Welsh forests. The city did not pay for the "
    "building. A local charity raised 5 million pounds over 4 years.",
    "Rangers beat Celtic 3-1 in Glasgow on Sunday. Striker James Tavernier scored twice. "
    "He has now scored 14 goals this season. The manager, Philippe Clement, praised the "
    "defence. Celtic remain 2 points clear at the top of the table.",
]


def _fake_mentions(sentence: str) -> list[training.Mention]:
    """Capitalized words inside a sentence are entities; numbers are cardinals."""
    words = sentence.rstrip(".").split()
    out, run = [], []
    for w in [*words[1:], "."]:
        core = w.strip(",.")
        if core[:1].isupper() and core.lower() not in features.STOP_WORDS:
            run.append(core)
            continue
        if run:
            out.append(training.Mention(" ".join(run), "ENT"))
            run = []
        if core[:1].isdigit():
            out.append(training.Mention(core, "CARDINAL"))
    return out


def _tagged() -> list[tuple[list[str], list[list[training.Mention]]]]:
    return [
        (features.split_sentences(d), [_fake_mentions(s) for s in features.split_sentences(d)])
        for d in DOCS
    ]


def test_synthetic_claims_have_both_labels_and_real_edits() -> None:
    tagged = _tagged()
    pool = [m for ms in tagged[0][1] for m in ms]
    claims = training.synthetic_claims(tagged[0][0], tagged[0][1], pool, np.random.default_rng(0))
    labels = {c.label for c in claims}
    assert labels == {0, 1}
    sources = {training.lowercase_tokenized(s) for s in tagged[0][0]} | set(tagged[0][0])
    for claim in claims:
        if claim.label == 0:
            assert claim.kind in training.NEGATIVE_KINDS
            assert claim.text not in sources  # a negative is never a document sentence
    data = training.synthetic_training_set(tagged, seed=1)
    assert len(data.claims) == len(data.owner) and 1 <= len(data.dev) < len(DOCS)
    assert training.synthetic_training_set(tagged, seed=1).claims == data.claims  # deterministic


def _fake_encode():
    return HashingEmbedder(dim=256).encode


def _premise(text: str) -> features.Premise:
    sentences = features.split_sentences(text)
    return features.Premise(sentences, _fake_encode()(sentences))


def test_claim_features_see_entity_number_negation_and_pronoun_changes() -> None:
    premise = _premise(DOCS[0])
    encode = _fake_encode()

    def feats(claim: str) -> dict[str, float]:
        return dict(
            zip(
                features.FEATURES,
                features.claim_features(claim, encode([claim])[0], premise),
                strict=True,
            )
        )

    same = feats("She sold 300 loaves a day.")
    assert same["precision_local"] == 1.0 and same["salient_local"] == 1.0
    assert same["number_missing"] == 0.0 and same["negation_mismatch"] == 0.0
    number = feats("She sold 900 loaves a day.")
    assert number["number_missing"] == 1.0 and number["salient_missing"] == 1.0
    negated = feats("The bakery was profitable in its first year.")
    assert negated["negation_mismatch"] == 1.0
    # York is in the document, but not in the sentence that says who opened the bakery
    entity = feats("Maria Lopez opened a bakery in York in 2019.")
    assert entity["precision_global"] == 1.0 and entity["salient_missing"] == 0.0
    one = features.Premise([premise.sentences[0]], premise.vectors[:1], names=premise.names)
    claim = "Maria Lopez opened a bakery in York in 2019."
    local = dict(
        zip(features.FEATURES, features.claim_features(claim, encode([claim])[0], one), strict=True)
    )
    # salient: lopez, york, 2019 ("Maria" only starts sentences, so it is not known as a name)
    assert local["salient_local"] == pytest.approx(2 / 3)
    assert local["precision_local"] < 1.0
    pronoun = feats("He sold 300 loaves a day.")
    assert pronoun["pronoun_mismatch"] == 1.0 and same["pronoun_mismatch"] == 0.0


@pytest.fixture(scope="module")
def trained() -> consistency_model.FactccWeights:
    return training.train_factcc(_tagged(), _fake_encode(), seed=3)


def test_comparators_rank_consistent_pairs_above_inconsistent_ones(
    trained: consistency_model.FactccWeights,
) -> None:
    scorer = pair_scorer.FactualityComparators(trained, _fake_encode())
    document = DOCS[1]
    budget = "The council approved a budget of 40 million pounds."
    consistent = f"The mayor, Ann Price, said the city could not afford new roads. {budget}"
    broken = {
        "entity": f"The mayor, David Moss, said the city could not afford new roads. {budget}",
        "number": "The mayor, Ann Price, said the city could not afford new roads. "
        "The council approved a budget of 90 million pounds.",
        "negation": f"The mayor, Ann Price, said the city could afford new roads. {budget}",
    }
    good = scorer.score(document, consistent)
    assert 0.0 <= good["consistency"] <= 1.0
    for kind, summary in broken.items():
        bad = scorer.score(document, summary)
        assert bad["consistency"] < good["consistency"] - 0.2, kind
        assert bad["factcc"] < good["factcc"], kind
        assert bad["summac_conv"] < good["summac_conv"], kind
    # the extrinsic entity is caught by plain overlap precision too; negation is not
    extrinsic = scorer.score(document, consistent.replace("Ann Price", "Boris Kemp"))
    assert extrinsic["precision"] < good["precision"]
    assert scorer.score(document, broken["negation"])["precision"] == 1.0


def test_scorer_rows_have_every_column(trained: consistency_model.FactccWeights) -> None:
    scorer = pair_scorer.FactualityComparators(trained, _fake_encode())
    rows = scorer.score_many(
        [
            ("a", DOCS[2], "The bridge was repaired in 8 weeks."),
            ("b", DOCS[3], "The Tees flooded 150 homes."),
        ]
    )
    assert [r["id"] for r in rows] == ["a", "b"]
    for row in rows:
        assert list(row) == list(pair_scorer.COLUMNS)
        assert all(
            0.0 <= row[c] <= 1.0
            for c in ("consistency", "summac_zs", "summac_conv", "factcc", "sbert_zs", "precision")
        )
        assert row["consistency"] == pytest.approx(row["summac_zs"])
    assert trained.provenance["documents"] == len(DOCS)
    # a non-factcc model gets no Conv column (the head was fitted on the factcc matrix)
    sbert = pair_scorer.FactualityComparators(
        trained, _fake_encode(), consistency_model.SbertConsistency(_fake_encode())
    )
    row = sbert.score(DOCS[2], "The bridge was repaired in 8 weeks.")
    assert math.isnan(row["summac_conv"]) and row["consistency"] == pytest.approx(row["sbert_zs"])


def test_weights_round_trip_and_refusals(
    trained: consistency_model.FactccWeights, tmp_path: Path
) -> None:
    path = consistency_model.save_factcc_weights(tmp_path / "w", trained)
    again = consistency_model.load_factcc_weights(tmp_path / "w")
    assert again.fingerprint == trained.fingerprint and again.conv == trained.conv
    with pytest.raises(ModelError, match="hss factuality --train"):
        consistency_model.load_factcc_weights(tmp_path / "missing")
    path.write_text(json.dumps({"version": "factcc-lr-v0"}), encoding="utf-8")
    with pytest.raises(ModelError, match="version"):
        consistency_model.load_factcc_weights(tmp_path / "w")
    path.write_text("{", encoding="utf-8")
    with pytest.raises(ModelError, match="unreadable"):
        consistency_model.load_factcc_weights(tmp_path / "w")


# --------------------------------------------------------------------------- models and files


@pytest.mark.parametrize(
    ("labels", "expected"),
    [
        ({0: "CONTRADICTION", 1: "NEUTRAL", 2: "ENTAILMENT"}, (2, 0)),
        ({0: "entailment", 1: "neutral", 2: "contradiction"}, (0, 2)),
        ({0: "not_entailment", 1: "entailment"}, (1, None)),
        ({0: "inconsistent", 1: "consistent"}, (1, 0)),
        ({0: "SUPPORTS", 1: "REFUTES", 2: "NOT ENOUGH INFO"}, (0, 1)),
    ],
)
def test_nli_label_mapping(labels: dict[int, str], expected: tuple[int, int | None]) -> None:
    assert consistency_model.nli_label_indices(labels) == expected


def test_nli_label_mapping_refuses_unknown_labels() -> None:
    with pytest.raises(ModelError, match="LABEL_0"):
        consistency_model.nli_label_indices({0: "LABEL_0", 1: "LABEL_1"})


def test_load_consistency_model_uris() -> None:
    encode = _fake_encode()
    assert isinstance(
        consistency_model.load_consistency_model("sbert", encode),
        consistency_model.SbertConsistency,
    )
    for bad in ("bart", "hf:", "hf:  "):
        with pytest.raises(InputError, match="unknown consistency model"):
            consistency_model.load_consistency_model(bad, encode)
    with pytest.raises(ModelError, match="weights"):
        consistency_model.load_consistency_model("factcc", encode)


def test_read_pairs_validates_every_line(tmp_path: Path) -> None:
    good = tmp_path / "pairs.jsonl"
    good.write_text(
        json.dumps({"id": "a", "document": "D one.", "summary": "S one."})
        + "\n\n"
        + json.dumps({"id": 7, "document": "D two.", "summary": "S two.", "extra": 1})
        + "\n",
        encoding="utf-8",
    )
    assert pair_scorer.read_pairs(good) == [
        pair_scorer.Pair("a", "D one.", "S one."),
        pair_scorer.Pair("7", "D two.", "S two."),
    ]
    cases = {
        '{"id": "a", "document": "D.", "summary": "S."}\n{"id": "b", "document": "D."': (
            ":2: not valid JSON"
        ),
        '["a", "b"]': ":1: expected a JSON object",
        '{"id": "a", "document": "D."}': ":1: missing summary",
        '{"id": "a", "document": "", "summary": "S."}': ":1: document must be a non-empty",
        '{"id": true, "document": "D.", "summary": "S."}': ":1: id must be",
        '{"id": "a", "document": "D.", "summary": "S."}\n{"id": "a", "document": "E.", '
        '"summary": "T."}': ":2: duplicate id 'a' (first at line 1)",
    }
    for text, message in cases.items():
        bad = tmp_path / "bad.jsonl"
        bad.write_text(text + "\n", encoding="utf-8")
        with pytest.raises(InputError) as info:
            pair_scorer.read_pairs(bad)
        assert str(info.value).startswith(f"{bad}{message}"), str(info.value)
    bad.write_text("nope\n{}\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"bad.jsonl:1: .*\(and 1 more bad lines\)"):
        pair_scorer.read_pairs(bad)
    with pytest.raises(InputError, match="cannot read"):
        pair_scorer.read_pairs(tmp_path / "absent.jsonl")


def test_write_rows_csv_is_atomic_and_writes_nan_as_empty(tmp_path: Path) -> None:
    target = tmp_path / "out" / "f.csv"
    hss_io.write_rows_csv_atomic(target, [{"id": "a", "x": 0.5, "y": math.nan}], ["id", "x", "y"])
    assert target.read_text(encoding="utf-8").splitlines() == ["id,x,y", "a,0.500000,"]
    assert [p.name for p in target.parent.iterdir()] == ["f.csv"]


def test_benchmark_record_parsers() -> None:
    record = {"document": "Doc.", "claim": "Claim.", "label": 0, "cut": "val"}
    as_dict = factuality_data.summac_pairs({"x_0": record})
    as_repr = factuality_data.summac_pairs(
        {"x_0": repr(record)}
    )  # python-repr strings are accepted too
    assert as_dict == as_repr == [factuality_data.LabelledPair("x_0", "Doc.", "Claim.", 0)]
    with pytest.raises(ValueError, match="without 'claim'"):
        factuality_data.summac_pairs({"legal": {"document": "Doc."}})

    def sentence(text: str, answers: list[str]) -> dict:
        return {
            "sentence": text,
            "responses": [{"worker_id": i, "response": a} for i, a in enumerate(answers)],
        }

    first = [sentence("One.", ["yes", "no", "yes"]), sentence("Two.", ["no", "yes", "no"])]
    second = [sentence("Three.", ["yes", "no", "yes"])]
    lines = [
        json.dumps({"article": "A.", "summary_sentences": first}),
        "",
        json.dumps({"article": "B.", "summary_sentences": second}),
    ]
    assert factuality_data.qags_pairs(lines) == [
        factuality_data.LabelledPair("qags_1", "A.", "One. Two.", 0),
        factuality_data.LabelledPair("qags_3", "B.", "Three.", 1),
    ]


def test_truecase_restores_names_the_document_capitalizes() -> None:
    doc = "On Sunday Paul Merson met Andros Townsend in London. The match ended in a draw."
    assert features.truecase("paul merson met townsend after the match .", doc) == (
        "Paul Merson met Townsend after the match ."
    )
