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
from .instance_models import instance_model
from .niw_chunks import chunk_niw, collapse_chunks
from .niw_loop import NIWLoop, register_tier_scheduler
from .reactive import LockedReactive

RUN_STRATEGIES = ("reactive", "lt_i", "lt_u", "lt_ua", "siloed", "chiron")
#: Siloed: NIW requests of model m are served by a separate endpoint named m + NIW_SUFFIX
NIW_SUFFIX = "@niw"


def base_model(col: "pd.Series") -> "pd.Series":
    """Model names without the pool suffixes of Siloed / Chiron (``@niw``, ``@int``)."""
    return col.astype(str).str.split("@").str[0]
#: SageServe's interactive tiers: its latency figures are over these
IW_TIERS = ("IW-F", "IW-N")

#: Llama-2-70B on one 8xA100 instance (TP 8), a linear step-time fit to the Splitwise profile
#: numbers quoted in the spec (prefill 512 tok 94 ms, 8192 tok 1.55 s; decode ~43-46 ms per
#: iteration, 71.6 ms at 32k batched tokens); KV capacity 210.6k tokens (spec §2).
MODEL_DEFAULTS = {
    "llama-2-70b": {
        "engine": {"kv_capacity_tokens": 210_600, "max_num_seqs": 512, "max_num_batched_tokens": 16384},
        "step_time": {"backend": "linear", "c0": 0.040, "c_pt": 1.9e-4, "c_pc": 0.0, "c_ds": 8.7e-7, "c_dc": 0.0},
    },
    "bloom-176b": {
        "engine": {"kv_capacity_tokens": 89_200, "max_num_seqs": 512, "max_num_batched_tokens": 16384},
        "step_time": {"backend": "linear", "c0": 0.055, "c_pt": 3.5e-4, "c_pc": 0.0, "c_ds": 1.2e-6, "c_dc": 0.0},
    },
    # Llama-3.1-8B / Llama-3.2-3B: the authors' vLLM A100 profiles (Llama-3.*-tp-4.csv, which their
    # simulator relabels as the 8-GPU instance; seconds, token_time per whole decode, read by
    # servesim.perf.sources.splitwise), put on Llama-2's reading above: each coefficient is
    # Llama-2's times the ratio of the two models' straight-line fits to their profiles (Llama-2:
    # the Splitwise a100-80gb TP 8 rows; relative least squares, prefill rows a + c_pt*tokens and
    # decode rows c0 + c_ds*sequences, no context terms). The same rule applied to Bloom's
    # Splitwise rows gives 0.044 / 3.7e-4 / 1.6e-6 against its 0.055 / 3.5e-4 / 1.2e-6.
    # instance_models.derive_scaled_coefficients re-derives these numbers from the data and
    # tests/systems/test_sageserve_coefficients.py checks the entries below equal them to 2
    # significant figures. KV capacity from spec §2 (303k, 1.27M tokens).
    "llama-3.1-8b": {
        "engine": {"kv_capacity_tokens": 303_000, "max_num_seqs": 512, "max_num_batched_tokens": 16384},
        "step_time": {"backend": "linear", "c0": 0.0062, "c_pt": 8.1e-5, "c_pc": 0.0, "c_ds": 9.5e-7, "c_dc": 0.0},
    },
    "llama-3.2-3b": {
        "engine": {"kv_capacity_tokens": 1_270_000, "max_num_seqs": 512, "max_num_batched_tokens": 16384},
        "step_time": {"backend": "linear", "c0": 0.0048, "c_pt": 5.0e-5, "c_pc": 0.0, "c_ds": 6.4e-7, "c_dc": 0.0},
    },
}
ORCA_NO_CAP = 1 << 30
#: tokens/min one instance serves in the ILP in the code reading (``theta_source="code"``): the
#: authors' absolute 30 x [7516.67, 5398.07]; the paper reading measures it (theta.measure_theta)
THETA_TOKENS_PER_MIN = {"llama-2-70b": 225_500.0, "bloom-176b": 161_942.0}


def scenario_dict(strategy: str, workload: pd.DataFrame, config: SageServeConfig, duration_s: float,
                  max_instances: int = 20, sample_s: float = 10.0, engine_policy: str | None = None) -> dict:
    # sample_s <= 10 s: the paper's instance-hours take each 15-min bin's maximum count, which a
    # coarser sampler under-counts (servesim.metrics.instance_hours)
    models = sorted(workload["model"].unique())
    regions = sorted(workload["region"].unique())
    c = config
    if strategy == "chiron":  # the mixed pool carries the bare model name and gets IW overflow only
        models = sorted(set(models) | {m.split("@")[0] for m in models})
    base = {m: m.split("@")[0] for m in models}
    if strategy == "siloed":
        start = {m: c.siloed_niw_instances if m.endswith(NIW_SUFFIX) else c.siloed_iw_instances for m in models}
    elif strategy == "chiron":
        start = {m: c.chiron_batch if m.endswith(NIW_SUFFIX) else c.chiron_interactive if m.endswith(INT_SUFFIX)
                 else c.chiron_mixed for m in models}
    else:
        start = {m: c.start_instances for m in models}
    lead = {"request_s": 0.0, "provision_s": c.spot_switch_s if c.delays_in_sim else 0.0,
            "load_s": c.model_redeploy_s if c.delays_in_sim else 0.0,
            "reclaim_s": c.reclaim_median_s if c.delays_in_sim else 0.0,
            "convert_s": c.model_redeploy_s if c.delays_in_sim else 0.0}
    sc = {
        "name": f"sageserve-{strategy}",
        "duration_s": duration_s,
        "regions": [{"name": r, "capacity": None} for r in regions],
        "models": {m: {**instance_model(base[m], c.hardware), "lead": lead, "catalog": base[m]} for m in models},
        "endpoints": [{"model": m, "region": r, "instances": start[m], "min_instances": c.min_per_endpoint,
                       "max_instances": max_instances} for m in models for r in regions],
        "router": {"name": "jsq-tokens"},
        "scale_in_to": "pool",
        "enforce_deadlines": ["NIW"] if c.niw_deadline_enforce else [],
        "pool_conversions": c.scaling_level >= 2,
        "output": {"sample_s": sample_s, "window_s": 60.0},
    }
    for m in models:  # ORCA has no token cap (a huge one: a tier-ordered subclass is not named "orca")
        eng = {**sc["models"][m]["engine"], "policy": engine_policy or c.engine_policy}
        if c.engine_policy == "orca":
            eng["max_num_batched_tokens"] = ORCA_NO_CAP
        sc["models"][m] = {**sc["models"][m], "engine": eng}
    if len(regions) > 1 and (strategy in ("reactive", "siloed") or c.reroute_lt) and strategy != "chiron":
        sc["global_router"] = {"name": "preference", "threshold": c.iw_region_gate,
                               "preferences": {r: [r] + [x for x in regions if x != r] for r in regions}}
        sc["latency_s"] = {r: {x: c.inter_region_latency_s for x in regions if x != r} for r in regions}
    if strategy in ("reactive", "siloed") and not c.use_locks:  # with locks: reactive.LockedReactive (run_strategy)
        sc["autoscaler"] = {"name": "reactive", "period_s": c.reactive_interval_s, "up": c.reactive_scale_out, "down": c.reactive_scale_in,
                            "cooldown_s": c.cooldown_s, "metric": "kv", "kv_count_starting": c.reactive_count_starting}
    return sc


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
    engine_policy = None
    if c.tier_policy != "none":
        engine_policy = register_tier_scheduler(c.tier_policy, wl, c, base=c.engine_policy)
    sc = parse_scenario(scenario_dict(strategy, wl, c, duration, max_instances, engine_policy=engine_policy))
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
        from .theta import theta_for

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
