import numpy as np
import pytest

import servesim.forecast as F


def _series(n=400, seed=0):
    t = np.arange(n)
    return 1000 + 300 * np.sin(2 * np.pi * t / 120) + np.random.default_rng(seed).normal(0, 20, n)


def test_rolling_has_no_lookahead():
    y = _series()
    a = F.rolling_forecast(y, lambda: F.TVAR(p=2), window=60, horizon=30, step=50)
    y2 = y.copy()
    y2[200:] *= 5  # the future after the third origin changes
    b = F.rolling_forecast(y2, lambda: F.TVAR(p=2), window=60, horizon=30, step=50)
    early = a["origin"] <= 200
    np.testing.assert_array_equal(a.loc[early, "predicted"], b.loc[early, "predicted"])
    assert list(a["origin"].unique()) == list(range(60, 371, 50))
    assert (a.groupby("origin")["lead"].max() == 30).all()


def test_rolling_is_deterministic():
    y = _series()
    a = F.rolling_forecast(y, lambda: F.GaussianHMM(), window=60, horizon=20, step=100)
    b = F.rolling_forecast(y, lambda: F.GaussianHMM(), window=60, horizon=20, step=100)
    np.testing.assert_array_equal(a["predicted"], b["predicted"])


def test_mape_and_wape():
    assert F.mape([100, 200], [110, 180]) == pytest.approx(10.0)
    assert F.wape([100, 300], [110, 270]) == pytest.approx(100 * 20 / 200)
    assert F.mape([0, 100], [5, 150]) == pytest.approx(50.0)  # zero actuals are skipped
    with pytest.raises(F.ForecastError):
        F.mape([0, 0], [1, 1])


def test_hourly_peak_modes():
    y = _series(300)
    roll = F.hourly_peak(y, lambda: F.MovingAverage(), window=60)
    assert list(roll["t"]) == [60, 120, 180, 240]
    # moving average: flat forecast = mean of the last hour
    np.testing.assert_allclose(roll["peak_forecast"], [y[t - 60:t].mean() for t in roll["t"]])
    np.testing.assert_allclose(roll["peak_actual"], [y[t:t + 60].max() for t in roll["t"]])
    ins = F.hourly_peak(y, mode="insample", order=(1, 0, 0), lo=20, hi=60)
    assert ins["train_time_s"].isna().all() and len(ins) == 4
    with pytest.raises(F.ForecastError, match="mode"):
        F.hourly_peak(y, mode="oracle")
