"""Waiting-queue orders by tier and deadline, behind a registry (``InstanceConfig.queue_order``).

An instance's scheduler policy serves its waiting queue front first. A queue order sorts that
queue before every iteration is planned (and before the fast mode asks whether the head would be
admitted), so any policy serves it in the order's sequence; the policy itself is unchanged. An
order is data: a registered name plus options (scenario ``models.<m>.engine.queue_order``), and
it reads only what each request carries (``Req.tier``, the workload's tier as its rank in
`servesim.workload.schema.TIERS`; ``Req.deadline``, its ``deadline_s``; ``Req.arrival``).

Orders (smaller key runs first; ties by request index), the journal's §6.5 policies (SageServe
Fig 15):

- ``fcfs``: priority class (IW and NIW older than ``niw_bump_s`` = 0, other NIW = 1), then arrival.
- ``edf``: earliest deadline first (d_r = deadline - now; the TTFT deadline for IW).
- ``pf``: priority first: IW-F before IW-N before NIW, arrival order inside.
- ``dpa``: deadline- and priority-aware categories: severely expired (d_r < -tau_n), urgent IW-F,
  urgent IW-N (0 <= d_r <= tau_p), non-urgent IW-F, non-urgent IW-N, recently expired
  (-tau_n <= d_r < 0), then NIW younger than ``niw_bump_s``; earliest deadline inside a category
  (an NIW request past its bump ranks as IW-F).

Adding an order: subclass :class:`QueueOrder`, implement ``key(r, now)`` from request fields,
and ``@register`` it.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ..registry import Registry
from ..workload.schema import TIERS
from ..workload.spec import Seconds, Strict
from .schedulers import SchedulerPolicy

#: the workload tier -> ``Req.tier`` (its rank: IW-F 0, IW-N 1, NIW 2; -1 none)
TIER_RANK: dict[str, int] = {t: i for i, t in enumerate(TIERS)}
_IWN, _NIW = TIER_RANK["IW-N"], TIER_RANK["NIW"]


def tier_ranks(tiers) -> np.ndarray:
    """``Req.tier`` of each workload row (its ``tier`` column): the tier's rank (`TIER_RANK`), -1
    for a missing tier or one outside it. Through the column's categories, not one str per row."""
    cat = pd.Categorical(tiers)
    ranks = np.array([TIER_RANK.get(str(t), -1) for t in cat.categories] + [-1], dtype=np.int64)
    return ranks[cat.codes]  # code -1 (missing) takes the last entry


#: ``name -> QueueOrder class``
QUEUE_ORDERS: Registry = Registry("queue order")


def register(name: str):
    """Class decorator adding an order to the registry under ``name``."""
    return QUEUE_ORDERS.register(name)


def get_order(name: str, **options) -> "QueueOrder":
    """Instantiate a registered order; an unknown name or bad options raise ValueError naming them."""
    return QUEUE_ORDERS.create(name, options, where="queue_order")


class QueueOrder:
    """Base class: ``key(r, now)`` is request ``r``'s sort key at time ``now``."""

    class Options(Strict):
        """Scenario options of ``queue_order: {name: ..., ...}`` (durations take units)."""

        niw_bump_s: Seconds | None = None  # an NIW request older than this ranks as IW (None: never)

    def __init__(self, niw_bump_s: float | None = None) -> None:
        self.niw_bump_s = math.inf if niw_bump_s is None else float(niw_bump_s)

    def key(self, r, now: float) -> tuple:
        raise NotImplementedError

    def _young_niw(self, r, now: float) -> bool:
        """An NIW request still inside its priority bump (ranked after IW)."""
        return r.tier == _NIW and now - r.arrival <= self.niw_bump_s

    def sort(self, queue, now: float) -> None:
        """Sort ``queue`` (a deque or list of requests) in place."""
        if len(queue) > 1:
            items = sorted(queue, key=lambda r: self.key(r, now))
            queue.clear()
            queue.extend(items)


@register("fcfs")
class Fcfs(QueueOrder):
    def key(self, r, now):
        return (1 if self._young_niw(r, now) else 0, r.arrival, r.idx)


@register("edf")
class Edf(QueueOrder):
    def key(self, r, now):
        return (r.deadline, r.arrival, r.idx)


@register("pf")
class PriorityFirst(QueueOrder):
    def key(self, r, now):
        return (r.tier, r.arrival, r.idx)


@register("dpa")
class Dpa(QueueOrder):
    class Options(QueueOrder.Options):
        tau_n_s: Seconds = 10.0  # d_r < -tau_n: severely expired (the paper gives no value)
        tau_p_s: Seconds = 1.0   # 0 <= d_r <= tau_p: urgent (the paper gives no value)

    def __init__(self, niw_bump_s: float | None = None, tau_n_s: float = 10.0, tau_p_s: float = 1.0) -> None:
        super().__init__(niw_bump_s)  # (get_order checks the options: durations >= 0)
        self.tau_n_s, self.tau_p_s = float(tau_n_s), float(tau_p_s)

    def key(self, r, now):
        if self._young_niw(r, now):
            return (6, r.deadline, r.idx)
        d = r.deadline - now
        if d < -self.tau_n_s:
            cat = 0
        elif d < 0:
            cat = 5
        elif r.tier == _IWN:
            cat = 2 if d <= self.tau_p_s else 4
        else:
            cat = 1 if d <= self.tau_p_s else 3
        return (cat, r.deadline, r.idx)


class QueueOrdered(SchedulerPolicy):
    """``policy`` serving its instance's waiting queue in ``order``'s sequence: the queue is
    sorted before every plan and every head-admission check; all else is ``policy``'s."""

    def __init__(self, policy: SchedulerPolicy, order: QueueOrder) -> None:
        self.inner = policy
        self.order = order
        self.name = policy.name
        self.reserves_full = policy.reserves_full

    def schedule(self, inst) -> None:
        self.order.sort(inst.waiting, inst.now)
        self.inner.schedule(inst)

    def head_admissible(self, inst) -> bool:
        self.order.sort(inst.waiting, inst.now)
        return self.inner.head_admissible(inst)

    def blocks_needed_max(self, r, block_size: int) -> int:
        return self.inner.blocks_needed_max(r, block_size)

    def never_fits(self, inst, r) -> str:
        return self.inner.never_fits(inst, r)
