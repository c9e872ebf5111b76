"""Fleet simulation cost vs fleet size, and the example scenarios' run times.

Scales a fleet by its number of regions (one endpoint of 4 instances per region, 4 req/s per
region, 5 simulated minutes, JSQ routing, reactive autoscaler): per-request CPU cost should stay
flat as the fleet grows. Prints one JSON line (CPU seconds, not wall: the machine may be shared).
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from servesim.fleet import load_scenario, parse_scenario, run_scenario

ROOT = Path(__file__).resolve().parents[1]


def scaled(regions: int) -> dict:
    names = [f"r{j}" for j in range(regions)]
    tok = {"prompt_tokens": {"mean": 600, "cv": 1.0, "max": 4000}, "output_tokens": {"mean": 200, "cv": 1.0, "max": 2000}}
    return {
        "name": f"scale-{regions}", "seed": 1,
        "workload": {"generator": "poisson", "duration_s": "5min",
                     "streams": [{"model": "m", "region": r, "rate_rps": 4.0, **tok} for r in names]},
        "regions": [{"name": r} for r in names],
        "models": {"m": {"engine": {"kv_capacity_tokens": 120000}, "lead": {"provision_s": 60, "load_s": 60}}},
        "endpoints": [{"model": "m", "region": r, "instances": 4, "min_instances": 1, "max_instances": 8} for r in names],
        "router": {"name": "jsq-tokens"},
        "autoscaler": {"name": "reactive", "metric": "outstanding", "target_outstanding": 24},
    }


def sageserve_day() -> dict:
    """A day of the SageServe-like generated fleet week (scale 0.1: ~125 k requests), 4 models x
    3 regions, reactive KV autoscaler. Step-time coefficients are placeholders (a speed test,
    not a fidelity claim)."""
    coeff = {"llama-2-70b": (4e5, 0.01, 3e-5, 5e-5, 2e-8), "bloom-176b": (2e5, 0.02, 6e-5, 1e-4, 4e-8),
             "llama-3.1-8b": (8e5, 0.005, 1e-5, 1e-5, 5e-9), "llama-3.2-3b": (1e6, 0.004, 5e-6, 1e-5, 3e-9)}
    regions = ["westus", "centralus", "eastus"]
    return {
        "name": "sageserve-day-speed", "seed": 1,
        "workload": {"generator": "sageserve_week", "scale": 0.1, "until_s": "1d"},
        "regions": [{"name": r} for r in regions],
        "models": {m: {"engine": {"kv_capacity_tokens": int(kv), "max_num_batched_tokens": 16384},
                       "step_time": {"c0": c0, "c_pt": cpt, "c_ds": cds, "c_dc": cdc}}
                   for m, (kv, c0, cpt, cds, cdc) in coeff.items()},
        "endpoints": [{"model": m, "region": r, "instances": 4, "min_instances": 2, "max_instances": 20}
                      for m in coeff for r in regions],
        "autoscaler": {"name": "reactive", "metric": "kv"},
        "output": {"sample_s": "60s"},
    }


def cpu(sc) -> tuple[float, int]:
    t = time.process_time()
    res = run_scenario(sc)
    return time.process_time() - t, len(res.requests)


if __name__ == "__main__":
    out: dict = {"benchmark": "fleet_scale", "examples": {}, "scaling": {}}
    for f in sorted((ROOT / "examples" / "scenarios").glob("*.yaml")):
        s, n = cpu(load_scenario(f))
        out["examples"][f.stem] = {"requests": n, "cpu_s": round(s, 3)}
    for regions in (1, 4, 16, 64):
        s, n = cpu(parse_scenario(scaled(regions)))
        out["scaling"][str(regions)] = {"instances_at_start": 4 * regions, "requests": n, "cpu_s": round(s, 3),
                                        "cpu_us_per_request": round(s / n * 1e6, 1)}
    s, n = cpu(parse_scenario(sageserve_day()))
    out["sageserve_day"] = {"requests": n, "cpu_s": round(s, 2)}
    print(json.dumps(out))
