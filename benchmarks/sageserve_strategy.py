"""Wall time of one SageServe strategy on the synthetic O365 week's peak day. One JSON line.

    PYTHONPATH=src python benchmarks/sageserve_strategy.py [--strategy lt_ua] [--preset full]

Presets are `servesim.systems.sageserve.runs.PRESETS` (full: Llama-2 in three regions, 24 h).
"""

from __future__ import annotations

import argparse
import json
import os
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")

from servesim.systems.sageserve.config import SageServeConfig  # noqa: E402
from servesim.systems.sageserve.runs import PRESETS  # noqa: E402
from servesim.systems.sageserve.strategies import RUN_STRATEGIES, run_strategy, summarise  # noqa: E402
from servesim.workload import sageserve_week  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--strategy", default="lt_ua", choices=RUN_STRATEGIES)
    ap.add_argument("--preset", default="full", choices=sorted(PRESETS))
    a = ap.parse_args()
    p = PRESETS[a.preset]
    wk = sageserve_week(scale=p["scale"], seed=0, days=p["days"])
    sel = wk[wk["model"].isin(p["models"]) & wk["region"].isin(p["regions"]) & (wk["arrival_s"] < p["to_h"] * 3600)]
    sel = sel.reset_index(drop=True)
    t = time.perf_counter()
    res, actor = run_strategy(a.strategy, sel, t0_s=p["from_h"] * 3600, config=SageServeConfig.paper())
    wall = time.perf_counter() - t
    s = summarise(res, a.strategy)
    print(json.dumps({"benchmark": "sageserve_strategy", "strategy": a.strategy, "preset": a.preset,
                      "requests": s["requests"], "wall_s": round(wall, 2),
                      "requests_per_s": round(s["requests"] / wall, 1), "instance_hours": round(s["instance_hours"], 2),
                      "ttft_p95_s": s["ttft_p95"]}))


if __name__ == "__main__":
    main()
