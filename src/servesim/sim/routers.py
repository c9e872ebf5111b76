"""Request routers: pick one of a pool's routable instances for each request.

One implementation serves both :class:`~servesim.sim.cluster.Cluster` and the fleet
(``servesim.fleet``; ``servesim.policies`` re-exports everything here). A router holds
*instance records* that expose the counters its owner keeps for them:

- ``seq``: unique int, the tie-breaker (a Cluster's instance index; the fleet's instance seq);
- ``outstanding``: requests routed to the instance and not yet ended (or handed off);
- ``pending_tokens``: sum of ``prompt_tokens + 1`` over those requests (SageServe's
  ``sched_pending_tokens``).

The owner tells the router when a record becomes routable (`add`), stops being routable
(`remove`, e.g. the instance starts draining) and when its counters change (`update`, after
each routed and each ended request). `select` returns a record, or None when none is routable.
A Cluster binds a router to a pool of its instances with `bind` (it adds the cluster's
:class:`InstanceLoad` records).

Per-request cost never depends on the pool size by a scan: list routers are O(1), heap routers
O(log n) with lazy deletion (stale heap entries are skipped and the heap is rebuilt when they
outnumber live ones).

Names are registered with `register_router`; lookups in `ROUTERS` accept ``-`` and ``_``
interchangeably (``least-outstanding`` == ``least_outstanding``)::

    @register_router("my-router")
    class MyRouter(HeapRouter):
        def key(self, inst): return inst.pending_tokens + 100 * inst.outstanding
"""

from __future__ import annotations

import heapq
from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any

import numpy as np

from ..registry import Registry


def canonical_name(name: str) -> str:
    """Registry spelling of a router name: underscores become hyphens."""
    return name.replace("_", "-")


#: ``name -> Router class``; names are stored hyphenated and looked up with ``-`` or ``_``
ROUTERS: Registry = Registry("router", normalise=canonical_name)


def register_router(name: str):
    """Class decorator: make a router available under `name` (scenario ``router:``,
    ``Cluster(router=...)``)."""
    return ROUTERS.register(name)


class InstanceLoad:
    """The load record a :class:`~servesim.sim.cluster.Cluster` keeps per instance."""

    __slots__ = ("seq", "outstanding", "pending_tokens")

    def __init__(self, seq: int, outstanding: int = 0, pending_tokens: int = 0) -> None:
        self.seq = seq
        self.outstanding = outstanding
        self.pending_tokens = pending_tokens

    def __repr__(self) -> str:
        return f"InstanceLoad(seq={self.seq}, outstanding={self.outstanding}, pending_tokens={self.pending_tokens})"


class Router(ABC):
    """Chooses among a pool's routable instance records."""

    name: str = "abstract"

    def __init__(self, rng: np.random.Generator | None = None) -> None:
        self.rng = rng if rng is not None else np.random.default_rng(0)

    def bind(self, cluster: Any, pool: list[int]) -> None:
        """Route among ``cluster``'s instances ``pool`` (indices): add their load records."""
        if not pool:
            raise ValueError(f"router {self.name}: empty instance pool")
        self.cluster = cluster
        for j in pool:
            self.add(cluster.loads[j])

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
    """Uniformly random routable instance (seeded; default ``default_rng(0)``)."""

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

    Subclasses define `key` from counters that only change when the owner calls `update`.
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

    def _rebuild(self) -> None:
        live = [e for e in self._heap if self._version.get(e[1]) == e[2]]
        heapq.heapify(live)
        self._heap = live

    def add(self, inst: Any) -> None:
        if inst.seq in self._version:
            return
        self._version[inst.seq] = 0
        self.update(inst)

    def remove(self, inst: Any) -> None:
        self._version.pop(inst.seq, None)

    def update(self, inst: Any) -> None:
        seq = inst.seq
        version = self._version
        if seq in version:  # push a fresh entry under a new version; older ones go stale
            self._tick = v = self._tick + 1
            version[seq] = v
            heap = self._heap
            heapq.heappush(heap, (self.key(inst), seq, v, inst))
            if len(heap) > 4 * len(version) + 64:
                self._rebuild()

    def select(self, request: Any) -> Any | None:
        h = self._heap
        version = self._version
        while h:
            _, seq, v, inst = h[0]
            if version.get(seq) == v:
                return inst
            heapq.heappop(h)
        return None

    def __len__(self) -> int:
        return len(self._version)


@register_router("least-outstanding")
class LeastOutstanding(HeapRouter):
    """Fewest outstanding (routed, not yet ended) requests: join-shortest-queue by count."""

    def key(self, inst: Any) -> Any:
        return inst.outstanding


@register_router("jsq-tokens")
class JSQTokens(HeapRouter):
    """Join the shortest queue measured in pending tokens (SageServe's endpoint routing)."""

    def key(self, inst: Any) -> Any:
        return inst.pending_tokens


@register_router("most-free-kv")
class MostFreeKV(ListRouter):
    """The instance with the most free KV cache (tokens), counting what is already committed to it:
    capacity - max(KV in use now + KV on its way to it (``Cluster.inbound_tokens``), the
    ``pending_tokens`` of every request routed to it and not done), so a queue of requests waiting
    for KV there counts too; ties: lowest seq. KV-aware routing without prefix reuse. Reads live
    instance state, so it scans the pool (O(n) per request, O(1) per instance: meant for pools of
    tens of instances) and must be bound to a Cluster."""

    def free_tokens(self, inst: Any) -> int:
        c = self.cluster
        i = c.instances[inst.seq]
        bs = i.cfg.block_size
        committed = max(i.kv_used_blocks() * bs + c.inbound_tokens[inst.seq], inst.pending_tokens)
        return i.num_blocks * bs - committed

    def select(self, request: Any) -> Any | None:
        if not self._items:
            return None
        if getattr(self, "cluster", None) is None:
            raise RuntimeError("most-free-kv reads instance state; bind it to a Cluster first")
        return max(self._items, key=lambda x: (self.free_tokens(x), -x.seq))


@register_router("weighted")
class WeightedRouter(ListRouter):
    """Shares by request class: a request of class ``c`` (``Req.cls``, from
    ``Cluster.run(classes=...)``) goes to one of the routable instances whose weight for ``c`` is
    positive, in proportion to those weights. Weights are per instance (its ``seq``) and class,
    set with :meth:`set_weights` (before or during a run: a plan that changes over time); an
    instance given no weights is never picked. ``mode``:

    - ``smooth`` (default): smooth weighted round-robin per class (nginx's: each pick adds every
      candidate's weight to its credit, takes the largest credit (ties: the first in weight
      order) and takes the candidates' total off it): deterministic, and every instance stays
      within one request of its share;
    - ``random``: ``u`` from the router's rng (one draw a request), the first candidate in weight
      order whose cumulative share exceeds ``u``.

    A class without a routable instance of positive weight (they are draining or not up yet)
    gets None: ``Cluster(hold_unroutable=True)`` holds the request until one joins or the
    weights change. A request without a class (-1) is routed on each instance's summed weights.
    Scans the candidates (O(n) a request: meant for tens of instances).
    """

    MODES = ("smooth", "random")

    def __init__(self, rng: np.random.Generator | None = None, weights: dict | None = None,
                 mode: str = "smooth") -> None:
        super().__init__(rng)
        if mode not in self.MODES:
            raise ValueError(f"weighted router: mode {mode!r} is not one of {self.MODES}")
        self.mode = mode
        self._w: dict[int, np.ndarray] = {}
        self._cand: dict[int, tuple] = {}     # class -> (records, weights, cumulative shares)
        self._credit: dict[int, dict[int, float]] = {}
        if weights is not None:
            self.set_weights(weights)

    def set_weights(self, weights: dict) -> None:
        """``{seq: per-class weights}`` (each a sequence, index = class; finite, >= 0), in the
        order candidates are taken; replaces the previous weights and restarts the rotation."""
        w = {}
        for seq, v in weights.items():
            a = np.asarray(v, dtype=np.float64).reshape(-1)
            if not np.all(np.isfinite(a)) or np.any(a < 0):
                raise ValueError(f"weighted router: weights of instance {seq} must be finite and >= 0, got {a.tolist()}")
            w[int(seq)] = a
        self._w = w
        self._cand.clear()
        self._credit.clear()

    def weights(self, seq: int) -> np.ndarray | None:
        """Instance ``seq``'s per-class weights (None: none given)."""
        return self._w.get(seq)

    def add(self, inst: Any) -> None:
        super().add(inst)
        self._cand.clear()

    def remove(self, inst: Any) -> None:
        super().remove(inst)
        self._cand.clear()

    def _candidates(self, c: int) -> tuple:
        got = self._cand.get(c)
        if got is None:
            recs, ws = [], []
            for seq, a in self._w.items():
                i = self._pos.get(seq)
                if i is None:
                    continue
                x = float(a.sum()) if c < 0 else (float(a[c]) if c < a.size else 0.0)
                if x > 0:
                    recs.append(self._items[i])
                    ws.append(x)
            cum = np.cumsum(ws)
            got = (recs, ws, cum / cum[-1] if ws else cum)
            self._cand[c] = got
        return got

    def select(self, request: Any) -> Any | None:
        c = int(getattr(request, "cls", -1))
        if self.mode == "random":
            u = self.rng.random()
            recs, _, share = self._candidates(c)
            if not recs:
                return None
            return recs[min(int(np.searchsorted(share, u, side="right")), len(recs) - 1)]
        recs, ws, _ = self._candidates(c)
        if not recs:
            return None
        credit = self._credit.setdefault(c, {})
        best, bk, total = None, -np.inf, 0.0
        for rec, x in zip(recs, ws):
            k = credit.get(rec.seq, 0.0) + x
            credit[rec.seq] = k
            total += x
            if k > bk:
                best, bk = rec, k
        credit[best.seq] = bk - total
        return best


class CallableRouter(ListRouter):
    """Wraps ``fn(cluster, request) -> instance index``; only meaningful bound to a Cluster."""

    name = "callable"

    def __init__(self, fn: Callable[[Any, Any], int], rng: np.random.Generator | None = None) -> None:
        super().__init__(rng)
        self.fn = fn

    def select(self, request: Any) -> Any | None:
        cluster = getattr(self, "cluster", None)
        if cluster is None:
            raise RuntimeError("a callable router picks instance indices; bind it to a Cluster first")
        return cluster.loads[int(self.fn(cluster, request))]


def make_router(spec: Any, rng: np.random.Generator | None = None) -> Router:
    """A Router from a registered name (``-`` or ``_`` spelling), a Router class or instance,
    or a callable ``f(cluster, request) -> instance index``."""
    if isinstance(spec, Router):
        return spec
    if isinstance(spec, str):
        return ROUTERS.get(spec)(rng)
    if isinstance(spec, type) and issubclass(spec, Router):
        return spec(rng)
    if callable(spec):
        return CallableRouter(spec, rng)
    raise TypeError(f"router must be a name, a Router or a callable, not {type(spec).__name__}")


__all__ = [
    "ROUTERS",
    "CallableRouter",
    "HeapRouter",
    "InstanceLoad",
    "JSQTokens",
    "LeastOutstanding",
    "ListRouter",
    "MostFreeKV",
    "PowerOfTwo",
    "RandomRouter",
    "RoundRobin",
    "Router",
    "WeightedRouter",
    "canonical_name",
    "make_router",
    "register_router",
]
