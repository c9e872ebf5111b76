"""The k-nearest-prompts reference of Table 2 (servesim.systems.preserve.length_reference)."""

import numpy as np
import pytest

from servesim.systems.preserve.length_data import LengthDataError
from servesim.systems.preserve.length_reference import choose_k, knn_predict


def _clusters(n_per: int, seed: int = 0):
    """Two well separated embedding clusters whose lengths differ (short answers vs long ones)."""
    rng = np.random.default_rng(seed)
    a = rng.normal([5.0, 0.0, 0.0], 0.3, (n_per, 3))
    b = rng.normal([0.0, 5.0, 0.0], 0.3, (n_per, 3))
    y = np.concatenate([rng.integers(20, 40, n_per), rng.integers(400, 600, n_per)]).astype(float)
    return np.vstack([a, b]), y


def test_neighbours_median_follows_the_cluster_and_beats_the_constant():
    x, y = _clusters(60)
    xt, yt = _clusters(20, seed=1)
    k, loo = choose_k(x, y)
    pred = knn_predict(x, y, xt, k)
    assert np.all(pred[:20] < 50) and np.all(pred[20:] > 390)
    assert np.abs(pred - yt).mean() < 0.2 * np.abs(np.median(y) - yt).mean()
    assert set(loo) == {5, 10, 25, 50, 100} and k == min(loo, key=lambda kk: (loo[kk], kk))  # 200 > n - 1: left out


def test_without_signal_it_scores_like_the_constant():
    """Embeddings unrelated to the lengths: the leave-one-out choice goes to a large k, and the
    reference lands near the training median's error (it cannot find signal that is not there)."""
    rng = np.random.default_rng(3)
    x, xt = rng.normal(size=(400, 8)), rng.normal(size=(200, 8))
    y, yt = rng.lognormal(5, 1, 400), rng.lognormal(5, 1, 200)
    k, _ = choose_k(x, y)
    ref = np.abs(knn_predict(x, y, xt, k) - yt).mean()
    const = np.abs(np.median(y) - yt).mean()
    assert k >= 50 and ref < 1.1 * const


def test_leave_one_out_never_reads_a_pair_as_its_own_neighbour():
    # k = 1 with itself counted would give zero error; each pair's nearest other pair is its twin
    x = np.array([[1.0, 0.0], [1.0, 0.01], [0.0, 1.0], [0.01, 1.0]])
    y = np.array([10.0, 30.0, 100.0, 300.0])
    _, loo = choose_k(x, y, grid=(1,))
    assert loo[1] == pytest.approx(np.mean([20.0, 20.0, 200.0, 200.0]))


def test_bad_input_is_named():
    x, y = _clusters(5)
    with pytest.raises(LengthDataError, match="k=20"):
        knn_predict(x, y, x, 20)
    with pytest.raises(LengthDataError, match="labels"):
        knn_predict(x, y[:-1], x, 2)
    with pytest.raises(LengthDataError, match="no k"):
        choose_k(x[:3], y[:3], grid=(5,))
