"""Run one SageServe strategy on the fleet simulator (servesim.fleet) and summarise it.

``run_strategy("lt_ua", workload, ...)`` builds a scenario with one endpoint per (model,
region) of the workload, the global preference router gated at ``iw_region_gate``, a spot pool
per region that scale-ins donate to, and either the fleet's reactive autoscaler (``reactive``:
KV utilisation above/below the thresholds, with the cooldown) or a `LongTermScaler`
(``lt_i``/``lt_u``/``lt_ua``).

With ``niw_queue`` (default) NIW requests of the unified strategies wait in the queue manager and
are released on low utilisation (`niw_loop.NIWLoop`); Siloed serves NIW on arrival in its own
pool. ``tier_policy`` other than "none" orders each instance's waiting queue (Fig 15).
With ``niw_deadline_enforce`` the scenario times out NIW requests still waiting at their deadline
(``enforce_deadlines: [NIW]``). NIW requests longer than ``niw_chunk_tokens`` run as fixed-size
jobs and are accounted as one request that finishes with its last chunk (`niw_chunks`). Another model's pooled (spot) instance taken by a scale-up is a
conversion (state ``converting``, ``model_redeploy_s``).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ...fleet import parse_scenario, run_scenario
from ...forecast.series import per_minute_demand
from ...metrics import summarize
from .actors import LongTermScaler
from .chiron import INT_SUFFIX, ChironRouter, ChironScaler
from .config import SageServeConfig
from .instance_models import MODEL_DEFAULTS  # noqa: F401 - re-exported: notebooks and tests import it from here
from .niw_chunks import chunk_niw, collapse_chunks
from .niw_loop import NIWLoop
from .reactive import LockedReactive
from .scenario import NIW_SUFFIX, ORCA_NO_CAP, scenario_dict  # noqa: F401 - NIW_SUFFIX, ORCA_NO_CAP re-exported
from .theta import THETA_TOKENS_PER_MIN, theta_for  # noqa: F401 - THETA_TOKENS_PER_MIN re-exported

RUN_STRATEGIES = ("reactive", "lt_i", "lt_u", "lt_ua", "siloed", "chiron")


def base_model(col: "pd.Series") -> "pd.Series":
    """Model names without the pool suffixes of Siloed / Chiron (``@niw``, ``@int``)."""
    return col.astype(str).str.split("@").str[0]
#: SageServe's interactive tiers: its latency figures are over these
IW_TIERS = ("IW-F", "IW-N")

def run_strategy(strategy: str, workload: pd.DataFrame, *, demand_workload: pd.DataFrame | None = None,
                 t0_s: float = 0.0, config: SageServeConfig | None = None, seed: int = 0,
                 max_instances: int = 20, drain_s: float = 0.0):
    """Simulate ``strategy`` on the requests of ``workload`` with arrival in [t0_s, t_end).

    ``demand_workload`` (default: ``workload``) is what the load predictor has seen: its per-
    minute IW prompt tokens per (model, client region) from time 0, so the forecast at the
    first decision already has its 60-minute history. Returns (fleet Result, actor or None).
    """
    if strategy not in RUN_STRATEGIES:
        raise ValueError(f"strategy must be one of {RUN_STRATEGIES}, got {strategy!r}")
    c = config or SageServeConfig()
    full = workload if demand_workload is None else demand_workload
    wl = workload[workload["arrival_s"] >= t0_s].copy()
    wl["arrival_s"] -= t0_s
    wl["deadline_s"] -= t0_s
    # one deadline source for NIW: the config's, which the queue manager and the fleet both enforce
    is_niw = (wl["tier"] == "NIW").to_numpy()
    wl.loc[is_niw, "deadline_s"] = wl.loc[is_niw, "arrival_s"] + c.niw_deadline_s
    # J §6.2: long NIW requests run as fixed-size jobs (every strategy: it is the workload's shape);
    # the results table is collapsed back to one row per request below
    wl, chunk_parent = chunk_niw(wl.reset_index(drop=True), c.niw_chunk_tokens)
    wl["request_id"] = np.arange(len(wl), dtype=np.int64)
    if strategy in ("siloed", "chiron"):  # NIW gets its own pool per (model, region), served on arrival
        niw = (wl["tier"] == "NIW").to_numpy()
        wl["model"] = wl["model"].astype(object)
        wl.loc[niw, "model"] = wl.loc[niw, "model"] + NIW_SUFFIX
        if strategy == "chiron":
            wl.loc[~niw, "model"] = wl.loc[~niw, "model"] + INT_SUFFIX
        wl["model"] = wl["model"].astype("string")
    wl = wl.reset_index(drop=True)
    duration = float(np.ceil((wl["arrival_s"].max() + 1) / 60.0) * 60.0) + drain_s
    sc = parse_scenario(scenario_dict(strategy, wl, c, duration, max_instances))
    loop = None
    if c.niw_queue and strategy not in ("siloed", "chiron") and (wl["tier"] == "NIW").any():
        loop = NIWLoop(wl, c)
    actor = None
    grouter = None
    if strategy == "chiron":
        grouter = ChironRouter(c.iw_region_gate)
        actor = ChironScaler(grouter, c, sorted({m.split("@")[0] for m in wl["model"].unique()}),
                             sorted(wl["region"].unique()), niw_suffix=NIW_SUFFIX)
    elif strategy not in ("reactive", "siloed"):
        t_end = t0_s + duration
        keys = [(m, r) for m in sorted(wl["model"].unique()) for r in sorted(wl["region"].unique())]
        demand = {k: per_minute_demand(full, k[0], k[1], t_end=t_end) for k in keys}
        niw = {}
        if (full["tier"] == "NIW").any():
            niw = {k: per_minute_demand(full, k[0], k[1], tiers=("NIW",), t_end=t_end) for k in keys}
        theta = theta_for(c, list(dict.fromkeys(m for m, _ in keys)), full, seed=seed)  # per model, not region
        actor = LongTermScaler(mode=strategy, demand=demand, niw_demand=niw, config=c, theta=theta,
                               max_instances={k: max_instances for k in keys}, offset_min=int(t0_s // 60))
    actors = [actor] if actor else []
    if strategy in ("reactive", "siloed") and c.use_locks:
        actors.append(LockedReactive(period_s=c.reactive_interval_s, up=c.reactive_scale_out, down=c.reactive_scale_in,
                                     cooldown_s=0.0, metric="kv", kv_count_starting=c.reactive_count_starting,
                                     lock_reclaim_s=c.lock_reclaim_s,
                                     lock_conversion_s=c.lock_conversion_s))
    res = run_scenario(sc, seed=seed, workload=wl, actors=actors or None,
                       engines=loop.engines if loop else None, global_router=grouter)
    if loop is not None:
        res.requests["niw_release_s"] = loop.release_s
        still = (res.requests["state"] == "unfinished") & loop.is_niw & np.isnan(loop.release_s)
        res.requests.loc[still, "reason"] = "run ended in the NIW queue manager"
        res.niw_loop = loop
    if chunk_parent is not None:  # one row per request again: it finishes with its last chunk
        res.requests = collapse_chunks(res.requests, chunk_parent)
        res.summary.update(summarize(res.requests, hours=res.instance_hours, timeseries=res.timeseries,
                                     end_s=res.summary["end_s"]))
        res.summary["partial"] = bool(res.requests["partial"].any())
    else:
        res.requests["niw_chunks"] = np.ones(len(res.requests), dtype=np.int64)
    res.summary["niw_chunk_tokens"] = c.niw_chunk_tokens
    res.summary["niw_chunked_requests"] = 0 if chunk_parent is None else int((res.requests["niw_chunks"] > 1).sum())
    return res, actor


def summarise(res, strategy: str) -> dict:
    """The run's summary (the fleet's: `servesim.metrics.summarize` layout) with the ``iw``
    group SageServe's latencies are over (IW-F and IW-N) and the NIW queue manager's releases."""
    req = res.requests
    s = {"strategy": strategy, **res.summary}
    s["groups"] = summarize(req, groups={"iw": IW_TIERS}, by_tier=False)["groups"]
    s["niw_released"] = (int(((req["tier"] == "NIW") & req["niw_release_s"].notna()).to_numpy(bool).sum())
                         if "niw_release_s" in req else None)
    return s
