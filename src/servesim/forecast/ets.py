"""Holt-Winters exponential smoothing (ETS) with statsmodels (PreServe Table 1's ETS baseline).

Additive trend and additive seasonality with period ``seasonal_periods`` (144 ten-minute windows
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
    """Additive Holt-Winters, fitted by statsmodels' ``ExponentialSmoothing`` (estimated initial states)."""

    name = "ets"

    def __init__(self, seasonal_periods: int = 144, trend: str | None = "add", seasonal: str | None = "add") -> None:
        super().__init__()
        if int(seasonal_periods) < 2:
            raise ForecastError(f"ets: seasonal_periods must be >= 2, got {seasonal_periods}")
        for what, v in (("trend", trend), ("seasonal", seasonal)):
            if v not in (None, "add"):
                raise ForecastError(f"ets: {what} must be 'add' or None (the rolling recursion is additive), got {v!r}")
        self.m, self.trend, self.seasonal = int(seasonal_periods), trend, seasonal
        self.min_train = 2 * self.m if seasonal else 4

    def _fit(self, y: np.ndarray) -> None:
        from statsmodels.tsa.holtwinters import ExponentialSmoothing

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
        for t in range(n, n + y.size):
            yt = y[t - n]
            L[t] = self.alpha * (yt - S[t - m]) + (1 - self.alpha) * (L[t - 1] + B[t - 1])
            B[t] = self.beta * (L[t] - L[t - 1]) + (1 - self.beta) * B[t - 1]
            S[t] = self.gamma * (yt - L[t - 1] - B[t - 1]) + (1 - self.gamma) * S[t - m]
        o = np.arange(n, n + y.size) - h  # origin of each target
        out = L[o] + h * B[o] + S[o + h - m]
        return np.clip(out * self._scale, 0.0, None)

    def one_step_fitted(self) -> np.ndarray:
        """In-sample one-step predictions from the state arrays (index 1..n-1), to check the
        recursion's indexing against statsmodels' own ``fittedvalues``."""
        o = np.arange(0, self._L.size - 1)
        return (self._L[o] + self._B[o] + self._S[o + 1 - self.m]) * self._scale
