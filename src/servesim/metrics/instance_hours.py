"""Instance-hours: the exact billed integral and SageServe's fixed-bin maxima.

*Billed* states are the ones an instance costs money in: held by the fleet, from the request to
the release (``BILLED_STATES``). A pooled instance is lent out as spot capacity (SageServe) and
a released one is gone, so neither is billed. ``servesim.fleet.lifecycle.BILLED`` is built
from this tuple.

Three named readings of "instance-hours" (``IH_READINGS``; :func:`billed_instance_hours` takes
one as ``ih_reading``, :func:`instance_hours_readings` gives all three):

- **authors** (:func:`authors_binned_max`, :func:`billed_authors_hours`; the default): the
  paper's own definition through the authors' plotting scripts (kjain1810/SageServe
  ``plotting_scripts/Figures9-10.py`` for Figs 11 and 12, ``Figure4.py`` for Fig 8): at every
  2-s tick of their simulator's logs, the instances of the selection counted over *all* its
  regions (and pools) together; each 15-min bin's maximum of that total; the maxima summed / 4.
  The per-region figure does the same per region (select one region). Our timeseries is sampled
  every 10 s, so the ticks are rebuilt exactly from the fleet's transition log
  (``lifecycle.parquet``, :func:`billed_events`): the billed count only changes at a logged
  transition, so the count at every 2-s tick is known, not interpolated. Without the log the
  rule runs on the 10-s samples, which gives the same bin maxima when the count rises only at
  sample times (a fall between samples cannot raise a bin's maximum:
  ``tests/metrics/test_instance_hours.py``), and may read lower otherwise.
- **sum_of_region_maxima** (:func:`billed_binned_max_hours`, :func:`binned_max_by`): each
  endpoint's (model-region's) own 15-min bin maximum of the 10-s samples, summed over endpoints
  and bins. A sum of maxima is never below the maximum of the sum, so where regions peak at
  different times it reads higher than the authors'; for one endpoint the two agree up to the
  sampling. (This package's reading before issue 30; a run summary's ``binned_max`` block.)
- **exact** (:func:`billed_hours`, :func:`step_integral_hours`): the integral of the number of
  billed instances over time, as the fleet's ledger books it (``instance_hours.parquet``).

The binned maxima (:func:`binned_max`, :func:`binned_max_hours`): cut time into fixed bins
(``bin_s``, default 15 min), take the largest instance count seen in each bin, and add up
``max x bin width``. The count is a step function (a sample's value holds until the next
sample), so a bin's maximum includes the value carried in at its start. Every bin from the
first sample's to the last sample's counts in full; with ``end_s``, samples at or after it are
left out (the fleet's closing sample at the end would add a bin).
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
#: the tick of the authors' simulator logs, at which their plotting scripts count instances
AUTHORS_TICK_S = 2.0
#: the named readings of instance-hours (module doc); "authors" is the default
IH_READINGS: tuple[str, ...] = ("authors", "sum_of_region_maxima", "exact")
#: what each reading is, for notebooks and metrics.json
IH_READING_LABELS: dict[str, str] = {
    "authors": "authors' rule (plotting_scripts/Figures9-10.py): billed instances totalled over the "
               "selection's regions at each 2-s tick, each 15-min bin's maximum of the total, summed / 4",
    "sum_of_region_maxima": "each endpoint's (model-region's) 15-min bin maximum of the 10-s samples, summed "
                            "over endpoints and bins / 4 (>= the authors' where regions peak at different times)",
    "exact": "the integral of the billed instance count over time (the fleet ledger)",
}


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
    """Per bin, the sum over the groups ``by`` of each group's bin maximum (the
    ``sum_of_region_maxima`` reading: each endpoint's maximum, summed over endpoints; not the
    authors', which take the maximum of the total: :func:`authors_binned_max`)."""
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
    """The ``sum_of_region_maxima`` instance-hours of a fleet timeseries (``time_s``, the ``by``
    columns, ``n_<state>``): billed instances summed per (time, ``by``) group, each group's 15-min
    bin maxima summed over groups and bins, x ``bin_s`` in hours. Samples further apart than
    ``max_sample_s`` are an error (the bin maxima would be under-counted); None skips the check."""
    by = [by] if isinstance(by, str) else list(by)
    ts = timeseries[[time, *by]].assign(billed=billed_count(timeseries).to_numpy())
    ts = ts.groupby([time, *by], as_index=False, observed=True, sort=True)["billed"].sum()
    t = np.unique(ts[time].to_numpy(dtype=np.float64))
    if max_sample_s is not None and len(t) > 1 and np.diff(t).max() > max_sample_s + 1e-9:
        raise ValueError(f"timeseries samples up to {np.diff(t).max():g} s apart (at most {max_sample_s:g} s for "
                         f"{bin_s:g}-s bin maxima): re-run with output.sample_s <= {max_sample_s:g}")
    return float(binned_max_by(ts, "billed", by, bin_s, time=time, end_s=end_s).sum() * bin_s / 3600.0)


def authors_binned_max(frame: pd.DataFrame, value: str, bin_s: float = BIN_S, time: str = "time_s",
                       end_s: float | None = None) -> pd.Series:
    """The authors' rule on sampled counts: at each sample time the total of ``value`` over all
    the frame's rows (every region, pool and model in it), then each fixed bin's maximum of that
    total, indexed by bin number ``floor(time / bin_s)``. Only the samples inside a bin count (the
    authors' rule: no value carried in; a bin without samples is absent, i.e. 0). Samples at or
    after ``end_s`` are left out."""
    if not bin_s > 0:
        raise ValueError(f"bin_s must be positive, got {bin_s!r}")
    tot = frame.groupby(time, sort=True)[value].sum()
    if end_s is not None:
        tot = tot[tot.index < end_s]
    if not len(tot):
        return pd.Series([], dtype=np.float64)
    b = np.floor(tot.index.to_numpy(dtype=np.float64) / bin_s).astype(np.int64)
    return tot.groupby(pd.Index(b, name="bin"), sort=True).max().astype(_dtype(frame[value]))


def billed_events(lifecycle: pd.DataFrame, time: str = "time_s") -> pd.DataFrame:
    """The changes of each endpoint's billed count from a fleet's transition log (``time_s``,
    ``instance``, ``model``, ``region``, ``from_state``, ``to_state``; ``lifecycle.parquet``):
    one row per change, ``time_s``, ``model``, ``region``, ``delta`` (+1 when an instance enters
    a billed state at that endpoint, -1 when it leaves one). An instance re-labelled with another
    model leaves the endpoint of its previous row. Rows keep the log's order (a stable sort by
    time), so a frame selected from it (by model or region, as the timeseries is) sums to the
    selection's billed count after each instant."""
    log = lifecycle.reset_index(drop=True)
    log = log.iloc[np.argsort(log[time].to_numpy(dtype=np.float64), kind="stable")].reset_index(drop=True)
    billed = set(BILLED_STATES)
    prev = log.groupby("instance", sort=False, observed=True)[["model", "region"]].shift(1)
    prev_model = prev["model"].astype(object).where(prev["model"].notna(), log["model"].astype(object))
    prev_region = prev["region"].astype(object).where(prev["region"].notna(), log["region"].astype(object))
    t = log[time].to_numpy(dtype=np.float64)
    leave = log["from_state"].isin(billed).to_numpy()
    enter = log["to_state"].isin(billed).to_numpy()
    out = pd.concat([
        pd.DataFrame({time: t[leave], "model": prev_model.to_numpy()[leave], "region": prev_region.to_numpy()[leave],
                      "delta": -1, "_k": np.flatnonzero(leave) * 2}),
        pd.DataFrame({time: t[enter], "model": log["model"].astype(object).to_numpy()[enter],
                      "region": log["region"].astype(object).to_numpy()[enter], "delta": 1,
                      "_k": np.flatnonzero(enter) * 2 + 1}),
    ], ignore_index=True)
    out = out.sort_values("_k", kind="stable").drop(columns="_k").reset_index(drop=True)
    return out.astype({"delta": np.int64})


def count_at(events: pd.DataFrame, times, time: str = "time_s") -> np.ndarray:
    """The total billed count of ``events`` (:func:`billed_events`, any selection of its rows)
    at each of ``times``: the sum of the deltas at or before it (after every transition of that
    instant, as the fleet's sampler reads it)."""
    t = events[time].to_numpy(dtype=np.float64)
    o = np.argsort(t, kind="stable")
    cum = np.concatenate([[0], np.cumsum(events["delta"].to_numpy()[o])])
    return cum[np.searchsorted(t[o], np.asarray(times, dtype=np.float64), side="right")]


def authors_ticks(timeseries: pd.DataFrame, events: pd.DataFrame, tick_s: float = AUTHORS_TICK_S,
                  time: str = "time_s") -> pd.DataFrame:
    """The selection's billed total at every ``tick_s`` tick over the timeseries' span (from its
    first sample to its last, both included): columns ``time``, ``billed``. ``events`` must be
    selected as the timeseries is: the two are compared at the timeseries' own sample times and
    a disagreement is an error."""
    if not tick_s > 0:
        raise ValueError(f"tick_s must be positive, got {tick_s!r}")
    ts = timeseries[[time]].assign(billed=billed_count(timeseries).to_numpy())
    tot = ts.groupby(time, sort=True)["billed"].sum()
    if not len(tot):
        return pd.DataFrame({time: np.array([], dtype=np.float64), "billed": np.array([], dtype=np.int64)})
    got = count_at(events, tot.index, time)
    bad = np.flatnonzero(got != tot.to_numpy())
    if bad.size:
        k = bad[0]
        raise ValueError(f"the transition log and the timeseries disagree at t={tot.index[k]:g} s "
                         f"({got[k]} vs {tot.iloc[k]} billed instances): select both the same way "
                         f"(models mapped alike, the same regions)")
    t0, t1 = float(tot.index[0]), float(tot.index[-1])
    ticks = t0 + tick_s * np.arange(int(np.floor((t1 - t0) / tick_s + 1e-9)) + 1)
    return pd.DataFrame({time: ticks, "billed": count_at(events, ticks, time)})


def billed_authors_bins(timeseries: pd.DataFrame, events: pd.DataFrame | None = None, bin_s: float = BIN_S,
                        end_s: float | None = None, max_sample_s: float | None = MAX_SAMPLE_S,
                        tick_s: float = AUTHORS_TICK_S, time: str = "time_s") -> pd.Series:
    """The authors' per-bin maxima of a selection's billed total (the curve of their Figs 8, 11):
    at ``tick_s`` ticks rebuilt from ``events`` (:func:`billed_events` of the run's
    ``lifecycle.parquet``, selected as the timeseries is), or, without events, at the
    timeseries' own samples (then at most ``max_sample_s`` apart; None skips the check)."""
    if events is not None:
        frame = authors_ticks(timeseries, events, tick_s, time)
    else:
        frame = timeseries[[time]].assign(billed=billed_count(timeseries).to_numpy())
        t = np.unique(frame[time].to_numpy(dtype=np.float64))
        if max_sample_s is not None and len(t) > 1 and np.diff(t).max() > max_sample_s + 1e-9:
            raise ValueError(f"timeseries samples up to {np.diff(t).max():g} s apart (at most {max_sample_s:g} s for "
                             f"{bin_s:g}-s bin maxima): pass the run's transition log, or sample more often")
    return authors_binned_max(frame, "billed", bin_s, time, end_s)


def billed_authors_hours(timeseries: pd.DataFrame, events: pd.DataFrame | None = None, bin_s: float = BIN_S,
                         end_s: float | None = None, max_sample_s: float | None = MAX_SAMPLE_S,
                         tick_s: float = AUTHORS_TICK_S, time: str = "time_s") -> float:
    """The ``authors`` instance-hours of a selection: :func:`billed_authors_bins` summed x
    ``bin_s`` in hours (bins of 15 min: the sum / 4)."""
    return float(billed_authors_bins(timeseries, events, bin_s, end_s, max_sample_s, tick_s, time).sum()
                 * bin_s / 3600.0)


def billed_instance_hours(hours: pd.DataFrame | None, timeseries: pd.DataFrame | None, ih_reading: str = "authors",
                          events: pd.DataFrame | None = None, by: str | list[str] = ("model", "region"),
                          bin_s: float = BIN_S, end_s: float | None = None,
                          max_sample_s: float | None = MAX_SAMPLE_S, tick_s: float = AUTHORS_TICK_S) -> float:
    """One selection's instance-hours in the reading ``ih_reading`` (``IH_READINGS``):
    ``"authors"`` (the default, the paper's own definition through its plotting scripts:
    :func:`billed_authors_hours` of the timeseries and the transition ``events``),
    ``"sum_of_region_maxima"`` (:func:`billed_binned_max_hours`, each ``by`` group's maxima summed)
    or ``"exact"`` (:func:`billed_hours` of the ledger table ``hours``)."""
    if ih_reading == "authors":
        return billed_authors_hours(timeseries, events, bin_s, end_s, max_sample_s, tick_s)
    if ih_reading == "sum_of_region_maxima":
        return billed_binned_max_hours(timeseries, by, bin_s, end_s, max_sample_s)
    if ih_reading == "exact":
        return billed_hours(hours)
    raise ValueError(f"ih_reading must be one of {IH_READINGS}, got {ih_reading!r}")


def instance_hours_readings(hours: pd.DataFrame, timeseries: pd.DataFrame, events: pd.DataFrame | None = None,
                            by: str | list[str] = ("model", "region"), bin_s: float = BIN_S,
                            end_s: float | None = None, max_sample_s: float | None = MAX_SAMPLE_S,
                            tick_s: float = AUTHORS_TICK_S) -> dict[str, float]:
    """All three readings of one selection's instance-hours (``IH_READINGS``): ``authors``,
    ``sum_of_region_maxima`` and ``exact`` (:func:`billed_instance_hours`)."""
    return {r: billed_instance_hours(hours, timeseries, r, events, by, bin_s, end_s, max_sample_s, tick_s)
            for r in IH_READINGS}
