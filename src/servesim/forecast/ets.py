"""Holt-Winters exponential smoothing (ETS) with statsmodels (PreServe Table 1's ETS baseline).

Additive trend and additive (default) or multiplicative (``seasonal="mul"``, a reading: the daily
swing scales with the level) seasonality with period ``seasonal_periods`` (144 ten-minute windows
= one day). ``predict`` is the fitted model's forecast from the end of the training series (the
"fit once" protocol the paper's baseline APEs imply). :meth:`HoltWinters.rolling` instead keeps
the fitted smoothing parameters and runs the state recursions over new observations, so every
h-step forecast starts from the truth up to its origin (the fair rolling counterpart of
PreServe's truth-replacing online phase).
"""

from __future__ import annotations

import warnings

import numpy as np

from .base import Forecaster, ForecastError, as_series


class HoltWinters(Forecaster):
    """Holt-Winters (additive trend; additive or multiplicative season), fitted by statsmodels'
    ``ExponentialSmoothing`` (estimated initial states)."""

    name = "ets"

    def __init__(self, seasonal_periods: int = 144, trend: str | None = "add", seasonal: str | None = "add") -> None:
        super().__init__()
        if int(seasonal_periods) < 2:
            raise ForecastError(f"ets: seasonal_periods must be >= 2, got {seasonal_periods}")
        if trend not in (None, "add"):
            raise ForecastError(f"ets: trend must be 'add' or None (the rolling recursion's), got {trend!r}")
        if seasonal not in (None, "add", "mul"):
            raise ForecastError(f"ets: seasonal must be 'add', 'mul' or None, got {seasonal!r}")
        self.m, self.trend, self.seasonal = int(seasonal_periods), trend, seasonal
        self.min_train = 2 * self.m if seasonal else 4

    def _fit(self, y: np.ndarray) -> None:
        from statsmodels.tsa.holtwinters import ExponentialSmoothing

        if self.seasonal == "mul" and not np.all(y > 0):
            raise ForecastError(f"ets: multiplicative seasonality needs positive values; index {int(np.argmax(y <= 0))} is {y[y <= 0][0]:g}")
        self._scale = float(np.mean(np.abs(y))) or 1.0
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # convergence chatter; the MLE found is what is used
            model = ExponentialSmoothing(y / self._scale, trend=self.trend, seasonal=self.seasonal,
                                         seasonal_periods=self.m if self.seasonal else None,
                                         initialization_method="estimated")
            self._res = model.fit()
        p = self._res.params
        self.alpha = float(p["smoothing_level"])
        self.beta = float(p["smoothing_trend"]) if self.trend else 0.0
        self.gamma = float(p["smoothing_seasonal"]) if self.seasonal else 0.0
        n = y.size
        # state histories by time index (season[t] is the seasonal state written at time t)
        self._L = np.asarray(self._res.level, dtype=np.float64)
        self._B = np.asarray(self._res.trend, dtype=np.float64) if self.trend else np.zeros(n)
        self._S = np.asarray(self._res.season, dtype=np.float64) if self.seasonal else np.zeros(n)

    def _predict(self, horizon: int) -> np.ndarray:
        return np.asarray(self._res.forecast(horizon)) * self._scale

    def rolling(self, new, steps: int = 2) -> np.ndarray:
        """h-step forecasts (h = ``steps``) of each value of ``new`` (the observations right after
        the training series), each from the state after the truth up to h steps before it.

        The first ``steps - 1`` targets have origins inside the training series: they are the
        fitted model's own forecasts. Parameters are not re-estimated.
        """
        if not self._fitted:
            raise ForecastError("ets: rolling() before fit()")
        if not 1 <= int(steps) <= self.m:
            raise ForecastError(f"ets: steps must be in [1, {self.m}], got {steps}")
        y = as_series(new, 1, "ets.rolling") / self._scale
        h, m, n = int(steps), self.m, self._L.size
        L = np.concatenate([self._L, np.empty(y.size)])
        B = np.concatenate([self._B, np.empty(y.size)])
        S = np.concatenate([self._S, np.empty(y.size)])
        mul = self.seasonal == "mul"
        a, b, g = self.alpha, self.beta, self.gamma
        for t in range(n, n + y.size):
            yt, lb = y[t - n], L[t - 1] + B[t - 1]
            L[t] = a * (yt / S[t - m] if mul else yt - S[t - m]) + (1 - a) * lb
            B[t] = b * (L[t] - L[t - 1]) + (1 - b) * B[t - 1]
            S[t] = g * (yt / lb if mul else yt - lb) + (1 - g) * S[t - m]
        o = np.arange(n, n + y.size) - h  # origin of each target
        trend = L[o] + h * B[o]
        out = trend * S[o + h - m] if mul else trend + S[o + h - m]
        return np.clip(out * self._scale, 0.0, None)

    def one_step_fitted(self) -> np.ndarray:
        """In-sample one-step predictions from the state arrays (index 1..n-1), to check the
        recursion's indexing against statsmodels' own ``fittedvalues``."""
        o = np.arange(0, self._L.size - 1)
        trend, season = self._L[o] + self._B[o], self._S[o + 1 - self.m]
        return (trend * season if self.seasonal == "mul" else trend + season) * self._scale
