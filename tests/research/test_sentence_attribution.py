"""Sentence-level Kernel SHAP, permutation SHAP and LIME on games with known answers."""

from __future__ import annotations

from collections.abc import Sequence
from math import comb

import numpy as np
import pytest

from hss_gate.models.sentence_explainer import (
    SentenceAttributionSettings,
    SentenceGame,
    explain_sentences,
    sentence_instability,
)
from hss_gate.research.likelihood import OverlapLikelihood
from hss_gate.research.sentence_attribution import (
    changed_summary_sentences,
    localization_report,
    localize,
)
from hss_gate.scoring.shapley import (
    all_coalitions,
    constrained_wls,
    exact_shapley,
    kernel_coalitions,
    kernel_shap,
    lime,
    permutation_shap,
    shapley_kernel,
    weighted_ridge,
)
from hss_gate.text.masked_text import sentence_features

pytestmark = pytest.mark.unit

A = np.array([0.5, -1.0, 2.0, 0.25, -0.75, 1.5])
B, C = 3.0, -1.2  # pair interaction of features 0 and 1; unanimity game on 2, 3, 4


def game_value(z: np.ndarray) -> np.ndarray:
    """v(S) = sum a_i z_i + B z0 z1 + C z2 z3 z4 (+ 7 at the empty set), shape (n, 1)."""
    z = np.atleast_2d(z).astype(float)
    v = 7.0 + z @ A + B * z[:, 0] * z[:, 1] + C * z[:, 2] * z[:, 3] * z[:, 4]
    return v[:, None]


# Shapley values in closed form: a pair interaction splits in halves, a 3-unanimity in thirds
CLOSED_FORM = A + np.array([B / 2, B / 2, C / 3, C / 3, C / 3, 0.0])


class Counting:
    """A game that counts its distinct evaluations."""

    def __init__(self, fn=game_value) -> None:
        self.fn = fn
        self.seen: set[bytes] = set()

    def __call__(self, masks: np.ndarray) -> np.ndarray:
        self.seen.update(m.tobytes() for m in np.atleast_2d(masks))
        return self.fn(masks)


def test_exact_shapley_matches_the_closed_form():
    values = game_value(all_coalitions(6))
    np.testing.assert_allclose(exact_shapley(values)[:, 0], CLOSED_FORM, atol=1e-12)


def test_kernel_weighted_least_squares_on_every_coalition_is_exact():
    """The Shapley-kernel regression path (not the enumeration shortcut) over all coalitions."""
    coalitions, weights = kernel_coalitions(6, 2**6 - 2, np.random.default_rng(0))
    assert len(coalitions) == 62 and len({c.tobytes() for c in coalitions}) == 62
    sizes = coalitions.sum(axis=1)
    np.testing.assert_allclose(weights, [shapley_kernel(6, int(s)) for s in sizes])
    empty, full = game_value(np.zeros(6, bool))[0], game_value(np.ones(6, bool))[0]
    phi = constrained_wls(coalitions, game_value(coalitions), weights, empty, full)
    np.testing.assert_allclose(phi[:, 0], CLOSED_FORM, atol=1e-9)


def test_kernel_shap_enumerates_when_the_budget_covers_every_coalition():
    game = Counting()
    est = kernel_shap(game, 6, 64, np.random.default_rng(1))
    np.testing.assert_allclose(est.values[:, 0], CLOSED_FORM, atol=1e-12)
    assert len(game.seen) == 64


@pytest.mark.parametrize("seed", range(4))
def test_sampled_kernel_shap_is_efficient_and_within_budget(seed):
    rng = np.random.default_rng(100 + seed)
    a = rng.normal(size=14)

    def fn(z):
        z = np.atleast_2d(z).astype(float)
        return (z @ a + 2.0 * z[:, 0] * z[:, 5] - z[:, 3] * z[:, 7] * z[:, 9])[:, None]

    game = Counting(fn)
    est = kernel_shap(game, 14, 60, np.random.default_rng(seed))
    assert len(game.seen) <= 60
    full, empty = fn(np.ones(14, bool))[0, 0], fn(np.zeros(14, bool))[0, 0]
    assert est.values[:, 0].sum() == pytest.approx(full - empty, abs=1e-9)


def test_sampled_kernel_shap_is_exact_on_an_additive_game():
    a = np.linspace(-2, 3, 12)

    def fn(z):
        return (np.atleast_2d(z).astype(float) @ a + 1.0)[:, None]

    est = kernel_shap(fn, 12, 40, np.random.default_rng(3))
    np.testing.assert_allclose(est.values[:, 0], a, atol=1e-8)


def test_kernel_coalitions_complete_small_sizes_first_and_pair_the_rest():
    coalitions, weights = kernel_coalitions(10, 60, np.random.default_rng(0))
    sizes = coalitions.sum(axis=1)
    assert len(coalitions) == 60
    assert (sizes == 1).sum() == 10 and (sizes == 9).sum() == 10  # the first pair, complete
    keys = {c.tobytes() for c in coalitions}
    sampled = [c for c, s in zip(coalitions, sizes, strict=True) if 1 < s < 9]
    paired = sum((~c).tobytes() in keys for c in sampled)
    assert paired >= len(sampled) - 1  # complements drawn together (one may miss the budget)
    assert weights.sum() == pytest.approx(sum(9 / (k * (10 - k)) for k in range(1, 10)))
    assert comb(10, 2) * 2 > 40  # the second pair did not fit: it was sampled


def test_permutation_shap_with_antithetic_orders():
    game = Counting()
    est = permutation_shap(game, 6, 42, np.random.default_rng(0))
    empty, full = game_value(np.zeros(6, bool))[0, 0], game_value(np.ones(6, bool))[0, 0]
    assert est.values[:, 0].sum() == pytest.approx(full - empty)
    assert len(game.seen) <= 42

    def additive(z):
        return (np.atleast_2d(z).astype(float) @ A)[:, None]

    est = permutation_shap(additive, 6, 12, np.random.default_rng(5))
    np.testing.assert_allclose(est.values[:, 0], A, atol=1e-12)


def test_weighted_ridge_matches_sklearn():
    sklearn = pytest.importorskip("sklearn.linear_model")
    rng = np.random.default_rng(0)
    x = rng.integers(0, 2, size=(40, 5)).astype(float)
    y = x @ rng.normal(size=5) + rng.normal(size=40)
    w = rng.uniform(0.1, 1.0, size=40)
    coef, r2 = weighted_ridge(x, y, w, 1.0)
    model = sklearn.Ridge(alpha=1.0, fit_intercept=True).fit(x, y, sample_weight=w)
    np.testing.assert_allclose(coef, model.coef_, atol=1e-10)
    assert r2 == pytest.approx(model.score(x, y, sample_weight=w))


def test_lime_recovers_the_weights_of_a_linear_game():
    a = np.array([1.0, -2.0, 0.5, 3.0, 0.0, -1.0, 2.5, 0.75])

    def fn(z):
        return (np.atleast_2d(z).astype(float) @ a - 4.0)[:, None]

    exact = lime(fn, 8, 64, np.random.default_rng(0), alpha=0.0)
    np.testing.assert_allclose(exact.values[:, 0], a, atol=1e-9)
    assert exact.fit_r2 == pytest.approx(1.0)
    ridge = lime(fn, 8, 256, np.random.default_rng(0))  # lime's alpha = 1: shrunk a little
    np.testing.assert_allclose(ridge.values[:, 0], a, atol=0.2)
    assert np.argsort(ridge.values[:, 0]).tolist() == np.argsort(a).tolist()


@pytest.mark.parametrize("method", ["kernel", "permutation", "lime"])
def test_estimators_are_deterministic_given_the_seed(method):
    doc = " ".join(f"Sentence {i} has word w{i} and w{i + 1}." for i in range(12))
    summary = "w1 w3 w4 w7 w11"

    def run(seed):
        settings = SentenceAttributionSettings(method=method, budget=40, seed=seed)
        return explain_sentences(OverlapLikelihood(), doc, summary, settings).values

    np.testing.assert_array_equal(run(7), run(7))
    if method != "permutation":  # additive game: permutation SHAP is exact for every seed
        assert not np.array_equal(run(7), run(8))


DOC = (
    "The council met on Monday.  It approved a new  park.\n\n"
    "Dr. Smith said the park opens in May. Residents were pleased!\n"
    "The budget is 2 million pounds."
)


def test_masking_keeps_the_text_exact():
    features = sentence_features(DOC)
    assert features.sentences == [
        "The council met on Monday.",
        "It approved a new  park.",
        "Dr. Smith said the park opens in May.",
        "Residents were pleased!",
        "The budget is 2 million pounds.",
    ]
    assert all(s in DOC for s in features.sentences)
    assert features.render(np.ones(5, bool)) == DOC
    dropped = features.render(np.array([True, False, True, True, True]))
    assert dropped == DOC.replace("  It approved a new  park.", "")
    assert features.render(np.zeros(5, bool)).strip() == ""


def test_a_perturbation_keeps_the_original_sentence_slots():
    original = sentence_features(DOC)
    perturbed_text = DOC.replace("Monday.", "Mr.")  # a swap that would merge two sentences
    assert len(sentence_features(perturbed_text).sentences) == 4
    aligned = sentence_features(perturbed_text, word_counts=original.word_counts)
    assert len(aligned.sentences) == 5 and aligned.sentences[0] == "The council met on Mr."
    with pytest.raises(ValueError):
        sentence_features(DOC + " extra", word_counts=original.word_counts)


def test_max_words_limits_the_explained_sentences():
    assert sentence_features(DOC, max_words=10).n == 2  # sentence 3 starts at word 10 (from 0)
    assert sentence_features(DOC, max_words=11).n == 3


def test_sentence_game_on_the_full_mask_is_the_document():
    scorer = OverlapLikelihood()
    summary = "council park May"
    game = SentenceGame(scorer, sentence_features(DOC), summary)
    assert game.full[0] == scorer.loglik([DOC], summary)[0]
    game(np.ones((3, 5), bool))
    assert game.evaluations == 1  # memoized


def test_sentence_shap_of_the_additive_scorer_sums_word_weights():
    """OverlapLikelihood is additive over words: a sentence's Shapley value is its words' sum."""
    scorer = OverlapLikelihood()
    summary = "council park May budget"
    features = sentence_features(DOC)
    words = [w for s in features.sentences for w in s.split()]
    weights = scorer.word_weights(words, summary)
    expected = np.add.reduceat(weights, np.cumsum([0, *features.word_counts[:-1]]))
    for budget in (16, 32):  # sampled (2^5 > 16) and enumerated
        attr = explain_sentences(
            scorer, DOC, summary, SentenceAttributionSettings(budget=budget, seed=1)
        )
        np.testing.assert_allclose(attr.values, expected, atol=1e-9)
        assert attr.evaluations <= budget
        assert attr.values.sum() == pytest.approx(attr.full_value - attr.empty_value)


class SegmentScorer(OverlapLikelihood):
    """Per summary sentence: the overlap log-likelihood of that sentence alone."""

    def loglik_segments(
        self, documents: Sequence[str], summary: str, segments: Sequence[str]
    ) -> np.ndarray:
        return np.stack([self.loglik(documents, s) for s in segments], axis=1)


def test_localization_finds_the_source_sentence_behind_a_changed_summary_sentence():
    base = "The council approved a park. Residents were pleased."
    perturbed_summary = "The council approved a garden. Residents were pleased."
    perturbed_doc = DOC.replace("new  park.", "new  garden.")
    assert changed_summary_sentences(base, perturbed_summary) == [0]
    scorer = SegmentScorer()
    settings = SentenceAttributionSettings(budget=32)
    original = explain_sentences(scorer, DOC, base, settings)
    counts = sentence_features(DOC).word_counts
    other = explain_sentences(scorer, perturbed_doc, base, settings, word_counts=counts)
    assert original.segment_values is not None and original.segment_values.shape == (5, 2)
    np.testing.assert_allclose(original.segment_values.sum(axis=1), original.values)
    found = localize(original, other, [0], top=2)
    assert found[0].target == "summary sentence"
    assert found[0].moved[0].index == 1  # "It approved a new park." lost the word "park."
    assert found[0].moved[0].moved == pytest.approx(-1.1)  # a hit (1.0) became a miss (-0.1)
    report = localization_report(found)
    assert 'summary sentence 1: "The council approved a park."' in report
    assert "source  2" in report
    unstable = sentence_instability(original, other, k=2)
    assert set(unstable) == {"rank", "topk", "mass"} and unstable["mass"] > 0


def test_sentence_instability_is_zero_for_the_same_explanation_and_needs_aligned_slots():
    attr = explain_sentences(OverlapLikelihood(), DOC, "park", SentenceAttributionSettings())
    assert sentence_instability(attr, attr) == {"rank": 0.0, "topk": 0.0, "mass": 0.0}
    shorter = explain_sentences(
        OverlapLikelihood(), "One sentence. Two.", "park", SentenceAttributionSettings()
    )
    with pytest.raises(ValueError):
        sentence_instability(attr, shorter)


def test_fidelity_against_an_exact_reference_on_an_additive_scorer():
    from hss_gate.research.sentence_fidelity import budget_for, measure_fidelity

    doc = (  # five sentences with distinct weights (OverlapLikelihood: hit 1.0, miss -0.1)
        "Alpha beta gamma. Alpha alpha beta zeta. Alpha. Beta beta beta alpha gamma zeta zeta. "
        "Gamma gamma gamma gamma alpha alpha."
    )
    long_doc = " ".join(f"Sentence {i} says w{i}." for i in range(12))
    result = measure_fidelity(
        OverlapLikelihood(),
        [("short", doc, "alpha beta gamma"), ("long", long_doc, "w1 w2 w5 w8 w9")],
        per_sentence=[4.0, 2.0],
        reference_factor=10.0,
        methods=["kernel", "lime"],
        self_documents=2,
    )
    short, long = result["per_document"]
    assert short["reference"]["exact"] and short["reference"]["self_spearman"] == 1.0
    assert short["reference"]["evaluations"] == 32  # 2^5 fits 10 x 20: enumerated
    assert not long["reference"]["exact"] and long["reference"]["evaluations"] == 480
    assert "self_evaluations" in long["reference"]  # a second, independent reference run
    kernel = [r for r in short["runs"] if r["method"] == "kernel"]
    assert [r["budget"] for r in kernel] == [20, 10] and budget_for(5, 2.0) == 10
    assert kernel[0]["spearman"] == pytest.approx(1.0)  # additive: Kernel SHAP is exact
    assert [r["budget"] for r in short["runs"] if r["method"] == "lime"] == [20]  # main only
    assert "noise_floor" in kernel[0] and "noise_floor" not in kernel[1]
    curve = result["curve"]
    assert set(curve) == {"kernel@4xM", "kernel@2xM", "lime@4xM"}
    assert result["spearman_median"] == curve["kernel@4xM"]["spearman_median"]
    assert result["eval_fraction"] == pytest.approx(
        np.mean(
            [r["runs"][0]["evaluations"] / r["reference"]["evaluations"] for r in (short, long)]
        )
    )
    assert result["reference_self_documents"] == 2 and result["noise_floor"]["rank"] >= 0


def test_fidelity_reuses_a_stored_reference_without_rerunning_it():
    from hss_gate.research.sentence_fidelity import measure_fidelity

    doc = "Alpha beta gamma. Alpha alpha beta zeta. Alpha. Beta beta gamma zeta. Gamma alpha."
    first = measure_fidelity(
        OverlapLikelihood(), [("d", doc, "alpha beta")], per_sentence=[2.0], self_documents=0
    )
    stored = {"d": first["per_document"][0]["reference"] | {"values": [5.0, 4.0, 3.0, 2.0, 1.0]}}

    class CountingScorer(OverlapLikelihood):
        calls = 0

        def loglik(self, documents, summary):
            CountingScorer.calls += len(documents)
            return super().loglik(documents, summary)

    counting = CountingScorer()
    again = measure_fidelity(
        counting,
        [("d", doc, "alpha beta")],
        per_sentence=[4.0],
        self_documents=1,
        stored_references=stored,
        noise_floor=False,
    )
    row = again["per_document"][0]
    assert row["reference"]["values"] == [5.0, 4.0, 3.0, 2.0, 1.0]  # the stored one, not rerun
    assert "self_spearman" not in row["reference"] and "noise_floor" not in row["runs"][0]
    assert counting.calls == row["runs"][0]["evaluations"]  # only the budgeted run was scored
    assert row["runs"][0]["eval_fraction"] == (
        row["runs"][0]["evaluations"] / stored["d"]["evaluations"]
    )
    with pytest.raises(ValueError, match="sentences"):
        measure_fidelity(
            OverlapLikelihood(),
            [("d", "One. Two.", "alpha")],
            per_sentence=[2.0],
            stored_references=stored,
        )


def test_explain_change_reports_instability_swaps_and_localization():
    from hss_gate.research.sentence_attribution import explain_change

    base = "The council approved a park. Residents were pleased."
    change = explain_change(
        SegmentScorer(),
        DOC,
        DOC.replace("new  park.", "new  garden."),
        base,
        "The council approved a garden. Residents were pleased.",
        SentenceAttributionSettings(budget=32),
    )
    assert change.swapped_sentences == [1] and change.changed == [0]
    assert change.localizations[0].moved[0].index == 1
    text = change.report()
    assert "swaps in source sentences 2;" in text and "1 of 2 summary sentences changed" in text
