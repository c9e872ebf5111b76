"""PreServe Tier 1: the mLSTM cell, its training, Alg. 2's online protocol, APE, the baselines' rolling recursions."""

import numpy as np
import pandas as pd
import pytest

torch = pytest.importorskip("torch")

from servesim.forecast import ForecastError, make  # noqa: E402
from servesim.forecast.mlstm import MLSTM, MLSTMCell, windows  # noqa: E402
from servesim.systems.preserve.workload_predictor import ape, online_forecast, window_totals  # noqa: E402


def _sig(x):
    return 1.0 / (1.0 + np.exp(-x))


def test_mlstm_cell_matches_krause_equations():
    # hand-set weights, 2 inputs, 2 hidden units
    cell = MLSTMCell(2, 2, bias=True)
    W_mx = np.array([[0.5, -1.0], [2.0, 0.25]])
    W_mh = np.array([[1.0, 0.5], [-0.5, 1.5]])
    W_x = np.arange(16, dtype=float).reshape(8, 2) / 10 - 0.7   # rows: hh(2), i(2), f(2), o(2)
    b_x = np.linspace(-0.4, 0.3, 8)
    W_m = (np.arange(16, dtype=float).reshape(8, 2)[::-1] / 8 - 1.0)
    with torch.no_grad():
        cell.W_mx.weight.copy_(torch.tensor(W_mx))
        cell.W_mh.weight.copy_(torch.tensor(W_mh))
        cell.W_x.weight.copy_(torch.tensor(W_x))
        cell.W_x.bias.copy_(torch.tensor(b_x))
        cell.W_m.weight.copy_(torch.tensor(W_m))
    x = np.array([0.3, -0.8])
    h0 = np.array([0.2, -0.1])
    c0 = np.array([0.5, 0.4])
    h, c = cell(torch.tensor(x[None], dtype=torch.float32),
                (torch.tensor(h0[None], dtype=torch.float32), torch.tensor(c0[None], dtype=torch.float32)))
    # the equations, written out
    m = (W_mx @ x) * (W_mh @ h0)
    z = W_x @ x + b_x + W_m @ m
    hh, i, f, o = z[0:2], _sig(z[2:4]), _sig(z[4:6]), _sig(z[6:8])
    c_exp = f * c0 + i * np.tanh(hh)
    h_exp = np.tanh(c_exp) * o
    np.testing.assert_allclose(c.detach().numpy()[0], c_exp, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(h.detach().numpy()[0], h_exp, rtol=1e-5, atol=1e-6)
    # the gates see m, not h: with x = 0, m = 0 and every gate is sigma(bias) whatever h is
    h1, c1 = cell(torch.zeros(1, 2), (torch.tensor([[5.0, -3.0]]), torch.zeros(1, 2)))
    h2, c2 = cell(torch.zeros(1, 2), (torch.tensor([[-1.0, 2.0]]), torch.zeros(1, 2)))
    assert torch.equal(c1, c2) and torch.equal(h1, h2)


def test_sequence_forward_equals_stepwise_cell():
    torch.manual_seed(3)
    from servesim.forecast.mlstm import MLSTMRegressor

    net = MLSTMRegressor(1, 5)
    seq = torch.randn(4, 6, 1)
    h = torch.zeros(4, 5)
    c = torch.zeros(4, 5)
    for t in range(6):
        h, c = net.cell(seq[:, t], (h, c))
    torch.testing.assert_close(net(seq), net.head(h).squeeze(-1))


def _series(n=200):
    t = np.arange(n)
    return 1000 + 400 * np.sin(2 * np.pi * t / 24) + 10 * (t % 7)


def test_mlstm_training_reduces_loss_and_is_deterministic():
    y = _series()
    a = MLSTM(k=6, hidden=8, epochs=15, batch_size=32, seed=1).fit(y)
    assert a.loss_history[-1] < 0.5 * a.loss_history[0]
    b = MLSTM(k=6, hidden=8, epochs=15, batch_size=32, seed=1).fit(y)
    assert np.array_equal(a.predict(5), b.predict(5))
    assert a.loss_history == b.loss_history
    c = MLSTM(k=6, hidden=8, epochs=15, batch_size=32, seed=2).fit(y)
    assert not np.array_equal(a.predict(5), c.predict(5))


def test_mlstm_registered_and_scaling_from_training_half():
    m = make("mlstm", k=4, hidden=4, epochs=1)
    assert isinstance(m, MLSTM)
    m.fit(np.arange(10.0) + 5)
    assert (m._lo, m._span) == (5.0, 9.0)  # min-max of the training series only
    with pytest.raises(ForecastError, match="constant"):
        make("mlstm", k=2, epochs=1).fit(np.ones(10))
    with pytest.raises(ForecastError, match=r"shape \(n, 4\)"):
        m.predict_windows(np.ones((2, 3)))


def test_windows_pairs():
    X, t = windows(np.arange(6.0), 3)
    assert X.tolist() == [[0, 1, 2], [1, 2, 3], [2, 3, 4]] and t.tolist() == [3, 4, 5]


class _PlusOne:
    """A fake window model: predicts the window's last value + 1; counts its fits."""

    fits: list = []

    def __init__(self, k=3):
        self.k = k

    def fit(self, y):
        _PlusOne.fits.append(np.array(y))
        self.tag = len(_PlusOne.fits)
        return self

    def predict_windows(self, X):
        return np.asarray(X)[:, -1] + 1 + 0 * self.tag


def test_online_two_step_uses_truth_not_earlier_forecasts():
    _PlusOne.fits = []
    y = np.array([10, 50, 20, 80, 30, 60, 40, 90, 70, 15], dtype=float)
    d = online_forecast(y, _PlusOne, n_train=5)
    assert d["window"].tolist() == [5, 6, 7, 8, 9]
    # one step at the start of j: truth y[j-1] + 1
    assert d["pred_1step"].tolist() == [y[j - 1] + 1 for j in range(5, 10)]
    # two steps, made at the start of j-1: (truth y[j-2] + 1) + 1 -- the *truth* y[j-2], never an
    # earlier forecast of it
    assert d["pred_2step"].tolist() == [y[j - 2] + 2 for j in range(5, 10)]
    assert len(_PlusOne.fits) == 1 and np.array_equal(_PlusOne.fits[0], y[:5])


def test_online_daily_retraining_refits_on_recent_truth():
    _PlusOne.fits = []
    y = np.arange(1.0, 21.0)
    d = online_forecast(y, _PlusOne, n_train=8, retrain_every=4, retrain_window=5)
    # origins 7..19; refits at origins 11, 15, 19 on the last 5 true values before each
    assert [f.tolist() for f in _PlusOne.fits[1:]] == [y[6:11].tolist(), y[10:15].tolist(), y[14:19].tolist()]
    assert d.loc[d["window"] == 12, "model_fit"].item() == 1  # two-step of 12 made at origin 11
    assert d.loc[d["window"] == 11, "model_fit"].item() == 0


def test_online_forecast_errors():
    with pytest.raises(ForecastError, match="n_train"):
        online_forecast(np.ones(5), _PlusOne, n_train=5)
    with pytest.raises(ForecastError, match="too short"):
        online_forecast(np.arange(1.0, 10.0), _PlusOne, n_train=3)


def test_ape_on_hand_data():
    np.testing.assert_allclose(ape([100, 200, 50], [110, 150, 50]), [10.0, 25.0, 0.0])
    with pytest.raises(ForecastError, match="index 1"):
        ape([5, 0], [1, 1])


def test_window_totals():
    df = pd.DataFrame({"arrival_s": [0.0, 599.0, 600.0, 1900.0], "prompt_tokens": [1, 2, 3, 4],
                       "output_tokens": [10, 20, 30, 40]})
    w = window_totals(df, t_end=2400.0)
    assert w["prompt"].tolist() == [3, 3, 0, 4] and w["response"].tolist() == [30, 30, 0, 40]


@pytest.mark.parametrize("seasonal", ["add", "mul"])
def test_ets_recursion_matches_statsmodels_and_rolling_uses_truth(seasonal):
    from servesim.forecast.ets import HoltWinters

    rng = np.random.default_rng(0)
    t = np.arange(12 * 8)
    y = 100 + 30 * np.sin(2 * np.pi * t / 12) + 0.2 * t + rng.normal(0, 3, t.size)
    f = HoltWinters(seasonal_periods=12, seasonal=seasonal).fit(y)
    fitted = np.asarray(f._res.fittedvalues) * f._scale
    np.testing.assert_allclose(f.one_step_fitted()[12:], fitted[13:], rtol=1e-9)
    g = HoltWinters(seasonal_periods=12, seasonal=seasonal).fit(y[:60])
    one = g.rolling(y[60:], steps=1)
    np.testing.assert_allclose(one[0], g.predict(1)[0], rtol=1e-9)
    # a later forecast changes when an earlier *observation* changes (the truth is used)
    y2 = y.copy()
    y2[70] += 50
    assert g.rolling(y2[60:], steps=2)[12] != g.rolling(y[60:], steps=2)[12]


def test_ets_multiplicative_refuses_non_positive_values():
    from servesim.forecast.base import ForecastError
    from servesim.forecast.ets import HoltWinters

    y = np.r_[np.full(30, 5.0), 0.0, np.full(30, 5.0)]
    with pytest.raises(ForecastError, match="positive values; index 30"):
        HoltWinters(seasonal_periods=12, seasonal="mul").fit(y)


def test_arima_rolling_two_step_equals_refiltered_forecast():
    from servesim.forecast.arima import Arima
    from servesim.systems.preserve.baselines import arima_rolling

    rng = np.random.default_rng(1)
    t = np.arange(240)
    y = 100 + 30 * np.sin(2 * np.pi * t / 24) + rng.normal(0, 3, t.size)
    f = Arima((2, 1, 1)).fit(y[:120])
    z = y / f._scale
    r = arima_rolling(f._res, z, 120, 2)
    # target 150 from origin 149: state after the truth up to 148
    np.testing.assert_allclose(r[30], f._res.apply(z[:149]).forecast(2)[1], rtol=1e-8)
