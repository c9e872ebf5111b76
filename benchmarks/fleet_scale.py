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
    print(json.dumps(out))
