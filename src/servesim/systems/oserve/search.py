"""OServe's upper level (§4.3, Alg. 1): flow-network-guided deployment search, and the
exhaustive search it is compared with (Fig. 16).

A deployment is a multiset of replica shapes using all D GPUs on nodes of 8. Placement is
first-fit decreasing: a replica goes whole into one node when one has room, else (PP only) its
stages go to different nodes and its hand-off runs over InfiniBand (``Shape.cross_node``); TP
never spans nodes. Each deployment is scored by ``objective.evaluate`` on the profiled capacities.

Alg. 1 as the paper writes it, with the choices it leaves open [A] made explicit: the start is the
uniform pure-TP deployment at the memory minimum; each iteration applies, to every replica in O,
merge (with another replica of O) or swap (δ GPUs taken from one in U), and to every replica in U,
split (into two pieces of at least the minimum) or swap (δ GPUs given to one in O), the choice,
partner, δ and split point drawn uniformly from a seeded RNG; then the best strategy combination
for the new GPU counts is searched exhaustively (combinations of each size's valid strategies);
accept only on a strict improvement; stop after ``patience`` (20) iterations without one or at
``max_iter`` (200). A step that makes a GPU count with no valid strategy is rejected.
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .objective import OBJECTIVES, FlowValue, evaluate
from .profiler import CapacityProfiler
from .replica import BACKENDS, GPUS_PER_NODE, Shape, min_gpus, strategies


def place(shapes, total_gpus: int, per_node: int = GPUS_PER_NODE) -> tuple[Shape, ...] | None:
    """Shapes with their ``cross_node`` flag set by first-fit-decreasing placement (None: no fit)."""
    if sum(s.gpus for s in shapes) > total_gpus:
        return None
    nodes = [per_node] * -(-total_gpus // per_node)
    nodes[-1] = total_gpus - per_node * (len(nodes) - 1)
    out = []
    for s in sorted(shapes, key=lambda s: (-s.gpus, -s.tp, s.pp)):
        fit = next((i for i, f in enumerate(nodes) if f >= s.gpus), None)
        if fit is not None:
            nodes[fit] -= s.gpus
            out.append(Shape(s.tp, s.pp, False))
            continue
        if s.pp == 1:
            return None
        for _ in range(s.pp):  # stages to the nodes with the most room
            i = max(range(len(nodes)), key=lambda i: (nodes[i], -i))
            if nodes[i] < s.tp:
                return None
            nodes[i] -= s.tp
        out.append(Shape(s.tp, s.pp, True))
    return tuple(sorted(out))


@dataclass
class Evaluator:
    """Scores deployments (memoised by their canonical multiset of placed shapes)."""

    profiler: CapacityProfiler
    lam: np.ndarray
    total_gpus: int
    objective: str = "phi-alpha"
    max_pp: int = 8  # deepest pipeline considered (a node's width; Table 3's deepest is PP4)
    evaluations: int = 0
    _memo: dict = field(default_factory=dict)

    def __post_init__(self):
        if self.objective not in OBJECTIVES:
            raise ValueError(f"objective={self.objective!r}: one of {OBJECTIVES}")
        self.lam = np.asarray(self.lam, float)

    def __call__(self, shapes) -> tuple[tuple[Shape, ...], FlowValue] | None:
        placed = place(shapes, self.total_gpus)
        if placed is None:
            return None
        if placed not in self._memo:
            n, e = self.profiler.matrix(placed)
            self._memo[placed] = evaluate(self.lam, n, e)
            self.evaluations += 1
        return placed, self._memo[placed]

    def key(self, v: FlowValue) -> tuple:
        return v.key(self.objective)


@dataclass
class SearchResult:
    deployment: tuple[Shape, ...]
    value: FlowValue
    iterations: int
    evaluations: int
    seconds: float
    trace: list = field(default_factory=list)

    @property
    def converged_at(self) -> int:
        """The last iteration whose candidate was accepted (0: the start was never improved)."""
        return max((t["iter"] for t in self.trace if t["accepted"]), default=0)

    def to_dict(self) -> dict:
        return {"deployment": [s.label() for s in self.deployment], "dp": len(self.deployment),
                "converged_at": self.converged_at,
                "alpha": self.value.alpha, "phi": self.value.phi, "iterations": self.iterations,
                "evaluations": self.evaluations, "seconds": self.seconds,
                "routing": np.round(self.value.fractions(), 6).tolist(), "load": np.round(self.value.load, 6).tolist()}


def best_strategies(ev: Evaluator, model: str, sizes, max_combos: int = 20000):
    """argmax over strategy combinations for GPU counts ``sizes`` (None if no valid one)."""
    groups = sorted({d: sizes.count(d) for d in sizes}.items())
    choices = []
    for d, c in groups:
        opts = strategies(model, d, max_pp=ev.max_pp)
        if not opts:
            return None
        choices.append(list(itertools.combinations_with_replacement(opts, c)))
    best = None
    for i, combo in enumerate(itertools.product(*choices)):
        if i >= max_combos:
            break
        r = ev([s for part in combo for s in part])
        if r is not None and (best is None or ev.key(r[1]) > ev.key(best[1])):
            best = r
    return best


def uniform_sizes(model: str, total_gpus: int) -> list[int]:
    d = min_gpus(model)
    sizes = [d] * (total_gpus // d)
    if total_gpus % d:
        sizes[-1] += total_gpus % d
    return sizes


def heuristic(ev: Evaluator, model: str, seed: int = 0, patience: int = 20, max_iter: int = 200) -> SearchResult:
    """Alg. 1 (see the module docstring)."""
    t0 = time.perf_counter()
    rng = np.random.default_rng(seed)
    dmin = min_gpus(model)
    cur = best_strategies(ev, model, uniform_sizes(model, ev.total_gpus))
    if cur is None:
        raise ValueError(f"{model}: the uniform deployment on {ev.total_gpus} GPUs has no valid placement")
    trace = [{"iter": 0, "deployment": [s.label() for s in cur[0]], "key": list(ev.key(cur[1])), "accepted": True}]
    stale = it = 0
    while stale < patience and it < max_iter:
        it += 1
        shapes, val = cur
        size = dict(enumerate(s.gpus for s in shapes))
        O, U = list(val.saturated), list(val.underused)
        nxt = len(size)
        for r in O:
            if r not in size:
                continue
            alive_o = [o for o in O if o in size and o != r]
            alive_u = [u for u in U if u in size and size[u] > dmin]
            if rng.random() < 0.5:
                if alive_o:
                    o = alive_o[rng.integers(len(alive_o))]
                    size[r] += size.pop(o)
            elif alive_u:
                u = alive_u[rng.integers(len(alive_u))]
                delta = int(rng.integers(1, size[u] - dmin + 1))
                size[r] += delta
                size[u] -= delta
        for r in U:
            if r not in size:
                continue
            alive_o = [o for o in O if o in size]
            if rng.random() < 0.5:
                if size[r] >= 2 * dmin:
                    a = int(rng.integers(dmin, size[r] - dmin + 1))
                    size[nxt], size[r] = size[r] - a, a
                    nxt += 1
            elif alive_o and size[r] > dmin:
                o = alive_o[rng.integers(len(alive_o))]
                delta = int(rng.integers(1, size[r] - dmin + 1))
                size[o] += delta
                size[r] -= delta
        sizes = sorted(size.values())
        cand = best_strategies(ev, model, sizes)
        ok = cand is not None and ev.key(cand[1]) > ev.key(val)
        if ok:
            cur, stale = cand, 0
        else:
            stale += 1
        trace.append({"iter": it, "sizes": sizes, "deployment": [s.label() for s in cand[0]] if cand else None,
                      "key": list(ev.key(cand[1])) if cand else None, "accepted": ok})
    return SearchResult(cur[0], cur[1], it, ev.evaluations, time.perf_counter() - t0, trace)


def partitions(total: int, smallest: int, largest: int | None = None):
    """Non-increasing partitions of ``total`` into parts in [smallest, largest]."""
    largest = total if largest is None else largest
    if total == 0:
        yield ()
        return
    for p in range(min(total, largest), smallest - 1, -1):
        for rest in partitions(total - p, smallest, p):
            yield (p,) + rest


def exhaustive(ev: Evaluator, model: str) -> SearchResult:
    """Every partition of the GPUs into replicas x every strategy multiset (Fig. 16's baseline)."""
    t0 = time.perf_counter()
    best, n = None, 0
    for part in partitions(ev.total_gpus, min_gpus(model)):
        r = best_strategies(ev, model, list(part), max_combos=10**9)
        n += 1
        if r is not None and (best is None or ev.key(r[1]) > ev.key(best[1])):
            best = r
    if best is None:
        raise ValueError(f"{model}: no valid deployment on {ev.total_gpus} GPUs")
    return SearchResult(best[0], best[1], n, ev.evaluations, time.perf_counter() - t0)


def _parse_mix(s: str) -> np.ndarray:
    try:
        v = np.array([float(x) for x in s.split(",")])
    except ValueError:
        raise SystemExit(f"--mix {s!r}: give comma-separated type proportions, e.g. 0.263,0.262,0.273,0.202") from None
    if np.any(v < 0) or v.sum() <= 0:
        raise SystemExit(f"--mix {s!r}: proportions must be non-negative with a positive sum")
    return v / v.sum()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m servesim.systems.oserve.search", description=__doc__.split("\n")[0])
    ap.add_argument("--model", required=True)
    ap.add_argument("--gpus", type=int, required=True)
    ap.add_argument("--mix", required=True, help="type proportions SILO,LILO,SISO,LISO (normalised)")
    ap.add_argument("--rate", type=float, default=10.0, help="total arrivals, req/s (λ = mix * rate * span)")
    ap.add_argument("--objective", choices=OBJECTIVES, default="phi-alpha")
    ap.add_argument("--mode", choices=("heuristic", "exhaustive", "both"), default="both")
    ap.add_argument("--seed", type=int, default=0, help="Alg. 1's RNG")
    ap.add_argument("--profile-seed", type=int, default=0, help="the profiler's request sampling")
    ap.add_argument("--patience", type=int, default=20)
    ap.add_argument("--max-iter", type=int, default=200)
    ap.add_argument("--n-requests", type=int, default=2000, help="requests per saturation run of the profiler")
    ap.add_argument("--max-pp", type=int, default=8, help="deepest pipeline considered")
    ap.add_argument("--backend", choices=BACKENDS, default="roofline")
    ap.add_argument("--cache-dir", default=None)
    ap.add_argument("-o", "--out", required=True)
    a = ap.parse_args(argv)
    from ...workload.gen_oserve import TYPES, type_pool
    from .profiler import DEFAULT_CACHE, pools_from_frame

    mix = _parse_mix(a.mix)
    if len(mix) != len(TYPES):
        raise SystemExit(f"--mix has {len(mix)} proportions; the types are {', '.join(TYPES)}")
    pools = pools_from_frame(type_pool(), names=list(range(len(TYPES))), labels=TYPES)
    prof = CapacityProfiler(a.model, pools, backend=a.backend, n_requests=a.n_requests, seed=a.profile_seed,
                            cache_dir=a.cache_dir or DEFAULT_CACHE)
    lam = mix * a.rate * prof.span_s
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    res = {"model": a.model, "gpus": a.gpus, "mix": mix.tolist(), "types": list(TYPES), "lam_per_span": lam.tolist(),
           "objective": a.objective, "max_pp": a.max_pp, "seed": a.seed, "profile_seed": a.profile_seed, "backend": a.backend, "n_requests": a.n_requests}
    t0 = time.perf_counter()
    for s in sorted({st for d in range(1, a.gpus + 1) for st in strategies(a.model, d, max_pp=a.max_pp)}):
        for cross in ((False, True) if s.pp > 1 and a.gpus > GPUS_PER_NODE else (False,)):
            prof.capacity(Shape(s.tp, s.pp, cross))
    res["profile_seconds"] = time.perf_counter() - t0
    res["profile_runs"] = prof.runs
    rows = ["shape,gpus,cross_node," + ",".join(f"n_{t},e_{t}" for t in TYPES)]
    for s, (n, e) in sorted(prof._mem.items()):
        rows.append(f"{s.label().replace(',', ' ')},{s.gpus},{int(s.cross_node)}," + ",".join(f"{a:g},{b:g}" for a, b in zip(n, e)))
    (out / "capacities.csv").write_text("\n".join(rows) + "\n")
    for mode in (("heuristic", "exhaustive") if a.mode == "both" else (a.mode,)):
        ev = Evaluator(prof, lam, a.gpus, a.objective, a.max_pp)
        r = heuristic(ev, a.model, a.seed, a.patience, a.max_iter) if mode == "heuristic" else exhaustive(ev, a.model)
        res[mode] = r.to_dict()
        if mode == "heuristic":
            (out / "heuristic_trace.json").write_text(json.dumps(r.trace, indent=1))
        print(f"{mode}: {' + '.join(s.label() for s in r.deployment)}  iterations={r.iterations}  alpha*={r.value.alpha:.4f}  phi={r.value.phi:.1f}  "
              f"{r.seconds:.2f}s  {r.evaluations} evaluations")
    if "heuristic" in res and "exhaustive" in res:
        res["alpha_gap"] = 1 - res["heuristic"]["alpha"] / res["exhaustive"]["alpha"]
        res["time_ratio"] = res["heuristic"]["seconds"] / res["exhaustive"]["seconds"]
        print(f"gap {res['alpha_gap']:.2%}  time ratio {res['time_ratio']:.2f}")
    (out / "deployment.json").write_text(json.dumps(res, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
