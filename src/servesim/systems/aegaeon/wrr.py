"""Aegaeon's decoding-phase weighted round-robin quotas (§4.3, Algorithm 2, Eq. 2-3).

For the batches of a decoding instance's work list, with TBT target d and per-step decode time t_k,
n_k = d / t_k is how many steps a token's deadline budget covers. With c the summed auto-scaling
overhead of the round,
    alpha = max(c / (min_k n_k * Q_MAX) + sum_k 1/n_k, alpha_floor)        (Eq. 3)
    q_i   = c / (n_i * (alpha - sum_k 1/n_k))                              (Eq. 2)
and 1/alpha is the round's estimated SLO attainment. `play_rounds` replays rounds step by step and
checks every token against its buffered deadline (first token + k * d), which is how the paper's
worked example argues that all deadlines are met.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Quotas:
    n: np.ndarray               # d / t_k per batch
    alpha: float
    quota_s: np.ndarray         # q_i
    step_s: np.ndarray
    c_s: float

    @property
    def tokens_per_turn(self) -> np.ndarray:
        """Decode steps (tokens per request) a batch runs in its turn: q_i / t_i."""
        return self.quota_s / self.step_s

    @property
    def round_s(self) -> float:
        """One round: every turn plus the auto-scaling overheads."""
        return float(self.quota_s.sum() + self.c_s)

    @property
    def est_attainment(self) -> float:
        return min(1.0, 1.0 / self.alpha)


def quotas(step_s, tbt_s: float, c_s: float, q_max_s: float, alpha_floor: float = 0.5) -> Quotas:
    """Eq. 2-3 for batches with per-step decode times ``step_s``."""
    t = np.atleast_1d(np.asarray(step_s, float))
    if t.size == 0 or np.any(t <= 0) or tbt_s <= 0 or q_max_s <= 0 or c_s < 0:
        raise ValueError(f"need step times > 0, tbt > 0, q_max > 0, c >= 0; got {t}, {tbt_s}, {q_max_s}, {c_s}")
    n = tbt_s / t
    s = float(np.sum(1.0 / n))
    alpha = max(c_s / (float(n.min()) * q_max_s) + s, alpha_floor)
    if alpha - s <= 0:
        raise ValueError(f"alpha ({alpha}) must exceed sum 1/n_k ({s}): with c = {c_s} the quotas are undefined")
    return Quotas(n=n, alpha=alpha, quota_s=c_s / (n * (alpha - s)), step_s=t, c_s=float(c_s))


@dataclass(frozen=True)
class Replay:
    token_times: list[np.ndarray]   # per batch: emission time of every token, in order
    min_slack_s: float              # min over tokens of deadline - emission (>= 0: all met)
    tokens: int

    def all_met(self, tol: float = 1e-9) -> bool:
        return self.min_slack_s >= -tol


def play_rounds(q: Quotas, n_rounds: int = 5, switch_s=None, tbt_s: float | None = None) -> Replay:
    """Replay ``n_rounds`` rounds: each turn first pays its batch's switch time (default c split
    evenly), then decodes ceil(q_i / t_i) steps. Token k of a batch (k = 0 its first decoded token)
    is due at first + k * d, d = ``tbt_s`` (default: n_0 * t_0)."""
    k = len(q.step_s)
    sw = np.full(k, q.c_s / k) if switch_s is None else np.asarray(switch_s, float)
    d = float(q.n[0] * q.step_s[0]) if tbt_s is None else tbt_s
    steps = [math.ceil(x - 1e-9) for x in q.tokens_per_turn]
    now, times = 0.0, [[] for _ in range(k)]
    for _ in range(n_rounds):
        for i in range(k):
            now += sw[i]
            emit = now + q.step_s[i] * np.arange(1, steps[i] + 1)
            times[i].extend(emit)
            now = float(emit[-1])
    arrs = [np.asarray(x) for x in times]
    slack = min(float(np.min(a[0] + d * np.arange(len(a)) - a)) for a in arrs)
    return Replay(token_times=arrs, min_slack_s=slack, tokens=sum(len(a) for a in arrs))
