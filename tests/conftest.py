"""Shared fixtures: fakes for the unit tier, real models (session-scoped) for the others."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import pytest

from hss_gate.models.language import Token

REPO = Path(__file__).resolve().parents[1]
CORPUS = REPO / "data" / "reference"


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_sessionfinish(session: pytest.Session, exitstatus: int):
    """After pytest's own summary, one line naming every skipped tier and why, and the command
    that runs them as CI does (tests/skipped_tiers.py); under CI=true a skipped server tier
    fails the run."""
    from tests.skipped_tiers import ci_failures, group, reason_of, summary_line

    result = yield
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is None:
        return result
    skipped = group(reason_of(r.longrepr) for r in reporter.stats.get("skipped", []))
    failures = ci_failures(skipped, os.environ)
    if skipped:
        reporter.write_line(summary_line(skipped), yellow=not failures, red=bool(failures))
    for failure in failures:
        reporter.write_line(failure, red=True, bold=True)
    if failures and session.exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
    return result


def component_unavailable(message: str) -> None:
    """A server or cluster the test starts could not start: skipped with the reason, except
    under CI=true, where .ci/run promises every component and the test fails."""
    if os.environ.get("CI") == "true":
        pytest.fail(f"CI: {message}")
    pytest.skip(message)


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


class FakeTagger:
    """Whitespace tokenizer: lower-case words are NOUNs, capitalized mid-sentence are PROPN."""

    fingerprint = "fake-tagger"

    def _records(self, text: str) -> list[Token]:
        out, pos, sent, start_of_sentence = [], 0, 0, True
        for word in text.split():
            idx = text.index(word, pos)
            pos = idx + len(word)
            core = word.rstrip(".,")
            kind = "PROPN" if core[:1].isupper() and not start_of_sentence else "NOUN"
            out.append(
                Token(
                    i=len(out),
                    text=core,
                    idx=idx,
                    pos=kind,
                    tag="NN",
                    lemma=core.lower(),
                    ent="",
                    is_stop=core.lower() in {"the", "a", "of", "and"},
                    like_num=core.isdigit(),
                    is_punct=False,
                    is_space=False,
                    sent=sent,
                )
            )
            start_of_sentence = False
            if word.endswith("."):
                out.append(
                    Token(
                        i=len(out),
                        text=".",
                        idx=idx + len(core),
                        pos="PUNCT",
                        tag=".",
                        lemma=".",
                        ent="",
                        is_stop=False,
                        like_num=False,
                        is_punct=True,
                        is_space=False,
                        sent=sent,
                    )
                )
                sent += 1
                start_of_sentence = True
        return out

    def tokens(self, text: str) -> list[Token]:
        return self._records(text)

    def tag_many(self, texts: Sequence[str]) -> list[list[Token]]:
        return [self._records(t) for t in texts]

    def mentions(self, texts: Sequence[str]) -> list[list[str]]:
        return [
            [w.strip(".,") for w in t.split() if w[:1].isupper() or w[:1].isdigit()] for t in texts
        ]


class FakeChecker:
    """Deterministic consistency: the share of a summary sentence's words that its source has;
    a summary's consistency is the mean over its sentences, and a sentence with under half of
    its words in the source is unsupported (beside the source sentence sharing most words)."""

    fingerprint = "fake-checker"
    threshold = 0.5

    def check(self, pairs):
        from hss_gate.consistency.checker import MatrixChecker

        def words(text: str) -> set[str]:
            return {w.strip(".,;:!?\"'()").lower() for w in text.split()} - {""}

        def matrix(source, sentences):
            import numpy as np

            from hss_gate.text.sentences import split_sentences

            passages = split_sentences(source) or [source]
            return np.array(
                [
                    [len(words(s) & words(p)) / max(len(words(s)), 1) for p in passages]
                    for s in sentences
                ]
            )

        from hss_gate.text.sentences import split_sentences

        inner = MatrixChecker(
            matrix, lambda src: split_sentences(src) or [src], self.fingerprint, self.threshold
        )
        return inner.check(pairs)


class FakeVectors:
    """Neighbours from a fixed table."""

    fingerprint = "fake-vectors"

    def __init__(self, table: dict[str, list[tuple[str, float]]]) -> None:
        self.table = table

    def neighbours(self, word: str, n: int, min_cosine: float):
        return tuple((w, c) for w, c in self.table.get(word, [])[:n] if c >= min_cosine)


class FakeLexicon:
    """Synonym sets and antonym pairs from fixed tables."""

    fingerprint = "fake-lexicon"

    def __init__(self, synonyms: dict[str, set[str]], antonyms: set[tuple[str, str]] = frozenset()):
        self.syn = synonyms
        self.ant = set(antonyms) | {(b, a) for a, b in antonyms}

    def synonyms(self, lemma: str, pos: str, max_senses: int = 3) -> set[str]:
        return self.syn.get(lemma, set())

    def is_antonym(self, a: str, b: str) -> bool:
        return (a, b) in self.ant

    def base_forms(self, word: str, pos: str) -> list[str]:
        return [word]


@pytest.fixture(scope="session")
def real_settings():
    from hss_gate.settings import load_settings

    return load_settings(REPO / "params.yaml")


@pytest.fixture(scope="session")
def real_toolkit(real_settings):
    from hss_gate.models import model_store

    missing = [
        n
        for n in model_store.CORE_MODELS
        if not model_store.is_installed(model_store.resolve_name(n))
    ]
    if missing:
        pytest.skip(f"embedded models not installed: {missing} (run `hss models install`)")
    from hss_gate.scoring.toolkit import real_toolkit as build

    return build(real_settings)
