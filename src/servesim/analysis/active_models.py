"""How many of M models are active at once (Aegaeon §3.1, Theorem 3.1, Fig 4).

Each model receives requests as an independent Poisson process of rate ``lam``; a model is active
at time t iff it received at least one request in [t - T, t] (T = mean service time). Then
E[m] = M (1 - exp(-lam T)). The simulation below is exact for that definition: each arrival makes
its model active on [a, a + T]; merging a model's overlapping intervals and sweeping their ends
gives the active count as a step function of time, with no time discretisation.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


def expected_active(M: int, lam: float, T: float) -> float:
    """E[m] = M (1 - e^{-lam T}) of Theorem 3.1."""
    if M < 0 or lam < 0 or T < 0:
        raise ValueError(f"M, lam and T must be non-negative, got M={M}, lam={lam}, T={T}")
    return float(M * -np.expm1(-lam * T))


@dataclass(frozen=True)
class ActiveCount:
    """The active-model count as a right-continuous step function on [0, horizon_s].

    ``times[k]`` is when the count becomes ``counts[k]``; ``times[0] == 0``.
    """

    times: np.ndarray
    counts: np.ndarray
    horizon_s: float
    n_arrivals: int

    def at(self, t: np.ndarray | float) -> np.ndarray:
        """The count at time(s) t (0 <= t <= horizon_s)."""
        idx = np.searchsorted(self.times, np.asarray(t, dtype=float), side="right") - 1
        return self.counts[idx]

    def time_mean(self, start: float = 0.0, end: float | None = None) -> float:
        """Time-average of the count over [start, end] (exact integral of the step function)."""
        end = self.horizon_s if end is None else end
        if not 0.0 <= start < end <= self.horizon_s:
            raise ValueError(f"need 0 <= start < end <= {self.horizon_s}, got [{start}, {end}]")
        edges = np.clip(np.append(self.times, self.horizon_s), start, end)
        return float(np.dot(self.counts, np.diff(edges)) / (end - start))

    def batch_means(self, n_batches: int) -> np.ndarray:
        """Time-averages over ``n_batches`` equal consecutive windows (for a standard error)."""
        bounds = np.linspace(0.0, self.horizon_s, n_batches + 1)
        return np.array([self.time_mean(a, b) for a, b in zip(bounds[:-1], bounds[1:])])


def draw_arrivals(M: int, lam: float, start_s: float, end_s: float, seed: int = 0) -> list[np.ndarray]:
    """Sorted arrival times on [start_s, end_s] of M independent Poisson(lam) streams.

    Per model: a Poisson(lam * span) count, then that many uniform times; model i uses child i of
    ``SeedSequence(seed)``, so a model's stream does not depend on M.
    """
    rngs = [np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(M)]
    return [np.sort(r.uniform(start_s, end_s, r.poisson(lam * (end_s - start_s)))) for r in rngs]


def simulate_active_count(M: int, lam: float, T: float, horizon_s: float, seed: int = 0) -> ActiveCount:
    """Simulate M independent Poisson(lam) request streams and return the active count over [0, horizon_s].

    Arrivals are drawn on [-T, horizon_s] so the count is stationary from t = 0 (no empty
    warm-up window). Each model's stream comes from its own child of ``SeedSequence(seed)``.
    """
    if M <= 0 or lam <= 0 or T <= 0 or horizon_s <= 0:
        raise ValueError(f"M, lam, T and horizon_s must be positive, got M={M}, lam={lam}, T={T}, horizon_s={horizon_s}")
    arrivals = draw_arrivals(M, lam, -T, horizon_s, seed)
    n = np.array([len(a) for a in arrivals])
    model = np.repeat(np.arange(M), n)
    a = np.concatenate(arrivals) if n.sum() else np.empty(0)

    # Merge each model's intervals [a, a + T]: a new busy period starts at a model's first
    # arrival or after a gap longer than T; it ends T after its last arrival.
    new_model = np.ones(len(a), dtype=bool)
    new_model[1:] = model[1:] != model[:-1]
    starts_mask = new_model.copy()
    starts_mask[1:] |= np.diff(a) > T
    starts = a[starts_mask]
    last_idx = np.append(np.flatnonzero(starts_mask)[1:], len(a)) - 1
    ends = a[last_idx] + T

    # Sweep: +1 at each start, -1 at each end; clip to the window, count those active at t=0.
    active_at_0 = int(np.sum((starts <= 0.0) & (ends > 0.0)))
    ev_t = np.concatenate([starts[starts > 0.0], ends[(ends > 0.0) & (ends <= horizon_s)]])
    ev_d = np.concatenate([np.ones(int(np.sum(starts > 0.0)), dtype=np.int64),
                           -np.ones(int(np.sum((ends > 0.0) & (ends <= horizon_s))), dtype=np.int64)])
    order = np.argsort(ev_t, kind="stable")
    ev_t, ev_d = ev_t[order], ev_d[order]
    times = np.concatenate([[0.0], ev_t])
    counts = active_at_0 + np.concatenate([[0], np.cumsum(ev_d)])
    return ActiveCount(times=times, counts=counts, horizon_s=float(horizon_s), n_arrivals=int(len(a)))


def active_count_bruteforce(arrivals_per_model: list[np.ndarray], T: float, t: np.ndarray) -> np.ndarray:
    """Reference count by definition: models with >= 1 arrival in [t - T, t] (O(M * len(t)); tests)."""
    t = np.asarray(t, dtype=float)
    count = np.zeros(len(t), dtype=np.int64)
    for a in arrivals_per_model:
        a = np.sort(np.asarray(a, dtype=float))
        lo = np.searchsorted(a, t - T, side="left")
        hi = np.searchsorted(a, t, side="right")
        count += hi > lo
    return count
