import numpy as np
import pytest
from scipy.stats import wasserstein_distance

from hss_gate.distance import transport_shares, wasserstein

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
