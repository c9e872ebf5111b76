"""Instance-hours: the exact billed integral and SageServe's fixed-bin maxima.

*Billed* states are the ones an instance costs money in: held by the fleet, from the request to
the release (``BILLED_STATES``). A pooled instance is lent out as spot capacity (SageServe) and
a released one is gone, so neither is billed. ``servesim.fleet.lifecycle.BILLED`` is built
from this tuple.

Two readings of "instance-hours":

- **exact** (:func:`billed_hours`, :func:`step_integral_hours`): the integral of the number of
  billed instances over time, as the fleet's ledger books it (``instance_hours.parquet``).
- **binned maxima** (:func:`binned_max`, :func:`binned_max_hours`): SageServe's "area under the
  curve": cut time into fixed bins (``bin_s``, default 15 min), take the largest instance count
  seen in each bin, and add up ``max x bin width``. The count is a step function (a sample's value
  holds until the next sample), so a bin's maximum includes the value carried in at its start.
  Every bin from the first sample's to the last sample's counts in full; with ``end_s``, samples
  at or after it are left out (the fleet's closing sample at the end would add a bin).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

BILLED_STATES: tuple[str, ...] = ("requested", "provisioning", "loading", "converting", "ready", "draining")
#: SageServe's bin (J §7, "instance-hours = sum over 15-min bins of the max instance count / 4")
BIN_S = 900.0
#: coarsest sampling the binned-maxima reading accepts: a bin's maximum is read from the samples,
#: so sparse samples miss short peaks (Reactive's scale-ups last minutes)
MAX_SAMPLE_S = 10.0


def billed_hours(hours: pd.DataFrame) -> float:
    """Billed instance-hours of a ledger table (columns ``state``, ``hours``)."""
    return float(hours.loc[hours["state"].isin(BILLED_STATES), "hours"].sum())


def billed_count(timeseries: pd.DataFrame) -> pd.Series:
    """Billed instances per timeseries row: the sum of its ``n_<state>`` columns over
    ``BILLED_STATES`` (a state with no column contributes 0)."""
    cols = [f"n_{s}" for s in BILLED_STATES if f"n_{s}" in timeseries]
    return timeseries[cols].sum(axis=1) if cols else pd.Series(0, index=timeseries.index)


def _sorted(times, values) -> tuple[np.ndarray, np.ndarray]:
    t = np.asarray(times, dtype=np.float64)
    v = np.asarray(values, dtype=np.float64)
    if t.shape != v.shape or t.ndim != 1:
        raise ValueError(f"times and values must be 1-D of one length, got {t.shape} and {v.shape}")
    if len(t) and np.unique(t).size != len(t):
        raise ValueError("times repeat: add up the counts per time first (one value per time)")
    o = np.argsort(t, kind="stable")
    return t[o], v[o]


def step_integral_hours(times, values, end_s: float) -> float:
    """Exact integral of a step function (``values[i]`` from ``times[i]`` to the next time,
    the last until ``end_s``) in hours."""
    t, v = _sorted(times, values)
    if not len(t):
        return 0.0
    if end_s < t[-1]:
        raise ValueError(f"end_s={end_s} is before the last time {t[-1]}")
    return float((v * np.diff(np.append(t, end_s))).sum() / 3600.0)


def binned_max(times, values, bin_s: float = BIN_S, end_s: float | None = None) -> pd.Series:
    """Largest value of a step function in each fixed bin ``[k*bin_s, (k+1)*bin_s)``, indexed by
    the bin number k, from the first sample's bin to the last's (samples before ``end_s``).
    Integer counts stay integers."""
    if not bin_s > 0:
        raise ValueError(f"bin_s must be positive, got {bin_s!r}")
    t, v = _sorted(times, values)
    if end_s is not None:
        t, v = t[t < end_s], v[t < end_s]
    if not len(t):
        return pd.Series([], dtype=np.float64)
    b = np.floor(t / bin_s).astype(np.int64)
    bins = np.arange(b[0], b[-1] + 1)
    mx = np.full(len(bins), -np.inf)
    np.maximum.at(mx, b - b[0], v)
    carried = np.searchsorted(t, bins * bin_s, side="right") - 1  # the sample in force at each bin start
    has = carried >= 0
    mx[has] = np.maximum(mx[has], v[carried[has]])
    return pd.Series(mx.astype(_dtype(values)), index=pd.Index(bins, name="bin"))


def _dtype(values) -> np.dtype:
    d = np.asarray(values).dtype
    return d if np.issubdtype(d, np.integer) else np.dtype(np.float64)


def binned_max_hours(times, values, bin_s: float = BIN_S, end_s: float | None = None) -> float:
    """SageServe's instance-hours: the sum over bins of the bin's maximum times ``bin_s``, in hours."""
    return float(binned_max(times, values, bin_s, end_s).sum() * bin_s / 3600.0)


def binned_max_by(frame: pd.DataFrame, value: str, by: str | list[str], bin_s: float = BIN_S,
                  time: str = "time_s", end_s: float | None = None) -> pd.Series:
    """Per bin, the sum over the groups ``by`` of each group's bin maximum (SageServe's figures:
    each endpoint's maximum, summed over endpoints)."""
    parts = [binned_max(g[time], g[value], bin_s, end_s) for _, g in frame.groupby(by, sort=True, observed=True)]
    if not parts:
        return pd.Series([], dtype=np.float64)
    return pd.concat(parts, axis=1).fillna(0).astype(_dtype(frame[value])).sum(axis=1).sort_index()


def instance_hours(hours: pd.DataFrame, timeseries: pd.DataFrame | None = None,
                   bin_s: float = BIN_S, end_s: float | None = None) -> dict:
    """The ``instance_hours`` part of a run summary from the ledger table (``model``, ``region``,
    ``state``, ``hours``) and, when given, the fleet timeseries (``time_s``, ``model``,
    ``region``, ``n_<state>``) for the binned reading (per endpoint, summed)."""
    billed = hours[hours["state"].isin(BILLED_STATES)]
    per_ep = billed.groupby(["model", "region"], sort=True, observed=True)["hours"].sum()
    out = {
        "billed": float(billed["hours"].sum()),
        "by_state": {str(s): float(v) for s, v in hours.groupby("state", sort=True, observed=True)["hours"].sum().items()},
        "by_endpoint": {f"{m}@{r}": float(v) for (m, r), v in per_ep.items()},
    }
    if timeseries is not None and len(timeseries):
        ts = timeseries[["time_s", "model", "region"]].assign(billed=billed_count(timeseries).to_numpy())
        out["binned_max"] = {"bin_s": float(bin_s),
                             "billed": float(binned_max_by(ts, "billed", ["model", "region"], bin_s, end_s=end_s).sum()
                                             * bin_s / 3600.0)}
    return out


def billed_binned_max_hours(timeseries: pd.DataFrame, by: str | list[str] = ("model", "region"),
                            bin_s: float = BIN_S, end_s: float | None = None,
                            max_sample_s: float | None = MAX_SAMPLE_S, time: str = "time_s") -> float:
    """SageServe's instance-hours of a fleet timeseries (``time_s``, the ``by`` columns,
    ``n_<state>``): billed instances summed per (time, ``by``) group, each group's 15-min bin
    maxima summed over groups and bins, x ``bin_s`` in hours. Samples further apart than
    ``max_sample_s`` are an error (the bin maxima would be under-counted); None skips the check."""
    by = [by] if isinstance(by, str) else list(by)
    ts = timeseries[[time, *by]].assign(billed=billed_count(timeseries).to_numpy())
    ts = ts.groupby([time, *by], as_index=False, observed=True, sort=True)["billed"].sum()
    t = np.unique(ts[time].to_numpy(dtype=np.float64))
    if max_sample_s is not None and len(t) > 1 and np.diff(t).max() > max_sample_s + 1e-9:
        raise ValueError(f"timeseries samples up to {np.diff(t).max():g} s apart (at most {max_sample_s:g} s for "
                         f"{bin_s:g}-s bin maxima): re-run with output.sample_s <= {max_sample_s:g}")
    return float(binned_max_by(ts, "billed", by, bin_s, time=time, end_s=end_s).sum() * bin_s / 3600.0)


def instance_hours_readings(hours: pd.DataFrame, timeseries: pd.DataFrame, by: str | list[str] = ("model", "region"),
                            bin_s: float = BIN_S, end_s: float | None = None,
                            max_sample_s: float | None = MAX_SAMPLE_S) -> dict[str, float]:
    """Both readings of one selection's instance-hours: ``exact`` (the ledger's billed integral)
    and ``binned_max`` (SageServe's: :func:`billed_binned_max_hours` of the timeseries)."""
    return {"exact": billed_hours(hours),
            "binned_max": billed_binned_max_hours(timeseries, by, bin_s, end_s, max_sample_s)}
