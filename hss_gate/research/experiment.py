"""The paper's analysis over scored runs (pure functions over tables).

Input tables:
- documents: one row per (model, document): model, doc_id, category, hss, hss_raw,
  mean_distance_raw, base_novel_ngram_share, base_unsupported_share, plus any comparator columns
  (shap_instability, lime_instability, attention_instability, factcc, summac_zs, precision, recall,
  f1, consistency) that were computed;
- perturbations: one row per (model, perturbation): model, doc_id, category, strength, share,
  distance (the configured variant).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from hss_gate.research.correlation import METHODS, correlation_ci
from hss_gate.scoring.normalization import Normalization
from hss_gate.scoring.severity import bootstrap_ci

# column -> (label, the paper's Pearson r with HSS or None) (METHOD.md section 6)
COMPARATORS: dict[str, tuple[str, float | None]] = {
    "shap_instability": ("SHAP attribution instability", 0.90),
    "lime_instability": ("LIME attribution instability", 0.29),
    "sentence_shap_instability": ("SHAP attribution instability over sentences", 0.90),
    "sentence_lime_instability": ("LIME attribution instability over sentences", 0.29),
    "attention_instability": ("attention instability", None),
    "factcc": ("FactCC-style consistency", -0.63),
    "summac_zs": ("SummaC-style consistency", -0.55),
    "consistency": ("default consistency comparator", None),
    "precision": ("token-overlap precision", None),
    "recall": ("token-overlap recall", None),
    "f1": ("token-overlap F1", None),
    "mean_distance_raw": ("raw Wasserstein distance", -0.33),
    "base_novel_ngram_share": ("rewriting: novel n-gram share", None),
    "base_unsupported_share": ("unsupported entities/numbers", None),
}

PAPER_STRENGTH = {"low": 0.38, "high": 0.62}


def _scopes(frame: pd.DataFrame, smallest: int) -> Iterator[tuple[Any, pd.DataFrame]]:
    """("all", every row), then each model's rows; a scope with fewer than `smallest` rows is
    left out."""
    for name, group in [("all", frame), *frame.groupby("model")]:
        if len(group) >= smallest:
            yield name, group


def _correlations(
    x: pd.Series, y: pd.Series, resamples: int, level: float, seed: int
) -> dict[str, Any]:
    """Pearson and Spearman r with their bootstrap CIs, and n, as table columns."""
    row: dict[str, Any] = {}
    for method in ("pearson", "spearman"):
        r = correlation_ci(x, y, method=method, resamples=resamples, level=level, seed=seed)
        row |= {method: r["r"], f"{method}_ci_low": r["ci_low"], f"{method}_ci_high": r["ci_high"]}
        row["n"] = r["n"]
    return row


def correlation_table(
    documents: pd.DataFrame, *, resamples: int = 1000, level: float = 0.95, seed: int = 0
) -> pd.DataFrame:
    """Pearson and Spearman r of HSS with every comparator present, bootstrap CIs, paper's r."""
    rows = []
    for column, (label, paper) in COMPARATORS.items():
        if column not in documents or documents[column].notna().sum() < 3:
            continue
        row: dict[str, Any] = {"comparator": label, "column": column}
        row |= _correlations(documents["hss"], documents[column], resamples, level, seed)
        row["paper_pearson"] = paper
        rows.append(row)
    return pd.DataFrame(rows)


def strength_table(perturbations: pd.DataFrame, normalization: Normalization) -> pd.DataFrame:
    """Mean per-perturbation severity min(D / M_c, 1) by model and strength band."""
    frame = perturbations.copy()
    constants = [normalization.constant(c, "aware")[0] for c in frame["category"]]
    frame["severity"] = np.minimum(frame["distance"] / np.maximum(constants, 1e-12), 1.0)
    out = (
        frame.groupby(["model", "strength"], sort=False)
        .agg(mean_share=("share", "mean"), severity=("severity", "mean"), n=("severity", "size"))
        .reset_index()
    )
    out["paper_hss"] = out["strength"].map(PAPER_STRENGTH)
    return out


def _mean_ci(values: Sequence[float], resamples: int, seed: int) -> dict[str, float]:
    low, high = bootstrap_ci(values, resamples=resamples, seed=seed)
    return {"mean": float(np.mean(values)), "ci_low": low, "ci_high": high, "n": len(values)}


def group_table(
    documents: pd.DataFrame, by: Sequence[str], *, resamples: int = 1000, seed: int = 0
) -> pd.DataFrame:
    """Mean HSS with a bootstrap CI per group (e.g. model, or model x category)."""
    rows = []
    for key, group in documents.groupby(list(by), sort=True):
        keys = key if isinstance(key, tuple) else (key,)
        rows.append(
            dict(zip(by, keys, strict=True)) | _mean_ci(group["hss"].tolist(), resamples, seed)
        )
    return pd.DataFrame(rows)


def model_table(documents: pd.DataFrame, *, resamples: int = 1000, seed: int = 0) -> pd.DataFrame:
    """Per model: mean HSS [CI], raw HSS, rewriting, unsupported share, comparators' means."""
    table = group_table(documents, ["model"], resamples=resamples, seed=seed)
    extra = [c for c in ("hss_raw", *COMPARATORS) if c in documents and c != "hss"]
    means = documents.groupby("model")[extra].mean().reset_index()
    return table.merge(means, on="model")


def _spearman(x: Sequence[float], y: Sequence[float]) -> float:
    """Spearman's rho; NaN when either side is constant."""
    return METHODS["spearman"](np.asarray(x, dtype=float), np.asarray(y, dtype=float))


def partial_spearman(x: Sequence[float], y: Sequence[float], z: Sequence[float]) -> float:
    """Spearman correlation of x and y with z held fixed (ranks residualized on z's ranks)."""
    rx, ry, rz = (stats.rankdata(np.asarray(v, dtype=float)) for v in (x, y, z))
    if np.std(rz) == 0:
        return _spearman(x, y)

    def residual(a: np.ndarray) -> np.ndarray:
        slope, intercept = np.polyfit(rz, a, 1)
        return a - (slope * rz + intercept)

    ex, ey = residual(rx), residual(ry)
    if np.std(ex) == 0 or np.std(ey) == 0:
        return float("nan")
    return float(np.corrcoef(ex, ey)[0, 1])


def handcheck_table(
    documents: pd.DataFrame, errors: pd.DataFrame, model_names: Mapping[str, str]
) -> pd.DataFrame:
    """HSS against hand-counted factual errors (errors: doc_id, model alias, errors).

    model_names maps an alias used in the errors file (e.g. "qwen") to the model URI."""
    counted = errors.assign(model=errors["model"].map(model_names)).dropna(subset=["model"])
    merged = documents.merge(counted[["model", "doc_id", "errors"]], on=["model", "doc_id"])
    rows = []
    for name, group in _scopes(merged, smallest=3):
        rows.append(
            {
                "scope": name,
                "n": len(group),
                "errors_total": int(group["errors"].sum()),
                "spearman_hss_errors": _spearman(group["hss"], group["errors"]),
                "spearman_rewriting_errors": _spearman(
                    group["base_novel_ngram_share"], group["errors"]
                ),
                "partial_hss_errors_given_rewriting": partial_spearman(
                    group["hss"], group["errors"], group["base_novel_ngram_share"]
                ),
                # content-level instability: consistency lost under perturbation, and the
                # base summary's own inconsistency (1 - consistency)
                "spearman_consistency_drop_errors": _spearman(
                    group["consistency_drop_mean"], group["errors"]
                )
                if "consistency_drop_mean" in group
                else float("nan"),
                "spearman_inconsistency_errors": _spearman(
                    1.0 - group["base_consistency"], group["errors"]
                )
                if "base_consistency" in group
                else float("nan"),
                "spearman_unsupported_errors": _spearman(
                    group["base_unsupported_share"], group["errors"]
                ),
            }
        )
    return pd.DataFrame(rows)


# the paper's Pearson r, for the word-level explainers and for the same explainers over sentences
ATTRIBUTION_CLAIMS = {
    "shap_instability": 0.90,
    "lime_instability": 0.29,
    "sentence_shap_instability": 0.90,
    "sentence_lime_instability": 0.29,
}


def attribution_table(
    documents: pd.DataFrame, *, resamples: int = 1000, level: float = 0.95, seed: int = 0
) -> pd.DataFrame:
    """The paper's central claim: r(HSS, SHAP / LIME instability), within each model and
    pooled, Pearson and Spearman with bootstrap CIs, and the partial Spearman given rewriting
    (bootstrap CI over documents), beside the paper's Pearson r."""
    rows = []
    scopes = [("pooled", documents), *documents.groupby("model")]
    for column, paper in ATTRIBUTION_CLAIMS.items():
        if column not in documents:
            continue
        for scope, group in scopes:
            group = group.dropna(subset=["hss", column, "base_novel_ngram_share"])
            if len(group) < 3:
                continue
            row: dict[str, Any] = {"instability": column, "scope": scope}
            row |= _correlations(group["hss"], group[column], resamples, level, seed)
            x, y, z = (group[c].to_numpy(float) for c in ("hss", column, "base_novel_ngram_share"))
            draws = np.random.default_rng(seed).integers(0, len(x), size=(resamples, len(x)))
            boot = np.array([partial_spearman(x[i], y[i], z[i]) for i in draws])
            boot = boot[np.isfinite(boot)]
            alpha = (1.0 - level) / 2.0
            low, high = np.quantile(boot, [alpha, 1 - alpha]) if boot.size else (np.nan, np.nan)
            row |= {
                "partial_spearman_given_rewriting": partial_spearman(x, y, z),
                "partial_ci_low": float(low),
                "partial_ci_high": float(high),
                "paper_pearson": paper,
            }
            rows.append(row)
    return pd.DataFrame(rows)


def extractiveness_table(documents: pd.DataFrame) -> pd.DataFrame:
    """Does HSS track hallucination or paraphrasing? HSS vs rewriting and vs unsupported share,
    raw and with the other held fixed."""
    rows = []
    for name, group in _scopes(documents, smallest=4):
        rows.append(
            {
                "scope": name,
                "n": len(group),
                "spearman_hss_rewriting": _spearman(group["hss"], group["base_novel_ngram_share"]),
                "spearman_hss_unsupported": _spearman(
                    group["hss"], group["base_unsupported_share"]
                ),
                "partial_hss_unsupported_given_rewriting": partial_spearman(
                    group["hss"], group["base_unsupported_share"], group["base_novel_ngram_share"]
                ),
            }
        )
    return pd.DataFrame(rows)
