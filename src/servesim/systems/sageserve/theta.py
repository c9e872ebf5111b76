"""theta_ik, the tokens per minute one instance serves, by benchmarking it in the simulator.

J §5 defines theta_ik as the "TPS provided by model i on GPU k", assigned by benchmarking, and
its ILP constraints carry no headroom factor; the paper's own example of one instance's
capability is 4 000 TPS. ``measure_theta`` saturates one simulated instance with a backlog drawn
from the workload's own requests and returns the prompt tokens per minute it completes under the
run's engine: that is theta in the paper's reading (``SageServeConfig.theta_headroom`` = 1.0).
The authors' code instead hard-codes an absolute 30 x 7516.67 = 225 500 tokens/min for Llama-2
(``theta_source="code"``); its factor 30 halves the code's own per-second rating, which is no
statement about a measured saturation. A headroom below 1 is kept only as a sensitivity option. The reading ``sla``
(``theta_source="sla"``) benchmarks it at an IW TTFT SLA instead of at saturation: the throughput
one instance keeps while its IW requests' P95 TTFT stays within the bound (`measure_theta_sla`).
J §3 gives two: IW-F < 1 s, which no load meets on this workload (a Llama-2-70B instance's own
P95 TTFT, unloaded, is 3.5 s: prompts to 18k tokens at that quantile), and IW-N < 1 min, the
default bound (``theta_sla_ttft_s``).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ...fleet import parse_scenario, run_scenario
from .config import SageServeConfig
from .scenario import scenario_dict

#: tokens/min one instance serves in the ILP in the code reading (``theta_source="code"``): the
#: authors' absolute 30 x [7516.67, 5398.07]; the paper reading measures it (theta.measure_theta)
THETA_TOKENS_PER_MIN = {"llama-2-70b": 225_500.0, "bloom-176b": 161_942.0}


def _iw_sample(model: str, requests: pd.DataFrame, n: int, rng, who: str) -> pd.DataFrame:
    """``n`` of ``model``'s IW requests (in trace order), renumbered, on one region, no deadlines."""
    src = requests[(requests["model"] == model) & (requests["tier"] != "NIW")]
    if len(src) == 0:
        raise ValueError(f"{who}: no IW request of model {model!r}")
    pick = src.iloc[np.sort(rng.choice(len(src), size=min(n, len(src)), replace=False))].copy()
    pick["deadline_s"] = np.nan
    pick["request_id"] = np.arange(len(pick), dtype=np.int64)
    pick["region"] = pick["region"].iloc[0]
    return pick.reset_index(drop=True)


def measure_theta(model: str, requests: pd.DataFrame, n: int = 2000, seed: int = 0,
                  engine_policy: str = "orca", hardware: str = "default") -> float:
    """Prompt tokens per minute one instance of ``model`` (scheduler ``engine_policy``) completes
    when saturated."""
    pick = _iw_sample(model, requests, n, np.random.default_rng(seed), "measure_theta")
    pick["arrival_s"] = np.linspace(0.0, 1.0, len(pick))  # a backlog at t = 0
    req = _one_instance(pick, engine_policy, hardware, seed)
    done = req[req["state"] == "finished"]
    # throughput over the middle of the busy period (excludes ramp-up and the draining tail)
    fin = np.sort(done["finish_s"].to_numpy())
    lo, hi = fin[len(fin) // 10], fin[(9 * len(fin)) // 10]
    mid = done[(done["finish_s"] > lo) & (done["finish_s"] <= hi)]
    return float(mid["prompt_tokens"].sum() / ((hi - lo) / 60.0))


def _one_instance(pick: pd.DataFrame, engine_policy: str, hardware: str, seed: int) -> pd.DataFrame:
    """The request table of ``pick`` served by one instance (no scaling, no delays)."""
    cfg = SageServeConfig(start_instances=1, min_per_endpoint=1, delays_in_sim=False, engine_policy=engine_policy,
                          hardware=hardware)
    sc = scenario_dict("lt_i", pick, cfg, duration_s=10 * 86400.0, max_instances=1)
    sc.pop("duration_s")
    return run_scenario(parse_scenario(sc), seed=seed, workload=pick).requests


def measure_theta_sla(model: str, requests: pd.DataFrame, ttft_s: float = 60.0, quantile: float = 0.95,
                      n: int = 2000, seed: int = 0, engine_policy: str = "orca", hardware: str = "default",
                      steps: int = 12) -> float:
    """Prompt tokens per minute one instance of ``model`` serves while the ``quantile`` of its
    requests' TTFT stays within ``ttft_s`` (the reading ``sla``: J §5's "by benchmarking" read at
    an IW TTFT SLA of J §3): the largest Poisson rate of the workload's own IW
    requests (one draw of ``n``, its gaps scaled with the rate) that meets it, found by bisection
    in ``steps`` halvings between 0 and the saturation throughput's rate (`measure_theta`).
    A bound no load meets (the requests alone take longer) is an error naming their own TTFT."""
    if not ttft_s > 0 or not 0 < quantile < 1:
        raise ValueError(f"measure_theta_sla: ttft_s={ttft_s!r} must be > 0 and quantile={quantile!r} in (0, 1)")
    rng = np.random.default_rng([seed, 2])
    pick = _iw_sample(model, requests, n, rng, "measure_theta_sla")
    gaps = rng.exponential(1.0, len(pick))  # one draw; a rate r spaces it by gaps / r
    gaps[0] = 0.0
    mean_prompt = float(pick["prompt_tokens"].mean())
    sat_rate = measure_theta(model, requests, n=n, seed=seed, engine_policy=engine_policy,
                             hardware=hardware) / 60.0 / mean_prompt  # requests / s at saturation

    def meets(rate: float) -> bool:
        w = pick.copy()
        w["arrival_s"] = np.cumsum(gaps) / rate
        t = _one_instance(w, engine_policy, hardware, seed)["ttft_s"].to_numpy(float)
        return bool(np.all(np.isfinite(t)) and np.quantile(t, quantile) <= ttft_s)

    # the requests one at a time (5 min apart, the first 200): the instance's own TTFT, no queueing
    alone_wl = pick.iloc[:200].copy()
    alone_wl["arrival_s"] = np.arange(len(alone_wl)) * 300.0
    alone = float(np.quantile(_one_instance(alone_wl, engine_policy, hardware, seed)["ttft_s"].to_numpy(float), quantile))
    if not alone <= ttft_s:
        raise ValueError(f"theta_source='sla': no load of {model} keeps P{100 * quantile:g} TTFT <= {ttft_s:g} s; "
                         f"its requests alone take {alone:.3g} s there (prompts up to "
                         f"{int(alone_wl['prompt_tokens'].quantile(quantile))} tokens at that quantile)")
    lo, hi = 0.0, sat_rate
    if meets(hi):
        return hi * mean_prompt * 60.0
    for _ in range(steps):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if meets(mid) else (lo, mid)
    return lo * mean_prompt * 60.0


def theta_for(config: SageServeConfig, models: list[str], requests: pd.DataFrame, seed: int = 0) -> dict[str, float]:
    """theta per model under ``config``'s reading: the authors' absolute constants
    (``theta_source="code"``), ``theta_headroom`` x the measured saturation throughput (1.0:
    the paper's definition), or the throughput one instance keeps within the IW-F TTFT SLA
    (``"sla"``, `measure_theta_sla`)."""
    if config.theta_source == "code":
        missing = [m for m in models if m not in THETA_TOKENS_PER_MIN]
        if missing:
            raise ValueError(f"theta_source='code': the authors' code gives no theta for {missing}")
        return {m: THETA_TOKENS_PER_MIN[m] for m in models}
    if config.theta_source == "sla":
        return {m: config.theta_headroom * measure_theta_sla(m, requests, ttft_s=config.theta_sla_ttft_s,
                                                             quantile=config.theta_sla_quantile, seed=seed,
                                                             engine_policy=config.engine_policy, hardware=config.hardware)
                for m in models}
    return {m: config.theta_headroom * measure_theta(m, requests, seed=seed, engine_policy=config.engine_policy,
                                                     hardware=config.hardware)
            for m in models}


def contended_instances(requests: pd.DataFrame, t0_s: float, theta: dict[str, float], bin_min: int = 15) -> int:
    """Journal Fig 15's contended fleet, by rule: the fewest instances per endpoint whose theta
    covers the busiest ``bin_min`` minutes of the prompt tokens the endpoint serves (every tier,
    arrivals from ``t0_s``), over the endpoints of ``requests``. At that cap the busiest bins run
    near saturation, so instance queues form and their order matters, yet the backlog does not grow
    for hours (a smaller cap is an overload, not a scheduling contest)."""
    x = requests[requests["arrival_s"] >= t0_s]
    if len(x) == 0:
        raise ValueError("contended_instances: no request from t0_s on")
    need = 1
    for (model, _region), g in x.groupby(["model", "region"], observed=True):
        minute = ((g["arrival_s"].to_numpy(float) - t0_s) // 60.0).astype(np.int64)
        per_min = np.bincount(minute, weights=g["prompt_tokens"].to_numpy(float))
        bins = [per_min[i:i + bin_min].mean() for i in range(0, len(per_min), bin_min)]
        need = max(need, int(np.ceil(max(bins) / theta[str(model)])))
    return need
