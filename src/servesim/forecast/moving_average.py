"""Moving average (journal App. B (1)): the next value is the mean of the last window."""

from __future__ import annotations

import numpy as np

from .base import Forecaster


class MovingAverage(Forecaster):
    """Predicts a flat line at the mean of the training series (the window is the series)."""

    name = "moving_average"

    def _fit(self, y: np.ndarray) -> None:
        self._level = float(y.mean())

    def _predict(self, horizon: int) -> np.ndarray:
        return np.full(horizon, self._level)
