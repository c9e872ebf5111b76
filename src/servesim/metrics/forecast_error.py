"""Forecast error measures for per-type count forecasts (OServe §5.1, Fig 7)."""

from __future__ import annotations

import numpy as np


def rrmse(actual, predicted) -> np.ndarray:
    """Relative RMSE per column, in percent: 100 * sqrt(mean((p - a)^2)) / mean(a).

    OServe reports an "RRMSE" without defining it (spec oserve §1.6 [A]); this is the common
    reading (RMSE over the mean of the actuals). 1-D input is one column. A column whose actuals
    average zero gives NaN."""
    a, p = np.asarray(actual, float), np.asarray(predicted, float)
    if a.shape != p.shape or a.size == 0:
        raise ValueError(f"actual {a.shape} and predicted {p.shape} must be equal and non-empty")
    if a.ndim == 1:
        a, p = a[:, None], p[:, None]
    rmse = np.sqrt(np.mean((p - a) ** 2, axis=0))
    mean = a.mean(axis=0)
    return np.divide(100.0 * rmse, mean, out=np.full(mean.shape, np.nan), where=mean > 0)


def mean_rrmse(actual, predicted) -> float:
    """RRMSE averaged over the columns (types), in percent (the paper's "average RRMSE")."""
    return float(np.nanmean(rrmse(actual, predicted)))
