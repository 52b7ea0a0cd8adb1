"""Training pairs shaped like the errors summarizers make: seed claims from unlabelled documents,
each with a consistent rewording (supported) and a one-fact change (not), on the evidence the
checker would retrieve for it.

Seeds are source sentences and the sentences of summaries written for the document (by a person
or a model). Each seed's premise is built as the checker builds it at inference
(`evidence.choose_evidence` over SBERT similarities), so training and use read the same kind of
premise. The edits are `claim_edits`'; the tagger, word vectors, WordNet and SBERT come in as
objects (`EditTools`), so this module loads nothing itself. Every choice draws from
`random.Random(seed)` in a fixed order: the same inputs give the same pairs.
"""

from __future__ import annotations

import json
import random
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from hss_gate.common.errors import InputError
from hss_gate.common.jsonl import read_jsonl
from hss_gate.consistency import claim_edits as ce
from hss_gate.consistency.claim_edits import NUMBER, compress
from hss_gate.consistency.entailment_data import Pair, Seed, read_documents, seed_pairs
from hss_gate.consistency.evidence import Evidence, choose_evidence, without
from hss_gate.consistency.labelled_summaries import is_marked, read_labelled_summaries
from hss_gate.text.perturb import Token, find_candidates
from hss_gate.text.sentences import split_sentences

# Set by hand when the module was written (8dabfb7, 2026-12-05); no data chose them and they
# were never tuned: a seed claim's length in words (inclusive), and the insertable modifiers'
# ranks among the collection's adjectives (the 50 most common are too plain to change a fact).
CLAIM_WORDS = (5, 60)
MODIFIER_RANKS = (50, 600)
PHRASE_LABELS = (*ce.ENTITY_TYPES, "DATE")


@dataclass(frozen=True)
class SeedDocument:
    """An unlabelled document and the summaries written for it (none, one or several)."""

    id: str
    text: str
    summaries: tuple[str, ...] = ()


@dataclass
class EditTools:
    """The models the edits draw on: spaCy (`tagger`: `tag_many`, `nlp`), word vectors
    (`neighbours`), WordNet (`synonyms`, `is_antonym`, `base_forms`, `antonyms`), SBERT
    (`encode`) and the encoder's token counter (`count`); `perturb` are the perturbation
    engine's settings (the synonym swaps are its checked candidates)."""

    tagger: Any
    vectors: Any
    wordnet: Any
    encode: Callable[[Sequence[str]], np.ndarray]
    count: Callable[[str], int]
    perturb: Any
    related_cosine: float = 0.6
    max_length: int = 256
    cache: dict[str, np.ndarray] = field(default_factory=dict)

    def evidence(
        self, sentences: Sequence[str], vectors: np.ndarray, claim_vector: np.ndarray, claim: str
    ) -> Evidence:
        """The claim's evidence, sized as the checker sizes it at inference."""
        budget = max(32, self.max_length - self.count(claim) - 3)
        return choose_evidence(sentences, vectors @ claim_vector, budget, self.count)

    def vectors_of(self, texts: Sequence[str]) -> np.ndarray:
        missing = [t for t in dict.fromkeys(texts) if t not in self.cache]
        if missing:
            self.cache.update(zip(missing, self.encode(missing), strict=True))
        return np.stack([self.cache[t] for t in texts])

    def related(self, word: str) -> list[str]:
        return [w for w, _ in self.vectors.neighbours(word, 10, self.related_cosine)]

    def is_synonym(self, token: Token, word: str) -> bool:
        """A form of the word is the token's lemma or a WordNet synonym of it, or WordNet does
        not know the word (then it cannot be shown to differ)."""
        bases = self.wordnet.base_forms(word, token.pos)
        synonyms = self.wordnet.synonyms(token.lemma, token.pos, 10)
        return not bases or any(b == token.lemma or b in synonyms for b in bases)


def claim_seeds(
    documents: Sequence[SeedDocument],
    sentences_per_document: int,
    seed: int,
    tools: EditTools,
) -> list[tuple[Seed, int]]:
    """(seed, document index): up to `sentences_per_document` source sentences of each document
    and every sentence of its summaries, each with its evidence."""
    rng = random.Random(seed)
    out: list[tuple[Seed, int]] = []
    low, high = CLAIM_WORDS
    for d, doc in enumerate(documents):
        sentences = split_sentences(doc.text)
        if len(sentences) < 2:
            continue
        vectors = tools.vectors_of(sentences)
        usable = [i for i, s in enumerate(sentences) if low <= len(s.split()) <= high]
        for i in rng.sample(usable, min(sentences_per_document, len(usable))):
            found = tools.evidence(sentences, vectors, vectors[i], sentences[i])
            rest = without(found, sentences, i).text or None
            out.append((Seed(doc.id, found.text, sentences[i], "sentence", rest), d))
        claims = [
            s
            for summary in doc.summaries
            for s in split_sentences(summary)
            if low <= len(s.split()) <= high
        ]
        for claim, vector in zip(claims, tools.vectors_of(claims) if claims else [], strict=True):
            found = tools.evidence(sentences, vectors, vector, claim)
            out.append((Seed(doc.id, found.text, claim, "summary"), d))
    return out


def document_pools(
    documents: Sequence[SeedDocument], tools: EditTools
) -> tuple[list[dict[str, list[str]]], tuple[str, ...]]:
    """Each document's named entities by type, and the adjectives the collection uses (the
    insertable modifiers: the common ones past the 50 most common)."""
    pools: list[dict[str, list[str]]] = []
    adjectives: Counter[str] = Counter()
    for parsed in tools.tagger.nlp.pipe([d.text[:20000] for d in documents], batch_size=16):
        found: dict[str, set[str]] = defaultdict(set)
        for entity in parsed.ents:
            if entity.label_ in PHRASE_LABELS:
                found[entity.label_].add(entity.text)
        pools.append({label: sorted(names) for label, names in found.items()})
        for t in parsed:
            if t.pos_ == "ADJ" and t.text.isalpha() and t.text.islower() and len(t.text) > 3:
                adjectives[t.text] += 1
    first, last = MODIFIER_RANKS
    return pools, tuple(w for w, _ in adjectives.most_common(last)[first:])


def edit_pairs(
    documents: Sequence[SeedDocument],
    tools: EditTools,
    sentences_per_document: int,
    seed: int,
) -> list[Pair]:
    """The paired training pairs of `documents` (see the module's docstring)."""
    seeds = claim_seeds(documents, sentences_per_document, seed, tools)
    if not seeds:
        return []
    pools, modifiers = document_pools(documents, tools)
    tagged = tools.tagger.tag_many([s.claim for s, _ in seeds])
    rng = random.Random(seed + 1)
    contexts: dict[int, ce.ClaimContext] = {}
    for (s, d), tokens in zip(seeds, tagged, strict=True):
        candidates = find_candidates(
            s.claim,
            tokens,
            tools.perturb,
            vectors=tools.vectors,
            lexicon=tools.wordnet,
            tagger=tools.tagger,
            encode=tools.vectors_of,
        )
        contexts[id(s)] = ce.ClaimContext(
            s.claim,
            tuple(tokens),
            candidates,
            pools[d],
            tuple(NUMBER.findall(documents[d].text)),
            pools[rng.randrange(len(pools))],
            modifiers,
        )

    def consistent(s: Seed, r: random.Random) -> tuple[str, str] | None:
        return ce.consistent_edit(contexts[id(s)], r, compress)

    def inconsistent(s: Seed, r: random.Random) -> tuple[str, str] | None:
        return ce.inconsistent_edit(
            contexts[id(s)], r, tools.related, tools.is_synonym, tools.wordnet.antonyms
        )

    return seed_pairs([s for s, _ in seeds], consistent, inconsistent, seed)


SUMMEDITS_SPLITS = ("evaluation",)  # the SummEdits rows read unless a stage names others


def read_seed_documents(
    path: str | Path,
    summaries: str | Path | None = None,
    splits: Sequence[str] = SUMMEDITS_SPLITS,
) -> list[SeedDocument]:
    """The documents of one collection with the summaries written for them:

    - a SummaC-style JSON object of records: `document` (or `doc`), and `reference_summary`
      when the collection has one;
    - a SummEdits JSON list (`doc`, `original_summary`, `split`): one document per distinct
      `doc`, its seed summaries from the rows of `splits` only (`evaluation` by default);
    - JSON Lines (`read_documents`' fields), with `summaries` a JSON Lines file of stored
      summaries (`doc_id`, `summary`, `strength`: the base summaries are taken), e.g. a
      baseline's summaries.jsonl.
    """
    path = Path(path)
    if not path.is_file():
        raise InputError(f"{path}: no such file")
    if path.suffix == ".json":
        data = json.loads(path.read_text(encoding="utf-8"))
        if isinstance(data, list):
            return _summedits_documents(path, data, splits)
        return [
            SeedDocument(
                f"{path.stem}:{key}",
                str(rec.get("document") or rec.get("doc") or ""),
                (str(rec["reference_summary"]),) if rec.get("reference_summary") else (),
            )
            for key, rec in data.items()
            if rec.get("document") or rec.get("doc")
        ]
    written: dict[str, list[str]] = defaultdict(list)
    if summaries is not None:
        for _, rec in read_jsonl(summaries):
            if rec.get("strength", "base") == "base" and rec.get("summary"):
                written[f"{path.stem}:{rec['doc_id']}"].append(str(rec["summary"]))
    return [
        SeedDocument(doc_id, text, tuple(written.get(doc_id, ())))
        for doc_id, text in read_documents(path)
    ]


def _summedits_documents(
    path: Path, rows: list[dict[str, Any]], splits: Sequence[str]
) -> list[SeedDocument]:
    seeds: dict[str, list[str]] = {}
    for row in rows:
        if row.get("split") not in splits:
            continue
        found = seeds.setdefault(str(row["doc"]), [])
        if row.get("original_summary") and row["original_summary"] not in found:
            found.append(str(row["original_summary"]))
    return [
        SeedDocument(f"{path.stem}:{i}", text, tuple(summaries))
        for i, (text, summaries) in enumerate(seeds.items())
    ]


def labelled_pairs(
    path: str | Path,
    tools: EditTools,
    splits: Sequence[str] = SUMMEDITS_SPLITS,
    unique: bool = False,
    exclude: frozenset[str] = frozenset(),
) -> list[Pair]:
    """Sentence-level pairs from a file of human-labelled summaries: each sentence whose label
    is known on its evidence. A SummEdits file's rows of `splits` (`evaluation` by default): a
    sentence is labelled 1 when the summary is consistent or the sentence is one of the seed
    summary's, else 0 (the edited sentences of an inconsistent summary). QAGS, SummaC and FRANK
    files: `labelled_summaries`' labels. With `unique`, a (evidence, sentence, label) already
    taken is not taken again (the unchanged sentences of a seed summary stand in every one of
    its edited rows). Copies of the documents marked in `exclude` are not read."""
    path = Path(path)
    if not path.is_file():
        raise InputError(f"{path}: no such file")
    rows = json.loads(path.read_text(encoding="utf-8")) if path.suffix == ".json" else None
    if isinstance(rows, list):
        summaries = _summedits_labels(rows, splits)
    else:
        summaries = [
            (s.document, tuple((c, y, ("unsupported", "supported")[y]) for c, y in s.sentences))
            for s in read_labelled_summaries(path)
        ]
    out: list[Pair] = []
    taken: set[tuple[str, str, int]] = set()
    for document, known in summaries:
        sentences = split_sentences(document)
        if not known or not sentences or is_marked(document, exclude):
            continue
        vectors = tools.vectors_of(sentences)
        claims = [claim for claim, _, _ in known]
        for (claim, label, kind), vector in zip(known, tools.vectors_of(claims), strict=True):
            found = tools.evidence(sentences, vectors, vector, claim)
            if unique and (found.text, claim, label) in taken:
                continue
            taken.add((found.text, claim, label))
            out.append(Pair(found.text, claim, label, f"labelled:{kind}", f"{path.stem}"))
    return out


def _summedits_labels(rows: list[dict[str, Any]], splits: Sequence[str]) -> list[tuple]:
    """(document, ((sentence, label, kind), ...)) of the SummEdits rows of `splits`."""
    out = []
    for row in rows:
        if row.get("split") not in splits:
            continue
        seed = set(split_sentences(str(row["original_summary"])))
        known = tuple(
            (claim, int(row["label"] == 1 or claim in seed), "same" if claim in seed else "edited")
            for claim in split_sentences(str(row["summary"]))
        )
        out.append((str(row["doc"]), known))
    return out
