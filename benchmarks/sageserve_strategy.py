"""Wall time and peak memory of SageServe strategy runs on a preset of the synthetic O365 week.
One JSON line.

    PYTHONPATH=src python benchmarks/sageserve_strategy.py [--strategy lt_ua|all] [--preset full]

Presets are the `windows` of `workflow/runs/sageserve.yaml` (full: the peak day, 4 models x 3 regions;
week_full: the week). ``--strategy all`` runs every strategy, each in its own process (so peak RSS
is per run), one after another. Targets (the issue): one strategy on the peak day < 300 s on one
core, the week < 1800 s.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import yaml

os.environ.setdefault("OMP_NUM_THREADS", "1")

from servesim.systems.sageserve.config import SageServeConfig  # noqa: E402
from servesim.analysis.runs import argv  # noqa: E402
from servesim.systems.sageserve.runs import add_window_args, window_of, window_workload  # noqa: E402

#: the named windows of workflow/runs/sageserve.yaml (full: the peak day, 4 models x 3 regions; week_full)
WINDOWS = yaml.safe_load((Path(__file__).resolve().parents[1] / "workflow/runs/sageserve.yaml").read_text())["windows"]


def preset_workload(name: str):
    ap = argparse.ArgumentParser()
    add_window_args(ap)
    return window_workload(window_of(ap.parse_args(argv(WINDOWS[name]))))
from servesim.systems.sageserve.strategies import RUN_STRATEGIES, run_strategy, summarise  # noqa: E402


def one(strategy: str, preset: str) -> dict:
    t = time.perf_counter()
    sel, t0_s = preset_workload(preset)
    gen = time.perf_counter() - t
    t = time.perf_counter()
    res, _ = run_strategy(strategy, sel, t0_s=t0_s, config=SageServeConfig.paper())
    wall = time.perf_counter() - t
    s = summarise(res, strategy)
    return {"strategy": strategy, "requests": s["all"]["requests"], "workload_s": round(gen, 2), "wall_s": round(wall, 2),
            "us_per_request": round(1e6 * wall / max(s["all"]["requests"], 1), 1),
            "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
            "instance_hours": round(s["instance_hours"]["billed"], 2), "ttft_p95_s": s["groups"]["iw"]["p95_ttft_s"]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--strategy", default="lt_ua", choices=list(RUN_STRATEGIES) + ["all"])
    ap.add_argument("--preset", default="full", choices=sorted(WINDOWS))
    ap.add_argument("--json-row", action="store_true", help=argparse.SUPPRESS)  # child of --strategy all
    a = ap.parse_args()
    if a.strategy != "all":
        r = one(a.strategy, a.preset)
        if a.json_row:
            print(json.dumps(r))
            return
        print(json.dumps({"benchmark": "sageserve_strategy", "preset": a.preset, **r}))
        return
    runs = []
    for s in RUN_STRATEGIES:
        out = subprocess.run([sys.executable, __file__, "--strategy", s, "--preset", a.preset, "--json-row"],
                             check=True, capture_output=True, text=True).stdout
        runs.append(json.loads(out.strip().splitlines()[-1]))
    print(json.dumps({"benchmark": "sageserve_strategy", "preset": a.preset, "runs": runs,
                      "max_wall_s": max(r["wall_s"] for r in runs),
                      "max_peak_rss_mib": max(r["peak_rss_mib"] for r in runs)}))


if __name__ == "__main__":
    main()
