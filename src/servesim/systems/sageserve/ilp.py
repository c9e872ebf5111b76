"""SageServe's hourly allocation ILP (journal §5 / Table 2, conference §5.1).

Variables: integer delta[i, j, k], the change in instances of model i at region j on GPU k.

  (1) sum_k (n + delta)_ijk theta_ik >= max_w eps * rho_ij(w)          for all i, j
  (2) sum_j sum_k (n + delta)_ijk theta_ik >= max_w sum_j rho_ij(w)    for all i   (global)
  (3) delta_ijk >= -n_ijk
  min gamma + mu,  gamma = sum_k alpha_k sum_ij delta_ijk  (signed),
                   mu    = sum_ijk sigma_ik max(0, delta_ijk).

max(0, delta) is linearised with a continuous u >= delta, u >= 0 (exact because sigma >= 0 is
minimised); ``linearisation="bigm"`` uses the authors' binaries (IS_r + IS_s = 1, M = 1e6).
``buffer[i, j]`` (the NIW buffer beta) is added to every window of rho_ij. The authors' code
drops (2) and uses eps = 1 (``global_constraint=False``). ``min_instances`` / ``capacity``
(per-region ceiling) are optional extras the paper does not state.
"""

from __future__ import annotations

import os
import shutil
import time
from dataclasses import dataclass, field

import numpy as np
import pulp

from ..lp import highs, variable

SOLVERS = ("cbc", "highs")


class ILPError(ValueError):
    """Bad ILP input (shapes, signs) or an infeasible / failed solve."""


@dataclass
class AllocationProblem:
    """Inputs of one hourly decision. Shapes: l models, r regions, g GPU types, W windows."""

    n: np.ndarray  # (l, r, g) current instances
    rho: np.ndarray  # (l, r, W) or (l, r): forecast demand per window (same unit as theta)
    theta: np.ndarray  # (l, g) throughput per instance
    alpha: np.ndarray  # (g,) VM cost
    sigma: np.ndarray  # (l, g) start cost = alpha_k * mean start time of model i on GPU k
    epsilon: float = 1.0
    buffer: np.ndarray | None = None  # (l, r) added to rho in every window (beta)
    global_constraint: bool = True
    min_instances: np.ndarray | int | None = None  # floor on (n + delta) per (i, j), summed over k
    capacity: np.ndarray | None = None  # (r,) ceiling on instances per region, all models and GPUs
    models: list[str] = field(default_factory=list)
    regions: list[str] = field(default_factory=list)
    gpus: list[str] = field(default_factory=list)

    def validate(self) -> None:
        n = np.asarray(self.n)
        if n.ndim != 3:
            raise ILPError(f"n: expected shape (models, regions, gpus), got {n.shape}")
        l, r, g = n.shape
        rho = np.asarray(self.rho, dtype=float)
        if rho.ndim == 2:
            rho = rho[:, :, None]
        checks = [("rho", rho.shape[:2], (l, r)), ("theta", np.shape(self.theta), (l, g)),
                  ("alpha", np.shape(self.alpha), (g,)), ("sigma", np.shape(self.sigma), (l, g))]
        if self.buffer is not None:
            checks.append(("buffer", np.shape(self.buffer), (l, r)))
        if self.capacity is not None:
            checks.append(("capacity", np.shape(self.capacity), (r,)))
        for name, got, want in checks:
            if tuple(got) != want:
                raise ILPError(f"{name}: expected shape {want}, got {tuple(got)}")
        if (n < 0).any() or not np.array_equal(n, np.round(n)):
            raise ILPError("n: instance counts must be non-negative integers")
        if (np.asarray(self.theta) <= 0).any():
            raise ILPError("theta: throughput per instance must be > 0")
        if (rho < 0).any() or not np.isfinite(rho).all():
            raise ILPError("rho: forecasts must be finite and >= 0")
        if (np.asarray(self.sigma) < 0).any() or (np.asarray(self.alpha) < 0).any():
            raise ILPError("alpha, sigma: costs must be >= 0")
        if not 0.0 < self.epsilon <= 1.0:
            raise ILPError(f"epsilon must be in (0, 1], got {self.epsilon}")
        for name, names, size in (("models", self.models, l), ("regions", self.regions, r), ("gpus", self.gpus, g)):
            if names and len(names) != size:
                raise ILPError(f"{name}: {len(names)} names for {size} entries")

    def demand(self) -> np.ndarray:
        """(l, r, W) demand including the buffer."""
        rho = np.asarray(self.rho, dtype=float)
        if rho.ndim == 2:
            rho = rho[:, :, None]
        if self.buffer is not None:
            rho = rho + np.asarray(self.buffer, dtype=float)[:, :, None]
        return rho


@dataclass
class AllocationResult:
    delta: np.ndarray  # (l, r, g) int
    objective: float
    status: str
    solver: str
    build_time_s: float
    solve_time_s: float  # wall clock of the solver call (hardware-dependent)

    @property
    def n_after(self):  # convenience for callers holding the problem
        raise AttributeError("use problem.n + result.delta")


def _cbc_path() -> str:
    """A CBC executable: one on PATH (PuLP 4 ships none) or the binary bundled with PuLP 2/3."""
    found = shutil.which("cbc")
    if found:
        return found
    from pulp.apis import coin_api
    bundled = getattr(coin_api, "pulp_cbc_path", None)
    if bundled and os.path.exists(bundled):
        return bundled
    raise ILPError("no CBC executable: install one on PATH (e.g. `pip install pulp[cbc]` or a system cbc) "
                   "or use solver='highs'")


def solve(problem: AllocationProblem, solver: str = "cbc", linearisation: str = "max",
          warm_start: bool = False, time_limit_s: float | None = None, threads: int = 1,
          gap_rel: float | None = None, relax: bool = False) -> AllocationResult:
    """Solve the allocation ILP; raises ILPError if it is infeasible or the solver fails.

    ``gap_rel`` stops at that relative MIP gap (None: prove optimality); with ``time_limit_s``
    the incumbent found is returned (PuLP reports it as Optimal, so ``solve_time_s`` tells).
    ``relax=True`` solves the LP relaxation (a lower bound, to report the gap); then ``delta``
    is rounded and not necessarily feasible.
    """
    problem.validate()
    if solver not in SOLVERS:
        raise ILPError(f"solver must be one of {SOLVERS}, got {solver!r}")
    if linearisation not in ("max", "bigm"):
        raise ILPError(f"linearisation must be 'max' or 'bigm', got {linearisation!r}")
    t0 = time.perf_counter()
    n = np.asarray(problem.n, dtype=int)
    l, r, g = n.shape
    theta = np.asarray(problem.theta, dtype=float)
    alpha = np.asarray(problem.alpha, dtype=float)
    sigma = np.asarray(problem.sigma, dtype=float)
    rho = problem.demand()
    eps = float(problem.epsilon)

    prob = pulp.LpProblem("sageserve_allocation", pulp.LpMinimize)
    idx = [(i, j, k) for i in range(l) for j in range(r) for k in range(g)]
    d = {x: variable(prob, f"d_{x[0]}_{x[1]}_{x[2]}", lowBound=-int(n[x]), cat="Continuous" if relax else "Integer") for x in idx}  # (3)
    pos = {}
    if relax and linearisation == "bigm":
        raise ILPError("relax=True needs linearisation='max'")
    if linearisation == "max":
        for x in idx:
            pos[x] = variable(prob, f"u_{x[0]}_{x[1]}_{x[2]}", lowBound=0)
            prob += pos[x] >= d[x]
    else:  # the authors' big-M form
        M = 1e6
        for x in idx:
            s = variable(prob, f"iss_{x[0]}_{x[1]}_{x[2]}", cat="Binary")
            rr = variable(prob, f"isr_{x[0]}_{x[1]}_{x[2]}", cat="Binary")
            c = variable(prob, f"c_{x[0]}_{x[1]}_{x[2]}", lowBound=-M, upBound=M)
            prob += s + rr == 1
            prob += d[x] <= M * s
            prob += d[x] >= -M * rr + s
            # c = d when s = 1, else 0
            prob += c <= d[x] + M * (1 - s)
            prob += c >= d[x] - M * (1 - s)
            prob += c <= M * s
            prob += c >= -M * s
            pos[x] = c
    prob += (pulp.lpSum(alpha[k] * d[(i, j, k)] for (i, j, k) in idx)
             + pulp.lpSum(sigma[i, k] * pos[(i, j, k)] for (i, j, k) in idx))
    for i in range(l):
        for j in range(r):
            cap = pulp.lpSum(theta[i, k] * (int(n[i, j, k]) + d[(i, j, k)]) for k in range(g))
            prob += cap >= eps * float(rho[i, j].max()), f"c1_{i}_{j}"
        if problem.global_constraint:
            tot = pulp.lpSum(theta[i, k] * (int(n[i, j, k]) + d[(i, j, k)]) for j in range(r) for k in range(g))
            prob += tot >= float(rho[i].sum(axis=0).max()), f"c2_{i}"
    if problem.min_instances is not None:
        floor = np.broadcast_to(np.asarray(problem.min_instances), (l, r))
        for i in range(l):
            for j in range(r):
                prob += pulp.lpSum(int(n[i, j, k]) + d[(i, j, k)] for k in range(g)) >= int(floor[i, j]), f"min_{i}_{j}"
    if problem.capacity is not None:
        for j in range(r):
            prob += pulp.lpSum(int(n[i, j, k]) + d[(i, j, k)] for i in range(l) for k in range(g)) <= int(problem.capacity[j]), f"cap_{j}"
    if warm_start:
        for x in idx:
            d[x].setInitialValue(-int(n[x]))
    build = time.perf_counter() - t0

    if solver == "cbc":
        cmd = pulp.COIN_CMD(path=_cbc_path(), msg=False, warmStart=warm_start, timeLimit=time_limit_s, threads=threads,
                            gapRel=gap_rel)
    else:
        cmd = highs(threads, timeLimit=time_limit_s, gapRel=gap_rel)
    t1 = time.perf_counter()
    prob.solve(cmd)
    solve_s = time.perf_counter() - t1
    status = pulp.LpStatus[prob.status]
    if status != "Optimal" or any(v.value() is None for v in d.values()):
        raise ILPError(f"allocation ILP is {status} (solver {solver}); check that capacity can cover the forecast")
    delta = np.zeros((l, r, g), dtype=np.int64)
    for x in idx:
        delta[x] = int(round(d[x].value()))
    return AllocationResult(delta=delta, objective=float(pulp.value(prob.objective)), status=status,
                            solver=solver, build_time_s=build, solve_time_s=solve_s)


def random_problem(l: int, r: int, g: int, seed: int = 0, windows: int = 4) -> AllocationProblem:
    """A random feasible instance of the given size (for overhead benchmarks only)."""
    rng = np.random.default_rng(seed)
    theta = rng.uniform(1e5, 5e5, size=(l, g))
    n = rng.integers(2, 20, size=(l, r, g))
    rho = rng.uniform(0.2, 1.5, size=(l, r, windows)) * (n * theta[:, None, :]).sum(axis=2)[:, :, None]
    alpha = rng.uniform(50, 120, size=g)
    sigma = alpha[None, :] * rng.uniform(1 / 6, 1 / 2, size=(l, g))  # start time 10-30 min in hours
    return AllocationProblem(n=n, rho=rho, theta=theta, alpha=alpha, sigma=sigma)
