"""What a test run did not run, and why: the skipped tests grouped by the part of the system they
need (a tier: PostgreSQL, Chromium, the external data, shellcheck, ...), for the line that ends
`make test` (tests/conftest.py's pytest_sessionfinish) and for the CI rule: under CI=true a
skipped server tier fails the run (.ci/run promises every server).

A skip is put in a tier by its reason (the text pytest.skip or skipif gives it); a reason no tier
claims is listed as its own, so nothing skipped goes unnamed.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

CI_COMMAND = "CI=true bash .ci/run"
"""The one command that runs every tier as CI does (it starts the servers, then `make test`)."""


@dataclass(frozen=True)
class Tier:
    """A part of the system some tests need.

    `server`: .ci/run provides it and under CI=true its skip fails the run; `in_ci`: .ci/run
    provides it (with `how`, the way to get it otherwise)."""

    name: str
    reason: re.Pattern[str]
    server: bool
    in_ci: bool
    how: str


def _tier(name: str, reason: str, *, server: bool, in_ci: bool, how: str) -> Tier:
    return Tier(name, re.compile(reason, re.IGNORECASE), server, in_ci, how)


TIERS: tuple[Tier, ...] = (
    _tier(
        "PostgreSQL",
        r"HSS_TEST_POSTGRES_URL|PostgreSQL",
        server=True,
        in_ci=True,
        how='eval "$(scripts/postgres.sh start)"',
    ),
    _tier(
        "Chromium",
        r"chromium",
        server=True,
        in_ci=True,
        how="apt-get install chromium (or HSS_CHROMIUM=path)",
    ),
    _tier("llama.cpp server", r"llama\.cpp server", server=True, in_ci=True, how=".ci/run"),
    _tier("Prefect server", r"prefect", server=True, in_ci=True, how=".ci/run"),
    _tier("Dask cluster", r"\bdask\b|distributed", server=True, in_ci=True, how=".ci/run"),
    _tier("shellcheck", r"shellcheck", server=False, in_ci=True, how="apt-get install shellcheck"),
    _tier(
        "the external data",
        r"shared/data/external|HSS_EXTERNAL_DATA|frank_cnndm",
        server=False,
        in_ci=False,
        how="set HSS_EXTERNAL_DATA or put it in ../shared/data/external",
    ),
    _tier(
        "the embedded models",
        r"hss models install|not installed \(hss models",
        server=False,
        in_ci=True,
        how="make setup",
    ),
)


@dataclass
class Skipped:
    """The skipped tests of one tier (or of one reason no tier claims)."""

    name: str
    why: str
    tier: Tier | None
    count: int = 0


def reason_of(longrepr: object) -> str:
    """The reason of a skip report's `longrepr` ((path, line, "Skipped: why") for a skip)."""
    text = longrepr[2] if isinstance(longrepr, tuple) and len(longrepr) == 3 else str(longrepr)
    return str(text).removeprefix("Skipped: ")


def _first_line(text: str, limit: int = 100) -> str:
    """The reason's gist: its first line up to an aside in parentheses, at most `limit` long."""
    line = (text.strip().splitlines() or [""])[0].strip()
    gist = line.split(" (", 1)[0] if " (" in line[1:] else line
    return gist if len(gist) <= limit else gist[: limit - 3] + "..."


def group(reasons: Iterable[str], tiers: Iterable[Tier] = TIERS) -> list[Skipped]:
    """The skipped tests by tier, in the tiers' order, then the reasons no tier claims."""
    tiers = tuple(tiers)
    found: dict[str, Skipped] = {}
    for reason in reasons:
        tier = next((t for t in tiers if t.reason.search(reason)), None)
        key = tier.name if tier else _first_line(reason)
        name = tier.name if tier else "other"
        entry = found.setdefault(key, Skipped(name, _first_line(reason), tier))
        entry.count += 1
    order = {t.name: i for i, t in enumerate(tiers)}
    return sorted(found.values(), key=lambda s: (order.get(s.name, len(order)), s.why))


def _tests(n: int) -> str:
    return f"{n} test{'s' if n != 1 else ''}"


def summary_line(skipped: list[Skipped]) -> str:
    """The line that ends the run: every skipped tier with its count and why, then the command
    that runs them as CI does (and what even CI does not run)."""
    if not skipped:
        return "every tier ran: nothing was skipped"
    parts = [f"{s.name} ({_tests(s.count)}: {s.why})" for s in skipped]
    line = f"not run here: {'; '.join(parts)}."
    by_ci = [s.name for s in skipped if s.tier is not None and s.tier.in_ci]
    if by_ci:
        line += f" `{CI_COMMAND}` runs {', '.join(by_ci)} as CI does."
    for entry in skipped:
        if entry.tier is not None and not entry.tier.in_ci:
            line += f" CI does not run {entry.name} either ({entry.tier.how})."
    return line


def ci_failures(skipped: list[Skipped], environ: Mapping[str, str]) -> list[str]:
    """Under CI=true, the skipped server tiers (each fails the run), else none."""
    if environ.get("CI") != "true":
        return []
    return [
        f"CI: the {s.name} tier was skipped ({_tests(s.count)}: {s.why}); under CI=true every "
        "server tier must run (.ci/run provides them)"
        for s in skipped
        if s.tier is not None and s.tier.server
    ]
