"""Fixed-bin timelines of a per-request value and the comparisons figures quote on them.

- :func:`binned_mean`: the mean of a per-request value (e.g. normalised latency) over the
  requests that *arrived* in each fixed bin (PreServe Fig 8: "mean normalized latency aggregated
  over 5-minute intervals"); a bin without a value is NaN.
- :func:`saving_pct` / :func:`reduction_pct`: ``100 (1 - x / reference)``.
"""

from __future__ import annotations

import numpy as np
import pandas as pd


def binned_mean(times, values, bin_s: float, t0: float, t1: float) -> pd.DataFrame:
    """Per bin [t0 + k bin_s, t0 + (k+1) bin_s) within [t0, t1): ``bin_start_s``, ``n`` (values
    counted) and ``mean`` (NaN where n = 0). NaN values (unfinished requests) are left out."""
    if not bin_s > 0 or not t1 > t0:
        raise ValueError(f"binned_mean: need bin_s > 0 and t1 > t0, got bin_s={bin_s}, [{t0}, {t1})")
    t = np.asarray(times, dtype=np.float64)
    v = np.asarray(values, dtype=np.float64)
    if t.shape != v.shape:
        raise ValueError(f"binned_mean: times {t.shape} and values {v.shape} differ")
    nb = int(np.ceil((t1 - t0) / bin_s - 1e-9))
    ok = (t >= t0) & (t < t1) & ~np.isnan(v)
    k = np.minimum(((t[ok] - t0) // bin_s).astype(np.int64), nb - 1)
    n = np.bincount(k, minlength=nb)
    s = np.bincount(k, weights=v[ok], minlength=nb)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.where(n > 0, s / np.maximum(n, 1), np.nan)
    return pd.DataFrame({"bin_start_s": t0 + bin_s * np.arange(nb), "n": n, "mean": mean})


def saving_pct(x: float, reference: float) -> float:
    """``100 (1 - x / reference)``: how much less ``x`` is than ``reference``, in percent."""
    if not reference > 0:
        raise ValueError(f"saving_pct: reference must be > 0, got {reference}")
    return 100.0 * (1.0 - float(x) / float(reference))


reduction_pct = saving_pct

__all__ = ["binned_mean", "reduction_pct", "saving_pct"]
