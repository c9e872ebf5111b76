"""OServe's lower level (§4.2): the workload-assignment flow network, solved as a linear program.

Replica k can serve n_kj requests of type j per span on its own. Its node capacity is
M_k = lcm_j(n_kj) units and a type-j request costs M_k / n_kj units (C3), so
    max  sum_kj x_kj   s.t.  sum_k x_kj <= lam_j (C1),  x_kj <= e_kj (C2),
                             sum_j x_kj M_k / n_kj <= M_k (C3).
Because C3 weights the types differently this is a generalized flow, not a plain max-flow (spec
§1.4 [A]); we solve it exactly as an LP with PuLP (HiGHS). `min_makespan` is App. C's objective:
min over assignment fractions of max_k sum_j lam_j f_kj / C_kj.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import reduce

import numpy as np
import pulp

from ..lp import highs, variable


def lcm_capacity(n) -> int:
    """M_k = LCM of a replica's per-type capacities (positive integers; zeros are types it cannot serve)."""
    vals = [float(v) for v in n]
    if any(v < 0 or v != int(v) for v in vals) or not any(vals):
        raise ValueError(f"capacities must be non-negative integers with at least one positive, got {list(n)}")
    return reduce(math.lcm, [int(v) for v in vals if v > 0])


def unit_costs(n) -> list[int]:
    """Units of M_k a request of each type consumes (M_k / n_kj; 0 where n_kj = 0)."""
    M = lcm_capacity(n)
    return [M // int(v) if v else 0 for v in n]


@dataclass(frozen=True)
class Assignment:
    x: np.ndarray            # K x J requests assigned
    phi: float               # sum of x: the maximum achievable throughput
    load: np.ndarray         # per replica: sum_j x_kj / n_kj (1 = saturated)
    status: str

    @property
    def saturated(self) -> list[int]:
        """O of Alg. 1: replicas whose capacity edge is full."""
        return [k for k, u in enumerate(self.load) if u >= 1 - 1e-9]

    @property
    def underused(self) -> list[int]:
        return [k for k, u in enumerate(self.load) if u < 1 - 1e-9]


def _solve(prob: pulp.LpProblem) -> str:
    prob.solve(highs())
    status = pulp.LpStatus[prob.status]
    if status != "Optimal":
        raise RuntimeError(f"{prob.name}: solver status {status}")
    return status


def max_flow(lam, n, e=None) -> Assignment:
    """Solve C1-C3 for demand ``lam`` (J) and capacities ``n`` (K x J integers); ``e`` defaults to n."""
    lam = np.asarray(lam, float)
    n = np.asarray(n, float)
    e = n if e is None else np.asarray(e, float)
    K, J = n.shape
    if lam.shape != (J,) or e.shape != n.shape or np.any(lam < 0):
        raise ValueError(f"lam must have {J} non-negative entries and e the shape {n.shape}")
    prob = pulp.LpProblem("oserve_flow", pulp.LpMaximize)
    x = {(k, j): variable(prob, f"x_{k}_{j}", 0, float(e[k, j])) for k in range(K) for j in range(J)}
    prob += pulp.lpSum(x.values())
    for j in range(J):
        prob += pulp.lpSum(x[k, j] for k in range(K)) <= float(lam[j]), f"C1_{j}"
    for k in range(K):
        M = lcm_capacity(n[k])
        cost = unit_costs(n[k])
        prob += pulp.lpSum(x[k, j] * cost[j] for j in range(J) if n[k, j] > 0) <= M, f"C3_{k}"
        for j in range(J):
            if n[k, j] == 0:
                prob += x[k, j] == 0, f"none_{k}_{j}"
    status = _solve(prob)
    X = np.array([[x[k, j].value() or 0.0 for j in range(J)] for k in range(K)])
    load = np.array([sum(X[k, j] / n[k, j] for j in range(J) if n[k, j] > 0) for k in range(K)])
    return Assignment(x=X, phi=float(X.sum()), load=load, status=status)


def completion_time(lam, rates, fractions) -> tuple[float, np.ndarray]:
    """App. C: each replica's busy time sum_j lam_j f_kj / C_kj and their max."""
    lam, C, f = (np.asarray(a, float) for a in (lam, rates, fractions))
    if C.shape != f.shape or lam.shape != (C.shape[1],):
        raise ValueError(f"rates {C.shape}, fractions {f.shape} and lam {lam.shape} do not match")
    if np.any((f > 0) & (C <= 0)):
        raise ValueError("a fraction is routed to a replica with zero rate for that type")
    per = np.where(f > 0, lam * f / np.where(C > 0, C, 1.0), 0.0).sum(axis=1)
    return float(per.max()), per


def min_makespan(lam, rates) -> tuple[float, np.ndarray]:
    """min_f max_k sum_j lam_j f_kj / C_kj with sum_k f_kj = 1 (LP); returns (makespan, fractions)."""
    lam, C = np.asarray(lam, float), np.asarray(rates, float)
    K, J = C.shape
    prob = pulp.LpProblem("oserve_makespan", pulp.LpMinimize)
    u = variable(prob, "u", 0)
    f = {(k, j): variable(prob, f"f_{k}_{j}", 0, 1 if C[k, j] > 0 else 0) for k in range(K) for j in range(J)}
    prob += u
    for j in range(J):
        prob += pulp.lpSum(f[k, j] for k in range(K)) == 1, f"route_{j}"
    for k in range(K):
        prob += pulp.lpSum(f[k, j] * (lam[j] / C[k, j]) for j in range(J) if C[k, j] > 0) <= u, f"busy_{k}"
    _solve(prob)
    F = np.array([[f[k, j].value() or 0.0 for j in range(J)] for k in range(K)])
    return float(u.value()), F


def min_gpus_per_replica(weights_bytes: float, gpu_mem_bytes: float, heads: int, max_tp: int = 8) -> int:
    """§4.3 initialization: the fewest GPUs whose memory holds the weights, as a TP degree that
    divides the attention heads (pure tensor parallelism)."""
    for tp in range(1, max_tp + 1):
        if heads % tp == 0 and tp * gpu_mem_bytes >= weights_bytes:
            return tp
    raise ValueError(f"{weights_bytes / 1e9:.0f} GB of weights do not fit TP <= {max_tp} GPUs of {gpu_mem_bytes / 1e9:.0f} GB")
