"""What the monitor's window test can see (pure): the smallest share of flagged summaries in the
current window that the one-sided Fisher exact test at `monitor.window_alpha` detects with 80%
power, given the reference window's share and both windows' sizes.

Exact under binomial windows: the reference window's count is drawn at its observed share, the
current window's at the share asked about, and the power sums the probability of every pair of
counts the test rejects. `scripts/monitor_power.py` measures the same by resampling real traffic.
"""

from __future__ import annotations

import numpy as np

DETECTION_POWER = 0.8  # the conventional 80%; no data chose it
SHARE_STEP = 0.01  # the grid on which the smallest detectable share is searched


def rejections(n_reference: int, n_current: int, alpha: float) -> np.ndarray:
    """rejects[k_r, k_c]: whether the one-sided Fisher test of k_c flagged of n_current against
    k_r flagged of n_reference has p < alpha."""
    from scipy.stats import hypergeom

    k_r = np.arange(n_reference + 1)[:, None]
    k_c = np.arange(n_current + 1)[None, :]
    total = n_reference + n_current
    p = hypergeom.sf(k_c - 1, total, k_r + k_c, n_current)
    return p < alpha


def detection_power(reference_share: float, current_share: float, rejects: np.ndarray) -> float:
    """P(the test rejects) for windows of the sizes `rejects` was built for."""
    from scipy.stats import binom

    n_reference, n_current = rejects.shape[0] - 1, rejects.shape[1] - 1
    p_r = binom.pmf(np.arange(n_reference + 1), n_reference, reference_share)
    p_c = binom.pmf(np.arange(n_current + 1), n_current, current_share)
    return float(p_r @ rejects.astype(float) @ p_c)


def detectable_share(
    reference_share: float,
    n_reference: int,
    n_current: int,
    alpha: float,
    power: float = DETECTION_POWER,
) -> float | None:
    """The smallest current share (on a SHARE_STEP grid above the reference's) detected with
    `power`; None when not even a window flagged throughout is."""
    rejects = rejections(n_reference, n_current, alpha)
    start = int(np.floor(reference_share / SHARE_STEP)) + 1
    for step in range(start, round(1 / SHARE_STEP) + 1):
        share = min(1.0, step * SHARE_STEP)
        if detection_power(reference_share, share, rejects) >= power:
            return round(share, 2)
    return None
