"""Serve a workload on an OServe deployment in the simulator (type-aware routing by the flow).

Each request of type j goes to replica k with probability x_kj / Σ_k x_kj (the flow's routing
weights; spec §1.4 [R]: weighted random, seeded). Replicas share nothing, so each runs as its own
one-instance cluster on its share of the requests; the per-request tables are concatenated in
request order. Requests of a type no replica takes are returned as ``unrouted``.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ...sim import Cluster
from .replica import DEFAULT_BACKEND, GPU, Shape, instance_config, step_model


def route(types: np.ndarray, fractions: np.ndarray, seed: int = 0) -> np.ndarray:
    """Replica index of each request (-1: its type has no route)."""
    types = np.asarray(types)
    K, J = fractions.shape
    if types.size and (types.min() < 0 or types.max() >= J):
        raise ValueError(f"type indices must be in [0, {J}), got {types.min()}..{types.max()}")
    rng = np.random.default_rng(seed)
    u = rng.random(types.size)
    cum = np.cumsum(fractions, axis=0)  # K x J
    out = np.full(types.size, -1, np.int64)
    for j in range(J):
        sel = types == j
        if sel.any() and cum[-1, j] > 0:
            out[sel] = np.minimum(np.searchsorted(cum[:, j] / cum[-1, j], u[sel], side="right"), K - 1)
    return out


def serve(model: str, deployment: tuple[Shape, ...], fractions: np.ndarray, workload: pd.DataFrame,
          types: np.ndarray, *, hardware: str = GPU, backend: str = DEFAULT_BACKEND, seed: int = 0) -> tuple[pd.DataFrame, int]:
    """(per-request table of the routed requests with a ``replica`` column, number unrouted)."""
    dest = route(types, np.asarray(fractions, float), seed)
    parts = []
    w = workload.assign(model=pd.Categorical([model] * len(workload)))
    for k, shape in enumerate(deployment):
        sub = w[dest == k]
        if sub.empty:
            continue
        res = Cluster.uniform(1, instance_config(model, shape, hardware), step_model(model, shape, hardware, backend)).run(
            sub.reset_index(drop=True))
        parts.append(res.requests.assign(replica=k))
    df = pd.concat(parts, ignore_index=True).sort_values("request_id", kind="stable").reset_index(drop=True)
    return df, int((dest < 0).sum())
