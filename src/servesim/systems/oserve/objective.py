"""The flow network's value for one deployment, with the tie-break the search needs (spec §1.4).

The paper's objective is Φ = max Σ x_kj under C1-C3 (``flow.max_flow``). Once a deployment can
serve all of λ, Φ = Σλ for every such deployment and the search cannot tell them apart. We add
α* = the largest uniform scale such that α·λ is still routable:

    max α  s.t.  Σ_k x_kj = α λ_j,  Σ_j x_kj / n_kj <= 1,  0 <= x_kj <= e_kj

(1/α* is App. C's minimum makespan of λ, in spans). Objectives (``objective=``):
- "phi-alpha" (default): lexicographic (Φ, α*): the paper's Φ first, α* breaks its ties;
- "alpha": α* alone;
- "phi-alpha-xnode" (a latency-aware reading, not the paper's): Φ first, then α* discounted by the
  share of the α* assignment's requests that cross nodes inside a pipeline replica (PP stages on two
  nodes hand activations over InfiniBand on every step): α*·(1 − w·share), w = ``XNODE_PENALTY``.
  Under the flow objective alone Alg. 1 accepts cross-node pipelines that add no capacity over an
  in-node deployment but cost every request they serve latency (the 16-GPU Llama2-70B runs).
Alg. 1's O / U sets come from the α assignment: O = the replicas saturated at α·λ (the
bottleneck), U = the rest. When some demanded type has no replica that can take it (e_kj = 0 for
all k), α* = 0 and every replica would be "under-used"; the assignment, the O / U sets and the
tie-break then use ``alpha_served``, the same LP over the types the deployment can serve (Φ, which
ranks first, already counts the unserved demand). Solved with SciPy's HiGHS (~ms per call).

Routing shares (``SHARES``): the α* LP has many optimal assignments when replicas are alike (two
identical replicas can split the types any way that fills both), and the paper names none. "vertex"
(the default, what the routing has always used) takes the solver's basic solution, which tends to
send whole types to one replica; "balanced" (a named reading) takes, among the assignments that
route α*·λ, the one closest to each type spread over its replicas in proportion to their capacity
for it (``balanced_fractions``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.optimize import linprog

OBJECTIVES = ("phi-alpha", "alpha", "phi-alpha-xnode")
#: where Alg. 1's O / U sets come from (search.py's docstring): the α*·λ assignment the objective
#: ranks (the default; it saturates every replica that can take the bottleneck, so U is empty and
#: Alg. 1 can only merge) or the max flow at λ itself (the pseudo-code's words)
CLASSIFY = ("alpha", "flow")
SHARES = ("vertex", "balanced")
XNODE_PENALTY = 0.1  # [R] w: a request through a cross-node pipeline counts as 0.9 of one in the tie-break
SAT_TOL = 1e-6


@dataclass(frozen=True)
class FlowValue:
    phi: float           # max Σ x (capped at Σλ)
    alpha: float         # max uniform scale of λ that is routable
    alpha_served: float  # the same over the types some replica can serve (= alpha if all can)
    x: np.ndarray        # K x J assignment at α*·λ (requests per span)
    load: np.ndarray     # per replica Σ_j x_kj / n_kj at α*·λ
    saturated: tuple     # O
    underused: tuple     # U
    cross_share: float = 0.0  # share of x on replicas whose pipeline crosses nodes (set by the search's Evaluator)

    def key(self, objective: str = "phi-alpha", xnode_penalty: float = XNODE_PENALTY) -> tuple:
        if objective == "phi-alpha":
            return (round(self.phi, 6), round(self.alpha_served, 9))
        if objective == "alpha":
            return (round(self.alpha, 9), round(self.alpha_served, 9))
        if objective == "phi-alpha-xnode":
            return (round(self.phi, 6), round(self.alpha_served * (1.0 - xnode_penalty * self.cross_share), 9))
        raise ValueError(f"objective={objective!r}: one of {OBJECTIVES}")

    def fractions(self) -> np.ndarray:
        """Routing weights: the share of type j sent to replica k (x_kj / Σ_k x_kj)."""
        tot = self.x.sum(axis=0)
        return np.divide(self.x, tot, out=np.zeros_like(self.x), where=tot > 0)


def _check(lam, n, e):
    lam, n = np.asarray(lam, float), np.asarray(n, float)
    e = n if e is None else np.asarray(e, float)
    if n.ndim != 2 or lam.shape != (n.shape[1],) or e.shape != n.shape:
        raise ValueError(f"lam {lam.shape}, n {n.shape} and e {e.shape} do not match (K x J)")
    if np.any(lam < 0) or np.any(n < 0) or np.any(e < 0):
        raise ValueError("lam, n and e must be non-negative")
    return lam, n, np.where(n > 0, e, 0.0)


def _rows(n):
    K, J = n.shape
    A = np.zeros((K, K * J))
    for k in range(K):
        A[k, k * J:(k + 1) * J] = np.divide(1.0, n[k], out=np.zeros(J), where=n[k] > 0)
    return A


def phi(lam, n, e=None) -> float:
    """Φ: the max flow of C1-C3 (same value as ``flow.max_flow``)."""
    return _max_flow(*_check(lam, n, e))[1]


def flow_sets(lam, n, e=None) -> tuple[tuple, tuple]:
    """Alg. 1's O / U as its pseudo-code defines them: from the flow network's assignment at λ
    itself (``L({d_r}, {s_r})`` returns the max flow), O = the replicas whose flow reaches their
    capacity, U = the rest. When λ is routable the max flow has many optima; this is HiGHS's
    vertex (deterministic). The "alpha" reading takes them from the α*·λ assignment instead
    (``FlowValue.saturated``), where every replica that can take the bottleneck fills up."""
    lam, n, e = _check(lam, n, e)
    load = _rows(n) @ _max_flow(lam, n, e)[0].ravel()
    sat = tuple(k for k in range(n.shape[0]) if load[k] >= 1 - SAT_TOL)
    return sat, tuple(k for k in range(n.shape[0]) if k not in sat)


def _max_flow(lam, n, e) -> tuple[np.ndarray, float]:
    """The C1-C3 max-flow assignment x (K x J, HiGHS's optimal vertex) and its value Φ."""
    K, J = n.shape
    C1 = np.zeros((J, K * J))
    for j in range(J):
        C1[j, j::J] = 1.0
    r = linprog(-np.ones(K * J), A_ub=np.vstack([C1, _rows(n)]), b_ub=np.concatenate([lam, np.ones(K)]),
                bounds=list(zip(np.zeros(K * J), e.ravel())), method="highs")
    if r.status != 0:
        raise RuntimeError(f"flow LP: {r.message}")
    return np.maximum(r.x.reshape(K, J), 0.0), float(-r.fun)


def evaluate(lam, n, e=None) -> FlowValue:
    """Φ, α* and the α* assignment of replicas with capacities ``n`` / ``e`` (K x J) for λ (J)."""
    lam, n, e = _check(lam, n, e)
    K, J = n.shape
    if not (lam > 0).any():
        raise ValueError("lam is all zero: nothing to route")
    servable = e.sum(axis=0) > 0
    unserved = bool(np.any((lam > 0) & ~servable))
    lam_s = np.where(servable, lam, 0.0)
    if not (lam_s > 0).any():
        return FlowValue(0.0, 0.0, 0.0, np.zeros((K, J)), np.zeros(K), (), tuple(range(K)))
    # variables: x (K*J), alpha
    c = np.zeros(K * J + 1)
    c[-1] = -1.0
    A_eq = np.zeros((J, K * J + 1))
    for j in range(J):
        A_eq[j, j:K * J:J] = 1.0
        A_eq[j, -1] = -lam_s[j]
    A_ub = np.hstack([_rows(n), np.zeros((K, 1))])
    bounds = list(zip(np.zeros(K * J), e.ravel())) + [(0, None)]
    r = linprog(c, A_ub=A_ub, b_ub=np.ones(K), A_eq=A_eq, b_eq=np.zeros(J), bounds=bounds, method="highs")
    if r.status != 0:
        raise RuntimeError(f"alpha LP: {r.message}")
    alpha_s = float(r.x[-1])
    alpha = 0.0 if unserved else alpha_s
    x = np.maximum(r.x[:-1].reshape(K, J), 0.0)  # HiGHS may return -1e-15 for a 0-bounded flow
    load = _rows(n) @ x.ravel()
    total = float(lam.sum())
    ph = total if alpha >= 1 - 1e-12 else phi(lam, n, e)
    sat = tuple(k for k in range(K) if load[k] >= 1 - SAT_TOL)
    return FlowValue(ph, alpha, alpha_s, x, load, sat, tuple(k for k in range(K) if k not in sat))


def balanced_fractions(lam, n, e=None, alpha: float | None = None) -> np.ndarray:
    """Routing shares (K x J) of the optimal assignment closest to capacity-proportional spreading:
    among x with Σ_k x_kj = a·λ_j, Σ_j x_kj / n_kj <= 1, 0 <= x_kj <= e_kj (a = α*, or ``alpha``,
    capped at 1 so an under-loaded λ is routed whole), minimise Σ_kj |x_kj − t_kj| / (a·λ_j) with
    t_kj = a·λ_j · n_kj / Σ_k' n_k'j over the replicas that can take type j."""
    lam, n, e = _check(lam, n, e)
    K, J = n.shape
    a = evaluate(lam, n, e).alpha_served if alpha is None else float(alpha)
    a = min(a, 1.0) * (1.0 - 1e-9)  # inside the feasible set despite rounding
    can = e > 0
    cap = np.where(can, n, 0.0)
    tgt = np.divide(cap, cap.sum(0, keepdims=True), out=np.zeros_like(cap), where=cap.sum(0, keepdims=True) > 0) * a * lam
    w = np.where(lam > 0, 1.0 / np.maximum(a * lam, 1e-12), 0.0)  # each type counts alike
    # variables: x (K*J), d (K*J): minimise Σ w_j d_kj, d >= |x - t|
    nv = 2 * K * J
    c = np.concatenate([np.zeros(K * J), np.tile(w, K)])
    A_eq = np.zeros((J, nv))
    for j in range(J):
        A_eq[j, j:K * J:J] = 1.0
    b_eq = a * lam
    I = np.eye(K * J)
    A_ub = np.vstack([np.hstack([_rows(n), np.zeros((K, K * J))]),  # capacity
                      np.hstack([I, -I]), np.hstack([-I, -I])])       # x - d <= t, -x - d <= -t
    b_ub = np.concatenate([np.ones(K), tgt.ravel(), -tgt.ravel()])
    bounds = list(zip(np.zeros(K * J), e.ravel())) + [(0, None)] * (K * J)
    r = linprog(c, A_ub=A_ub, b_ub=b_ub, A_eq=A_eq, b_eq=b_eq, bounds=bounds, method="highs")
    if r.status != 0:
        raise RuntimeError(f"balanced shares LP: {r.message}")
    x = np.maximum(r.x[:K * J].reshape(K, J), 0.0)  # HiGHS may return -1e-15 for a 0-bounded share
    tot = x.sum(axis=0)
    return np.divide(x, tot, out=np.zeros_like(x), where=tot > 0)
