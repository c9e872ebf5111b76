"""Journal Fig 1 / conference Fig 1: a reactive vs a forecast-aware ("ideal") scaler on a TPS
ramp, computed minute by minute (the paper draws it by hand).

Both scalers add instances of ``per_instance_tps`` capacity that become usable ``lead_min``
minutes after the decision. The reactive scaler decides from the *current* demand exceeding
``trigger_tps`` per instance (one instance per trigger, no new trigger while one is pending);
the ideal scaler decides from a perfect forecast of the *trend* ``lead_min`` minutes ahead
(transient spikes are not forecastable, so it ignores them).
"""

from __future__ import annotations

import numpy as np
import pandas as pd


def ramp_demand(minutes: int = 41, base: float = 7000.0, start_min: float = 12.0, end_min: float = 40.0,
                end_tps: float = 19000.0, spike_min: int | None = 25, spike_tps: float = 2500.0):
    """(trend, demand) per minute: flat ``base``, then a linear ramp to ``end_tps``; plus a one-minute spike."""
    t = np.arange(minutes, dtype=float)
    frac = np.clip((t - start_min) / (end_min - start_min), 0.0, 1.0)
    trend = base + (end_tps - base) * frac
    demand = trend.copy()
    if spike_min is not None:
        demand[spike_min] += spike_tps
    return trend, demand


def reactive(demand: np.ndarray, n0: int, per_instance_tps: float, trigger_tps: float, lead_min: int) -> np.ndarray:
    """Usable instances per minute of a threshold-reactive scaler."""
    n_ready = np.zeros(demand.size, dtype=int)
    ready_at: list[int] = []
    n = n0
    for t in range(demand.size):
        n += sum(1 for r in ready_at if r == t)
        n_ready[t] = n
        pending = any(r > t for r in ready_at)
        if not pending and demand[t] > (n * trigger_tps):
            ready_at.append(t + lead_min)
    return n_ready


def ideal(trend: np.ndarray, n0: int, per_instance_tps: float, lead_min: int) -> np.ndarray:
    """Usable instances of a scaler that forecasts the trend perfectly and triggers ``lead_min`` early."""
    need = np.maximum(np.ceil(trend / per_instance_tps).astype(int), n0)
    return need


def illustrate(n0: int = 2, per_instance_tps: float = 4000.0, lead_min: int = 5,
               conservative_tps: float = 3500.0, **demand_kw) -> tuple[pd.DataFrame, dict]:
    """Per-minute table and summary metrics for the figure."""
    trend, demand = ramp_demand(**demand_kw)
    series = {"ideal": ideal(trend, n0, per_instance_tps, lead_min),
              "reactive": reactive(demand, n0, per_instance_tps, per_instance_tps, lead_min),
              "reactive_conservative": reactive(demand, n0, per_instance_tps, conservative_tps, lead_min)}
    df = pd.DataFrame({"minute": np.arange(demand.size), "demand_tps": demand, "trend_tps": trend})
    metrics: dict = {"per_instance_tps": per_instance_tps, "lead_min": lead_min, "conservative_tps": conservative_tps}
    for name, n in series.items():
        cap = n * per_instance_tps
        viol = demand > cap
        df[f"instances_{name}"] = n
        metrics[f"violation_minutes_{name}"] = int(viol.sum())
        metrics[f"instance_minutes_{name}"] = int(n.sum())
        ups = np.flatnonzero(np.diff(n) > 0) + 1
        metrics[f"first_scaleup_ready_min_{name}"] = int(ups[0]) if ups.size else None
        metrics[f"first_violation_min_{name}"] = int(np.flatnonzero(viol)[0]) if viol.any() else None
    return df, metrics
