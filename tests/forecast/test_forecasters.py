import itertools

import numpy as np
import pytest

import servesim.forecast as F
from servesim.forecast.hmm import forward_backward


def _ar1(n, c=50.0, phi=0.6, sigma=0.0, seed=0):
    rng = np.random.default_rng(seed)
    y = np.empty(n)
    y[0] = 100.0
    for t in range(1, n):
        y[t] = c + phi * y[t - 1] + rng.normal(0, sigma)
    return y


def test_moving_average_is_window_mean():
    f = F.MovingAverage().fit([1.0, 2.0, 3.0, 6.0])
    assert np.array_equal(f.predict(3), [3.0, 3.0, 3.0])
    assert f.train_time_s >= 0


def test_tvar_recovers_noiseless_ar1():
    y = _ar1(80) + np.sin(np.arange(80)) * 1e-9
    f = F.TVAR(p=1, lam=1.0).fit(y)
    # fixed point of y = 50 + 0.6 y is 125; one step ahead follows the recursion
    pred = f.predict(5)
    expect = [y[-1]]
    for _ in range(5):
        expect.append(50.0 + 0.6 * expect[-1])
    np.testing.assert_allclose(pred, expect[1:], rtol=1e-3)


def test_tvar_forgetting_tracks_a_level_shift():
    y = np.r_[np.full(60, 100.0), np.full(30, 300.0)] + np.random.default_rng(1).normal(0, 1, 90)
    fast = F.TVAR(p=2, lam=0.9).fit(y).predict(1)[0]
    assert abs(fast - 300) < 20


def test_arima_forecasts_ar1_and_insample_aligned():
    y = _ar1(200, sigma=2.0, seed=3)
    f = F.Arima(order=(1, 0, 0)).fit(y)
    assert abs(f.predict(50)[-1] - 125.0) < 5
    ins = F.insample_one_step(y, (1, 0, 0))
    assert ins.shape == y.shape
    assert F.mape(y[10:], ins[10:]) < 5


def test_arima_aic_chooses_an_order():
    y = _ar1(120, sigma=2.0, seed=4)
    f = F.Arima(order="aic").fit(y)
    assert f.chosen_order is not None and f.chosen_order[1] == 1
    assert np.all(np.isfinite(f.predict(10)))


def test_hmm_forward_backward_matches_enumeration():
    y = np.array([0.1, 1.2, 0.9, -0.2])
    pi = np.array([0.6, 0.4])
    A = np.array([[0.7, 0.3], [0.2, 0.8]])
    mu, var = np.array([0.0, 1.0]), np.array([0.5, 0.3])
    def dens(v, k):
        return np.exp(-0.5 * (v - mu[k]) ** 2 / var[k]) / np.sqrt(2 * np.pi * var[k])

    total = 0.0
    for path in itertools.product(range(2), repeat=4):
        p = pi[path[0]] * dens(y[0], path[0])
        for t in range(1, 4):
            p *= A[path[t - 1], path[t]] * dens(y[t], path[t])
        total += p
    *_, ll = forward_backward(y, pi, A, mu, var)
    assert ll == pytest.approx(np.log(total), rel=1e-10)


def test_hmm_learns_regimes_and_predicts_current_one():
    rng = np.random.default_rng(2)
    y = np.concatenate([rng.normal(100, 3, 40), rng.normal(400, 3, 40), rng.normal(100, 3, 40), rng.normal(400, 3, 20)])
    f = F.GaussianHMM(n_states=2).fit(y)
    assert sorted(np.round(f._mu * f._scale, -1)) == [100.0, 400.0]
    pred = f.predict(60)
    assert pred[0] > 350  # last regime is the high one and states are sticky
    assert pred[-1] < pred[0]  # drifts toward the stationary mixture


def test_bad_input_is_a_clear_error():
    with pytest.raises(F.ForecastError, match="index 2"):
        F.MovingAverage().fit([1.0, 2.0, np.nan])
    with pytest.raises(F.ForecastError, match="at least"):
        F.Arima().fit([1.0, 2.0])
    with pytest.raises(F.ForecastError, match="before fit"):
        F.TVAR().predict(3)
    with pytest.raises(F.ForecastError, match="unknown forecaster"):
        F.make("prophet")


def test_predictions_are_non_negative():
    y = np.linspace(100, 1, 50)
    assert (F.TVAR(p=1).fit(y).predict(200) >= 0).all()


def test_arima_falls_back_to_simpler_orders_then_the_last_value(monkeypatch):
    """A window the requested order cannot be fitted on (statsmodels raises LinAlgError) gets a
    simpler order, and with every order failing the last value; ``fallback`` says which."""
    import servesim.forecast.arima as A

    y = 100.0 + 10.0 * np.sin(np.arange(60) / 5.0)
    real = A._fit_arima
    failing = {(3, 1, 2)}

    def flaky(z, order):
        if tuple(order) in failing:
            raise np.linalg.LinAlgError("LU decomposition error.")
        return real(z, order)

    monkeypatch.setattr(A, "_fit_arima", flaky)
    f = F.Arima().fit(y)
    assert f.chosen_order == (1, 1, 1) and "(3, 1, 2): LinAlgError" in f.fallback
    assert np.all(np.isfinite(f.predict(5)))
    assert F.Arima((1, 1, 1)).fit(y).fallback is None  # the order that works: no fallback

    failing |= {(1, 1, 1), (0, 1, 1)}
    f = F.Arima().fit(y)
    assert f.chosen_order is None and f.fallback.startswith("last value")
    assert np.array_equal(f.predict(3), np.full(3, y[-1]))
