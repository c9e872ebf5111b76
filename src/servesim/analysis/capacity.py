"""Mean-value capacity of one serving instance under continuous batching (no simulation).

Prefill runs one request at a time and has priority (Aegaeon §4.2: prefill batch size 1); between
prefills the instance decodes every running request by one token per step. In steady state at
arrival rate lam with mean prefill time P and mean output O:
- a fraction lam * P of the time is prefill, the rest is decode steps of duration t(N) for the N
  running requests, so steps happen at rate r = (1 - lam P) / t(N);
- each request needs O steps, so by Little's law N = lam O / r.
For a step time linear in N, t(N) = a + b N, this fixed point is N = k a / (1 - k b) with
k = lam O / (1 - lam P) (none when k b >= 1: the instance cannot keep up). A request's mean gap
between tokens is 1 / r. The capacity is the largest lam whose mean gap meets the TBT target with N
within ``max_batch`` (e.g. the largest profiled batch). This bounds throughput from the measured
step times; it says nothing about TTFT tails, which need a simulation.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class SteadyState:
    lam: float          # arrivals per second
    running: float      # N, mean running (decoding) requests
    gap_s: float        # mean time between a request's tokens
    prefill_share: float


def steady_state(lam: float, prefill_s: float, out_tokens: float, step_a: float, step_b: float) -> SteadyState | None:
    """The fixed point at rate ``lam`` for step time a + b N; None if the instance cannot keep up."""
    if min(prefill_s, out_tokens, step_a) <= 0 or step_b < 0:
        raise ValueError(f"need prefill_s, out_tokens, step_a > 0 and step_b >= 0; got {prefill_s}, {out_tokens}, {step_a}, {step_b}")
    if lam <= 0:
        return SteadyState(lam, 0.0, step_a, 0.0)
    free = 1.0 - lam * prefill_s
    if free <= 0:
        return None
    k = lam * out_tokens / free
    if k * step_b >= 1.0:
        return None
    n = k * step_a / (1.0 - k * step_b)
    return SteadyState(lam, n, (step_a + step_b * n) / free, lam * prefill_s)


def capacity(prefill_s: float, out_tokens: float, step_a: float, step_b: float, tbt_s: float,
             max_batch: float = np.inf, tol: float = 1e-9) -> SteadyState:
    """Largest rate whose mean token gap is <= ``tbt_s`` with at most ``max_batch`` running
    (bisection: gap and N both grow with lam)."""
    if step_a > tbt_s:
        raise ValueError(f"a single decode step ({step_a:.4g} s) already exceeds the TBT target {tbt_s} s")

    def ok(lam):
        s = steady_state(lam, prefill_s, out_tokens, step_a, step_b)
        return s is not None and s.gap_s <= tbt_s and s.running <= max_batch

    lo, hi = 0.0, 1.0 / prefill_s
    while hi - lo > tol * max(1.0, hi):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if ok(mid) else (lo, mid)
    return steady_state(lo, prefill_s, out_tokens, step_a, step_b)
