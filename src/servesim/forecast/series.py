"""Per-minute demand series from a request table (the forecasters' input).

SageServe forecasts, per (model, region), the IW prompt tokens arriving per minute (the
authors' notebooks bin `prompt_size` by minute); this builds that series with zero fill so
minute ``i`` is always index ``i``.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .base import ForecastError

IW_TIERS = ("IW-F", "IW-N")


def per_minute_demand(df: pd.DataFrame, model: str | None = None, region: str | None = None,
                      tiers: tuple[str, ...] = IW_TIERS, column: str = "prompt_tokens",
                      bin_s: float = 60.0, t0: float = 0.0, t_end: float | None = None) -> np.ndarray:
    """Sum of ``column`` per ``bin_s`` bin over [t0, t_end) for the selected requests.

    ``column="count"`` counts requests instead. Unknown model/region/tier is an error (a typo
    must not silently yield an all-zero series).
    """
    for name, val, col in (("model", model, "model"), ("region", region, "region")):
        if val is not None and not (df[col] == val).any():
            raise ForecastError(f"per_minute_demand: no request has {name}={val!r}; known: {sorted(df[col].unique())}")
    bad = [t for t in tiers if t not in set(df["tier"].unique())]
    if bad:
        raise ForecastError(f"per_minute_demand: no request has tier {bad}")
    m = df["tier"].isin(tiers).to_numpy(dtype=bool, copy=True)
    if model is not None:
        m &= (df["model"] == model).to_numpy()
    if region is not None:
        m &= (df["region"] == region).to_numpy()
    t = df["arrival_s"].to_numpy()[m]
    if t_end is None:
        t_end = float(df["arrival_s"].max()) + 1e-9 if len(df) else t0
    n = int(np.ceil((t_end - t0) / bin_s))
    keep = (t >= t0) & (t < t_end)
    idx = ((t[keep] - t0) // bin_s).astype(np.int64)
    if column == "count":
        w = None
    elif column in df.columns:
        w = df[column].to_numpy()[m][keep].astype(np.float64)
    else:
        raise ForecastError(f"per_minute_demand: unknown column {column!r}")
    return np.bincount(idx, weights=w, minlength=n)[:n].astype(np.float64)
