"""The summarizer protocol and what every backend shares."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from typing import ClassVar, Protocol

from hss_gate.settings import GenerateSettings


class Summarizer(Protocol):
    """Turns documents into summaries, deterministically for fixed settings."""

    fingerprint: str

    def summarize(
        self,
        texts: Sequence[str],
        progress: Callable[[int], None] | None = None,
    ) -> list[str]: ...


def each_with_progress(
    func: Callable[[str], str],
    texts: Sequence[str],
    progress: Callable[[int], None] | None,
) -> list[str]:
    """Apply func to every text in order, reporting one step per text."""
    out = []
    for text in texts:
        out.append(func(text))
        if progress:
            progress(1)
    return out


# A sentence: text without line breaks that ends in . ! or ? (a closing quote or bracket may
# follow). A stop inside a sentence only sits between two digits ("3.2", "10.30"): anything
# else glued to a stop ("here.Then", "here.1") would let a model run past the sentences asked.
# The grammar of the production baselines before 2026-12-05 (generate.sentence_grammar v1).
SENTENCE_RULE = 's ::= [^.!?\\n ] p* [.!?] ["\')\\]]?\np ::= [^.!?\\n] | [0-9] "." [0-9]'

TITLES = (
    *("Mr", "Mrs", "Ms", "Dr", "Prof", "St", "Jr", "Sr", "Sen", "Rep", "Gov", "Gen", "No", "vs"),
    *("Inc", "Corp", "Co", "Ltd", "Jan", "Feb", "Aug", "Sept", "Oct", "Nov", "Dec"),
)
"""Abbreviations that stand before a name, a number or the rest of a sentence ("Mr. Smith",
"No. 3", "Apple Inc. said"): their stop does not end the sentence (grammar v2)."""

# Grammar v2 (issue 44): the summary as the model writes it. A sentence ends in . ! or ? (f);
# a closing quote follows the stop only when the sentence opened that quote (d: double, or a
# single quote after a space), and never a bracket, which nothing opened ("9:00 a.m.]"). A stop
# inside a sentence belongs to a number (n: "3.5"), to an abbreviation of single letters (a:
# "a.m.", "U.S.", "e.g.,", after a space, a bracket, a quote or a digit; it may also end the
# sentence: "at 4:30 a.m.") or to a title followed by a space (t: TITLES). Anything else glued
# to a stop ("here.Then", "here.1") still ends nothing, so a model cannot run past the
# sentences asked.
SENTENCE_RULE_V2 = "\n".join(
    (
        "s ::= w m* e | d",
        "w ::= [^.!?\\n ] | a [ ,;:)'\"-] | t",
        "m ::= [^.!?\\n] | n | [ (\"'0-9] a [ ,;:)'\"-] | [ (] t",
        'e ::= f | [ (] d | [ (] "\'" m+ f "\'"',
        "f ::= [.!?] | [ (\"'0-9] a",
        'd ::= "\\"" (i | a [ ,;:)\'-]) i* f "\\""',
        "i ::= [^\".!?\\n] | n | [ ('0-9] a [ ,;:)'-] | [ (] t",
        'n ::= [0-9] "." [0-9]',
        'a ::= [A-Za-z] ("." [A-Za-z])+ "."',
        "t ::= (" + " | ".join(f'"{title}"' for title in TITLES) + ') ". "',
    )
)
SENTENCE_RULES = {"v1": SENTENCE_RULE, "v2": SENTENCE_RULE_V2}


def sentences_grammar(sentences: int, version: str = "v2") -> str:
    """A GBNF grammar (llama.cpp) for prose of 1 to `sentences` sentences: the model chooses
    its words and where to end, but cannot go on past the length asked for. `version`:
    generate.sentence_grammar (v1: every stop but a decimal point ends a sentence; v2:
    abbreviations, titles, decimals and times do not)."""
    more = f' (" " s){{0,{sentences - 1}}}' if sentences > 1 else ""
    return f'root ::= " "? s{more}\n{SENTENCE_RULES[version]}\n'


PREFILL_DEFAULTS: dict[str, object] = {"flash_attention": "auto", "ubatch": 512, "kv_cache": "f16"}


def engine_fields(settings: GenerateSettings) -> dict[str, object]:
    """The engine settings that can change a greedy summary: the token budget as resolved,
    the stop strings, the sentence grammar, parallel slots, prefix reuse, speculation (its
    sizes only when on) and the prefill levers (only when moved from their defaults)."""
    fields: dict[str, object] = settings.model_dump(
        include={"max_input_words", "n_ctx", "parallel", "stop", "prefix_reuse", "speculative"}
    )
    if settings.sentence_limit:
        fields["grammar"] = sentences_grammar(settings.summary_sentences, settings.sentence_grammar)
    fields["max_new_tokens"] = settings.token_budget
    if settings.speculative != "off":
        fields["draft"] = [settings.speculative_ngram, settings.speculative_draft]
    # the prefill levers, only when moved from llama.cpp's defaults (earlier keys unchanged)
    for lever, default in PREFILL_DEFAULTS.items():
        if getattr(settings, lever) != default:
            fields[lever] = getattr(settings, lever)
    return fields


def generation_key(settings: GenerateSettings) -> str:
    """Digest of the settings that change what a summarizer writes."""
    fields = engine_fields(settings)
    fields["system_prompt"] = settings.system_prompt
    fields["prompt"] = settings.prompt_template  # as rendered: the same prompt, the same key
    return hashlib.sha256(json.dumps(fields, sort_keys=True).encode()).hexdigest()[:16]


def truncate_words(text: str, max_words: int) -> str:
    """Keep at most max_words whitespace-separated words (the documented truncation policy)."""
    words = text.split()
    return text if len(words) <= max_words else " ".join(words[:max_words])


def chat_messages(text: str, settings: GenerateSettings) -> list[dict[str, str]]:
    """System + user messages for instruction-tuned models."""
    user = settings.user_prompt(truncate_words(text, settings.max_input_words))
    messages = [{"role": "user", "content": user}]
    if settings.system_prompt:
        messages.insert(0, {"role": "system", "content": settings.system_prompt})
    return messages


class FakeSummarizer:
    """Deterministic test double: the first `n` sentences, optionally with a word swapped in.

    With unstable=True it is worse by construction: the sentences it picks and a number it
    invents depend on a hash of the whole input, so any perturbation changes the summary.
    """

    # summarizers that do not summarize, for the gate's tests: the output for a text
    NOT_SUMMARIZING: ClassVar[dict[str, Callable[[str], str]]] = {
        "empty": lambda text: "",
        "copy": lambda text: text,
        "foreign": lambda text: (
            "Der Bericht beschreibt die wichtigsten Ereignisse und Zahlen des Artikels, aber "
            "diese Zusammenfassung ist auf Deutsch und nicht in der Sprache des Textes "
            "geschrieben, den sie zusammenfassen sollte, und sie nennt keine Einzelheiten."
        ),
    }

    # a summarizer that invents: the same unsupported sentence for every text
    INVENTED = (
        "Officials in Springfield said 4,200 visitors attended the harbour parade on Sunday. "
        "The mayor, Janet Oduya, promised a second festival with fireworks next spring."
    )

    def __init__(
        self,
        n_sentences: int = 2,
        inject: str | None = None,
        unstable: bool = False,
        mode: str = "lead",
    ) -> None:
        self.n = n_sentences
        self.inject = inject
        self.unstable = unstable
        self.mode = mode
        self.fingerprint = f"fake:{n_sentences}:{inject}:{unstable}" + (
            "" if mode == "lead" else f":{mode}"
        )
        self.calls = 0

    def _unstable(self, sentences: list[str], text: str) -> str:
        digest = int(hashlib.sha256(text.encode()).hexdigest(), 16)
        picked = [sentences[(digest >> (8 * i)) % len(sentences)] for i in range(self.n)]
        return " ".join(picked) + f" The total reached {digest % 9000 + 1000} units."

    def summarize(
        self,
        texts: Sequence[str],
        progress: Callable[[int], None] | None = None,
    ) -> list[str]:
        from hss_gate.text.sentences import split_sentences

        out = []
        for text in texts:
            self.calls += 1
            sentences = split_sentences(text) or [text]
            if self.mode in self.NOT_SUMMARIZING:
                out.append(self.NOT_SUMMARIZING[self.mode](text))
                if progress:
                    progress(1)
                continue
            if self.mode == "invent":
                out.append(self.INVENTED)
                if progress:
                    progress(1)
                continue
            if self.unstable:
                out.append(self._unstable(sentences, text))
                if progress:
                    progress(1)
                continue
            summary = " ".join(sentences[: self.n])
            if self.inject and len(text) % 2:
                summary += f" {self.inject}"
            out.append(summary)
            if progress:
                progress(1)
        return out
