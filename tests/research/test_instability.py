"""Attribution instability metrics, word alignment and localization records (pure, no models)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy.stats import spearmanr, wasserstein_distance

from hss_gate.models.embedding import HashingEmbedder
from hss_gate.research.instability import (
    aggregate,
    align,
    aligned_instability,
    sentence_shares,
    word_changes,
)
from hss_gate.research.words import edit_positions, split_words, word_hierarchy
from hss_gate.scoring.distance import transport_shares
from hss_gate.scoring.instability_metrics import (
    instability,
    mass_wasserstein,
    rank_instability,
    spearman,
    top_k,
    topk_instability,
    word_positions,
)
from hss_gate.settings import PerturbSettings
from hss_gate.text.masked_text import render, word_spans
from hss_gate.text.perturb import find_candidates, perturb
from tests.conftest import FakeLexicon, FakeTagger, FakeVectors

pytestmark = pytest.mark.unit

RNG = np.random.default_rng(0)


# --------------------------------------------------------------------------- metrics


def test_identical_attributions_have_zero_instability() -> None:
    a = RNG.normal(size=40)
    assert instability(a, a.copy(), k=5) == {"rank": 0.0, "topk": 0.0, "mass": 0.0}
    # a pure rescaling moves neither ranks, the top words nor the normalized mass
    scaled = instability(a, 3.0 * a, k=5)
    assert scaled["rank"] == pytest.approx(0.0, abs=1e-12)
    assert scaled["topk"] == 0.0
    assert scaled["mass"] == pytest.approx(0.0, abs=1e-12)


@pytest.mark.parametrize("seed", range(5))
def test_spearman_matches_scipy_with_ties(seed: int) -> None:
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 6, size=30).astype(float)  # many ties
    b = a + rng.integers(-2, 3, size=30)
    expected = spearmanr(a, b).statistic
    assert np.allclose(spearman(a, b), expected)
    assert np.allclose(rank_instability(a, b), 1.0 - expected)


def test_spearman_degenerate_cases_are_defined() -> None:
    assert spearman(np.ones(5), np.full(5, 2.0)) == 1.0  # both flat: same (empty) ranking
    assert spearman(np.ones(5), np.arange(5.0)) == 0.0  # one flat: no rank information
    assert rank_instability(np.arange(5.0), -np.arange(5.0)) == pytest.approx(2.0)


@pytest.mark.parametrize("seed", range(5))
def test_mass_wasserstein_matches_scipy(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 60))
    a, b = rng.normal(size=n), rng.normal(size=n)
    a[rng.integers(0, n)] = 0.0
    pos = word_positions(n)
    expected = wasserstein_distance(pos, pos, np.abs(a), np.abs(b))
    assert np.allclose(mass_wasserstein(a, b), expected)


def test_mass_wasserstein_is_scaled_to_unit_range() -> None:
    a, b = np.zeros(11), np.zeros(11)
    a[0], b[-1] = 1.0, -5.0  # all mass at the two ends, sign and scale ignored
    assert mass_wasserstein(a, b) == pytest.approx(1.0)
    assert mass_wasserstein(np.zeros(4), np.zeros(4)) == 0.0  # no mass: uniform vs uniform


def test_topk_is_one_minus_jaccard() -> None:
    a = np.array([5.0, -4.0, 3.0, 0.1, 0.2, 0.0])
    b = np.array([5.0, 0.0, 3.0, -4.5, 0.2, 0.0])
    assert top_k(a, 3) == {0, 1, 2}
    assert top_k(b, 3) == {0, 2, 3}
    assert topk_instability(a, b, k=3) == pytest.approx(1 - 2 / 4)
    assert topk_instability(a, b, k=100) == 0.0  # k >= n: the same full set


def test_rank_instability_grows_with_reversed_prefix() -> None:
    a = np.arange(30.0)
    values = []
    for k in range(0, 31, 3):
        b = a.copy()
        b[:k] = b[:k][::-1]
        values.append(rank_instability(a, b))
    assert values[0] == 0.0
    assert all(x < y for x, y in itertools.pairwise(values))
    assert values[-1] == pytest.approx(2.0)


def test_topk_instability_grows_as_top_words_are_demoted() -> None:
    a = np.linspace(10.0, 1.0, 20)  # top-5 = positions 0..4
    values = []
    for j in range(6):
        b = a.copy()
        b[:j] = 0.0  # demote j of the top-5
        values.append(topk_instability(a, b, k=5))
    assert values[0] == 0.0
    assert all(x < y for x, y in itertools.pairwise(values))
    assert values[-1] == 1.0


def test_mass_instability_grows_as_mass_moves_away() -> None:
    n = 21
    a = np.zeros(n)
    a[0] = 1.0
    distances = []
    for j in range(n):
        b = np.zeros(n)
        b[j] = 1.0
        distances.append(mass_wasserstein(a, b))
    assert np.allclose(distances, np.arange(n) / (n - 1))


def test_every_metric_grows_with_noise_on_average() -> None:
    rng = np.random.default_rng(1)
    a = rng.normal(size=50)
    levels = [0.0, 0.05, 0.3, 1.0, 5.0]
    means = {m: [] for m in ("rank", "topk", "mass")}
    for sigma in levels:
        rows = [instability(a, a + sigma * rng.normal(size=50), k=8) for _ in range(100)]
        for m in means:
            means[m].append(np.mean([r[m] for r in rows]))
    for m, series in means.items():
        assert series[0] == 0.0, m
        assert all(x < y for x, y in itertools.pairwise(series)), (m, series)


def test_mismatched_or_non_finite_attributions_are_rejected() -> None:
    with pytest.raises(ValueError, match="align"):
        instability(np.zeros(3), np.zeros(4))
    with pytest.raises(ValueError, match="finite"):
        instability(np.array([1.0, np.nan]), np.zeros(2))


def test_aggregate_is_the_mean_per_metric() -> None:
    rows = [
        {"rank": 0.2, "topk": 0.5, "mass": 0.1},
        {"rank": 0.4, "topk": 0.0, "mass": 0.3},
    ]
    out = aggregate(rows)
    assert out == pytest.approx({"n": 2.0, "rank": 0.3, "topk": 0.25, "mass": 0.2})
    assert np.isnan(aggregate([])["rank"])


# --------------------------------------------------------------------------- alignment

TEXT = (
    "Rapid growth helped residents. The council praised rapid growth. "
    "Officials expected large gains and rapid decline in Leeds. Residents bought 3 homes."
)
VECTORS = FakeVectors(
    {
        "rapid": [("swift", 0.9)],
        "growth": [("expansion", 0.8)],
        "residents": [("inhabitants", 0.75)],
        "large": [("big", 0.85)],
        "gains": [("increases", 0.72)],
    }
)
LEXICON = FakeLexicon(
    {
        "rapid": {"swift"},
        "growth": {"expansion"},
        "residents": {"inhabitants"},
        "large": {"big"},
        "gains": {"increases"},
    }
)


def _perturbation(index: int):
    settings = PerturbSettings(tau=0.7, gamma=0.0, strengths={"x": (0.2, 0.4)})
    tagger = FakeTagger()
    tokens = tagger.tokens(TEXT)
    encode = HashingEmbedder().encode
    cands = find_candidates(
        TEXT, tokens, settings, vectors=VECTORS, lexicon=LEXICON, tagger=tagger, encode=encode
    )
    return perturb("d1", TEXT, tokens, cands, "x", index, settings, encode=encode)


def test_a_perturbation_keeps_word_count_and_positions() -> None:
    pert = _perturbation(0)
    assert pert.edits, "the fixture should swap some words"
    original, perturbed = split_words(TEXT), split_words(pert.text)
    assert len(original) == len(perturbed)
    al = align(original, perturbed)
    assert al.one_to_one
    assert np.array_equal(al.original, np.arange(len(original)))
    # the positions that differ are exactly the edits' word positions
    assert sorted(edit_positions(TEXT, pert.edits)) == list(al.swapped)
    for edit, pos in zip(pert.edits, edit_positions(TEXT, pert.edits), strict=True):
        assert original[pos].startswith(edit.original)
        assert perturbed[pos].startswith(edit.replacement)


def test_align_falls_back_to_difflib_when_counts_differ() -> None:
    original = ["a", "b", "c", "d", "e"]
    perturbed = ["a", "x", "c", "extra", "d", "e"]
    al = align(original, perturbed)
    assert not al.one_to_one
    assert [original[i] for i in al.original] == ["a", "b", "c", "d", "e"]
    assert [perturbed[j] for j in al.perturbed] == ["a", "x", "c", "d", "e"]
    assert al.swapped == (1,)
    out = aligned_instability(original, np.arange(5.0), perturbed, np.array([0, 1, 2, 9, 3, 4.0]))
    assert out["rank"] == 0.0 and out["aligned"] == 5.0 and out["swaps"] == 1


# --------------------------------------------------------------------------- words and masks


def test_render_keeps_formatting_and_removes_masked_words() -> None:
    text = "  Alpha beta,\n\ngamma  delta.\n"
    spans = word_spans(text)
    assert split_words(text) == text.split()
    assert render(text, spans, np.ones(4, bool)) == text
    assert render(text, spans, np.array([1, 0, 1, 1], bool)) == "  Alpha\n\ngamma  delta.\n"
    assert render(text, spans, np.array([0, 1, 1, 0], bool)) == "  beta,\n\ngamma\n"
    assert render(text, spans, np.zeros(4, bool)) == "  \n"
    assert render(text, spans, np.array([1, 0, 1, 1], bool), "[M]") == (
        "  Alpha [M]\n\ngamma  delta.\n"
    )
    assert render(text, spans, np.array([0], bool)) == "  beta,\n\ngamma  delta.\n"  # tail kept


def test_word_hierarchy_is_contiguous_and_sentence_aware() -> None:
    from scipy.cluster.hierarchy import is_valid_linkage, leaves_list

    words = ["One", "two", "three.", "Four", "five.", "Six", "seven", "eight", "nine."]
    tree = word_hierarchy(words)
    assert is_valid_linkage(tree)
    assert tree.shape == (len(words) - 1, 4)
    assert tree[-1, 3] == len(words)
    assert list(leaves_list(tree)) == list(range(len(words)))  # never reorders words

    def members(node: int) -> set[int]:
        if node < len(words):
            return {node}
        left, right = tree[node - len(words), :2].astype(int)
        return members(left) | members(right)

    # every sentence is one node of the tree (its words are grouped before crossing a boundary)
    nodes = [members(len(words) + i) for i in range(len(tree))]
    for sentence in ({0, 1, 2}, {3, 4}, {5, 6, 7, 8}):
        assert sentence in nodes


# --------------------------------------------------------------------------- localization


def test_word_changes_compare_normalized_shares() -> None:
    words = ["a", "b", "c"]
    original = np.array([2.0, 1.0, 1.0])
    rows = word_changes(words, original, [2 * original, np.array([1.0, 1.0, 2.0])], [(), (2,)])
    assert [r.share for r in rows] == pytest.approx([0.5, 0.25, 0.25])
    # the rescaled copy moves nothing; the second moves a (-0.25) and c (+0.25)
    assert [r.mean_abs_change for r in rows] == pytest.approx([0.125, 0.0, 0.125])
    assert [r.max_abs_change for r in rows] == pytest.approx([0.25, 0.0, 0.25])
    assert [r.times_swapped for r in rows] == [0, 0, 1]


def test_sentence_shares_follow_transport_plan() -> None:
    base = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0]])
    moved_last = base.copy()
    moved_last[2] = [0.0, 3.0]
    moved_first = base.copy()
    moved_first[0] = [-1.0, -1.0]
    rows = sentence_shares(["s0", "s1", "s2"], base, [moved_last, moved_first, base])
    # one row per base sentence, one column per perturbation
    assert [r.shares for r in rows] == [[0.0, 1.0, 0.0], [0.0, 0.0, 0.0], [1.0, 0.0, 0.0]]
    assert [r.mean_share for r in rows] == pytest.approx([1 / 3, 0.0, 1 / 3])
    assert rows[2].max_share == 1.0 and rows[2].sentence == "s2"
    # the same numbers as distance.transport_shares on the reversed pair
    assert np.allclose([r.shares[0] for r in rows], transport_shares(moved_last, base))
    with pytest.raises(ValueError, match="embeddings"):
        sentence_shares(["only one"], base, [base])
