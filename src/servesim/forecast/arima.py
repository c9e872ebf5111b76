"""ARIMA with statsmodels (SageServe's load predictor, journal §6.3).

Default order (3, 1, 2) is what the authors' notebooks fit (the paper names no order);
``order="aic"`` picks (p, d, q) from a small grid by AIC instead.
"""

from __future__ import annotations

import itertools
import warnings

import numpy as np

from .base import Forecaster, ForecastError, as_series

DEFAULT_ORDER = (3, 1, 2)
AIC_GRID = {"p": (0, 1, 2, 3), "d": (1,), "q": (0, 1, 2)}


def _fit_arima(y: np.ndarray, order):
    from statsmodels.tsa.arima.model import ARIMA

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

    def _fit(self, y: np.ndarray) -> None:
        self._scale = float(np.mean(np.abs(y))) or 1.0
        z = y / self._scale
        if self.order == "aic":
            best = None
            for p, d, q in itertools.product(AIC_GRID["p"], AIC_GRID["d"], AIC_GRID["q"]):
                try:
                    res = _fit_arima(z, (p, d, q))
                except (ValueError, np.linalg.LinAlgError):
                    continue
                if np.isfinite(res.aic) and (best is None or res.aic < best[0]):
                    best = (res.aic, (p, d, q), res)
            if best is None:
                raise ForecastError("arima: no order in the AIC grid could be fitted")
            _, self.chosen_order, self._res = best
        else:
            self.chosen_order = tuple(int(o) for o in self.order)
            self._res = _fit_arima(z, self.chosen_order)

    def _predict(self, horizon: int) -> np.ndarray:
        return np.asarray(self._res.forecast(horizon)) * self._scale


def insample_one_step(series, order: tuple[int, int, int] = DEFAULT_ORDER) -> np.ndarray:
    """The authors' variant (spec §1.4 R): fit once on the *entire* series and return the
    in-sample one-step-ahead predictions (``results.predict()``), aligned with ``series``.

    Each value uses the parameters estimated from the whole series, future included, so it
    leaks information; it is offered only to reproduce the paper's numbers.
    """
    y = as_series(series, 8, "insample_one_step")
    scale = float(np.mean(np.abs(y))) or 1.0
    res = _fit_arima(y / scale, order)
    return np.clip(np.asarray(res.predict()) * scale, 0.0, None)
