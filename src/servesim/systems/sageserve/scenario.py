"""The fleet scenario (`servesim.fleet`) of one SageServe strategy: one endpoint per (model,
region), the instance model of each, lead times, router, spot pools and autoscaler.

Below `strategies` (which runs it) and `theta` (which saturates one instance with it).
"""

from __future__ import annotations

import pandas as pd

from .chiron import INT_SUFFIX
from .config import SageServeConfig
from .instance_models import instance_model
from .tiers import queue_order

#: Siloed: NIW requests of model m are served by a separate endpoint named m + NIW_SUFFIX
NIW_SUFFIX = "@niw"

ORCA_NO_CAP = 1 << 30


def scenario_dict(strategy: str, workload: pd.DataFrame, config: SageServeConfig, duration_s: float,
                  max_instances: int = 20, sample_s: float = 10.0) -> dict:
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
    for m in models:  # ORCA has no token cap (a huge one)
        eng = {**sc["models"][m]["engine"], "policy": c.engine_policy, "queue_order": queue_order(c)}
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
