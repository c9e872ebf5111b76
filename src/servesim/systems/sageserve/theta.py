"""theta_ik, the tokens per minute one instance serves, by benchmarking it in the simulator.

The paper assigns theta "by benchmarking model i on GPU k"; the authors' code hard-codes
225 500 prompt tokens/min for Llama-2 (30 x a per-second rating, i.e. 50 % of it), which our
calibrated instance cannot sustain. ``measure_theta`` saturates one simulated instance with a
backlog drawn from the workload's own requests and returns the prompt tokens per minute it
completes; the scaler provisions at ``headroom`` x that (0.5, the code's factor).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ...fleet import parse_scenario, run_scenario
from .config import SageServeConfig


def measure_theta(model: str, requests: pd.DataFrame, n: int = 2000, seed: int = 0,
                  engine_policy: str = "orca", hardware: str = "default") -> float:
    """Prompt tokens per minute one instance of ``model`` (scheduler ``engine_policy``) completes
    when saturated."""
    from .strategies import scenario_dict

    src = requests[(requests["model"] == model) & (requests["tier"] != "NIW")]
    if len(src) == 0:
        raise ValueError(f"measure_theta: no IW request of model {model!r}")
    rng = np.random.default_rng(seed)
    pick = src.iloc[np.sort(rng.choice(len(src), size=min(n, len(src)), replace=False))].copy()
    pick["arrival_s"] = np.linspace(0.0, 1.0, len(pick))  # a backlog at t = 0
    pick["deadline_s"] = np.nan
    pick["request_id"] = np.arange(len(pick), dtype=np.int64)
    pick["region"] = pick["region"].iloc[0]
    pick = pick.reset_index(drop=True)
    cfg = SageServeConfig(start_instances=1, min_per_endpoint=1, delays_in_sim=False, engine_policy=engine_policy,
                          hardware=hardware)
    sc = scenario_dict("lt_i", pick, cfg, duration_s=None or 10 * 86400.0, max_instances=1)
    sc.pop("duration_s")
    res = run_scenario(parse_scenario(sc), seed=seed, workload=pick)
    done = res.requests[res.requests["state"] == "finished"]
    # throughput over the middle of the busy period (excludes ramp-up and the draining tail)
    fin = np.sort(done["finish_s"].to_numpy())
    lo, hi = fin[len(fin) // 10], fin[(9 * len(fin)) // 10]
    mid = done[(done["finish_s"] > lo) & (done["finish_s"] <= hi)]
    return float(mid["prompt_tokens"].sum() / ((hi - lo) / 60.0))
