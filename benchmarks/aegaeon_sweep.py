"""Simulation cost of one Aegaeon attainment sweep: Fig 11b's paper-scale grid (0.5 req/s per
model, 16-54 models in steps of 2, the artifact's 60-s workloads), once per system, each in its own
process (``python -m servesim.systems.aegaeon.sweep``, as the workflow runs it). One JSON line.

    PYTHONPATH=src python benchmarks/aegaeon_sweep.py [--systems aegaeon sllm sllm_plus]

Per system: the sweep's own simulation time (``sim_wall_s`` of its summary), the process's wall
time, and the requests and output tokens simulated per second of simulation time.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

MODELS = [str(m) for m in range(16, 56, 2)]


def one(system: str, rate: float, duration_s: float, out: Path) -> dict:
    cmd = [sys.executable, "-m", "servesim.systems.aegaeon.sweep", "--system", system, "--rate", str(rate),
           "--duration-s", str(duration_s), "--models", *MODELS, "--seed", "0", "-o", str(out)]
    t0 = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, "OMP_NUM_THREADS": "1"})
    wall = time.perf_counter() - t0
    if p.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)}: exit {p.returncode}\n{p.stderr[-2000:]}")
    summary = json.loads((out / "summary.json").read_text())
    pts = pd.read_csv(out / "points.csv")
    sim = float(summary["sim_wall_s"])
    return {"points": len(pts), "requests": int(pts.n_requests.sum()), "output_tokens": int(pts.tokens.sum()),
            "sim_s": round(sim, 2), "process_wall_s": round(wall, 2),
            "requests_per_sim_s": round(pts.n_requests.sum() / sim), "tokens_per_sim_s": round(pts.tokens.sum() / sim)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--systems", nargs="+", default=["aegaeon", "sllm", "sllm_plus"])
    ap.add_argument("--rate", type=float, default=0.5)
    ap.add_argument("--duration-s", type=float, default=60.0)
    a = ap.parse_args(argv)
    res = {"benchmark": "aegaeon_sweep", "rate": a.rate, "duration_s": a.duration_s,
           "models": f"{MODELS[0]}-{MODELS[-1]} step 2", "cpus": os.cpu_count()}
    with tempfile.TemporaryDirectory() as tmp:
        for s in a.systems:
            res[s] = one(s, a.rate, a.duration_s, Path(tmp) / s)
    print(json.dumps(res))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
