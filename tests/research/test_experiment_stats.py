"""The paper's analysis tables on synthetic runs, checked against scipy and by construction."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from hss_gate.research.experiment import (
    attribution_table,
    correlation_table,
    extractiveness_table,
    handcheck_table,
    model_table,
    partial_spearman,
    strength_table,
)
from hss_gate.scoring.normalization import compute_normalization

pytestmark = pytest.mark.unit


@pytest.fixture()
def documents() -> pd.DataFrame:
    rng = np.random.default_rng(7)
    rows = []
    for model, shift in (("m:a", 0.0), ("m:b", 0.3)):
        rewriting = rng.uniform(0, 1, 30)
        rows.append(
            pd.DataFrame(
                {
                    "model": model,
                    "doc_id": [f"d{i}" for i in range(30)],
                    "category": ["news", "legal", "science"] * 10,
                    "hss": np.clip(0.2 + shift + 0.5 * rewriting + rng.normal(0, 0.05, 30), 0, 1),
                    "hss_raw": rng.uniform(0, 1, 30),
                    "mean_distance_raw": rng.uniform(0, 1, 30),
                    "base_novel_ngram_share": rewriting,
                    "base_unsupported_share": rng.uniform(0, 0.2, 30),
                    "summac_zs": rng.uniform(0, 1, 30),
                }
            )
        )
    return pd.concat(rows, ignore_index=True)


def test_correlation_table_matches_scipy_and_lists_the_paper(documents):
    table = correlation_table(documents, resamples=200).set_index("column")
    assert "shap_instability" not in table.index  # absent columns are not invented
    row = table.loc["summac_zs"]
    assert row["pearson"] == pytest.approx(stats.pearsonr(documents.hss, documents.summac_zs)[0])
    assert row["spearman"] == pytest.approx(stats.spearmanr(documents.hss, documents.summac_zs)[0])
    assert row["paper_pearson"] == -0.55 and row["n"] == 60
    assert row["pearson_ci_low"] < row["pearson"] < row["pearson_ci_high"]


def test_partial_spearman_removes_a_shared_cause():
    rng = np.random.default_rng(1)
    z = rng.normal(size=400)
    x = z + rng.normal(scale=0.3, size=400)
    y = z + rng.normal(scale=0.3, size=400)
    assert stats.spearmanr(x, y)[0] > 0.8
    assert abs(partial_spearman(x, y, z)) < 0.15
    assert partial_spearman(x, x + 1e-3 * y, z) > 0.95


def test_extractiveness_and_handcheck_tables(documents):
    ext = extractiveness_table(documents).set_index("scope")
    assert ext.loc["all", "spearman_hss_rewriting"] > 0.5  # built that way
    errors = pd.DataFrame(
        {"doc_id": ["d0", "d1", "d2", "d3"], "model": ["a"] * 4, "errors": [0, 1, 2, 3]}
    )
    hand = handcheck_table(documents, errors, {"a": "m:a"}).set_index("scope")
    sub = documents[(documents.model == "m:a") & documents.doc_id.isin(errors.doc_id)]
    expected = stats.spearmanr(sub.set_index("doc_id").loc[errors.doc_id, "hss"], errors.errors)[0]
    assert hand.loc["all", "spearman_hss_errors"] == pytest.approx(expected)
    assert hand.loc["all", "errors_total"] == 6


def test_model_and_strength_tables(documents):
    models = model_table(documents, resamples=200).set_index("model")
    assert models.loc["m:b", "mean"] - models.loc["m:a", "mean"] == pytest.approx(
        documents[documents.model == "m:b"].hss.mean()
        - documents[documents.model == "m:a"].hss.mean()
    )
    perts = pd.DataFrame(
        {
            "model": ["m:a"] * 4,
            "doc_id": ["d0", "d0", "d1", "d1"],
            "category": ["news"] * 4,
            "strength": ["low", "high", "low", "high"],
            "share": [0.03, 0.1, 0.03, 0.1],
            "distance": [0.1, 0.4, 0.2, 0.8],
            "distance_aware": [0.1, 0.4, 0.2, 0.8],
            "distance_raw": [0.1, 0.4, 0.2, 0.8],
        }
    )
    norm = compute_normalization(
        perts[["category", "distance_aware", "distance_raw"]].itertuples(index=False),
        quantile=1.0,
        model="m",
        settings_digest="s",
        created="now",
    )
    table = strength_table(perts, norm).set_index("strength")
    assert table.loc["low", "severity"] == pytest.approx((0.1 / 0.8 + 0.2 / 0.8) / 2)
    assert table.loc["high", "severity"] == pytest.approx((0.4 / 0.8 + 1.0) / 2)
    assert table.loc["high", "paper_hss"] == 0.62


def test_attribution_table_tests_the_claim_per_model_pooled_and_given_rewriting():
    """Model A's SHAP instability follows HSS only through rewriting; model B's follows HSS."""
    rng = np.random.default_rng(3)
    n = 60
    rewriting = rng.uniform(0, 1, n)
    hss_a = rewriting + 0.05 * rng.normal(size=n)
    shap_a = rewriting + 0.05 * rng.normal(size=n)  # shared cause only
    hss_b = rng.uniform(0, 1, n)
    shap_b = hss_b + 0.05 * rng.normal(size=n)
    frame = pd.DataFrame(
        {
            "model": ["a"] * n + ["b"] * n,
            "hss": np.r_[hss_a, hss_b],
            "shap_instability": np.r_[shap_a, shap_b],
            "base_novel_ngram_share": np.r_[rewriting, rng.uniform(0, 1, n)],
        }
    )
    table = attribution_table(frame, resamples=200).set_index("scope")
    assert list(table.index) == ["pooled", "a", "b"] and set(table["n"]) == {2 * n, n}
    assert table.loc["a", "pearson"] > 0.9 and table.loc["b", "pearson"] > 0.9
    assert abs(table.loc["a", "partial_spearman_given_rewriting"]) < 0.4  # rewriting explains it
    assert table.loc["b", "partial_spearman_given_rewriting"] > 0.9
    row = table.loc["b"]
    assert row["pearson_ci_low"] <= row["pearson"] <= row["pearson_ci_high"]
    assert (
        row["partial_ci_low"] <= row["partial_spearman_given_rewriting"] <= row["partial_ci_high"]
    )
    assert row["paper_pearson"] == 0.90 and "lime_instability" not in set(table["instability"])
