"""Minimal request routers for :class:`~servesim.sim.cluster.Cluster` (the fleet layer has more).

A router is bound to a pool of instance indices and picks one per request. Load-aware routers
keep their own indexed structures (a lazy-deletion heap keyed by load), updated through
``on_submit`` / ``on_done``, so a decision costs O(log pool) amortised, never a scan.
Any callable ``f(cluster, req) -> instance index`` also works as a router.
"""

from __future__ import annotations

import heapq
from typing import Callable

import numpy as np


class Router:
    """Base class: override ``select``; load hooks are optional."""

    name = "abstract"

    def bind(self, cluster, pool: list[int]) -> None:
        self.cluster = cluster
        self.pool = list(pool)
        if not self.pool:
            raise ValueError(f"router {self.name}: empty instance pool")

    def select(self, req) -> int:
        raise NotImplementedError

    def on_submit(self, idx: int, req) -> None:
        """``req`` was sent to instance ``idx``."""

    def on_done(self, idx: int, req) -> None:
        """``req`` left instance ``idx`` (terminal or handed off)."""


class RoundRobin(Router):
    """Instances in turn."""

    name = "round_robin"

    def bind(self, cluster, pool):
        super().bind(cluster, pool)
        self._i = 0

    def select(self, req) -> int:
        j = self.pool[self._i]
        self._i = (self._i + 1) % len(self.pool)
        return j


class RandomRouter(Router):
    """Uniformly at random (seeded)."""

    name = "random"

    def __init__(self, seed: int = 0) -> None:
        self.rng = np.random.default_rng(seed)

    def select(self, req) -> int:
        return self.pool[int(self.rng.integers(len(self.pool)))]


class LeastOutstanding(Router):
    """Fewest requests outstanding (join-shortest-queue by count); ties to the lowest index.

    Indexed: a heap of (load, index) entries, stale ones skipped on pop.
    """

    name = "least_outstanding"

    def bind(self, cluster, pool):
        super().bind(cluster, pool)
        self.load = {j: 0 for j in self.pool}
        self.heap = [(0, j) for j in self.pool]
        heapq.heapify(self.heap)

    def select(self, req) -> int:
        heap = self.heap
        load = self.load
        while True:
            l, j = heap[0]
            if load[j] == l:
                return j
            heapq.heappop(heap)

    def _push(self, idx):
        heap = self.heap
        heapq.heappush(heap, (self.load[idx], idx))
        if len(heap) > 4 * len(self.pool) + 64:  # compact: drop stale entries
            self.heap = [(l, j) for j, l in self.load.items()]
            heapq.heapify(self.heap)

    def on_submit(self, idx, req):
        if idx in self.load:
            self.load[idx] += 1
            self._push(idx)

    def on_done(self, idx, req):
        if idx in self.load:
            self.load[idx] -= 1
            self._push(idx)


ROUTERS: dict[str, Callable[..., Router]] = {
    "round_robin": RoundRobin,
    "random": RandomRouter,
    "least_outstanding": LeastOutstanding,
}


def make_router(spec) -> Router:
    """A Router from a name in ROUTERS, a Router instance, or a callable(cluster, req)."""
    if isinstance(spec, Router):
        return spec
    if isinstance(spec, str):
        try:
            return ROUTERS[spec]()
        except KeyError:
            raise ValueError(f"unknown router {spec!r}; known: {sorted(ROUTERS)}") from None
    if callable(spec):
        return _CallableRouter(spec)
    raise TypeError(f"router must be a name, a Router or a callable, not {type(spec).__name__}")


class _CallableRouter(Router):
    name = "callable"

    def __init__(self, fn):
        self.fn = fn

    def select(self, req) -> int:
        return int(self.fn(self.cluster, req))
