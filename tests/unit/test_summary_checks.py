"""Does a summarizer summarize? The per-summary flags (pure)."""

from __future__ import annotations

import pytest

from hss_gate.signals.summary_flags import LengthPolicy, flag_shares, summary_flags

pytestmark = pytest.mark.unit

POLICY = LengthPolicy(target_words=60)  # near-empty < 12 words, overlong > 180, copy >= 80%
SOURCE = " ".join(
    f"The council approved plan number {i} for the river district after a long debate."
    for i in range(30)
)  # 420 words


def test_policy_bounds_follow_the_length_asked_for():
    assert (POLICY.min_words, POLICY.max_words) == (12, 180)
    assert LengthPolicy(target_words=10).min_words == 3  # never below 3 words


@pytest.mark.parametrize(
    "summary,flag",
    [
        ("", "near_empty"),
        ("Plan approved.", "near_empty"),
        (SOURCE, "copies_source"),
        (" ".join(SOURCE.split()[:200]), "overlong"),
        (
            "Der Rat hat den Plan nach einer langen Debatte genehmigt und die Arbeiten sollen "
            "im nächsten Jahr beginnen, sagte der Bürgermeister der Stadt am Montag.",
            "other_language",
        ),
    ],
)
def test_each_way_of_not_summarizing_raises_its_flag(summary, flag):
    flags = summary_flags(summary, SOURCE, POLICY)
    assert flags[flag] is True
    assert [
        f for f in ("near_empty", "copies_source", "overlong", "other_language") if flags[f]
    ] in (
        [flag],
        [flag, "overlong"],  # a copy of a 420-word source is also far too long
    )


def test_copying_sentences_like_lead_3_is_summarizing():
    lead3 = " ".join(SOURCE.split(". ")[:3]) + "."
    flags = summary_flags(lead3, SOURCE, POLICY)
    assert not any(flags[f] for f in ("near_empty", "copies_source", "overlong", "other_language"))
    assert 0 < flags["length_ratio"] < 0.2


def test_a_foreign_source_with_a_foreign_summary_is_not_flagged():
    german = "Der Rat hat den Plan nach einer langen Debatte genehmigt. " * 10
    assert summary_flags(german[:200], german, POLICY)["other_language"] is False


def test_flag_shares():
    rows = [{"base_near_empty": True}, {"base_near_empty": False}, {}, {"base_overlong": True}]
    shares = flag_shares(rows)
    assert shares["near_empty"] == 0.25 and shares["overlong"] == 0.25
    assert shares["copies_source"] == 0.0
