"""The sentence limit's GBNF grammar (hss_gate.models.summarizers.base.sentences_grammar): which
texts each version lets a model write, read from the grammar text itself.

The grammar is regular (no rule refers to itself), so the test turns its text into a Python
regular expression (`to_regex`, the subset of GBNF the grammar uses: string literals, character
classes, groups, alternatives, ?, *, + and {m,n}) and matches texts against it. A text the
regular expression refuses is one llama.cpp would not let the model write.
"""

from __future__ import annotations

import re

import pytest

from hss_gate.models.summarizers.base import (
    SENTENCE_RULE,
    SENTENCE_RULE_V2,
    engine_fields,
    generation_key,
    sentences_grammar,
)
from hss_gate.settings import GenerateSettings

pytestmark = pytest.mark.unit

TOKEN = re.compile(
    r'\s*(?:(?P<literal>"(?:\\.|[^"\\])*")|(?P<cls>\[(?:\\.|[^\]\\])*\])'
    r"|(?P<name>[a-z][a-z0-9-]*)|(?P<op>[()|?*+])|(?P<count>\{\d+,\d+\}))"
)


def _literal(text: str) -> str:
    inner = text[1:-1].replace('\\"', '"').replace("\\\\", "\\").replace("\\n", "\n")
    return re.escape(inner)


def to_regex(grammar: str, rule: str = "root") -> str:
    """The rule as a regular expression: rule references inlined (the grammar has no
    recursion), literals escaped, character classes kept (GBNF's and Python's agree on the
    ones used: ranges, negation, \\n and \\] escapes)."""
    rules = dict(line.split(" ::= ", 1) for line in grammar.strip().splitlines())
    out, body, pos = [], rules[rule], 0
    while pos < len(body.rstrip()):
        match = TOKEN.match(body, pos)
        assert match, f"cannot read {body[pos:]!r}"
        pos = match.end()
        kind, value = match.lastgroup, match.group(match.lastgroup)
        if kind == "literal":
            out.append(_literal(value))
        elif kind == "cls":
            out.append(value)
        elif kind == "name":
            out.append(f"(?:{to_regex(grammar, value)})")
        elif kind == "op":
            out.append("(?:" if value == "(" else value)
        else:
            out.append(value)
    return "".join(out)


def allows(text: str, sentences: int = 1, version: str = "v2") -> bool:
    """Whether the grammar of `sentences` sentences lets a model write `text`."""
    return re.fullmatch(to_regex(sentences_grammar(sentences, version)), text) is not None


WHOLE = [  # one sentence each, as a model writes it
    "The meeting starts at 4:30 a.m. on Monday.",
    "The plane landed at 9:00 a.m.",
    "U.S. officials said the rate rose 3.5 percent to $1.25 billion.",
    "Officials in the U.S. said so.",
    "Small fruits, e.g., cherries, are sweet, i.e. sugary.",
    "Some cities (e.g. Leeds) grew.",
    "Mr. Smith met Dr. Jones at No. 10 on Sept. 3.",
    "Apple Inc. said sales rose.",
    "The U.S.-led talks ended at 9:00.",
    'He said "we won."',
    '"We won," he said at 9:00 a.m.',
    '"We won."',
    'He said "the U.S. won."',
    'Officials said "U.S. talks ended."',
    "He called it 'the best day.'",
    "It rose 3.5%.",
]


@pytest.mark.parametrize("text", WHOLE)
def test_v2_keeps_abbreviations_decimals_and_times_in_one_sentence(text):
    assert allows(text, sentences=1)


def test_v1_split_the_abbreviations_that_v2_keeps():
    """The production baseline's grammar (v1) ends a sentence at the stops of "a.m." and "U.S.":
    a one-sentence summary cannot hold them, and "a. m." is what a model was left to write."""
    assert not allows("The meeting starts at 4:30 a.m. on Monday.", 1, "v1")
    assert not allows("U.S. officials said so.", 1, "v1")
    assert allows("It rose 3.5%.", 1, "v1")
    assert allows("The meeting starts at 4:30 a. m. on Monday.", 3, "v1")
    assert allows("It ended at 9:00 a. m.]", 2, "v1")  # the stored summaries' bracket


@pytest.mark.parametrize(
    "text",
    [
        "It ended at 9:00 a.m.]",  # a bracket nothing opened
        "It ended (at nine.)",  # no bracket after the stop at all
        'It ended at 9:00 a.m."',  # nor a quote the sentence did not open
        "The U.S. team left at 4:30 a.'",  # what v1 let SmolLM2 write
        "It ended here.Then it went on.",  # a stop glued to the next sentence
        "It ended here.1 more",
        "Two lines.\nSecond.",
        "  It starts with two spaces.",
        "No stop at the end",
    ],
)
def test_v2_refuses_what_ends_no_sentence_properly(text):
    assert not allows(text, sentences=3)


def test_the_limit_still_counts_sentences():
    three = "It rose 3.5% at 4:30 a.m. on Monday. U.S. markets fell. Mr. Lee said so."
    assert allows(three, sentences=3)
    assert not allows(three, sentences=2)
    assert not allows(three + " A fourth one.", sentences=3)
    # an abbreviation may end a sentence too
    assert allows("Markets opened at 9:00 a.m. Prices fell.", sentences=2)


def test_v2_is_the_default_and_v1_keeps_its_grammar_text():
    """v2 is the default since the production baseline's relock of 2026-12-05; v1 is the
    earlier grammar text, byte for byte, so a baseline stored under it keeps its fingerprint
    (tests/unit/test_model_store.py pins v2's); the two are different fingerprints."""
    assert GenerateSettings().sentence_grammar == "v2"
    assert sentences_grammar(3) == f'root ::= " "? s (" " s){{0,2}}\n{SENTENCE_RULE_V2}\n'
    assert sentences_grammar(3, "v1") == f'root ::= " "? s (" " s){{0,2}}\n{SENTENCE_RULE}\n'
    assert SENTENCE_RULE == (
        's ::= [^.!?\\n ] p* [.!?] ["\')\\]]?\np ::= [^.!?\\n] | [0-9] "." [0-9]'
    )
    v1, v2 = GenerateSettings(sentence_grammar="v1"), GenerateSettings()
    assert engine_fields(v1)["grammar"] == sentences_grammar(v1.summary_sentences, "v1")
    assert engine_fields(v2)["grammar"] == sentences_grammar(v2.summary_sentences, "v2")
    assert generation_key(v1) != generation_key(v2)
