"""One forecasting API: ``fit(series)`` then ``predict(horizon)``, training time measured.

A forecaster sees a 1-D series of non-negative demand values (e.g. prompt tokens per minute)
and predicts the next ``horizon`` values. ``fit`` records its wall-clock duration in
``train_time_s`` (reported, e.g. in journal Fig 17; it is hardware-dependent and never used
to make decisions, so runs stay deterministic in everything but that column).
"""

from __future__ import annotations

import contextlib
import time
from abc import ABC, abstractmethod

import numpy as np

from ..errors import InputError


def _single_thread():
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # optional: without it BLAS keeps its default thread count
        return contextlib.nullcontext()
    return threadpool_limits(limits=1)


class ForecastError(InputError):
    """Bad forecaster input (empty, NaN, negative, too short for the model)."""


def as_series(series, min_len: int = 1, name: str = "series") -> np.ndarray:
    """Validate and return ``series`` as a float64 1-D array."""
    y = np.asarray(series, dtype=np.float64)
    if y.ndim != 1:
        raise ForecastError(f"{name}: expected a 1-D series, got shape {y.shape}")
    if y.size < min_len:
        raise ForecastError(f"{name}: needs at least {min_len} points, got {y.size}")
    bad = np.flatnonzero(~np.isfinite(y))
    if bad.size:
        raise ForecastError(f"{name}: value at index {int(bad[0])} is not finite ({y[bad[0]]})")
    return y


class Forecaster(ABC):
    """Base class. Subclasses implement ``_fit`` and ``_predict``."""

    #: short name used in tables and figure legends
    name: str = "forecaster"
    #: the shortest training series the model accepts
    min_train: int = 1

    def __init__(self) -> None:
        self.train_time_s: float = float("nan")
        self._fitted = False

    def fit(self, series) -> "Forecaster":
        """Fit on ``series`` (oldest first); measures ``train_time_s``."""
        y = as_series(series, self.min_train, f"{self.name}.fit")
        self._prepare()  # before the clock: a library's import is not training
        # these fits multiply tiny matrices: multi-threaded BLAS only adds contention
        # (measured 10-50x slower ARIMA fits on a loaded 2-core machine)
        with _single_thread():
            t0 = time.perf_counter()
            self._fit(y)
            self.train_time_s = time.perf_counter() - t0
        self._fitted = True
        return self

    def _prepare(self) -> None:
        """Load what fitting needs (a library import) before ``fit`` starts its clock; nothing by default."""

    def predict(self, horizon: int) -> np.ndarray:
        """Predict the next ``horizon`` values after the fitted series (clipped at 0)."""
        if not self._fitted:
            raise ForecastError(f"{self.name}: predict() before fit()")
        if int(horizon) < 1:
            raise ForecastError(f"{self.name}: horizon must be >= 1, got {horizon}")
        out = np.asarray(self._predict(int(horizon)), dtype=np.float64)
        if out.shape != (int(horizon),):
            raise AssertionError(f"{self.name}: predicted shape {out.shape}, expected ({horizon},)")
        # demand is non-negative; a diverging model must not produce negative capacity targets
        return np.clip(np.nan_to_num(out, nan=0.0, posinf=np.finfo(float).max), 0.0, None)

    @abstractmethod
    def _fit(self, y: np.ndarray) -> None: ...

    @abstractmethod
    def _predict(self, horizon: int) -> np.ndarray: ...

    def __repr__(self) -> str:  # pragma: no cover - cosmetic
        return f"{type(self).__name__}()"
