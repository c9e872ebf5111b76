"""ARIMA with statsmodels (SageServe's load predictor, journal §6.3).

Default order (3, 1, 2) is what the authors' notebooks fit (the paper names no order);
``order="aic"`` picks (p, d, q) from a small grid by AIC instead.

A fit can fail numerically on some windows (statsmodels' stationary initialisation solves a
Lyapunov equation that is singular when the optimiser steps onto a unit root: "LU decomposition
error"). An hourly scaler cannot stop there, so a fixed order falls back down `FALLBACK_ORDERS`
and, if all fail, to the last value (the random walk's forecast); ``fallback`` says which, and
callers log it.
"""

from __future__ import annotations

import itertools
import warnings

import numpy as np

from .base import Forecaster, ForecastError, as_series

DEFAULT_ORDER = (3, 1, 2)
AIC_GRID = {"p": (0, 1, 2, 3), "d": (1,), "q": (0, 1, 2)}
#: simpler orders tried, in turn, when the requested one cannot be fitted
FALLBACK_ORDERS = ((1, 1, 1), (0, 1, 1))
#: what a numerically failed fit raises
FIT_ERRORS = (ValueError, np.linalg.LinAlgError)


def _arima_cls():
    from statsmodels.tsa.arima.model import ARIMA

    return ARIMA


def _fit_arima(y: np.ndarray, order):
    ARIMA = _arima_cls()
    with warnings.catch_warnings():
        # short windows routinely trigger convergence / non-invertibility warnings;
        # the fit is still the MLE statsmodels found, which is what the authors used
        warnings.simplefilter("ignore")
        return ARIMA(y, order=tuple(order)).fit()


class Arima(Forecaster):
    """ARIMA(p, d, q) on the raw series; ``order="aic"`` searches ``AIC_GRID``.

    The series is divided by its mean before fitting (and predictions multiplied back):
    tokens per minute are ~1e5-1e6 and the optimiser is better behaved on O(1) values.
    """

    name = "arima"

    def __init__(self, order: tuple[int, int, int] | str = DEFAULT_ORDER) -> None:
        super().__init__()
        if isinstance(order, str):
            if order != "aic":
                raise ForecastError(f"arima: order must be a (p, d, q) tuple or 'aic', got {order!r}")
        elif len(order) != 3 or any(int(o) < 0 for o in order):
            raise ForecastError(f"arima: bad order {order!r}")
        self.order = order
        self.min_train = 8
        self.chosen_order: tuple[int, int, int] | None = None
        #: None, or what the last fit fell back to and why (the requested order failed)
        self.fallback: str | None = None
        self._last = 0.0

    def _prepare(self) -> None:
        # statsmodels at the first fit, outside its clock: a forecast read from the cache
        # (`forecast.cache`) never imports it (~1 s of a SageServe job's start on this host)
        _arima_cls()

    def _fit(self, y: np.ndarray) -> None:
        self._scale = float(np.mean(np.abs(y))) or 1.0
        self.fallback = None
        self._last = float(y[-1])
        z = y / self._scale
        if self.order == "aic":
            best = None
            for p, d, q in itertools.product(AIC_GRID["p"], AIC_GRID["d"], AIC_GRID["q"]):
                try:
                    res = _fit_arima(z, (p, d, q))
                except FIT_ERRORS:
                    continue
                if np.isfinite(res.aic) and (best is None or res.aic < best[0]):
                    best = (res.aic, (p, d, q), res)
            if best is None:
                raise ForecastError("arima: no order in the AIC grid could be fitted")
            _, self.chosen_order, self._res = best
        else:
            self._res, self.chosen_order, self.fallback = fit_with_fallback(z, tuple(int(o) for o in self.order))

    def _predict(self, horizon: int) -> np.ndarray:
        if self._res is None:
            return np.full(horizon, self._last)
        return np.asarray(self._res.forecast(horizon)) * self._scale


def fit_with_fallback(z: np.ndarray, order: tuple[int, int, int]):
    """Fit ``order``, else each of `FALLBACK_ORDERS` in turn: (results or None, the order
    fitted or None, None or a description of the fallback and the errors that caused it)."""
    errors = []
    for o in (order, *(f for f in FALLBACK_ORDERS if f != order)):
        try:
            res = _fit_arima(z, o)
        except FIT_ERRORS as e:
            errors.append(f"{o}: {type(e).__name__}: {e}")
            continue
        return res, o, (f"ARIMA{o} ({'; '.join(errors)})" if errors else None)
    return None, None, f"last value ({'; '.join(errors)})"


def insample_one_step(series, order: tuple[int, int, int] = DEFAULT_ORDER) -> np.ndarray:
    """The authors' variant (spec §1.4 R): fit once on the *entire* series and return the
    in-sample one-step-ahead predictions (``results.predict()``), aligned with ``series``.

    Each value uses the parameters estimated from the whole series, future included, so it
    leaks information; it is offered only to reproduce the paper's numbers.
    """
    y = as_series(series, 8, "insample_one_step")
    scale = float(np.mean(np.abs(y))) or 1.0
    res, _, _ = fit_with_fallback(y / scale, tuple(order))
    if res is None:  # the random walk's one-step prediction: the previous value
        return np.clip(np.concatenate([y[:1], y[:-1]]), 0.0, None)
    return np.clip(np.asarray(res.predict()) * scale, 0.0, None)
