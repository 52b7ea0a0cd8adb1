import numpy as np
import pytest
from scipy.stats import wasserstein_distance

from hss_gate.scoring.distance import transport_shares, wasserstein

pytestmark = pytest.mark.unit


def test_identical_clouds_have_zero_distance():
    rng = np.random.default_rng(0)
    cloud = rng.normal(size=(4, 8))
    assert wasserstein(cloud, cloud) == pytest.approx(0.0, abs=1e-12)
    assert wasserstein(cloud, cloud[::-1]) == pytest.approx(0.0, abs=1e-12)


def test_single_points_give_euclidean_distance():
    a, b = np.array([[0.0, 0.0]]), np.array([[3.0, 4.0]])
    assert wasserstein(a, b) == pytest.approx(5.0)


@pytest.mark.parametrize("seed", range(5))
def test_one_dimensional_case_matches_scipy(seed):
    rng = np.random.default_rng(seed)
    u, v = rng.normal(size=5), rng.normal(loc=0.5, size=7)
    ours = wasserstein(u[:, None], v[:, None])
    assert ours == pytest.approx(wasserstein_distance(u, v), rel=1e-9)


def test_uneven_sizes_split_mass():
    # one point at 0 against two points at 0 and 2: half the mass moves 2 -> distance 1
    assert wasserstein(np.array([[0.0]]), np.array([[0.0], [2.0]])) == pytest.approx(1.0)


def test_dimension_mismatch_and_empty_raise():
    with pytest.raises(ValueError):
        wasserstein(np.zeros((2, 3)), np.zeros((2, 4)))
    with pytest.raises(ValueError):
        wasserstein(np.zeros((0, 3)), np.zeros((2, 3)))


def test_transport_shares_point_at_the_moved_sentence():
    base = np.array([[0.0, 0.0], [1.0, 0.0]])
    other = np.array([[0.0, 0.0], [1.0, 5.0]])
    shares = transport_shares(base, other)
    assert shares.sum() == pytest.approx(1.0)
    assert shares[1] == pytest.approx(1.0)


@pytest.mark.parametrize("sizes", [(1, 1), (3, 3), (2, 5), (4, 6), (7, 3), (11, 13)])
def test_assignment_solver_matches_pots_network_simplex(sizes):
    import ot

    rng = np.random.default_rng(sum(sizes))
    base, other = rng.normal(size=(sizes[0], 16)), rng.normal(size=(sizes[1], 16))
    other[: min(sizes)] = base[: min(sizes)] + 0.01 * rng.normal(size=(min(sizes), 16))
    n, m = sizes
    expected = ot.emd2(np.full(n, 1 / n), np.full(m, 1 / m), ot.dist(base, other, "euclidean"))
    assert np.isclose(wasserstein(base, other), expected, atol=1e-9)


def test_large_coprime_clouds_fall_back_to_pot(monkeypatch):
    import ot

    from hss_gate.scoring import distance

    rng = np.random.default_rng(5)
    base, other = rng.normal(size=(5, 8)), rng.normal(size=(7, 8))
    exact = wasserstein(base, other)  # lcm 35: assignment
    monkeypatch.setattr(distance, "MAX_ASSIGNMENT", 10)
    called = []
    real = ot.emd2
    monkeypatch.setattr(ot, "emd2", lambda *a, **k: called.append(1) or real(*a, **k))
    assert np.isclose(wasserstein(base, other), exact, atol=1e-9) and called
