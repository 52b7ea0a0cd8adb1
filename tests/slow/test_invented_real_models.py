"""The `invented` checker with the real embedded word ranks (GloVe 6B list) and, when installed,
the SmolLM2 token contrast; skips cleanly when the models are absent."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.slow

SOURCE = (
    "The city council approved a budget of 12 million dollars on Tuesday. "
    "Mayor Anna Lopez said the money would repair roads and schools."
)


def _skip_unless_installed(name: str) -> None:
    """Skip when the embedded model is absent; once installed, a failure to load it fails."""
    from hss_gate.models import model_store

    if not model_store.is_installed(model_store.resolve_name(name)):
        pytest.skip(f"{name} is not installed (hss models install {name})")


def _glove_or_skip():
    from hss_gate.consistency.novelty import glove_ranks

    _skip_unless_installed("glove-6b-50d")
    return glove_ranks()


def test_shipped_checker_on_real_ranks() -> None:
    from hss_gate.consistency.invented import load_invented_checker

    ranks = _glove_or_skip()
    assert ranks["the"] < 10 < ranks.get("council", 10**6)
    checker = load_invented_checker()
    # a near-copy: the checker is lexical and its threshold was fitted on near-extractive
    # CNN/DM summaries, so even a close restatement ("... dollars to repair roads") falls
    # below it (docs/CHECKER_DEV.md: abstractive summaries are its weak side)
    good = "The city council approved a budget of 12 million dollars on Tuesday."
    bad = "Governor Peter Smith vetoed a 40 million dollar budget for stadiums in Texas."
    v_good, v_bad = checker.check([(SOURCE, good), (SOURCE, bad)])
    assert v_good.consistency > v_bad.consistency
    assert v_bad.consistency < checker.threshold <= v_good.consistency
    lower = checker.check([(SOURCE.lower(), bad.lower())])[0]
    assert lower.consistency < checker.threshold
    words = dict(checker.unsupported_words(SOURCE, bad))[bad]
    assert {"Peter", "Smith", "40 million", "Texas"} <= set(words)


def test_lm_contrast_on_smollm2(tmp_path) -> None:
    pytest.importorskip("transformers")
    from hss_gate.consistency.lm_contrast import ContrastModel, load_lm

    _skip_unless_installed("smollm2-135m-instruct")
    model, tok, fp = load_lm(str(tmp_path))
    scorer = ContrastModel(model, tok, fp, max_source_tokens=64)
    c = scorer.contrast(SOURCE, "Mayor Anna Lopez approved 12 million dollars.")
    assert len(c.spans) == len(c.with_source) == len(c.without_source) > 3
    assert c.pmi.mean() > 0  # the source makes its own facts more likely
    again = scorer.contrast(SOURCE, "Mayor Anna Lopez approved 12 million dollars.")
    assert abs(float(again.pmi.sum() - c.pmi.sum())) < 1e-3  # prefix reuse is exact
