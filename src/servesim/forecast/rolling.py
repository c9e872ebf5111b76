"""Rolling evaluation and SageServe's hourly peak forecast.

``rolling_forecast`` re-fits a forecaster every ``step`` points on the last ``window`` points
and predicts the next ``horizon`` (the honest protocol: only the past is seen). The authors'
notebooks instead fit ARIMA once on the whole series and use its in-sample one-step values
(``arima.insample_one_step``); ``hourly_peak`` offers both as ``mode="rolling" | "insample"``.
"""

from __future__ import annotations

from typing import Callable

import numpy as np
import pandas as pd

from .arima import DEFAULT_ORDER, insample_one_step
from .base import Forecaster, ForecastError, as_series


def mape(actual, predicted) -> float:
    """Mean absolute percentage error in percent over points with actual > 0."""
    a = np.asarray(actual, dtype=float)
    p = np.asarray(predicted, dtype=float)
    m = a > 0
    if not m.any():
        raise ForecastError("mape: no positive actual values")
    return float(100.0 * np.mean(np.abs(p[m] - a[m]) / a[m]))


def wape(actual, predicted) -> float:
    """100 * mean|error| / mean(actual): the error the authors' notebooks report."""
    a = np.asarray(actual, dtype=float)
    p = np.asarray(predicted, dtype=float)
    if a.mean() <= 0:
        raise ForecastError("wape: mean actual is not positive")
    return float(100.0 * np.mean(np.abs(p - a)) / a.mean())


def rolling_forecast(series, make: Callable[[], Forecaster], window: int, horizon: int = 60,
                     step: int = 60, start: int | None = None, stop: int | None = None) -> pd.DataFrame:
    """Fit ``make()`` on ``series[o-window:o]`` for each origin ``o`` and predict ``horizon``.

    Origins run from ``start`` (default ``window``) while ``o + horizon <= stop`` (default
    len), every ``step`` points. Returns one row per (origin, lead): ``origin, lead, index,
    actual, predicted, train_time_s``.
    """
    y = as_series(series, 1, "rolling_forecast")
    start = window if start is None else int(start)
    stop = y.size if stop is None else int(stop)
    if start < window:
        raise ForecastError(f"rolling_forecast: start={start} < window={window}")
    origins = np.arange(start, stop - horizon + 1, step)
    if origins.size == 0:
        raise ForecastError(f"rolling_forecast: series of {y.size} too short for window {window} + horizon {horizon}")
    rows = []
    for o in origins:
        f = make().fit(y[o - window:o])
        pred = f.predict(horizon)
        lead = np.arange(1, horizon + 1)
        rows.append(pd.DataFrame({"origin": o, "lead": lead, "index": o + lead - 1,
                                  "actual": y[o:o + horizon], "predicted": pred,
                                  "train_time_s": f.train_time_s}))
    return pd.concat(rows, ignore_index=True)


def hourly_peak(series, make: Callable[[], Forecaster] | None = None, window: int = 60,
                period: int = 60, lo: int = 0, hi: int = 60, mode: str = "rolling",
                order: tuple[int, int, int] = DEFAULT_ORDER) -> pd.DataFrame:
    """SageServe's load prediction: for each decision time ``t`` (every ``period`` minutes),
    the maximum forecast demand over minutes ``[t+lo, t+hi)``.

    mode="rolling" (default, the paper's text): fit on the last ``window`` minutes before t.
    mode="insample" (the authors' code): ARIMA(order) fitted once on the entire series, its
    one-step in-sample predictions maxed over the same minutes (the code uses lo=20, hi=60).
    Returns ``t, peak_forecast, peak_actual, train_time_s`` (NaN train time for insample).
    """
    y = as_series(series, 1, "hourly_peak")
    if not 0 <= lo < hi:
        raise ForecastError(f"hourly_peak: need 0 <= lo < hi, got lo={lo}, hi={hi}")
    out = []
    if mode == "insample":
        fitted = insample_one_step(y, order)
        for t in range(period, y.size - hi + 1, period):
            out.append((t, float(fitted[t + lo:t + hi].max()), float(y[t + lo:t + hi].max()), np.nan))
    elif mode == "rolling":
        if make is None:
            from .arima import Arima
            make = lambda: Arima(order)  # noqa: E731
        for t in range(max(window, period), y.size - hi + 1, period):
            f = make().fit(y[t - window:t])
            pred = f.predict(hi)
            out.append((t, float(pred[lo:hi].max()), float(y[t + lo:t + hi].max()), f.train_time_s))
    else:
        raise ForecastError(f"hourly_peak: mode must be 'rolling' or 'insample', got {mode!r}")
    return pd.DataFrame(out, columns=["t", "peak_forecast", "peak_actual", "train_time_s"])
