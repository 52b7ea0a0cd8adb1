"""Attributions of a game over M binary features, each estimator with an explicit budget of
distinct evaluations of the game (empty and full coalitions included; docs/ATTRIBUTION.md,
"Sentence-level attribution"). Pure: the game is the caller's (hss_gate.models.sentence_explainer's
plays a likelihood model; the tests' have closed-form Shapley values).

- kernel:      Kernel SHAP (Lundberg & Lee 2017) written here: Shapley-kernel weights, sizes
               enumerated completely while the budget covers them (shap's KernelExplainer rule),
               the rest sampled in complementary (antithetic) pairs, and a weighted least squares
               constrained to sum to f(full) - f(empty). Exact Shapley values when 2^M <= budget.
- permutation: permutation sampling with antithetic (reversed) permutations; the default (the
               best measured agreement per evaluation at ~2 x M evaluations).
- lime:        LIME with the lime library's text conventions (row 0 keeps all; each other row
               removes a uniform number 1..M of uniformly chosen features; cosine distance x 100,
               kernel sqrt(exp(-d^2 / 25^2)), weighted ridge alpha = 1 with an unpenalized
               intercept), written here so that the samples are batched.
Every sample is drawn from the numpy Generator the caller passes: deterministic given its seed.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass
from math import comb, factorial
from typing import Any

import numpy as np

Game = Callable[[np.ndarray], np.ndarray]  # masks (n, M) bool -> values (n, S), always 2-D


def all_coalitions(m: int) -> np.ndarray:
    """Every subset of m features as a boolean mask, shape (2^m, m); row r is the binary r."""
    rows = np.arange(2**m)[:, None]
    return ((rows >> np.arange(m)) & 1).astype(bool)


def exact_shapley(values: np.ndarray) -> np.ndarray:
    """Shapley values from a game's value on all 2^m coalitions in `all_coalitions` order.

    values: (2^m,) or (2^m, S); returns (m,) or (m, S).
    phi_i = sum over S not containing i of |S|! (m-|S|-1)! / m! * (v(S + i) - v(S)).
    """
    v = np.asarray(values, dtype=np.float64)
    m = len(v).bit_length() - 1
    if 2**m != len(v):
        raise ValueError("need the value of all 2^m coalitions")
    index = np.arange(2**m)
    sizes = np.array([bin(i).count("1") for i in index])
    weight = np.array([factorial(s) * factorial(m - s - 1) / factorial(m) for s in range(m)])
    out = []
    for i in range(m):
        without = index[(index >> i) & 1 == 0]
        w = weight[sizes[without]]
        gain = v[without | (1 << i)] - v[without]
        out.append(np.tensordot(w, gain, axes=(0, 0)))
    return np.array(out)


def shapley_kernel(m: int, size: int) -> float:
    """The Shapley kernel's weight of one coalition of `size` of m features (0 < size < m)."""
    return (m - 1) / (comb(m, size) * size * (m - size))


def kernel_coalitions(
    m: int, n_samples: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """Up to n_samples distinct coalitions (neither empty nor full) and their kernel weights.

    Size pairs (k, m - k) are enumerated completely, smallest k first, while the remaining
    budget's expected draws under the kernel cover every coalition of the pair (shap's
    KernelExplainer rule); each then weighs its exact kernel weight. The other sizes are drawn
    with probability proportional to their kernel mass, a uniform coalition of the drawn size
    and its complement together (antithetic pairs); a drawn coalition weighs the remaining mass
    times its share of the draws.
    """
    if m < 2 or n_samples <= 0:
        return np.zeros((0, m), dtype=bool), np.zeros(0)
    mass = {k: (m - 1) / (k * (m - k)) for k in range(1, m)}  # kernel mass of each size
    left, remaining = n_samples, sum(mass.values())
    masks: list[np.ndarray] = []
    weights: list[float] = []
    done: set[int] = set()
    for k in range(1, m // 2 + 1):
        pair = sorted({k, m - k})
        count = sum(comb(m, s) for s in pair)
        pair_mass = sum(mass[s] for s in pair)
        if count > left or left * pair_mass / remaining < count - 1e-9:
            break
        for s in pair:
            for chosen in itertools.combinations(range(m), s):
                mask = np.zeros(m, dtype=bool)
                mask[list(chosen)] = True
                masks.append(mask)
                weights.append(shapley_kernel(m, s))
        left -= count
        remaining -= pair_mass
        done.update(pair)
    rest = np.array([s for s in range(1, m) if s not in done])
    if len(rest) and left > 0:
        p = np.array([mass[s] for s in rest])
        p /= p.sum()
        drawn: dict[bytes, list[Any]] = {}  # key -> [mask, count]
        draws = 0
        for _ in range(100 * left + 1000):
            if len(drawn) >= left:
                break
            size = int(rng.choice(rest, p=p))
            mask = np.zeros(m, dtype=bool)
            mask[rng.choice(m, size=size, replace=False)] = True
            for member in (mask, ~mask):
                key = member.tobytes()
                if key in drawn:
                    drawn[key][1] += 1
                elif len(drawn) < left:
                    drawn[key] = [member, 1]
                else:
                    continue
                draws += 1
        for member, count in drawn.values():
            masks.append(member)
            weights.append(remaining * count / draws)
    return np.array(masks, dtype=bool).reshape(-1, m), np.array(weights, dtype=np.float64)


def constrained_wls(
    masks: np.ndarray, values: np.ndarray, weights: np.ndarray, empty: Any, full: Any
) -> np.ndarray:
    """argmin_phi sum_s w_s (v_s - empty - z_s . phi)^2 subject to sum(phi) = full - empty.

    Solved through its KKT system (least squares, so a budget below the feature count gives
    the minimum-norm solution). values: (n,) or (n, S); returns (m,) or (m, S).
    """
    z = np.asarray(masks, dtype=np.float64)
    y = np.asarray(values, dtype=np.float64)
    vector = y.ndim == 1
    y = y.reshape(len(z), -1)
    f0 = np.asarray(empty, dtype=np.float64).reshape(1, -1)
    gap = (np.asarray(full, dtype=np.float64) - np.asarray(empty, dtype=np.float64)).reshape(-1)
    m = z.shape[1]
    zw = z.T * np.asarray(weights, dtype=np.float64)
    kkt = np.zeros((m + 1, m + 1))
    kkt[:m, :m] = zw @ z
    kkt[:m, m] = kkt[m, :m] = 1.0
    rhs = np.vstack([zw @ (y - f0), gap[None, :]])
    scale = max(float(np.abs(kkt[:m, :m]).max(initial=0.0)), 1.0)  # condition the system
    kkt[:m, :m] /= scale
    rhs[:m] /= scale
    solution = np.linalg.lstsq(kkt, rhs, rcond=None)[0][:m]
    return solution[:, 0] if vector else solution


@dataclass
class Estimate:
    """One estimator's attributions (m,) or (m, S), and the values it knows."""

    values: np.ndarray
    empty: np.ndarray
    full: np.ndarray
    fit_r2: float | None = None


def kernel_shap(game: Game, m: int, budget: int, rng: np.random.Generator) -> Estimate:
    """Kernel SHAP with at most `budget` distinct evaluations of `game` (see the module doc)."""
    if m == 0:
        full = game(np.ones((1, 0), dtype=bool))[0]
        return Estimate(np.zeros((0, *full.shape)), full, full)
    if 2**m <= budget:
        masks = all_coalitions(m)
        values = game(masks)
        return Estimate(exact_shapley(values), values[0], values[-1])
    ends = np.array([np.zeros(m, dtype=bool), np.ones(m, dtype=bool)])
    coalitions, weights = kernel_coalitions(m, budget - 2, rng)
    values = game(np.vstack([ends, coalitions]))
    empty, full = values[0], values[1]
    phi = constrained_wls(coalitions, values[2:], weights, empty, full)
    return Estimate(phi, empty, full)


def permutation_shap(game: Game, m: int, budget: int, rng: np.random.Generator) -> Estimate:
    """Permutation sampling: marginal contributions along random orders and their reverses
    (antithetic); each order costs m - 1 evaluations beyond the shared empty and full ones."""
    orders = max(2, 2 * ((budget - 2) // max(m - 1, 1) // 2))
    chains = []
    for _ in range(orders // 2):
        order = rng.permutation(m)
        chains += [order, order[::-1]]
    masks = []
    for order in chains:
        for size in range(m + 1):
            mask = np.zeros(m, dtype=bool)
            mask[order[:size]] = True
            masks.append(mask)
    values = game(np.array(masks).reshape(-1, m))
    values = values.reshape(len(chains), m + 1, -1)
    phi = np.zeros((m, values.shape[2]))
    for c, order in enumerate(chains):
        phi[order] += np.diff(values[c], axis=0)
    phi /= len(chains)
    return Estimate(phi, values[0, 0], values[0, -1])


def lime_masks(m: int, n_samples: int, rng: np.random.Generator) -> np.ndarray:
    """lime's text neighbourhood: row 0 keeps everything; each other row removes a uniformly
    drawn number 1..m of uniformly chosen features (lime_text.LimeTextExplainer)."""
    masks = np.ones((n_samples, m), dtype=bool)
    for row in range(1, n_samples):
        removed = rng.choice(m, size=int(rng.integers(1, m + 1)), replace=False)
        masks[row, removed] = False
    return masks


def weighted_ridge(
    x: np.ndarray, y: np.ndarray, w: np.ndarray, alpha: float
) -> tuple[np.ndarray, float]:
    """Weighted ridge with an unpenalized intercept (sklearn Ridge's fit with sample_weight);
    the coefficients (m,) or (m, S) and the weighted R^2 of the first (or only) column."""
    x = np.asarray(x, dtype=np.float64)
    y2 = np.asarray(y, dtype=np.float64).reshape(len(x), -1)
    w = np.asarray(w, dtype=np.float64)
    xm = (w @ x) / w.sum()
    ym = (w @ y2) / w.sum()
    xc, yc = x - xm, y2 - ym
    gram = (xc.T * w) @ xc + alpha * np.eye(x.shape[1])
    coef = np.linalg.lstsq(gram, (xc.T * w) @ yc, rcond=None)[0]
    residual = yc - xc @ coef
    total = float(w @ (yc[:, 0] ** 2))
    r2 = 1.0 - float(w @ (residual[:, 0] ** 2)) / total if total > 0 else 1.0
    return (coef[:, 0] if np.ndim(y) == 1 else coef), r2


def lime(
    game: Game,
    m: int,
    budget: int,
    rng: np.random.Generator,
    kernel_width: float = 25.0,
    alpha: float = 1.0,
) -> Estimate:
    """LIME over m binary features with lime's text conventions (module doc)."""
    masks = lime_masks(m, budget, rng)
    values = game(masks)
    kept = masks.sum(axis=1)
    distance = 100.0 * (1.0 - np.sqrt(kept / m))  # cosine distance to the all-kept row
    weights = np.sqrt(np.exp(-(distance**2) / kernel_width**2))
    coef, r2 = weighted_ridge(masks, values, weights, alpha)
    empty = np.full(values.shape[1:], np.nan)  # not evaluated unless drawn
    return Estimate(coef, empty, values[0], fit_r2=r2)
