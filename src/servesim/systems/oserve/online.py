"""OServe's online loop (§3) and its baselines, served in the simulator span by span.

Every span (1 minute) each system predicts the per-type counts λ̂ (``--predictor``: ``lstm``, the
paper's, by default; ``oracle`` = the true counts, a named reading; or ``moving_average`` /
``aggregate_lstm`` / ``last_value`` from ``predictor``), plans a deployment and routing, switches
when the layout changes, and routes the span's requests. The LSTM is the predictor run's trained
model (``--lstm-model``: its ``lstm.pt``, or ``collected`` = beside the predictor run's summary.json
given as the positional argument), so every online run forecasts with the one model Fig 7 scores;
without ``--lstm-model`` it is trained here with the ``--lstm-*`` settings.

- ``oserve``: Alg. 1 (``search.heuristic``) on the flow objective for λ̂, routing by the flow's
  x_kj (type-aware); plans cached by (rounded λ̂, incumbent deployment); the incumbent is kept when
  the fresh search does not beat it (the warm start we can do without changing the search: Alg. 1
  itself restarts from the uniform deployment); ad hoc switching (``switching``, Alg. 2);
- ``oserve_naive_reload``: the same plans, switched by reloading weights from storage (Fig 14);
- ``static`` (vLLM static): the homogeneous deployment (one shape, DP copies) with the best
  worst-span α* over the whole trace's true λ (grid search over every shape, spec §2 [R]: scored by
  the flow model, not by simulating each), true round-robin (type-agnostic);
- ``reload`` (vLLM reload): the best homogeneous deployment for each span's λ̂, true round-robin,
  with ad hoc switching (the paper's "reload" uses OServe's switching, spec §2);
- ``hetero`` (ablation middle rung): OServe's deployments with type-agnostic routing, each
  replica's share in proportion to its capacity on λ̂'s mix;
- ``dynamo`` (Dynamo + vLLM, Fig 18; opt-in with ``--systems``): prefill and decode workers of one
  fixed shape, a reactive ±1 planner, KV-aware decode routing and KV hand-off (``dynamo``).

Serving (``serving``): every system of an experiment runs as ONE cluster of the shared simulator,
each replica lifetime (the spans over which the same shape stays on the same GPUs) one vLLM-like
instance; requests are routed at arrival (OServe, its ablations: the plan's shares by type,
smooth weighted round-robin, ``--weighted-routing random`` for a seeded draw; vLLM static and
reload: true round-robin). At a switch the retired replicas stop taking requests, their queued
requests are routed again, their short-output requests drain and their long-output requests' KV
moves live (``sim.migration``) to the new layout; a new replica starts its switch once its GPUs
are free and joins when the switch ends. Nothing is added to the results after the simulation.

Llumnix (Fig 17; opt-in with ``--systems``): vLLM static's homogeneous deployment for the whole
trace, served by ``llumnix`` as one cluster: load-aware dispatch on Llumnix's freeness and live
migration between its instances (``--llumnix-option KEY=VALUE`` sets its knobs).

Load: the trace is scaled so that its busiest span loads the best static homogeneous deployment to
``--load`` (spec §2 [R]: "neither over- nor under-utilised"): the busiest span is the one with the
smallest flow-model headroom, and the deployment's capacity at that span's mix is, by default
(``--load-basis open``), the largest Poisson rate it sustains there (`open_mixed_capacity`: per
replica shape, the profiler's open-loop bisection on requests drawn at the mix). The named reading
``--load-basis closed`` measures it as the profiler's closed n_kj (a saturation run per replica, all
requests at t = 0), which overstates what open-loop traffic sustains: at full scale its "latency"
load (0.9) overloaded every Llama-2-70B system (static's mean E2E 930 s on T1, P99 measuring queue
growth), against the paper's own "neither over- nor under-utilised" (issue 28). Throughput = completed requests /
(last completion - first arrival); at a load above capacity it is the system's sustained rate.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from ...catalog import get_model
from ...errors import InputError
from ...metrics.summary import summarize as summarize_requests
from ...sim import Cluster
from ...workload import schema
from . import dynamo as DY
from . import llumnix as LL
from . import predictor as PR
from . import serving as SV
from . import switching as SW
from .objective import CLASSIFY, OBJECTIVES, SHARES, balanced_fractions, evaluate
from .profiler import METHODS, CapacityProfiler, pools_from_frame, saturated_rate
from .replica import (BACKENDS, DEFAULT_BACKEND, GPU, Shape, add_pp_engines_arg, instance_config, kv_tokens,
                      set_pp_engines, step_model, strategies)
from .search import INITS, Evaluator, exhaustive, heuristic, place

SYSTEMS = ("oserve", "static", "reload", "hetero", "oserve_naive_reload")
DEFAULT_SYSTEMS = SYSTEMS  # what --systems serves unless told; the opt-in baselines follow
SYSTEMS += ("dynamo",)  # Fig 18's Dynamo + vLLM (module dynamo)
SYSTEMS += ("llumnix",)  # Fig 17's Llumnix (module llumnix)
SO_TYPES = SV.SO_TYPES  # short-output types drain at a switch; the others migrate
ROUTING = {"static": "round-robin", "reload": "round-robin"}  # the vLLM baselines; the rest: weighted
PCTS = (90, 95, 96, 97, 98, 99)


def fill_routes(F: np.ndarray, n: np.ndarray, e: np.ndarray) -> np.ndarray:
    """Routing shares with every type routable: a type the plan gave no flow (λ̂_j = 0) goes to the
    replicas that can hold it in proportion to their capacity for it."""
    F = np.array(F, float)
    for j in range(F.shape[1]):
        if F[:, j].sum() <= 0:
            w = np.where(e[:, j] > 0, n[:, j], 0.0)
            if w.sum() > 0:
                F[:, j] = w / w.sum()
    return F


@dataclass(frozen=True)
class Plan:
    shapes: tuple[Shape, ...]      # placed shapes (search.place order)
    fractions: np.ndarray          # K x J routing shares
    alpha: float
    cached: bool = False

    def label(self) -> str:
        return " + ".join(s.label() for s in self.shapes)


class Planner:
    """Deployments for a λ: OServe's (Alg. 1) and the best homogeneous one, with a plan cache."""

    def __init__(self, prof: CapacityProfiler, model: str, gpus: int, *, search: str = "heuristic", seed: int = 0,
                 max_pp: int = 8, round_frac: float = 0.02, init: str = "memory-min", objective: str = "phi-alpha",
                 shares: str = "vertex", classify: str = "alpha", restarts: int = 1):
        self.prof, self.model, self.gpus, self.search, self.seed, self.init = prof, model, gpus, search, seed, init
        if int(restarts) < 1:
            raise ValueError(f"restarts={restarts!r}: Alg. 1 runs from at least one seed")
        if int(restarts) > 1 and search != "heuristic":
            # the exhaustive search is deterministic: restarts would be ignored, so say so
            raise ValueError(f"restarts={restarts!r} is a reading of the randomised search (heuristic), not {search!r}")
        # Alg. 1 is randomised and the paper reports one run (restarts=1, seed `seed`); restarts=N (a
        # named reading) runs it from seeds seed..seed+N-1 and keeps the best plan on the objective:
        # from §4.3's memory-minimum start one seed can stall at a merge-only local optimum far below
        # what another seed reaches (LLaMA-30B on 8 GPUs, T2: TP2 + TP2,PP3 at alpha* 1.245 against
        # TP2 + TP2 + TP4 at 1.413, the exhaustive optimum)
        self.restarts = int(restarts)
        self.objective = objective  # objective.OBJECTIVES: the paper's flow value or a latency-aware reading
        self.shares = shares  # objective.SHARES: the α* LP's own solution, or the balanced optimal one
        self.classify = classify  # objective.CLASSIFY: where Alg. 1's O / U sets come from
        self.max_pp, self.round_frac = max_pp, round_frac
        self.cache: dict = {}
        self.search_s = 0.0
        self.searches = 0
        self.homogeneous_options = []
        for d in range(1, gpus + 1):
            if gpus % d == 0:
                for s in strategies(model, d, max_pp=max_pp):
                    placed = place([s] * (gpus // d), gpus)
                    if placed is not None:
                        self.homogeneous_options.append(placed)

    def _round(self, lam) -> tuple:
        q = max(1.0, self.round_frac * float(np.sum(lam)))
        return tuple(np.round(np.asarray(lam, float) / q) * q)

    def oserve(self, lam, incumbent: tuple[Shape, ...] | None = None) -> Plan:
        lam_r = np.maximum(np.array(self._round(lam)), 0.0)
        if lam_r.sum() <= 0:
            lam_r = np.ones(len(lam_r))
        key = ("oserve", tuple(lam_r), incumbent)
        if key in self.cache:
            p = self.cache[key]
            return Plan(p.shapes, p.fractions, p.alpha, True)
        t0 = time.perf_counter()
        ev = Evaluator(self.prof, lam_r, self.gpus, self.objective, max_pp=self.max_pp, classify=self.classify)
        if self.search == "heuristic":
            runs = [heuristic(ev, self.model, self.seed + k, init=self.init) for k in range(self.restarts)]
            r = max(runs, key=lambda x: ev.key(x.value))  # the first seed's plan on ties
        else:
            r = exhaustive(ev, self.model)
        best = (r.deployment, r.value)
        if incumbent is not None:
            inc = ev(list(incumbent))
            if inc is not None and ev.key(inc[1]) >= ev.key(best[1]):
                best = inc  # no strictly better plan: keep serving (no needless switch)
        self.search_s += time.perf_counter() - t0
        self.searches += 1
        n, e = self.prof.matrix(best[0])
        F = best[1].fractions() if self.shares == "vertex" else balanced_fractions(lam_r, n, e)
        p = Plan(best[0], fill_routes(F, n, e), float(best[1].alpha))
        self.cache[key] = p
        return p

    def uniform_alpha(self, shapes, lam) -> float:
        """α of round-robin (equal shares) on ``shapes``: 1 / the busiest replica's load."""
        n, e = self.prof.matrix(shapes)
        lam = np.asarray(lam, float)
        K = len(shapes)
        if np.any((lam > 0) & (e.sum(0) <= 0)):
            return 0.0
        load = (np.divide(lam / K, n, out=np.zeros_like(n), where=n > 0)).sum(1)
        return float(1.0 / load.max()) if load.max() > 0 else np.inf

    def homogeneous(self, lam) -> Plan:
        lam_r = np.maximum(np.array(self._round(lam)), 0.0)
        key = ("homogeneous", tuple(lam_r))
        if key in self.cache:
            p = self.cache[key]
            return Plan(p.shapes, p.fractions, p.alpha, True)
        best = max(self.homogeneous_options, key=lambda s: self.uniform_alpha(s, lam_r))
        p = self.round_robin(best, self.uniform_alpha(best, lam_r))
        self.cache[key] = p
        return p

    def round_robin(self, shapes, alpha) -> Plan:
        n, e = self.prof.matrix(shapes)
        F = np.where(e > 0, 1.0, 0.0)
        F = F / np.maximum(F.sum(0, keepdims=True), 1e-12)
        return Plan(tuple(shapes), F, float(alpha))

    def static(self, lams: np.ndarray) -> Plan:
        """The homogeneous deployment whose worst span (of the true λ) has the largest α."""
        def worst(s):
            return min(self.uniform_alpha(s, lam) for lam in lams if np.sum(lam) > 0)
        best = max(self.homogeneous_options, key=worst)
        return self.round_robin(best, worst(best))

    def capacity_shares(self, plan: Plan, lam) -> Plan:
        """The ablation's type-agnostic routing: shares in proportion to each replica's capacity on λ's mix."""
        n, e = self.prof.matrix(plan.shapes)
        lam = np.asarray(lam, float)
        mix = lam / lam.sum() if lam.sum() > 0 else np.full(len(lam), 1.0 / len(lam))
        per = np.divide(mix, n, out=np.full_like(n, np.inf), where=n > 0)
        cap = 1.0 / np.where(mix > 0, per, 0.0).sum(1)
        F = np.where(e > 0, cap[:, None], 0.0)
        F = F / np.maximum(F.sum(0, keepdims=True), 1e-12)
        return Plan(plan.shapes, F, evaluate(lam if lam.sum() > 0 else np.ones(len(lam)), n, e).alpha, plan.cached)


# ---- the trace --------------------------------------------------------------------------------------

def compress(df: pd.DataFrame, stride: int, span_s: float = 60.0) -> pd.DataFrame:
    """Keep every ``stride``-th minute (re-timed back to back): a shorter trace with the same drift."""
    if stride == 1:
        return df
    m = (df["arrival_s"] // span_s).astype(int)
    keep = (m % stride) == 0
    out = df[keep].copy()
    out["arrival_s"] = (m[keep] // stride) * span_s + (out["arrival_s"] - m[keep] * span_s)
    out["request_id"] = np.arange(len(out), dtype=np.int64)
    out.attrs = dict(df.attrs)
    return out.reset_index(drop=True)


def workload(kind: str, name: str, rate_rps: float, seed: int, pool: pd.DataFrame, model: str, stride: int,
             level_minutes: int) -> pd.DataFrame:
    from ...workload import gen_oserve as G

    if kind == "trace":
        df = compress(G.trace(name, rate_rps=rate_rps, seed=seed, pool=pool, model=model), stride)
    elif kind == "spatial":
        df = G.spatial(name, rate_rps, level_minutes, seed, pool=pool, model=model)
    else:
        df = G.temporal(name, rate_rps, level_minutes, seed, pool=pool, model=model)
    return df


def mean_mix(kind: str, name: str, seed: int, pool: pd.DataFrame, model: str, stride: int, level_minutes: int) -> np.ndarray:
    from ...workload import gen_oserve as G

    df = workload(kind, name, 2.0, seed, pool, model, stride, level_minutes)
    c = np.bincount(pd.Categorical(df["app"], categories=G.TYPES).codes, minlength=len(G.TYPES)).astype(float)
    return c / c.sum()


# ---- serving ----------------------------------------------------------------------------------------

def serve_plans(model: str, gpus: int, plans: list[Plan], wl: pd.DataFrame, types: np.ndarray, *, switch: str,
                span_s: float, seed: int, backend: str = DEFAULT_BACKEND, restart_s: float = SW.RESTART_S,
                type_names=(), router: str = "weighted", weighted_mode: str = "smooth",
                route_new: str = "at-switch") -> tuple[pd.DataFrame, list[dict]]:
    """Serve ``wl`` span by span on ``plans`` (one per span) as one cluster (``serving``);
    ``switch`` = adhoc | reload | none; ``router`` = weighted | round-robin."""
    return SV.serve_plans(model, gpus, plans, wl, types, switch=switch, span_s=span_s, seed=seed, backend=backend,
                          restart_s=restart_s, type_names=type_names, router=router, weighted_mode=weighted_mode,
                          route_new=route_new)


def summarize(df: pd.DataFrame, n_total: int) -> dict:
    """One system's row of systems.csv, read from ``metrics.summarize`` (the one summary of every
    simulator) under the names the notebooks and claims use; ``n_total``: the trace's requests
    (one the system never took counts as unserved)."""
    b = summarize_requests(df, percentiles=PCTS, by_tier=False)["all"]

    def nan(v):  # the summary's None (no completed request) is NaN in the table
        return np.nan if v is None else float(v)

    out = {"n_requests": int(n_total), "n_completed": int(b["completed"]), "n_unserved": int(n_total - b["completed"]),
           "e2e_mean_s": nan(b["mean_e2el_s"])}
    out.update({f"e2e_p{q}_s": nan(b[f"p{q}_e2el_s"]) for q in PCTS})
    out["ttft_p99_s"], out["tbt_p99_s"] = nan(b["p99_ttft_s"]), nan(b["p99_tpot_s"])
    out["throughput_rps"] = nan(b["request_throughput_per_s"])
    out["migrated"] = int(df["migrated"].sum())
    return out


def mixed_capacity(model: str, shapes, counts, pools, n_requests: int, seed: int, backend: str = DEFAULT_BACKEND) -> float:
    """Requests per span that round-robin on ``shapes`` sustains at the type mix ``counts``: each
    replica's saturation run (as the profiler's, on requests drawn at that mix), summed."""
    mix = np.asarray(counts, float) / np.sum(counts)
    total = 0.0
    for k, shape in enumerate(shapes):
        prompt, output = _draw_mix(np.random.default_rng([seed, 7, k]), pools, mix, n_requests)
        kv = kv_tokens(model, shape, GPU)
        keep = prompt + output <= kv
        w = schema.make(np.zeros(int(keep.sum())), prompt[keep], output[keep], model=model)
        res = Cluster.uniform(1, instance_config(model, shape, GPU), step_model(model, shape, GPU, backend)).run(w)
        total += saturated_rate(res.requests) * PR.SPAN_S
    return total


def _draw_mix(rng, pools, mix, n: int) -> tuple[np.ndarray, np.ndarray]:
    """``n`` (prompt, output) pairs: each request's type drawn at ``mix``, its lengths from that type's pool."""
    typ = rng.choice(len(pools), size=n, p=mix)
    prompt, output = np.empty(n, np.int64), np.empty(n, np.int64)
    for j, pool in enumerate(pools):
        sel = typ == j
        idx = rng.integers(0, len(pool.prompt), sel.sum())
        prompt[sel], output[sel] = pool.prompt[idx], pool.output[idx]
    return prompt, output


LOAD_BASES = ("open", "closed")
#: passes of the load's sizing in `run` (each re-sizes on the deployment static picks at the last rate)
SIZING_PASSES = 3


def open_mixed_capacity(prof: CapacityProfiler, shapes, counts, seed: int) -> tuple[float, float]:
    """(open, closed) requests per span that ``shapes`` sustain at the type mix ``counts``: per
    distinct shape, one replica on requests drawn at the mix (`CapacityProfiler.pool_rates`: its
    closed saturation rate, as `mixed_capacity`, and the largest Poisson rate it sustains, bracketed
    by that closed rate), times the shape's count. Cached beside the profiler's n_kj."""
    import collections

    from ..._imports import code_digest
    from ...disk_cache import key_of, read_json, write_json
    from .profiler import OPEN_VERSION, TypePool

    mix = np.asarray(counts, float) / np.sum(counts)
    closed_prof = prof.closed()
    tot_open = tot_closed = 0.0
    for shape, n in collections.Counter(shapes).items():
        tag = key_of({"closed": closed_prof.key(shape), "mix": np.round(mix, 6).tolist(), "seed": seed,
                      "open": OPEN_VERSION, "kind": "load-mix", "code": code_digest(__name__)})
        path = prof.cache_dir / f"{tag}.json" if prof.cache_dir is not None else None
        d = read_json(path) if path is not None else None
        if d is not None:
            r_open, r_closed = float(d["open"]), float(d["closed"])
        else:
            rng = np.random.default_rng([seed, 9])
            mixed = TypePool("mix", *_draw_mix(rng, prof.pools, mix, 20 * prof.n_requests))
            r_open, r_closed = prof.pool_rates(shape, mixed, rng)
            if path is not None:
                write_json(path, {"model": prof.model, "shape": shape.label(), "mix": mix.tolist(),
                                   "open": r_open, "closed": r_closed})
        tot_open += n * r_open
        tot_closed += n * r_closed
    return tot_open, tot_closed


# ---- CLI --------------------------------------------------------------------------------------------

def check(a: argparse.Namespace) -> None:
    from ...output_dir import check_output_dir

    check_output_dir(a.out, force=a.force)  # before the run, not after it
    for s in a.systems:
        if s not in SYSTEMS:
            raise InputError(f"--systems: {s!r} is not one of {', '.join(SYSTEMS)}")
    if a.kind == "trace" and a.name not in ("T1", "T2"):
        raise InputError(f"--name {a.name!r}: a trace is T1 or T2")
    if a.kind == "spatial" and a.name not in ("S1", "S2", "S3", "S4", "S5"):
        raise InputError(f"--name {a.name!r}: a spatial level is S1-S5")
    if a.kind == "temporal" and a.name not in ("T1", "T2", "T3", "T4"):
        raise InputError(f"--name {a.name!r}: a temporal level is T1-T4")
    if not (a.load > 0 and np.isfinite(a.load)):
        raise InputError(f"--load: need a finite number > 0, got {a.load}")
    if a.minute_stride < 1 or a.level_minutes < 1 or a.gpus < 1:
        raise InputError("--minute-stride, --level-minutes and --gpus must be >= 1")
    if a.search_restarts < 1:
        raise InputError(f"--search-restarts {a.search_restarts}: Alg. 1 runs from at least one seed (1: one run)")
    if a.search_restarts > 1 and a.search != "heuristic":
        raise InputError(f"--search-restarts {a.search_restarts}: restarts are a reading of the randomised search "
                         f"(--search heuristic); --search {a.search} is deterministic and would ignore them")
    LL.LlumnixOptions.parse(getattr(a, "llumnix_option", ()))
    if a.predictor not in ("oracle", *PR.PREDICTORS):
        raise InputError(f"--predictor {a.predictor!r}: oracle or one of {', '.join(PR.PREDICTORS)}")
    path = lstm_model_path(a)
    if path is not None and not path.is_file():
        raise InputError(f"--lstm-model: {path} does not exist (the predictor run writes {PR.MODEL_FILE})")
    try:
        get_model(a.model)
    except Exception as e:  # the catalog's own message names the model
        raise InputError(f"--model {a.model!r}: {e}") from None


def lstm_model_path(a) -> Path | None:
    """The trained LSTM ``--lstm-model`` names (``collected``: beside the positional summary.json)."""
    if a.lstm_model is None:
        if a.collected:
            raise InputError(f"{a.collected[0]}: positional inputs are only read with --lstm-model collected")
        return None
    if a.predictor != "lstm":
        return None  # another predictor: the LSTM file is not read (a matrix of predictors shares the args)
    if a.lstm_model == "collected":
        if len(a.collected) != 1:
            raise InputError(f"--lstm-model collected: need one predictor run's summary.json argument, got {len(a.collected)}")
        return Path(a.collected[0]).parent / PR.MODEL_FILE
    return Path(a.lstm_model)


def history(a, rate_rps: float) -> tuple[np.ndarray | None, str]:
    """The spans before the run's first (what the forecaster reads there) and the reading's name.
    A trace: its lead-in at the run's rate and stride (``--history lead-in``, `predictor.trace_history`);
    ``pad`` and the Table 1/2 levels: span 0 repeated (a level's lead-in would be its first span's
    process continued, which that repeats)."""
    if a.kind != "trace" or a.history == "pad":
        return None, "pad"
    return PR.trace_history(a.name, PR.LOOKBACK, rate_rps, a.seed, a.minute_stride), "lead-in"


def predicted_counts(a, counts: np.ndarray, hist: np.ndarray | None = None) -> tuple[np.ndarray, dict]:
    """λ̂ per span (spans x types) and where it came from; ``hist``: the spans before the first."""
    if a.predictor == "oracle":
        return counts.copy(), {"predictor": "oracle"}
    path = lstm_model_path(a)
    if path is not None:
        p = PR.LSTMPredictor.load(path)
        if p.J != counts.shape[1]:
            raise InputError(f"{path}: an LSTM of {p.J} types; this run has {counts.shape[1]}")
        src = {"predictor": "lstm", "lstm_model": str(path), "lstm_settings": p.settings()}
    else:
        from ...workload import gen_oserve as G

        series = G.type_counts(days=a.predictor_days, seed=a.seed)[list(G.TYPES)].to_numpy(float)
        p = PR.make(a.predictor, hidden=a.lstm_hidden, layers=2, epochs=a.lstm_epochs, stride=a.lstm_stride, seed=a.seed)
        p.fit(series[: int(0.9 * len(series))])
        src = {"predictor": a.predictor, "lstm_model": "trained in this run" if a.predictor in ("lstm", "aggregate_lstm") else None}
    return np.nan_to_num(PR.rolling(p, counts, 0, pad=True, history=hist)), src


def run(a: argparse.Namespace) -> int:
    from ...output_dir import staged_output_dir
    from ...workload import gen_oserve as G
    from .profiler import DEFAULT_CACHE

    check(a)
    set_pp_engines(a.pp_engines)
    t_start = time.perf_counter()
    pool = G.type_pool(a.types, a.seed)
    pools = pools_from_frame(pool, names=list(range(len(G.TYPES))), labels=G.TYPES)
    prof = CapacityProfiler(a.model, pools, backend=a.backend, n_requests=a.n_requests, seed=a.seed,
                            cache_dir=a.cache_dir or DEFAULT_CACHE, method=a.capacity)
    planner = Planner(prof, a.model, a.gpus, search=a.search, seed=a.seed, max_pp=a.max_pp, init=a.search_init,
                      restarts=a.search_restarts,
                      objective=a.objective, shares=a.flow_shares, classify=a.classify)
    if not planner.homogeneous_options:
        raise InputError(f"{a.model} has no homogeneous deployment on {a.gpus} GPUs")
    # The load: the busiest span at `load` x what vLLM static's deployment sustains there. Static's
    # deployment is the best homogeneous one on the run's own counts, which depend on the rate; a
    # probe at 2 req/s gives a first guess, then the rate is re-sized on the deployment static picks
    # at that rate, until the two agree (SIZING_PASSES at most; summary.json `sizing` lists them)
    rate = 2.0
    wl = workload(a.kind, a.name, rate, a.seed, pool, a.model, a.minute_stride, a.level_minutes)
    counts = PR.span_counts(wl, G.TYPES, PR.SPAN_S)
    ref = planner.static(counts)
    sizing = []
    for _ in range(SIZING_PASSES):
        alphas = [planner.uniform_alpha(ref.shapes, c) if c.sum() > 0 else np.inf for c in counts]
        busiest = int(np.argmin(alphas))
        if a.load_basis == "open":  # the rate static's deployment sustains at the busiest span's mix
            cap, cap_closed = open_mixed_capacity(prof, ref.shapes, counts[busiest], a.seed)
        else:  # the named reading `closed`: saturation batches (all arrivals at 0)
            cap = cap_closed = mixed_capacity(a.model, ref.shapes, counts[busiest], pools, a.n_requests, a.seed, a.backend)
        rate = a.load * rate * cap / counts[busiest].sum()
        wl = workload(a.kind, a.name, rate, a.seed, pool, a.model, a.minute_stride, a.level_minutes)
        n_spans = int(np.ceil((wl["arrival_s"].max() + 1e-9) / PR.SPAN_S))
        counts = PR.span_counts(wl, G.TYPES, PR.SPAN_S, n_spans)
        st = planner.static(counts)
        sizing.append({"sized_on": ref.label(), "rate_rps": rate, "static_at_this_rate": st.label()})
        if st.shapes == ref.shapes:
            break
        ref = st
    else:
        print(f"warning: the load is sized on {ref.label()}, static serves {st.label()} at that rate "
              f"(no agreement in {SIZING_PASSES} passes; summary.json `sizing`)", file=sys.stderr)
    types = pd.Categorical(wl["app"], categories=G.TYPES).codes.astype(np.int64)
    hist, hist_reading = history(a, rate)
    lam_hat, lam_source = predicted_counts(a, counts, hist)
    plans: dict[str, list[Plan]] = {}
    t0 = time.perf_counter()
    if {"oserve", "hetero", "oserve_naive_reload"} & set(a.systems):
        cur, ps = None, []
        for s in range(n_spans):
            p = planner.oserve(lam_hat[s], cur)
            cur = p.shapes
            ps.append(p)
        plans["oserve"] = plans["oserve_naive_reload"] = ps
        plans["hetero"] = [planner.capacity_shares(p, lam_hat[s]) for s, p in enumerate(ps)]
    if "reload" in a.systems:
        plans["reload"] = [planner.homogeneous(lam_hat[s]) for s in range(n_spans)]
    if "static" in a.systems:
        st = planner.static(counts)
        plans["static"] = [st] * n_spans
    if "llumnix" in a.systems:  # vLLM static's deployment; routing by load, not shares
        st = planner.static(counts)
        plans["llumnix"] = [Plan(st.shapes, np.full_like(st.fractions, np.nan), st.alpha)] * n_spans
    if "dynamo" in a.systems:
        dyn = DY.prepare(a.model, a.gpus, wl, n_spans, PR.SPAN_S, backend=a.backend, max_pp=a.max_pp)
        plans["dynamo"] = [Plan((dyn.shape,) * dyn.n_workers, np.full((dyn.n_workers, len(G.TYPES)), 1.0 / dyn.n_workers),
                                dyn.alpha) for _ in range(n_spans)]
    plan_s = time.perf_counter() - t0
    edges = np.linspace(0.0, n_spans * PR.SPAN_S, 7) if a.kind == "trace" else \
        np.arange(len(wl.attrs.get("spans", [0])) + 1) * (wl.attrs.get("span_s") or n_spans * PR.SPAN_S)
    rows, span_rows, plan_rows, switch_rows, systems = [], [], [], [], {}
    for sysname in a.systems:
        switch = {"static": "none", "oserve_naive_reload": "reload"}.get(sysname, "adhoc")
        ts = time.perf_counter()
        if sysname == "dynamo":
            df, sw = DY.serve(dyn, wl, types, restart_s=a.restart_s)
        elif sysname == "llumnix":
            df, sw = LL.serve(a.model, a.gpus, plans[sysname][0].shapes, wl, types, span_s=PR.SPAN_S, n_spans=n_spans,
                              backend=a.backend, options=LL.LlumnixOptions.parse(a.llumnix_option)), []
        else:
            df, sw = serve_plans(a.model, a.gpus, plans[sysname], wl, types, switch=switch, span_s=PR.SPAN_S, seed=a.seed,
                                 backend=a.backend, restart_s=a.restart_s, type_names=G.TYPES,
                                 router=ROUTING.get(sysname, "weighted"), weighted_mode=a.weighted_routing,
                                 route_new=a.route_new)
        summ = summarize(df, len(wl))
        summ.update({"switches": len(sw), "switch_s_total": float(sum(x["switch_s"] for x in sw)),
                     "switch_s_max": float(max([x["switch_s"] for x in sw], default=np.nan)),
                     "switch_s_mean": float(np.mean([x["switch_s"] for x in sw])) if sw else np.nan,
                     "min_switch_interval_min": float(np.min(np.diff([x["span"] for x in sw]))) if len(sw) > 1 else np.nan,
                     "sim_wall_s": time.perf_counter() - ts})
        summ.update(df.attrs.get("system_stats", {}))  # a system's own counters (llumnix: migrations)
        systems[sysname] = summ
        rows.append({"system": sysname, **summ})
        pspan = np.searchsorted(edges, df["arrival_s"].to_numpy(), side="right") - 1
        for i in range(len(edges) - 1):
            g = df[(pspan == i) & df["e2e_s"].notna().to_numpy()]
            e = g["e2e_s"].to_numpy(float)
            span_rows.append({"system": sysname, "period": f"P{i + 1}", "n": len(g),
                              "e2e_mean_s": float(e.mean()) if e.size else np.nan,
                              **{f"e2e_p{q}_s": float(np.percentile(e, q)) if e.size else np.nan for q in PCTS}})
        for s, p in enumerate(plans[sysname]):
            plan_rows.append({"system": sysname, "span": s, "deployment": p.label(), "dp": len(p.shapes),
                              "alpha": p.alpha, "cached": p.cached, **{f"lam_{t}": lam_hat[s, j] for j, t in enumerate(G.TYPES)},
                              **{f"true_{t}": counts[s, j] for j, t in enumerate(G.TYPES)},
                              **{f"route_{t}": json.dumps(np.round(p.fractions[:, j], 4).tolist()) for j, t in enumerate(G.TYPES)}})
        switch_rows += [{"system": sysname, **x} for x in sw]
        print(f"{sysname}: P99 {summ['e2e_p99_s']:.2f} s  mean {summ['e2e_mean_s']:.2f} s  thr {summ['throughput_rps']:.2f} rps  "
              f"{len(sw)} switches  ({summ['sim_wall_s']:.1f} s)", flush=True)
    out = {"model": a.model, "gpus": a.gpus, "kind": a.kind, "name": a.name, "load": a.load, "rate_rps": rate,
           "static_deployment": ref.label(), "sizing": sizing, "static_capacity_busiest_span": cap, "load_basis": a.load_basis,
           "static_capacity_busiest_span_closed": cap_closed, "busiest_span": busiest, "types": list(G.TYPES),
           "type_method": a.types, "weighted_routing": a.weighted_routing, "route_new": a.route_new,
           "predictor": a.predictor, "predictor_source": lam_source, "history": hist_reading, "search": a.search, "search_init": a.search_init, "search_restarts": a.search_restarts, "objective": a.objective, "classify": a.classify, "flow_shares": a.flow_shares, "minute_stride": a.minute_stride,
           "n_spans": n_spans, "n_requests": len(wl), "period_edges_s": edges.tolist(), "restart_s": a.restart_s,
           "rrmse_pred_pct": float(np.nanmean(PR.rrmse(counts[1:], lam_hat[1:]))) if n_spans > 1 else np.nan,
           "plan_s": plan_s, "searches": planner.searches, "search_s": planner.search_s, "profile_runs": prof.runs,
           "systems": systems, "seed": a.seed, "pp_engines": a.pp_engines, "wall_s": time.perf_counter() - t_start}
    if "dynamo" in a.systems:
        out["dynamo"] = dyn.summary()
    # the n_kj behind OServe's plans, with the closed-batch ones beside an open-loop reading's
    used = {sh for sysname in ("oserve", "hetero") if sysname in plans for p in plans[sysname] for sh in p.shapes}
    closed = prof.closed()
    out["capacity_method"] = a.capacity
    out["capacities"] = {sh.label(): {"n": prof.capacity(sh)[0].tolist(), "n_closed": closed.capacity(sh)[0].tolist()}
                         for sh in sorted(used, key=lambda x: x.label())}
    with staged_output_dir(a.out, command=f"oserve online {a.model} {a.kind} {a.name}", force=a.force) as tmp:
        pd.DataFrame(rows).to_csv(tmp / "systems.csv", index=False)
        pd.DataFrame(span_rows).to_csv(tmp / "spans.csv", index=False)
        pd.DataFrame(plan_rows).to_csv(tmp / "plans.csv", index=False)
        pd.DataFrame(switch_rows, columns=["system", "span", "from", "to", "switch_s", "transfer_s", "bytes_nvlink", "bytes_ib",
                                           "replicas_changed", "replicas_kept", "drain_s", "ready_s"]).to_csv(
            tmp / "switches.csv", index=False)
        (tmp / "summary.json").write_text(json.dumps(out, indent=2, default=float) + "\n")
    print(f"-> {Path(a.out)} ({out['wall_s']:.1f} s)")
    return 0


def main(argv=None) -> int:
    from ...cli_errors import add_output_args, run_command

    ap = argparse.ArgumentParser(prog="python -m servesim.systems.oserve.online", description=__doc__.split("\n")[0])
    ap.add_argument("--model", required=True)
    ap.add_argument("--gpus", type=int, required=True)
    ap.add_argument("--kind", choices=("trace", "spatial", "temporal"), default="trace")
    ap.add_argument("--name", default="T1", help="trace T1|T2, spatial level S1-S5, temporal level T1-T4")
    ap.add_argument("--systems", nargs="+", default=list(DEFAULT_SYSTEMS))
    ap.add_argument("--load", type=float, default=0.8, help="the busiest span's rate / the best static deployment's "
                                                            "capacity at that span's mix (--load-basis)")
    ap.add_argument("--load-basis", choices=LOAD_BASES, default="open",
                    help="that capacity: the largest Poisson rate the deployment sustains (open; the paper's "
                         "'neither over- nor under-utilised') or its saturation batches' rate (closed, a named "
                         "reading: overstates what open-loop traffic sustains, most for the 70B models)")
    ap.add_argument("collected", nargs="*", help="the predictor run's summary.json (with --lstm-model collected)")
    ap.add_argument("--predictor", default="lstm", help="lstm (the paper's), oracle (the true counts: a named reading), "
                    "moving_average, aggregate_lstm or last_value")
    ap.add_argument("--lstm-model", default=None, help="a trained LSTM (the predictor run's lstm.pt), or 'collected'; "
                    "without it the LSTM is trained here (--predictor-days, --lstm-*)")
    ap.add_argument("--history", choices=PR.HISTORIES, default="lead-in",
                    help="what the forecaster reads before a trace's first span: the trace's lead-in (its own "
                         "process continued back in time, as a running service has) or pad (span 0 repeated, "
                         "which shows span 0 its own counts: the earlier reading)")
    ap.add_argument("--predictor-days", type=int, default=14)
    ap.add_argument("--lstm-hidden", type=int, default=32)
    ap.add_argument("--lstm-epochs", type=int, default=10)
    ap.add_argument("--lstm-stride", type=int, default=4)
    ap.add_argument("--minute-stride", type=int, default=1, help="keep every n-th minute of the trace (quick: a compressed T1)")
    ap.add_argument("--level-minutes", type=int, default=10, help="minutes per Table 1/2 level span")
    ap.add_argument("--types", choices=("kmeans", "quadrant"), default="kmeans")
    ap.add_argument("--search", choices=("heuristic", "exhaustive"), default="heuristic")
    ap.add_argument("--search-init", choices=INITS, default="memory-min",
                    help="Alg. 1's start: §4.3's memory minimum or the best uniform deployment (App. E)")
    ap.add_argument("--search-restarts", type=int, default=1,
                    help="Alg. 1 from this many seeds per plan, the best kept (1: one run, as the paper reports; "
                         "more: a named reading)")
    ap.add_argument("--classify", choices=CLASSIFY, default="alpha",
                    help="Alg. 1's O / U sets from the alpha* assignment the objective ranks (alpha; U is then "
                         "empty, so Alg. 1 only merges) or from the max flow at the span's forecast (flow: the "
                         "pseudo-code's words; search.py's docstring)")
    ap.add_argument("--objective", choices=OBJECTIVES, default="phi-alpha",
                    help="OServe's deployment objective: the paper's flow value (phi-alpha) or the latency-aware "
                         "phi-alpha-xnode (cross-node pipeline hand-offs discounted; objective.py)")
    ap.add_argument("--capacity", choices=METHODS, default="closed",
                    help="n_kj from saturation runs (closed, the paper's reading) or the largest Poisson rate a "
                         "replica sustains per type (open, a named reading); the load scaling is --load-basis")
    ap.add_argument("--flow-shares", choices=SHARES, default="vertex",
                    help="OServe's routing shares among the flow's optimal assignments: the LP's own (vertex, "
                         "often whole types per replica) or the one closest to capacity-proportional spreading")
    ap.add_argument("--max-pp", type=int, default=8)
    ap.add_argument("--weighted-routing", choices=("smooth", "random"), default="smooth",
                    help="OServe's routing by type shares: smooth weighted round-robin, or a seeded draw per request")
    ap.add_argument("--route-new", choices=SV.ROUTE_NEW, default="at-switch",
                    help="a replica a switch brings up takes its plan share from the switch (waiting in its queue "
                         "until up) or only once up (the replicas already up take it meanwhile)")
    ap.add_argument("--restart-s", type=float, default=SW.RESTART_S)
    ap.add_argument("--llumnix-option", nargs="*", default=[], metavar="KEY=VALUE",
                    help="Llumnix knobs: poll_s, threshold_steps, migration, last_stage_tokens, max_stages")
    ap.add_argument("--n-requests", type=int, default=2000, help="requests per profiler saturation run")
    ap.add_argument("--backend", choices=BACKENDS, default=DEFAULT_BACKEND)
    add_pp_engines_arg(ap)
    ap.add_argument("--cache-dir", default=None)
    add_output_args(ap)
    return run_command(run, ap.parse_args(argv), "oserve online")


if __name__ == "__main__":
    sys.exit(main())
