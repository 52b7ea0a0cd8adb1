"""WordNet 3.0 synonym and antonym lookups, read straight from the database files."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

from hss_gate.common.errors import ModelError
from hss_gate.models import model_store

# spaCy coarse POS -> WordNet data file
POS_FILES = {"NOUN": "noun", "VERB": "verb", "ADJ": "adj", "ADV": "adv"}
# WordNet's morphy detachment rules
_SUFFIXES = {
    "NOUN": (
        ("s", ""),
        ("ses", "s"),
        ("xes", "x"),
        ("zes", "z"),
        ("ches", "ch"),
        ("shes", "sh"),
        ("men", "man"),
        ("ies", "y"),
    ),
    "VERB": (
        ("s", ""),
        ("ies", "y"),
        ("es", "e"),
        ("es", ""),
        ("ed", "e"),
        ("ed", ""),
        ("ing", "e"),
        ("ing", ""),
    ),
    "ADJ": (("er", ""), ("est", ""), ("er", "e"), ("est", "e")),
    "ADV": (),
}


class WordNet:
    """Synsets per (lemma, pos) in sense order, synonym sets and antonym pairs."""

    def __init__(self, directory: Path) -> None:
        self._senses: dict[tuple[str, str], list[int]] = defaultdict(list)
        self._members: dict[tuple[str, int], list[str]] = {}
        self._similar: dict[tuple[str, int], list[int]] = defaultdict(list)
        self._antonyms: set[tuple[str, str]] = set()
        self._antonyms_of: dict[tuple[str, str], set[str]] = defaultdict(set)
        self._exceptions: dict[tuple[str, str], list[str]] = defaultdict(list)
        for pos, name in POS_FILES.items():
            self._read(directory / f"data.{name}", pos)
            exc = directory / f"{name}.exc"
            if exc.exists():
                for line in exc.read_text(encoding="latin-1").splitlines():
                    inflected, *bases = line.split()
                    self._exceptions[(inflected, pos)].extend(bases)
        self.fingerprint = f"wordnet:{directory.name}"

    def _read(self, path: Path, pos: str) -> None:
        pending: list[tuple[int, int, int, int]] = []  # (synset, src word, target synset, tgt)
        with path.open(encoding="latin-1") as handle:
            for line in handle:
                if line.startswith("  "):
                    continue
                fields = line.split(" | ")[0].split()
                offset, count = int(fields[0]), int(fields[3], 16)
                words = [fields[4 + 2 * j].lower() for j in range(count)]
                words = [w.split("(")[0] for w in words]
                self._members[(pos, offset)] = words
                for word in words:
                    self._senses[(word, pos)].append(offset)
                at = 4 + 2 * count
                for j in range(int(fields[at])):
                    symbol, target, _, st = fields[at + 1 + 4 * j : at + 5 + 4 * j]
                    if symbol == "&":
                        self._similar[(pos, offset)].append(int(target))
                    elif symbol == "!":
                        pending.append((offset, int(st[:2], 16), int(target), int(st[2:], 16)))
        for offset, src, target, tgt in pending:
            source_words = self._members[(pos, offset)]
            target_words = self._members.get((pos, target), [])
            if 0 < src <= len(source_words) and 0 < tgt <= len(target_words):
                a, b = source_words[src - 1], target_words[tgt - 1]
                self._antonyms.add((a, b))
                self._antonyms.add((b, a))
                self._antonyms_of[(a, pos)].add(b)
                self._antonyms_of[(b, pos)].add(a)

    def synonyms(self, lemma: str, pos: str, max_senses: int = 3) -> set[str]:
        """Words sharing one of the lemma's first `max_senses` synsets (adjectives: +similar)."""
        out: set[str] = set()
        for offset in self._senses.get((lemma.lower(), pos), [])[:max_senses]:
            out.update(self._members[(pos, offset)])
            for similar in self._similar.get((pos, offset), []):
                out.update(self._members.get((pos, similar), []))
        out.discard(lemma.lower())
        return {w for w in out if "_" not in w}

    def is_antonym(self, a: str, b: str) -> bool:
        """True when WordNet lists the two lemmas as antonyms."""
        return (a.lower(), b.lower()) in self._antonyms

    def antonyms(self, lemma: str, pos: str) -> set[str]:
        """The lemmas WordNet lists as antonyms of `lemma` in part of speech `pos`."""
        return set(self._antonyms_of.get((lemma.lower(), pos), ()))

    def base_forms(self, word: str, pos: str) -> list[str]:
        """Lemmas WordNet would give an inflected word (morphy: exceptions, then suffix rules)."""
        word = word.lower()
        forms = list(self._exceptions.get((word, pos), []))
        if (word, pos) in self._senses:
            forms.append(word)
        for suffix, ending in _SUFFIXES.get(pos, ()):
            if word.endswith(suffix) and len(word) > len(suffix) + 1:
                base = word[: -len(suffix)] + ending
                if (base, pos) in self._senses:
                    forms.append(base)
        return list(dict.fromkeys(forms))

    def knows(self, lemma: str, pos: str) -> bool:
        return (lemma.lower(), pos) in self._senses

    @classmethod
    def load_embedded(cls) -> WordNet:
        """The pinned WordNet 3.0 files, sha256-verified."""
        model = model_store.resolve_name("wordnet-3.0")
        problems = model_store.verify(model)
        if problems:
            raise ModelError("WordNet failed verification: " + "; ".join(problems))
        return cls(model_store.weight_paths(model)[0].parent)
