"""The lead-coverage signal (issue 36, step 8): one module, registered, reported, never blocking."""

from __future__ import annotations

import math

import pytest

from hss_gate import signals as summary_signals
from hss_gate.signals.lead_coverage import SIGNAL, lead_coverage

pytestmark = pytest.mark.unit

SOURCE = (
    "The council approved 40 new homes on Monday. Builders start in March near the river. "
    "Residents asked for a park and a school. A fourth sentence the lead does not include."
)


def test_a_summary_of_the_whole_lead_covers_it_and_a_lead_1_summary_covers_a_third():
    whole = lead_coverage(" ".join(SOURCE.split(". ")[:3]) + ".", SOURCE)["lead_coverage"]
    first = lead_coverage("The council approved 40 new homes on Monday.", SOURCE)
    assert whole == 1.0
    # council approved 40 homes monday: 5 of the lead's 14 content words ("new" is a function
    # word; builders start march near river, residents asked park school are the other 9)
    assert first["lead_coverage"] == pytest.approx(5 / 14, abs=1e-6)


def test_only_the_first_three_sentences_count_and_function_words_do_not():
    assert lead_coverage("A fourth sentence the lead does not include.", SOURCE)[
        "lead_coverage"
    ] == pytest.approx(0.0)
    assert lead_coverage("The and of a.", SOURCE)["lead_coverage"] == 0.0


def test_a_source_without_content_words_has_nothing_to_cover():
    assert math.isnan(lead_coverage("anything", "The. Of. And.")["lead_coverage"])


def test_it_is_registered_reported_and_never_blocks():
    assert SIGNAL in summary_signals.REGISTERED
    assert SIGNAL.margins == ()  # no margin: it cannot block a promotion
    assert [p.column for p in SIGNAL.paired] == ["base_lead_coverage"]
    assert [w.column for w in SIGNAL.window] == ["live_lead_coverage"]
