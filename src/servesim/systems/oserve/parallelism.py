"""Fig 1: which parallelism suits which workload type (spec oserve §3 Fig 1).

Two types subsampled from the Azure 2023 pool, split at the median output length as the quadrant
types are: short output (compute-intensive: SISO + LISO) and long output (memory-intensive:
SILO + LILO). Every homogeneous deployment of the GPUs (DP replicas of one (TP, PP) shape, DP x TP x
PP = GPUs) serves each type alone:
- throughput: DP x the replica's saturation capacity (``CapacityProfiler``: requests per second);
- latency: the type served (``plans.serve_plan``: equal shares over the replicas) at one arrival rate
  per type, ``load`` x the best deployment's throughput for it, so every deployment of a type sees
  the same requests; mean and P99 end-to-end latency.

CLI: ``python -m servesim.systems.oserve.parallelism --model M --gpus G -o DIR`` writes points.csv
(one row per type x deployment) and summary.json (the best deployment per type by each reading).
"""

from __future__ import annotations

import argparse
import json
import sys

import numpy as np
import pandas as pd

from .profiler import CapacityProfiler, TypePool
from .replica import BACKENDS, DEFAULT_BACKEND, Shape, add_pp_engines_arg, set_pp_engines, strategies

FIG1_TYPES = {"short-output": (2, 3), "long-output": (0, 1)}  # SISO + LISO; SILO + LILO (gen_oserve.TYPES order)


def fig1_pools(pool: pd.DataFrame) -> list[TypePool]:
    """The two Fig 1 types from a quadrant-typed pool (prompt_tokens, output_tokens, type)."""
    out = []
    for name, members in FIG1_TYPES.items():
        g = pool[pool["type"].isin(members)]
        if g.empty:
            raise ValueError(f"the length pool has no {name} requests")
        out.append(TypePool(name, g.prompt_tokens.to_numpy(np.int64), g.output_tokens.to_numpy(np.int64)))
    return out


def homogeneous(model: str, gpus: int, max_pp: int = 8) -> list[tuple[int, Shape]]:
    """(DP, shape) of every homogeneous deployment using all ``gpus`` (pipelines within one node)."""
    out = []
    for d in range(1, gpus + 1):
        if gpus % d == 0:
            out += [(gpus // d, s) for s in strategies(model, d, max_pp=max_pp) if s.gpus <= 8]
    return out


def label(dp: int, s: Shape) -> str:
    return f"DP{dp}·TP{s.tp}" + (f"·PP{s.pp}" if s.pp > 1 else "")


def sweep(model: str, gpus: int, pools: list[TypePool], *, load: float = 0.6, minutes: float = 5.0, n_requests: int = 2000,
          backend: str = DEFAULT_BACKEND, seed: int = 0, max_pp: int = 8) -> pd.DataFrame:
    from .plans import equal_shares, mix_workload, serve_plan

    prof = CapacityProfiler(model, pools, backend=backend, n_requests=n_requests, seed=seed, cache_dir=None)
    configs = homogeneous(model, gpus, max_pp)
    if not configs:
        raise ValueError(f"{model} has no homogeneous deployment on {gpus} GPUs")
    rows = []
    for j, pool in enumerate(pools):
        thr = {}
        for dp, s in configs:
            n, e = prof.capacity(s)
            thr[(dp, s)] = dp * (n[j] if e[j] > 0 else 0.0) / prof.span_s
        rate = load * max(thr.values())
        mix = np.eye(len(pools))[j]
        wl, typ = mix_workload(pools, mix, rate, minutes, seed * 100 + j, model)
        for dp, s in configs:
            e = np.tile(prof.capacity(s)[1], (dp, 1))
            res = serve_plan(model, [s] * dp, equal_shares(e), wl, typ, backend=backend, seed=seed) if thr[(dp, s)] > 0 else {}
            rows.append({"type": pool.name, "config": label(dp, s), "dp": dp, "tp": s.tp, "pp": s.pp, "gpus_per_replica": s.gpus,
                         "throughput_rps": thr[(dp, s)], "rate_rps": rate, "requests": res.get("requests"),
                         "completed": res.get("completed"), "mean_e2e_s": res.get("mean_e2e_s"), "p99_e2e_s": res.get("p99_e2e_s")})
    return pd.DataFrame(rows)


def best(points: pd.DataFrame) -> dict:
    """Per type: the deployment with the highest throughput and the one with the lowest P99."""
    out = {}
    for t, g in points.groupby("type", sort=False):
        bt = g.loc[g.throughput_rps.idxmax()]
        lat = g[g.completed == g.requests].dropna(subset=["p99_e2e_s"])
        bl = lat.loc[lat.p99_e2e_s.idxmin()] if len(lat) else None
        out[t] = {"by_throughput": {"config": bt.config, "dp": int(bt.dp), "tp": int(bt.tp), "pp": int(bt.pp)},
                  "by_p99": None if bl is None else {"config": bl.config, "dp": int(bl.dp), "tp": int(bl.tp), "pp": int(bl.pp)}}
    return out


def run(a) -> int:
    from ...errors import InputError
    from ...output_dir import staged_output_dir
    from ...workload.gen_oserve import type_pool

    if a.gpus < 1 or not (0 < a.load < 5) or not (a.minutes > 0) or a.n_requests < 10:
        raise InputError("--gpus >= 1, 0 < --load < 5, --minutes > 0 and --n-requests >= 10")
    pools = fig1_pools(type_pool())
    set_pp_engines(a.pp_engines)
    with staged_output_dir(a.out, command=f"oserve parallelism --model {a.model} --gpus {a.gpus}", force=a.force) as tmp:
        pts = sweep(a.model, a.gpus, pools, load=a.load, minutes=a.minutes, n_requests=a.n_requests, backend=a.backend,
                    seed=a.seed, max_pp=a.max_pp)
        pts.to_csv(tmp / "points.csv", index=False)
        summ = {"model": a.model, "gpus": a.gpus, "load": a.load, "minutes": a.minutes, "n_requests": a.n_requests,
                "backend": a.backend, "pp_engines": a.pp_engines, "seed": a.seed, "types": {p.name: {"n_pool": len(p.prompt), "mean_input": float(p.prompt.mean()),
                                                                           "mean_output": float(p.output.mean())} for p in pools},
                "best": best(pts)}
        (tmp / "summary.json").write_text(json.dumps(summ, indent=1, default=float) + "\n")
    for t, b in summ["best"].items():
        print(f"{t}: best by throughput {b['by_throughput']['config']}, by P99 {b['by_p99'] and b['by_p99']['config']}")
    return 0


def main(argv=None) -> int:
    from ...cli_errors import add_output_args, run_command

    ap = argparse.ArgumentParser(prog="python -m servesim.systems.oserve.parallelism", description=__doc__.split("\n")[0])
    ap.add_argument("--model", required=True)
    ap.add_argument("--gpus", type=int, required=True)
    ap.add_argument("--load", type=float, default=0.6, help="arrival rate per type, as a fraction of its best deployment's throughput")
    ap.add_argument("--minutes", type=float, default=5.0, help="length of each served workload")
    ap.add_argument("--n-requests", type=int, default=2000, help="requests per saturation run of the profiler")
    ap.add_argument("--max-pp", type=int, default=8)
    ap.add_argument("--backend", choices=BACKENDS, default=DEFAULT_BACKEND)
    add_pp_engines_arg(ap)
    add_output_args(ap)
    return run_command(run, ap.parse_args(argv), "oserve parallelism")


if __name__ == "__main__":
    sys.exit(main())
