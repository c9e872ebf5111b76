"""Solve time of SageServe's allocation ILP (journal §5: 1.41 s at l=4, r=3, g=1; 33 s at
l=r=20, g=5 on the authors' hardware). Prints one JSON line per (size, solver).

    PYTHONPATH=src python benchmarks/sageserve_ilp.py [--limit 120] [--seeds 3]

Random feasible instances (``ilp.random_problem``); the LP relaxation gives the bound used to
report the gap reached when the time limit stops the search.
"""

from __future__ import annotations

import argparse
import json
import statistics
import warnings

from servesim.systems.sageserve.ilp import SOLVERS, random_problem, solve

warnings.simplefilter("ignore", DeprecationWarning)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--limit", type=float, default=120.0, help="time limit per solve (s)")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--sizes", default="4x3x1,20x20x5")
    args = ap.parse_args()
    for size in args.sizes.split(","):
        l, r, g = (int(v) for v in size.split("x"))
        for solver in SOLVERS:
            times, gaps = [], []
            for seed in range(args.seeds):
                p = random_problem(l, r, g, seed=seed)
                res = solve(p, solver=solver, time_limit_s=args.limit)
                lb = solve(p, solver=solver, relax=True).objective
                times.append(res.solve_time_s)
                gaps.append(abs(res.objective - lb) / max(abs(res.objective), 1e-9))
            print(json.dumps({"benchmark": "sageserve_ilp", "size": size, "solver": solver,
                              "seeds": args.seeds, "time_limit_s": args.limit,
                              "solve_s_median": round(statistics.median(times), 4),
                              "solve_s_max": round(max(times), 4),
                              "hit_limit": sum(t >= args.limit * 0.99 for t in times),
                              "gap_to_lp_bound_max": round(max(gaps), 6),
                              "paper_s": {"4x3x1": 1.41, "20x20x5": 33.0}.get(size)}), flush=True)


if __name__ == "__main__":
    main()
