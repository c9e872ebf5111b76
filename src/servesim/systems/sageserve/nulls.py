"""Null fleets for SageServe's claims: fleets without the paper's idea whose instance count follows
from a strategy run's own timeseries, so they need no simulation of their own.

A claim's null (workflow/claims/README.md, "Nulls") is the simplest system without the paper's
idea, run through the same notebook and metric code. For instance-hour claims three fleets that
never scale are such systems, and their instance count is fixed before any request arrives:

- ``"peak"``: every endpoint held, the whole window, at the largest billed count the run reached
  there after its first ``settle_s`` (a static fleet sized for the peak; run on Reactive's
  timeseries it is the fleet sized for the load's peak as Reactive's scaling found it: Reactive
  starts at the region pool's 20 instances per model and sheds them in its first minutes, so the
  settle period, by default the first 15-minute bin, keeps that start out of the peak);
- ``"start"``: every endpoint held at its billed count at the run's first sample (a strategy's
  starting pools without its scaling: Chiron's 10 / 5 / 5);
- an integer ``n``: every endpoint held at ``n`` instances (a deployment held at its minimum).

:func:`held_fleet` returns a timeseries with the run's own sample times and endpoints and the
held count as ``n_ready``, so a notebook passes it to the same instance-hour function as the runs
(e.g. ``servesim.metrics.billed_instance_hours``). Only instance counts follow: the latency of
a held fleet is not simulated, so these nulls serve instance-hour (and scale-up) claims only.
"""

from __future__ import annotations

import pandas as pd

from ...metrics import billed_count

LEVELS = ("peak", "start")
#: the start of a run left out of its peak: the first 15-minute bin (Reactive's scale-in from its
#: starting pool of 20 instances per endpoint takes a few minutes)
SETTLE_S = 900.0


def held_fleet(timeseries: pd.DataFrame, level: str | int = "peak", by: tuple[str, ...] = ("model", "region"),
               time: str = "time_s", settle_s: float = SETTLE_S) -> pd.DataFrame:
    """The timeseries of a fleet that holds every endpoint (a ``by`` group) at one count: the
    group's largest billed count from ``settle_s`` after its first sample on (``"peak"``; the
    whole series where it is shorter), its count at the group's first sample (``"start"``), or
    the integer ``level``. Several rows of one group at one time (pools of one
    model after the caller mapped them to their base model) are summed first. Columns: ``time``,
    the ``by`` columns, ``n_ready``."""
    by = list(by)
    if isinstance(level, bool) or not (level in LEVELS or (isinstance(level, int) and level >= 0)):
        raise ValueError(f"level must be one of {LEVELS} or a count >= 0, got {level!r}")
    ts = timeseries[[time, *by]].assign(billed=billed_count(timeseries).to_numpy())
    ts = ts.groupby([time, *by], as_index=False, observed=True, sort=True)["billed"].sum()
    g = ts.groupby(by, observed=True, sort=False)["billed"]
    if settle_s < 0:
        raise ValueError(f"settle_s must be >= 0, got {settle_s!r}")
    if level == "peak":
        t0 = ts.groupby(by, observed=True, sort=False)[time].transform("first")
        settled = ts["billed"].where(ts[time] >= t0 + settle_s)
        held = settled.groupby([ts[c] for c in by], observed=True, sort=False).transform("max")
        held = held.fillna(g.transform("max"))  # a series shorter than the settle period: its own maximum
    elif level == "start":
        held = g.transform("first")  # rows are sorted by time within each group
    else:
        held = pd.Series(int(level), index=ts.index)
    return ts[[time, *by]].assign(n_ready=held.astype("int64").to_numpy())


def savings_pct(hours: float, baseline_hours: float) -> float:
    """``100 * (1 - hours / baseline_hours)``, the notebooks' savings percentage (NaN when the
    baseline is not positive)."""
    return 100.0 * (1.0 - hours / baseline_hours) if baseline_hours > 0 else float("nan")
