"""Workload statistics the generators are calibrated against (and the notebooks tabulate)."""

from __future__ import annotations

import numpy as np
import pandas as pd


def counts_per_bin(arrival_s: np.ndarray, bin_s: float, horizon_s: float | None = None) -> np.ndarray:
    """Requests per bin of ``bin_s`` seconds from 0 to ``horizon_s`` (default: the last arrival)."""
    horizon_s = horizon_s if horizon_s is not None else (float(arrival_s.max()) if len(arrival_s) else 0.0)
    n = max(1, int(np.ceil(horizon_s / bin_s)))
    return np.bincount(np.minimum((arrival_s // bin_s).astype(np.int64), n - 1), minlength=n)


def sums_per_bin(arrival_s: np.ndarray, values: np.ndarray, bin_s: float, horizon_s: float) -> np.ndarray:
    n = max(1, int(np.ceil(horizon_s / bin_s)))
    return np.bincount(np.minimum((arrival_s // bin_s).astype(np.int64), n - 1), weights=values, minlength=n)


def periodicity(counts: np.ndarray, period_bins: int) -> float:
    """Periodicity score: autocorrelation of a count series at a lag of one period (a day).

    SageServe (J §3) reports a periodicity score "indicating a strong positive autocorrelation
    between daily traffic patterns" without a formula; we use the lag-1-day sample ACF of hourly
    counts (1 = identical days, ~0 = no daily pattern).
    """
    x = np.asarray(counts, dtype=np.float64)
    if x.size <= period_bins:
        return float("nan")
    x = x - x.mean()
    den = float((x * x).sum())
    return float((x[:-period_bins] * x[period_bins:]).sum() / den) if den > 0 else float("nan")


def share(df: pd.DataFrame, col: str) -> dict[str, float]:
    """Fraction of requests per value of ``col``."""
    v = df[col].value_counts(normalize=True, sort=False)
    return {str(k): float(x) for k, x in v.items() if x > 0}


def proportions_cv(p) -> float:
    """Population std / mean of a vector of proportions (OServe Table 1's CV)."""
    p = np.asarray(p, dtype=np.float64)
    return float(p.std() / p.mean())


def temporal_cv(props: np.ndarray) -> float:
    """OServe Table 2's CV: per type, population CV of its proportion across spans; averaged over types.
    ``props`` has shape (spans, types)."""
    props = np.asarray(props, dtype=np.float64)
    return float(np.mean(props.std(axis=0) / props.mean(axis=0)))
