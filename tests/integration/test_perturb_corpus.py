"""Perturbation invariants over the whole reference corpus, with the real models."""

from __future__ import annotations

import numpy as np
import pytest

from hss_gate.common.cache import Cache
from hss_gate.common.inputs import load_corpus
from hss_gate.scoring.pipeline import make_perturbations
from hss_gate.text.perturb import CONTENT_POS, apply_edits
from tests.conftest import CORPUS

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def corpus_perturbations(real_settings, real_toolkit):
    docs = load_corpus(CORPUS)
    return docs, make_perturbations(docs, real_settings, real_toolkit, Cache(None))


def test_reference_corpus_shape():
    docs = load_corpus(CORPUS)
    assert len(docs) >= 40
    assert len({d.category for d in docs}) >= 8
    assert {d.tier for d in docs} == {"simple", "medium", "complex", "mixed"}
    assert all(200 <= len(d.text.split()) <= 600 for d in docs)


def test_no_protected_token_ever_changes(corpus_perturbations, real_toolkit):
    docs, perturbations = corpus_perturbations
    for doc in docs:
        tokens = {t.idx: t for t in real_toolkit.tagger.tokens(doc.text)}
        for p in perturbations[doc.doc_id]:
            assert apply_edits(doc.text, p.edits) == p.text
            for edit in p.edits:
                token = tokens[edit.char_start]
                assert token.text == edit.original
                assert token.pos in CONTENT_POS, (doc.doc_id, edit)
                assert not token.ent and not token.is_stop and not token.like_num
                assert edit.original.isalpha() and edit.replacement.isalpha()
                assert edit.replacement.lower() != edit.original.lower()
                assert edit.original[:1].isupper() == edit.replacement[:1].isupper()


def test_every_swap_meets_tau_and_gamma_recomputed(
    corpus_perturbations, real_settings, real_toolkit
):
    docs, perturbations = corpus_perturbations
    tau, gamma = real_settings.perturb.tau, real_settings.perturb.gamma
    vectors = real_toolkit.vectors
    encode = real_toolkit.embedder.encode
    for doc in docs[::6]:  # the SBERT recomputation is the slow part: every 6th document
        tokens = real_toolkit.tagger.tokens(doc.text)
        spans = {}
        for t in tokens:
            lo, hi = spans.get(t.sent, (t.idx, t.idx + len(t.text)))
            spans[t.sent] = (min(lo, t.idx), max(hi, t.idx + len(t.text)))
        sent_of = {t.idx: t.sent for t in tokens}
        for p in perturbations[doc.doc_id]:
            by_sentence = {}
            for edit in p.edits:
                neighbours = dict(
                    vectors.neighbours(edit.original.lower(), real_settings.perturb.neighbours, tau)
                )
                assert neighbours.get(edit.replacement.lower(), 0.0) >= tau, edit
                by_sentence.setdefault(sent_of[edit.char_start], []).append(edit)
            for sent, edits in by_sentence.items():
                lo, hi = spans[sent]
                original = doc.text[lo:hi]
                shifted = [
                    type(e)(**{**e.__dict__, "char_start": e.char_start - lo}) for e in edits
                ]
                a, b = encode([original, apply_edits(original, shifted)])
                assert float(np.dot(a, b)) >= gamma - 1e-4, (doc.doc_id, edits)


def test_changed_share_lies_in_band_or_is_flagged(corpus_perturbations, real_settings):
    docs, perturbations = corpus_perturbations
    reached = 0
    for doc in docs:
        for p in perturbations[doc.doc_id]:
            low, high = real_settings.perturb.strengths[p.strength]
            assert p.share <= high + 1e-9
            if p.reached:
                reached += 1
                assert p.share >= low - 1.0 / p.n_words
            else:
                assert p.note.startswith("only")
    # the strict swaps leave the high band (>= 7% of words) short on about a fifth of the
    # documents; those are flagged above. Most perturbations must still reach their band.
    assert reached >= 0.7 * sum(len(v) for v in perturbations.values())


def test_same_seed_same_output_other_seed_differs(real_settings, real_toolkit):
    docs = load_corpus(CORPUS, limit=3)
    one = make_perturbations(docs, real_settings, real_toolkit, Cache(None))
    two = make_perturbations(docs, real_settings, real_toolkit, Cache(None))
    assert {k: [p.text for p in v] for k, v in one.items()} == {
        k: [p.text for p in v] for k, v in two.items()
    }
    other = real_settings.model_copy(deep=True)
    other.perturb.seed += 1
    three = make_perturbations(docs, other, real_toolkit, Cache(None))
    assert any(a.text != b.text for k in one for a, b in zip(one[k], three[k], strict=True))
