"""Serving the scheduler's plans in the simulator, for the figures that compare plans by latency
(Fig 16c: heuristic vs exhaustive; App. J: OServe vs the best homogeneous deployment).

- ``mix_workload``: Poisson arrivals at ``rate_rps`` whose type counts match a mix exactly (largest
  remainder), lengths drawn from each type's pool (spec §2 [R]: requests per type from the type's
  empirical (input, output) pool).
- ``equal_shares``: type-agnostic routing of a homogeneous (vLLM static) deployment: every replica
  that can hold a type gets an equal share of it (spec §2: the static router is unstated [A]).
- ``serve_plan``: one plan served (``serve.serve``: weighted-random routing by the fractions, each
  replica its own continuous-batching instance) and its latency summary.
"""

from __future__ import annotations

import numpy as np

from ...metrics.latency import percentile
from ...workload import schema
from .profiler import TypePool
from .replica import DEFAULT_BACKEND
from .serve import serve


def mix_workload(pools: list[TypePool], mix, rate_rps: float, minutes: float, seed: int, model: str):
    """(request table, type index per request) of a constant type ``mix`` at ``rate_rps``."""
    mix = np.asarray(mix, float)
    if mix.shape != (len(pools),) or np.any(mix < 0) or mix.sum() <= 0:
        raise ValueError(f"mix {mix.tolist()} does not fit {len(pools)} type pools")
    if not (rate_rps > 0 and minutes > 0):
        raise ValueError(f"rate_rps={rate_rps} and minutes={minutes} must be > 0")
    rng = np.random.default_rng([seed, 7])
    horizon = minutes * 60.0
    n = int(rng.poisson(rate_rps * horizon))
    arrival = np.sort(rng.uniform(0.0, horizon, n))
    p = mix / mix.sum()
    c = np.floor(n * p).astype(int)
    c[np.argsort(-(n * p - c))[: n - c.sum()]] += 1
    types = rng.permutation(np.repeat(np.arange(len(p)), c))
    prompt, output = np.zeros(n, np.int64), np.zeros(n, np.int64)
    for j, pool in enumerate(pools):
        sel = types == j
        pick = rng.integers(0, len(pool.prompt), int(sel.sum()))
        prompt[sel], output[sel] = pool.prompt[pick], pool.output[pick]
    return schema.make(arrival, prompt, output, model=model), types


def equal_shares(e: np.ndarray) -> np.ndarray:
    """K x J routing fractions: type j split equally over the replicas with e_kj > 0."""
    ok = (np.asarray(e, float) > 0).astype(float)
    tot = ok.sum(axis=0)
    return np.divide(ok, tot, out=np.zeros_like(ok), where=tot > 0)


def serve_plan(model: str, deployment, fractions, workload, types, *, backend: str = DEFAULT_BACKEND, seed: int = 0) -> dict:
    """Latency summary of ``deployment`` serving ``workload`` routed by ``fractions`` (K x J)."""
    df, unrouted = serve(model, tuple(deployment), fractions, workload, types, backend=backend, seed=seed)
    e2e = df["e2e_s"].to_numpy(float)
    fin = df["finish_s"].to_numpy(float)
    done = np.isfinite(fin)
    span = float(np.nanmax(fin) - workload["arrival_s"].min()) if done.any() else np.nan
    return {"requests": int(len(workload)), "unrouted": int(unrouted), "completed": int(done.sum()),
            "p99_e2e_s": percentile(e2e, 99), "p90_e2e_s": percentile(e2e, 90), "mean_e2e_s": float(np.nanmean(e2e)) if done.any() else None,
            "throughput_rps": float(done.sum() / span) if span and span > 0 else None}
