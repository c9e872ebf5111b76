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
``max_iter`` (200). A step that makes a GPU count with no valid strategy is rejected. One addition
[R]: a replica of O for which neither merge nor swap can apply (no other replica in O, none in U
with GPUs to give) is split instead. O / U (``Evaluator.classify``) come from the flow network's
assignment, and which one is a reading [A]: "alpha" (default) takes the assignment the objective
ranks, α*·λ (once Φ reaches Σλ the spec's evaluation L is the α* problem), which fills every
replica that can take the bottleneck type, so U is empty and the only move left is merge
(measured on Fig 16's searches, ``move_shares``); "flow" takes the pseudo-code's words literally,
the max flow at λ itself (``objective.flow_sets``), which once λ fits is an arbitrary optimal
vertex: some replicas full, others with slack, so splits and swaps fire (on the quick online run
it splits OPT-30B's 8 GPUs into 5-6 replicas and OServe's P99 falls far behind vLLM static's).

CLI (``python -m servesim.systems.oserve.search``, one job of workflow/runs/oserve.yaml): profiles
every shape once, then per case (a --mix, each span of a --trace, or one --lengths type) runs the
heuristic and/or the exhaustive search and the best homogeneous deployment (vLLM static), and with
--serve-load serves each plan on a workload of the case's mix. Writes summary.json, cases.csv (one
row per case x plan), capacities.csv (n_kj / e_kj) and traces.json (Alg. 1's iterations). With
--trace each span after the first also has plan "previous": the previous span's heuristic plan kept
(App. G's comparison of a span's switch against staying).

Alg. 1 is randomised and the paper reports one run of it. ``--search-seeds N`` runs it with the
seeds ``--seed`` .. ``--seed`` + N - 1 from each start: the first is plan "heuristic" (or
"heuristic-<init>"), the others "heuristic@seed<k>", each served on the same workload at the same
rate (the first seed's plans set the reference capacity, so the first seed's rows do not depend on
N). The notebooks summarise a claim over the seeds (``metrics.seed_band``), not on one draw.
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import json
import sys
import time
from dataclasses import dataclass, field

import numpy as np

from .objective import CLASSIFY, OBJECTIVES, XNODE_PENALTY, FlowValue, evaluate, flow_sets
from .profiler import CapacityProfiler
from .replica import BACKENDS, DEFAULT_BACKEND, GPUS_PER_NODE, Shape, add_pp_engines_arg, min_gpus, set_pp_engines, strategies


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
    xnode_penalty: float = XNODE_PENALTY  # objective "phi-alpha-xnode" only
    classify: str = "alpha"  # Alg. 1's O / U: objective.CLASSIFY
    evaluations: int = 0
    _memo: dict = field(default_factory=dict)

    def __post_init__(self):
        if self.objective not in OBJECTIVES:
            raise ValueError(f"objective={self.objective!r}: one of {OBJECTIVES}")
        if self.classify not in CLASSIFY:
            raise ValueError(f"classify={self.classify!r}: one of {CLASSIFY}")
        self.lam = np.asarray(self.lam, float)

    def __call__(self, shapes) -> tuple[tuple[Shape, ...], FlowValue] | None:
        placed = place(shapes, self.total_gpus)
        if placed is None:
            return None
        if placed not in self._memo:
            n, e = self.profiler.matrix(placed)
            v = evaluate(self.lam, n, e)
            tot = float(v.x.sum())
            cross = float(sum(v.x[k].sum() for k, s in enumerate(placed) if s.cross_node))
            self._memo[placed] = dataclasses.replace(v, cross_share=cross / tot if tot > 0 else 0.0)
            self.evaluations += 1
        return placed, self._memo[placed]

    def sets(self, placed, v: FlowValue) -> tuple[list, list]:
        """Alg. 1's (O, U) for a scored deployment (``classify``)."""
        if self.classify == "alpha":
            return list(v.saturated), list(v.underused)
        O, U = flow_sets(self.lam, *self.profiler.matrix(placed))
        return list(O), list(U)

    def key(self, v: FlowValue) -> tuple:
        return v.key(self.objective, self.xnode_penalty)


@dataclass
class SearchResult:
    deployment: tuple[Shape, ...]
    value: FlowValue
    iterations: int
    evaluations: int
    seconds: float
    trace: list = field(default_factory=list)

    def move_shares(self) -> dict[str, float]:
        """Of Alg. 1's iterations (the trace after its start): the % whose U set was empty (every
        replica saturated, so the pseudo-code's swap and split cannot fire) and the % whose only
        applied moves were merges; NaN without iterations (the exhaustive search, a kept plan)."""
        its = [t for t in self.trace if t["iter"] > 0 and "moves" in t]
        if not its:
            return {"u_empty_iter_pct": float("nan"), "merge_only_iter_pct": float("nan")}
        merge_only = [t for t in its if t["moves"]["merge"] > 0 and t["moves"]["swap"] == t["moves"]["split"] == 0]
        return {"u_empty_iter_pct": 100.0 * sum(t["underused"] == 0 for t in its) / len(its),
                "merge_only_iter_pct": 100.0 * len(merge_only) / len(its)}

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


INITS = ("memory-min", "best-uniform")


def heuristic(ev: Evaluator, model: str, seed: int = 0, patience: int = 20, max_iter: int = 200,
              init: str = "memory-min") -> SearchResult:
    """Alg. 1 (see the module docstring). ``init``: "memory-min" (§4.3: every replica at the memory
    minimum, pure TP) or "best-uniform" (App. E's "random uniform (resource allocation and parallel
    strategies)" read as the best of the uniform deployments, i.e. vLLM static's grid [R])."""
    if init not in INITS:
        raise ValueError(f"init={init!r}: one of {INITS}")
    t0 = time.perf_counter()
    rng = np.random.default_rng(seed)
    dmin = min_gpus(model)
    if init == "best-uniform":
        b = best_homogeneous(ev, model)
        cur = (b.deployment, b.value)
    else:
        cur = best_strategies(ev, model, uniform_sizes(model, ev.total_gpus))
    if cur is None:
        raise ValueError(f"{model}: the uniform deployment on {ev.total_gpus} GPUs has no valid placement")
    trace = [{"iter": 0, "deployment": [s.label() for s in cur[0]], "key": list(ev.key(cur[1])), "accepted": True}]
    stale = it = 0
    while stale < patience and it < max_iter:
        it += 1
        shapes, val = cur
        size = dict(enumerate(s.gpus for s in shapes))
        O, U = ev.sets(shapes, val)
        nxt = len(size)
        moves = {"merge": 0, "swap": 0, "split": 0}  # applied this iteration (the trace's record)
        for r in O:
            if r not in size:
                continue
            alive_o = [o for o in O if o in size and o != r]
            alive_u = [u for u in U if u in size and size[u] > dmin]
            if not alive_o and not alive_u:  # neither op can apply: split r instead [R]
                if size[r] >= 2 * dmin:
                    a = int(rng.integers(dmin, size[r] - dmin + 1))
                    size[nxt], size[r] = size[r] - a, a
                    nxt += 1
                    moves["split"] += 1
            elif rng.random() < 0.5:
                if alive_o:
                    o = alive_o[rng.integers(len(alive_o))]
                    size[r] += size.pop(o)
                    moves["merge"] += 1
            elif alive_u:
                u = alive_u[rng.integers(len(alive_u))]
                delta = int(rng.integers(1, size[u] - dmin + 1))
                size[r] += delta
                size[u] -= delta
                moves["swap"] += 1
        for r in U:
            if r not in size:
                continue
            alive_o = [o for o in O if o in size]
            if rng.random() < 0.5:
                if size[r] >= 2 * dmin:
                    a = int(rng.integers(dmin, size[r] - dmin + 1))
                    size[nxt], size[r] = size[r] - a, a
                    nxt += 1
                    moves["split"] += 1
            elif alive_o and size[r] > dmin:
                o = alive_o[rng.integers(len(alive_o))]
                delta = int(rng.integers(1, size[r] - dmin + 1))
                size[o] += delta
                size[r] -= delta
                moves["swap"] += 1
        sizes = sorted(size.values())
        cand = best_strategies(ev, model, sizes)
        ok = cand is not None and ev.key(cand[1]) > ev.key(val)
        if ok:
            cur, stale = cand, 0
        else:
            stale += 1
        trace.append({"iter": it, "sizes": sizes, "deployment": [s.label() for s in cand[0]] if cand else None,
                      "key": list(ev.key(cand[1])) if cand else None, "accepted": ok,
                      "saturated": len(O), "underused": len(U), "moves": moves})
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


def best_homogeneous(ev: Evaluator, model: str) -> SearchResult:
    """vLLM (static)'s deployment: the best DP x one shape using all GPUs (a grid over shapes)."""
    t0 = time.perf_counter()
    best, n = None, 0
    for d in range(1, ev.total_gpus + 1):
        if ev.total_gpus % d:
            continue
        for s in strategies(model, d, max_pp=ev.max_pp):
            r = ev([s] * (ev.total_gpus // d))
            n += 1
            if r is not None and (best is None or ev.key(r[1]) > ev.key(best[1])):
                best = r
    if best is None:
        raise ValueError(f"{model}: no homogeneous deployment fits {ev.total_gpus} GPUs")
    return SearchResult(best[0], best[1], n, ev.evaluations, time.perf_counter() - t0)


# ---------------------------------------------------------------- command line
MODES = ("heuristic", "exhaustive", "both")
CASE_FIELDS = ("case", "plan", "search_seed", "deployment", "dp", "gpus", "alpha", "phi", "iterations", "converged_at", "evaluations", "seconds",
               "u_empty_iter_pct", "merge_only_iter_pct", "serve_rate_rps", "requests", "unrouted", "completed", "mean_e2e_s", "p90_e2e_s", "p99_e2e_s", "throughput_rps")


def _parse_mix(s: str) -> tuple[str | None, np.ndarray]:
    """``[NAME=]p1,p2,...`` -> (name, proportions normalised to 1)."""
    from ...errors import InputError

    name, _, body = s.rpartition("=")
    try:
        v = np.array([float(x) for x in body.split(",")])
    except ValueError:
        raise InputError(f"--mix {s!r}: give comma-separated type proportions, e.g. 0.263,0.262,0.273,0.202") from None
    if np.any(v < 0) or not np.all(np.isfinite(v)) or v.sum() <= 0:
        raise InputError(f"--mix {s!r}: proportions must be finite, non-negative with a positive sum")
    return name or None, v / v.sum()


def _parse_lengths(s: str) -> tuple[int, int]:
    from ...errors import InputError

    try:
        i, o = (int(x) for x in s.split(":"))
    except ValueError:
        raise InputError(f"--lengths {s!r}: give INPUT:OUTPUT tokens, e.g. 1024:128") from None
    if i < 1 or o < 1:
        raise InputError(f"--lengths {s!r}: both lengths must be >= 1")
    return i, o


def cases_and_pools(a) -> tuple[list, list[tuple[str, np.ndarray]]]:
    """(type pools, [(case name, mix)]) from --lengths / --trace / --mix."""
    from ...errors import InputError
    from ...workload import gen_oserve
    from .profiler import TypePool, pools_from_frame

    given = [x for x in ("mix", "trace", "lengths") if getattr(a, x)]
    if len(given) != 1:
        raise InputError(f"give exactly one of --mix, --trace or --lengths (got {', '.join('--' + g for g in given) or 'none'})")
    if a.lengths:
        i, o = _parse_lengths(a.lengths)
        return [TypePool(f"I{i}O{o}", np.array([i]), np.array([o]))], [("homogeneous", np.ones(1))]
    frame = gen_oserve.type_pool(a.types, a.seed)
    pools = pools_from_frame(frame, names=list(range(len(gen_oserve.TYPES))), labels=gen_oserve.TYPES)
    if a.trace:
        df = gen_oserve.trace(a.trace, rate_rps=a.rate, seed=a.seed, pool=frame)
        edges = [s for s, _ in df.attrs["spans_s"]] + [df.attrs["spans_s"][-1][1]]
        comp = gen_oserve.composition(df, edges)
        return pools, [(f"{a.trace}-P{k + 1}", comp[k]) for k in range(len(comp))]
    cases = []
    for k, s in enumerate(a.mix):
        name, v = _parse_mix(s)
        if len(v) != len(pools):
            raise InputError(f"--mix {s!r} has {len(v)} proportions; the types are {', '.join(gen_oserve.TYPES)}")
        cases.append((name or f"mix{k}", v))
    if len({c for c, _ in cases}) != len(cases):
        raise InputError("--mix: case names repeat")
    return pools, cases


def check_options(a) -> None:
    from ...errors import InputError

    if a.gpus < 1:
        raise InputError(f"--gpus {a.gpus}: need >= 1")
    if not (a.rate > 0 and np.isfinite(a.rate)):
        raise InputError(f"--rate {a.rate}: need a finite rate > 0")
    if a.patience < 1 or a.max_iter < 1 or a.n_requests < 10 or a.max_pp < 1:
        raise InputError("--patience, --max-iter and --max-pp must be >= 1 and --n-requests >= 10")
    if not (0 <= a.serve_load < 5) or not (a.serve_minutes > 0):
        raise InputError(f"--serve-load {a.serve_load} must be in [0, 5) and --serve-minutes > 0")
    if a.search_seeds < 1:
        raise InputError(f"--search-seeds {a.search_seeds}: need >= 1")
    if len(set(a.init)) != len(a.init):
        raise InputError(f"--init {' '.join(a.init)}: a start is named twice")
    if a.trace and a.trace not in ("T1", "T2"):
        raise InputError(f"--trace {a.trace!r}: T1 or T2")


SEED_TAG = "@seed"


def plan_name(init: str, seed: int | None = None) -> str:
    """'heuristic' (memory-min) or 'heuristic-<init>'; with ``seed`` (a seed after the first),
    '<that>@seed<seed>'."""
    base = "heuristic" if init == "memory-min" else f"heuristic-{init}"
    return base if seed is None else f"{base}{SEED_TAG}{seed}"


def _row(case: str, plan: str, r: SearchResult, served: dict | None, rate: float | None, seed: int | None) -> dict:
    d = r.to_dict()
    row = {"case": case, "plan": plan, "search_seed": seed, "deployment": " + ".join(d["deployment"]), "dp": d["dp"], "gpus": sum(s.gpus for s in r.deployment),
           "alpha": d["alpha"], "phi": d["phi"], "iterations": d["iterations"], "converged_at": d["converged_at"],
           "evaluations": d["evaluations"], "seconds": d["seconds"], **r.move_shares(), "serve_rate_rps": rate}
    row.update({k: (served or {}).get(k) for k in CASE_FIELDS if k not in row})
    return row


def run(a) -> int:
    import pandas as pd

    from ...output_dir import staged_output_dir
    from .plans import equal_shares, mix_workload, serve_plan
    from .profiler import DEFAULT_CACHE

    check_options(a)
    pools, cases = cases_and_pools(a)
    set_pp_engines(a.pp_engines)
    types = [p.name for p in pools]
    prof = CapacityProfiler(a.model, pools, backend=a.backend, n_requests=a.n_requests, seed=a.profile_seed,
                            cache_dir=None if a.no_cache else (a.cache_dir or DEFAULT_CACHE))
    modes = ("heuristic", "exhaustive") if a.mode == "both" else (a.mode,)
    with staged_output_dir(a.out, command=f"oserve search --model {a.model} --gpus {a.gpus}", force=a.force) as tmp:
        t0 = time.perf_counter()
        for s in sorted({st for d in range(1, a.gpus + 1) for st in strategies(a.model, d, max_pp=a.max_pp)}):
            for cross in ((False, True) if s.pp > 1 and a.gpus > GPUS_PER_NODE else (False,)):
                prof.capacity(Shape(s.tp, s.pp, cross))
        summ = {"model": a.model, "gpus": a.gpus, "types": types, "type_method": None if a.lengths else a.types,
                "objective": a.objective, "classify": a.classify, "mode": a.mode, "max_pp": a.max_pp,
                "seed": a.seed, "search_seeds": a.search_seeds, "init": a.init, "profile_seed": a.profile_seed, "backend": a.backend, "pp_engines": a.pp_engines, "n_requests": a.n_requests, "rate_rps": a.rate,
                "span_s": prof.span_s, "patience": a.patience, "max_iter": a.max_iter, "serve_load": a.serve_load,
                "serve_minutes": a.serve_minutes, "profile_seconds": time.perf_counter() - t0, "profile_runs": prof.runs,
                "profile_cache_hits": prof.hits, "cases": []}
        rows = ["shape,gpus,cross_node," + ",".join(f"n_{t},e_{t}" for t in types)]
        for s, (n, e) in sorted(prof._mem.items()):
            rows.append(f"{s.label().replace(',', ' ')},{s.gpus},{int(s.cross_node)}," + ",".join(f"{x:g},{y:g}" for x, y in zip(n, e)))
        (tmp / "capacities.csv").write_text("\n".join(rows) + "\n")
        table, traces, prev = [], {}, None
        for ci, (name, mix) in enumerate(cases):
            lam = mix * a.rate * prof.span_s

            def fresh() -> Evaluator:  # a fresh evaluator per search: none reuses another's LPs
                return Evaluator(prof, lam, a.gpus, a.objective, a.max_pp, classify=a.classify)

            res, seeds = {}, {}   # seeds: the Alg. 1 plans' search seeds
            for mode in modes:
                if mode == "exhaustive":
                    res[mode] = exhaustive(fresh(), a.model)
                    continue
                for init in a.init:
                    for k in range(a.search_seeds):
                        seed = a.seed + k
                        plan = plan_name(init, seed if k else None)
                        res[plan], seeds[plan] = heuristic(fresh(), a.model, seed, a.patience, a.max_iter, init), seed
                        traces[name if plan == "heuristic" else f"{name}:{plan}"] = res[plan].trace
            res["static"] = best_homogeneous(fresh(), a.model)
            if a.trace and prev is not None:  # App. G: the previous span's plan kept, routed for this span's λ
                kept = fresh()(list(prev))
                res["previous"] = SearchResult(kept[0], kept[1], 0, 1, 0.0)
            prev = res["heuristic"].deployment if "heuristic" in res else None
            case = {"name": name, "mix": mix.tolist(), "lam_per_span": lam.tolist(), **{k: r.to_dict() for k, r in res.items()}}
            if "exhaustive" in res and "heuristic" in res:
                case["alpha_gap"] = 1 - res["heuristic"].value.alpha / res["exhaustive"].value.alpha if res["exhaustive"].value.alpha > 0 else None
                case["time_ratio"] = res["heuristic"].seconds / res["exhaustive"].seconds if res["exhaustive"].seconds > 0 else None
            served, rate = {}, None
            if a.serve_load > 0:
                ref = max(r.value.alpha_served for k, r in res.items() if SEED_TAG not in k)
                rate = a.serve_load * ref * float(lam.sum()) / prof.span_s
                wl, typ = mix_workload(pools, mix, rate, a.serve_minutes, a.seed * 1000 + ci, a.model)
                for k, r in res.items():
                    fr = equal_shares(prof.matrix(r.deployment)[1]) if k == "static" else r.value.fractions()
                    served[k] = serve_plan(a.model, r.deployment, fr, wl, typ, backend=a.backend, seed=a.seed)
                case["serve"] = {"rate_rps": rate, **served}
            summ["cases"].append(case)
            for k, r in res.items():
                table.append(_row(name, k, r, served.get(k), rate, seeds.get(k)))
                print(f"{name} {k}: {' + '.join(s.label() for s in r.deployment)}  alpha*={r.value.alpha:.4f}  {r.seconds:.2f}s  "
                      f"{r.evaluations} evaluations" + (f"  P99 {served[k]['p99_e2e_s']:.2f}s" if k in served else ""), flush=True)
        pd.DataFrame(table, columns=list(CASE_FIELDS)).to_csv(tmp / "cases.csv", index=False)
        (tmp / "traces.json").write_text(json.dumps(traces, indent=1) + "\n")
        (tmp / "summary.json").write_text(json.dumps(summ, indent=1, default=float) + "\n")
    return 0


def main(argv=None) -> int:
    from ...cli_errors import add_output_args, run_command

    ap = argparse.ArgumentParser(prog="python -m servesim.systems.oserve.search", description=__doc__.split("\n")[0])
    ap.add_argument("--model", required=True)
    ap.add_argument("--gpus", type=int, required=True)
    ap.add_argument("--mix", action="append", default=[], help="[NAME=]SILO,LILO,SISO,LISO proportions (normalised); repeatable")
    ap.add_argument("--trace", default=None, help="T1 or T2: one case per span P1-P6 with the span's type mix")
    ap.add_argument("--lengths", default=None, help="IN:OUT: one homogeneous type of fixed lengths (App. J)")
    ap.add_argument("--rate", type=float, default=10.0, help="total arrivals, req/s (λ = mix * rate * span)")
    ap.add_argument("--types", choices=("kmeans", "quadrant"), default="kmeans",
                    help="how requests are typed: k-means on the lengths (§5.1, as the online runs) or the "
                         "median split (quadrant, a reading)")
    ap.add_argument("--objective", choices=OBJECTIVES, default="phi-alpha")
    ap.add_argument("--classify", choices=CLASSIFY, default="alpha",
                    help="Alg. 1's O / U from the alpha* assignment the objective ranks (alpha; it leaves U "
                         "empty) or from the max flow at the case's lambda (flow: the pseudo-code's words)")
    ap.add_argument("--mode", choices=MODES, default="both")
    ap.add_argument("--seed", type=int, default=0, help="Alg. 1's RNG (and the served workload's)")
    ap.add_argument("--search-seeds", type=int, default=1,
                    help="run Alg. 1 with this many seeds (--seed, --seed + 1, ...) from each start; the "
                         "later seeds' plans are 'heuristic@seed<k>' (the module docstring)")
    ap.add_argument("--profile-seed", type=int, default=0, help="the profiler's request sampling")
    ap.add_argument("--init", choices=INITS, nargs="+", default=["memory-min"],
                    help="Alg. 1's start(s) (see heuristic()); each is its own plan: 'heuristic' (memory-min), 'heuristic-<init>'")
    ap.add_argument("--patience", type=int, default=20)
    ap.add_argument("--max-iter", type=int, default=200)
    ap.add_argument("--n-requests", type=int, default=2000, help="requests per saturation run of the profiler")
    ap.add_argument("--max-pp", type=int, default=8, help="deepest pipeline considered")
    ap.add_argument("--backend", choices=BACKENDS, default=DEFAULT_BACKEND)
    add_pp_engines_arg(ap)
    ap.add_argument("--serve-load", type=float, default=0.0,
                    help="serve every plan at this fraction of the best plan's capacity (0: do not serve)")
    ap.add_argument("--serve-minutes", type=float, default=5.0)
    ap.add_argument("--cache-dir", default=None, help="the capacity profiler's cache (default: the user cache)")
    ap.add_argument("--no-cache", action="store_true", help="profile afresh (the workflow's jobs: results depend on the code only)")
    add_output_args(ap, seed=None)
    return run_command(run, ap.parse_args(argv), "oserve search")


if __name__ == "__main__":
    sys.exit(main())
