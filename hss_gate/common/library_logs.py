"""Third-party log messages that hss-gate understands.

A library may log a message whose cause is understood and harmless, which a user cannot act on
and would read as an error: transformers' "LOAD REPORT" table when the entailment checker builds
its encoder without the pooler its checkpoint carries (hss_gate/consistency/entailment.py). Such
a message is dropped where it arises, by one filter on the one logger that writes it, while the
call that causes it runs; the library's logging is otherwise left alone, so every other message
of that logger (a genuine warning, another load report) still reaches the user. Those get their
raw ANSI colour codes removed when stderr is not a terminal (a pipe, a CI log), where they would
show as `^[[1m`.

Foundations floor: nothing from hss_gate is imported here.
"""

from __future__ import annotations

import contextlib
import logging
import re
import sys
from collections.abc import Callable, Iterator

ANSI_ESCAPE = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
"""A terminal control sequence (colour, bold, cursor)."""


def without_ansi(text: str) -> str:
    """The text without terminal control sequences."""
    return ANSI_ESCAPE.sub("", text)


def stderr_is_terminal() -> bool:
    """Whether stderr, where libraries log, is an interactive terminal."""
    stream = sys.stderr
    return stream is not None and hasattr(stream, "isatty") and stream.isatty()


class KnownMessages(logging.Filter):
    """Drops the records whose message `harmless` recognizes; strips ANSI codes from the others
    when `plain`."""

    def __init__(self, harmless: Callable[[str], bool], plain: bool) -> None:
        super().__init__()
        self.harmless, self.plain = harmless, plain

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        if self.harmless(message):
            return False
        if self.plain and ANSI_ESCAPE.search(message):
            record.msg, record.args = without_ansi(message), ()
        return True


def _nothing(message: str) -> bool:
    return False


@contextlib.contextmanager
def known_messages(
    logger_name: str, harmless: Callable[[str], bool] = _nothing
) -> Iterator[KnownMessages]:
    """While the block runs, the logger `logger_name` drops the messages `harmless` recognizes,
    and (off a terminal) writes the others without ANSI codes; restored afterwards."""
    logger = logging.getLogger(logger_name)
    known = KnownMessages(harmless, plain=not stderr_is_terminal())
    logger.addFilter(known)
    try:
        yield known
    finally:
        logger.removeFilter(known)


TRANSFORMERS_LOADING = "transformers.modeling_utils"
"""The logger of transformers' `from_pretrained` (its LOAD REPORT)."""


def load_report_rows(message: str) -> list[tuple[str, str]] | None:
    """The (key, status) rows of a transformers LOAD REPORT message, or None when the message
    is not one."""
    text = without_ansi(message)
    if "LOAD REPORT" not in text:
        return None
    rows = []
    for line in text.splitlines():
        cells = [cell.strip() for cell in line.split("|")]
        if len(cells) < 2 or not cells[0] or cells[0] == "Key" or set(cells[0]) <= {"-", "+"}:
            continue
        rows.append((cells[0], cells[1]))
    return rows
