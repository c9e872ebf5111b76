"""Endpoint routers: pick one of an endpoint's routable (ready) instances for a request.

One router object per endpoint. The fleet tells it when an instance becomes routable
(`add`), stops being routable (`remove`, e.g. it starts draining) and when its load counters
change (`update`, after each routed and each completed request). Instances expose the
counters the fleet keeps for them: ``seq`` (unique int, the tie-breaker), ``outstanding``
(requests routed and not yet ended) and ``pending_tokens`` (sum of prompt_tokens + 1 over
those requests, SageServe's ``sched_pending_tokens``).

Per-request cost never depends on fleet size by a scan: list routers are O(1), heap routers
O(log n) with lazy deletion (stale heap entries are skipped and the heap is rebuilt when they
outnumber live ones).
"""

from __future__ import annotations

import heapq
from abc import ABC, abstractmethod
from typing import Any

import numpy as np

from .registry import register_router


class Router(ABC):
    """Chooses among an endpoint's routable instances."""

    name: str = "abstract"

    def __init__(self, rng: np.random.Generator | None = None) -> None:
        self.rng = rng if rng is not None else np.random.default_rng(0)

    @abstractmethod
    def add(self, inst: Any) -> None:
        """`inst` became routable."""

    @abstractmethod
    def remove(self, inst: Any) -> None:
        """`inst` is no longer routable (draining, released, moved)."""

    def update(self, inst: Any) -> None:
        """`inst`'s load counters changed."""

    @abstractmethod
    def select(self, request: Any) -> Any | None:
        """The instance for `request`, or None when no instance is routable."""

    @abstractmethod
    def __len__(self) -> int:
        """Number of routable instances."""


class ListRouter(Router):
    """Keeps routable instances in a list with O(1) swap-remove; subclasses pick by position."""

    def __init__(self, rng: np.random.Generator | None = None) -> None:
        super().__init__(rng)
        self._items: list[Any] = []
        self._pos: dict[int, int] = {}

    def add(self, inst: Any) -> None:
        if inst.seq in self._pos:
            return
        self._pos[inst.seq] = len(self._items)
        self._items.append(inst)

    def remove(self, inst: Any) -> None:
        i = self._pos.pop(inst.seq, None)
        if i is None:
            return
        last = self._items.pop()
        if i < len(self._items):
            self._items[i] = last
            self._pos[last.seq] = i

    def __len__(self) -> int:
        return len(self._items)


@register_router("round-robin")
class RoundRobin(ListRouter):
    """Cycles over routable instances (order = insertion, perturbed by removals)."""

    def __init__(self, rng: np.random.Generator | None = None) -> None:
        super().__init__(rng)
        self._next = 0

    def select(self, request: Any) -> Any | None:
        if not self._items:
            return None
        if self._next >= len(self._items):
            self._next = 0
        inst = self._items[self._next]
        self._next += 1
        return inst


@register_router("random")
class RandomRouter(ListRouter):
    """Uniformly random routable instance (seeded)."""

    def select(self, request: Any) -> Any | None:
        if not self._items:
            return None
        return self._items[int(self.rng.integers(len(self._items)))]


@register_router("power-of-two")
class PowerOfTwo(ListRouter):
    """Power of two choices: two distinct random instances, the one with fewer outstanding
    requests wins (then fewer pending tokens, then lower seq)."""

    def select(self, request: Any) -> Any | None:
        n = len(self._items)
        if n == 0:
            return None
        if n == 1:
            return self._items[0]
        i = int(self.rng.integers(n))
        j = int(self.rng.integers(n - 1))
        j = j + 1 if j >= i else j
        a, b = self._items[i], self._items[j]
        ka = (a.outstanding, a.pending_tokens, a.seq)
        kb = (b.outstanding, b.pending_tokens, b.seq)
        return a if ka <= kb else b


class HeapRouter(Router):
    """Routes to the instance with the smallest ``key(inst)`` (ties: lowest ``seq``).

    Subclasses define `key` from counters that only change when the fleet calls `update`.
    A min-heap with lazy deletion: `update` pushes a fresh entry and bumps the instance's
    version; entries whose version is stale, or whose instance was removed, are skipped.
    """

    def __init__(self, rng: np.random.Generator | None = None) -> None:
        super().__init__(rng)
        self._heap: list[tuple[Any, int, int, Any]] = []
        self._version: dict[int, int] = {}  # seq -> current version, only routable instances
        self._tick = 0  # versions are globally unique so a re-added instance's old entries stay stale

    @abstractmethod
    def key(self, inst: Any) -> Any:
        """Load key; smaller is preferred."""

    def _push(self, inst: Any) -> None:
        self._tick += 1
        v = self._tick
        self._version[inst.seq] = v
        heapq.heappush(self._heap, (self.key(inst), inst.seq, v, inst))
        if len(self._heap) > 4 * len(self._version) + 64:
            self._rebuild()

    def _rebuild(self) -> None:
        live = [e for e in self._heap if self._version.get(e[1]) == e[2]]
        heapq.heapify(live)
        self._heap = live

    def add(self, inst: Any) -> None:
        if inst.seq in self._version:
            return
        self._version[inst.seq] = 0
        self._push(inst)

    def remove(self, inst: Any) -> None:
        self._version.pop(inst.seq, None)

    def update(self, inst: Any) -> None:
        if inst.seq in self._version:
            self._push(inst)

    def select(self, request: Any) -> Any | None:
        h = self._heap
        while h:
            _, seq, v, inst = h[0]
            if self._version.get(seq) == v:
                return inst
            heapq.heappop(h)
        return None

    def __len__(self) -> int:
        return len(self._version)


@register_router("least-outstanding")
class LeastOutstanding(HeapRouter):
    """Fewest outstanding (routed, not yet ended) requests."""

    def key(self, inst: Any) -> Any:
        return inst.outstanding


@register_router("jsq-tokens")
class JSQTokens(HeapRouter):
    """Join the shortest queue measured in pending tokens (SageServe's endpoint routing)."""

    def key(self, inst: Any) -> Any:
        return inst.pending_tokens


__all__ = ["Router", "ListRouter", "HeapRouter", "RoundRobin", "RandomRouter", "PowerOfTwo",
           "LeastOutstanding", "JSQTokens"]
