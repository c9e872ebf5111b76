"""Instance queue ordering for the IW-F / IW-N / NIW tiers (journal §6.5, Fig 15).

Each policy maps a waiting request to a sort key at time ``now`` (smaller runs first):
- ``fcfs``: priority class (IW and bumped NIW = 0, other NIW = 1), then arrival.
- ``edf``: earliest deadline first; d_r = deadline - now (the TTFT deadline for IW).
- ``pf``: priority first: all IW-F before IW-N before NIW, FCFS inside.
- ``dpa``: deadline- and priority-aware categories: severely expired (d_r < -tau_n), urgent
  IW-F, urgent IW-N (0 <= d_r <= tau_p), non-urgent IW-F, non-urgent IW-N, recently expired
  (-tau_n <= d_r < 0), then NIW; earliest deadline inside a category. tau_n and tau_p are not
  given in the paper (``SageServeConfig.dpa_tau_n_s`` / ``dpa_tau_p_s``).
"""

from __future__ import annotations

from dataclasses import dataclass

from .config import TIER_POLICIES, ConfigError

TIER_RANK = {"IW-F": 0, "IW-N": 1, "NIW": 2}


@dataclass(frozen=True)
class Waiting:
    """What a policy sees of a waiting request."""

    request_id: int
    tier: str
    arrival_s: float
    deadline_s: float
    priority: int = 0  # 0 = IW-like; NIW gets 1 until its priority bump


def dpa_category(w: Waiting, now: float, tau_n: float, tau_p: float) -> int:
    if w.tier == "NIW" and w.priority > 0:
        return 6
    d = w.deadline_s - now
    if d < -tau_n:
        return 0
    if d < 0:
        return 5
    urgent = d <= tau_p
    if w.tier == "IW-N":
        return 2 if urgent else 4
    return 1 if urgent else 3  # IW-F and bumped NIW rank with IW-F


def sort_key(policy: str, w: Waiting, now: float, tau_n: float = 10.0, tau_p: float = 1.0) -> tuple:
    """The sort key of ``w`` under ``policy`` at ``now``; ties broken by request id."""
    if policy == "fcfs":
        return (w.priority, w.arrival_s, w.request_id)
    if policy == "edf":
        return (w.deadline_s, w.arrival_s, w.request_id)
    if policy == "pf":
        return (TIER_RANK[w.tier], w.arrival_s, w.request_id)
    if policy == "dpa":
        return (dpa_category(w, now, tau_n, tau_p), w.deadline_s, w.request_id)
    raise ConfigError(f"tier policy must be one of {TIER_POLICIES}, got {policy!r}")


def order(policy: str, waiting: list[Waiting], now: float, **kw) -> list[Waiting]:
    """``waiting`` in the order the policy would schedule them at ``now``."""
    return sorted(waiting, key=lambda w: sort_key(policy, w, now, **kw))
