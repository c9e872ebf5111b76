"""Table 1's forecasting baselines (ARIMA, ETS, Prophet) under two protocols.

* ``once`` (the protocol the paper's baseline APEs imply, spec §2.4): fit on the training half,
  forecast the whole test half from its end; the truth of the test half is never seen.
* ``rolling`` (the fair counterpart of PreServe's Alg. 2): every test window j is forecast
  ``steps`` windows ahead from the truth up to j - steps. ARIMA and ETS keep the parameters
  fitted on the training half and run their state recursions over the truth (Kalman filter /
  Holt-Winters updates), as PreServe keeps its trained mLSTM and feeds it the truth. Prophet
  has no state to update, so its rolling version refits every ``prophet_refit`` windows (daily)
  on all the truth known then.

Each function returns the predictions of the test windows ``n_train..len-1``.
"""

from __future__ import annotations

import logging
import warnings

import numpy as np
import pandas as pd

from ...forecast.arima import Arima
from ...forecast.base import ForecastError, as_series
from ...forecast.ets import HoltWinters

PROTOCOLS = ("once", "rolling")


def _check(series, n_train: int, steps: int, name: str) -> np.ndarray:
    y = as_series(series, 2, name)
    if not 2 <= n_train < y.size:
        raise ForecastError(f"{name}: n_train={n_train} must be in [2, {y.size - 1}]")
    if steps < 1:
        raise ForecastError(f"{name}: steps must be >= 1, got {steps}")
    return y


def arima_forecast(series, n_train: int, protocol: str = "once", steps: int = 2,
                   order: tuple[int, int, int] | str = "aic") -> tuple[np.ndarray, dict]:
    """ARIMA (statsmodels; order by AIC over ``forecast.arima.AIC_GRID`` by default)."""
    y = _check(series, n_train, steps, "arima_forecast")
    f = Arima(order).fit(y[:n_train])
    info = {"order": str(f.chosen_order), "fallback": f.fallback, "fit_s": f.train_time_s}
    if protocol == "once":
        return f.predict(y.size - n_train), info
    if protocol != "rolling":
        raise ForecastError(f"arima_forecast: protocol must be one of {PROTOCOLS}, got {protocol!r}")
    if f._res is None:  # the order fell back to the last value: a random walk's h-step forecast
        return np.clip(y[n_train - steps:y.size - steps], 0.0, None), info
    return arima_rolling(f._res, y / f._scale, n_train, steps) * f._scale, info


def arima_rolling(res, z: np.ndarray, n_train: int, steps: int) -> np.ndarray:
    """h-step forecasts of z[n_train:] with the fitted parameters of ``res``, each from the
    Kalman filter's state given z up to h steps before the target (state space:
    a_{t+1|t-1} = T a_{t|t-1} + c, y = Z a + d)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        full = res.apply(z)
    fr = full.filter_results
    T, c = fr.transition[:, :, 0], fr.state_intercept[:, 0]
    Z, d = fr.design[0, :, 0], fr.obs_intercept[0, 0]
    a = np.asarray(fr.predicted_state)  # (k_states, nobs + 1): a[:, t] = a_{t|t-1}
    out = np.empty(z.size - n_train)
    for i, j in enumerate(range(n_train, z.size)):
        s = a[:, j - steps + 1]  # predicted state for j-steps+1 from truth up to j-steps
        for _ in range(steps - 1):
            s = T @ s + c
        out[i] = Z @ s + d
    return np.clip(out, 0.0, None)


def ets_forecast(series, n_train: int, protocol: str = "once", steps: int = 2,
                 seasonal_periods: int = 144, trend: str | None = "add",
                 seasonal: str = "add") -> tuple[np.ndarray, dict]:
    """Holt-Winters with period ``seasonal_periods`` (144 ten-minute windows = 1 day), additive or
    multiplicative (``seasonal="mul"``) season; ``trend=None`` drops the trend (a flat level: its
    long-horizon forecast cannot run away)."""
    y = _check(series, n_train, steps, "ets_forecast")
    f = HoltWinters(seasonal_periods, trend=trend, seasonal=seasonal).fit(y[:n_train])
    info = {"alpha": f.alpha, "beta": f.beta, "gamma": f.gamma, "fit_s": f.train_time_s}
    if protocol == "once":
        return f.predict(y.size - n_train), info
    if protocol != "rolling":
        raise ForecastError(f"ets_forecast: protocol must be one of {PROTOCOLS}, got {protocol!r}")
    return f.rolling(y[n_train:], steps), info


def prophet_available() -> str | None:
    """None if Prophet imports and fits offline here, else the reason it cannot be run."""
    try:
        _prophet_fit(pd.date_range("2024-05-10", periods=48, freq="10min"), np.arange(48.0) % 6 + 1)
    except Exception as e:  # noqa: BLE001 - any failure means "not runnable", with its reason
        return f"{type(e).__name__}: {e}"
    return None


def _prophet_fit(ds, y, weekly=True):
    for name in ("cmdstanpy", "prophet"):
        logging.getLogger(name).setLevel(logging.WARNING)
    from prophet import Prophet

    m = Prophet(daily_seasonality=True, weekly_seasonality=weekly, yearly_seasonality=False)
    m.fit(pd.DataFrame({"ds": ds, "y": y}))
    return m


def prophet_forecast(series, n_train: int, protocol: str = "once", steps: int = 2,
                     t0: str = "2024-05-10T00:00:00", window_s: float = 600.0,
                     refit_every: int = 144, weekly: bool | str = True) -> tuple[np.ndarray, dict]:
    """Prophet with daily and weekly seasonality; ``t0`` is the calendar time of window 0 (the
    weekly term needs real weekdays). ``rolling`` refits every ``refit_every`` windows.
    ``weekly="auto"`` is Prophet's default (no weekly term under two weeks of data)."""
    y = _check(series, n_train, steps, "prophet_forecast")
    ds = pd.Timestamp(t0).tz_localize(None) + pd.to_timedelta(np.arange(y.size) * window_s, unit="s")
    if protocol == "once":
        m = _prophet_fit(ds[:n_train], y[:n_train], weekly)
        pred = m.predict(pd.DataFrame({"ds": ds[n_train:]}))["yhat"].to_numpy()
        return np.clip(pred, 0.0, None), {"refits": 1}
    if protocol != "rolling":
        raise ForecastError(f"prophet_forecast: protocol must be one of {PROTOCOLS}, got {protocol!r}")
    out = np.empty(y.size - n_train)
    starts = list(range(n_train, y.size, int(refit_every)))
    for lo in starts:
        hi = min(lo + int(refit_every), y.size)
        m = _prophet_fit(ds[:lo - steps + 1], y[:lo - steps + 1], weekly)  # truth up to lo - steps
        out[lo - n_train:hi - n_train] = m.predict(pd.DataFrame({"ds": ds[lo:hi]}))["yhat"].to_numpy()
    return np.clip(out, 0.0, None), {"refits": len(starts)}
