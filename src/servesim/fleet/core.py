"""The fleet: regions, endpoints (a model's instances in a region), pools and lifecycle.

Request path: arrival -> global router picks an endpoint (model, region) -> if that region is
not the request's own, the request travels ``latency_s[src][dst]`` -> the endpoint's router
picks a ready instance -> the instance's engine serves it. With no ready instance the request
waits in the endpoint's queue until one becomes ready.

Deferral (public API): ``set_arrival_hook(hook)`` gives every arrival to ``hook(i)`` before the
global router; a true return defers request ``i`` (its row index is the handle): the fleet neither
routes nor queues it until ``release(i)`` (through the global router, as an arrival) or
``release(i, model, region)`` (straight to that endpoint, paying the network latency from the
request's region), or until the holder ends it with ``end_deferred(i, "timeout", reason)``.
SageServe's NIW queue manager is such a holder (`servesim.systems.sageserve.niw_loop`).

Deadlines: with ``enforce_deadlines`` naming tiers, a request of those tiers whose absolute
``deadline_s`` passes while it is still *waiting* ends ``timeout`` with a reason saying where it
waited. Waiting = deferred (held by the arrival hook's owner, not released), in transit to or
queued at its endpoint, or queued inside an instance's engine and never admitted to a batch
(engines that implement ``withdraw``). A request that has started (admitted once, even if
preempted since) runs to its end: the deadline is then only reported. Default: no tier, i.e.
deadlines are only reported (summary ``deadlines``).

Conversions: ``Move`` of a ready instance to another model drains it (requeues what its engine
has not admitted, finishes its running requests), then switches the engine's model in place
(``Engine.switch_model`` where the engine has it, else a fresh engine) in state ``converting``
for ``LeadTimes.convert_s``; a pooled instance holding another model's weights converts the
same way when it is reclaimed. Converting hours are their own state in the instance-hours table.

Per-request events cost O(log n) in the endpoint's size at most (router heaps) and nothing in
the number of endpoints or regions (dict lookups); only control ticks and time-series samples
walk instances, and they run at fixed periods.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ..sim.kernel import PRIO_ARRIVAL, PRIO_CONTROL, PRIO_SAMPLE
from .control import Action, Drain, EndpointKey, EndpointStats, Move, Scale
from .lifecycle import BILLED, InstanceLedger, State
from .protocols import Engine, EngineFactory, Kernel

TERMINAL = ("finished", "rejected", "unfinished", "timeout", "error")


@dataclass(frozen=True)
class LeadTimes:
    """Seconds spent in each start-up state (a zero-length state is still visited)."""

    request_s: float = 0.0  # requested -> provisioning (waiting for a VM)
    provision_s: float = 60.0  # provisioning -> loading (VM boot)
    load_s: float = 120.0  # loading -> ready (weights into GPU memory, engine start)
    reclaim_s: float = 60.0  # pooled instance that still holds this model's weights -> ready
    #: an instance that served (or holds the weights of) another model switches to this one
    #: (weights local); None: the same as ``load_s``
    convert_s: float | None = None

    @property
    def conversion_s(self) -> float:
        return self.load_s if self.convert_s is None else self.convert_s


@dataclass
class EndpointConfig:
    model: str
    region: str
    instances: int = 1  # ready at time 0
    min_instances: int = 0
    max_instances: int | None = None
    lead: LeadTimes = field(default_factory=LeadTimes)


@dataclass(eq=False)
class FleetInstance:
    """One VM. Load counters are the fleet's own (updated on route and on request end)."""

    id: str
    seq: int
    region: str
    model: str
    state: State
    engine: Engine | None = None
    outstanding: int = 0
    pending_tokens: int = 0
    after_drain: str = "release"  # release | pool | move
    move_to: str | None = None
    timer: int = 0  # bumps cancel pending lifecycle timers


def shared_strings(col: pd.Series) -> np.ndarray:
    """``col.astype(str).to_numpy(object)`` holding one str object per distinct value.

    ``astype(str)`` of a categorical column builds a new str per row (~60 B each: ~0.4 GB per
    string column over a simulated week of 7 M requests); here every row points at its value's
    one object (8 B a row). Same values, same ``==``/hash behaviour.
    """
    cat = col.astype("category")
    codes = cat.cat.codes.to_numpy()
    if len(codes) and codes.min() < 0:  # missing values: astype(str)'s own spelling of them
        return col.astype(str).to_numpy(object)
    names = np.empty(len(cat.cat.categories), dtype=object)
    names[:] = [str(x) for x in cat.cat.categories]
    return names[codes]


class Endpoint:
    def __init__(self, cfg: EndpointConfig, router: Any) -> None:
        self.cfg = cfg
        self.model, self.region = cfg.model, cfg.region
        self.router = router
        self.instances: dict[str, FleetInstance] = {}  # all non-released, non-pooled
        self.queue: deque[int] = deque()  # request indices waiting for a ready instance
        self.recent: deque[tuple[float, int]] = deque()  # (arrival at endpoint, prompt tokens)
        self.recent_tokens = 0  # sum of prompt tokens in `recent`
        self.arrived = 0  # requests that reached this endpoint (cumulative)
        self.arrived_tokens = 0
        self._sampled = (0, 0)  # (arrived, arrived_tokens) at the previous sample
        self.outstanding = 0
        self.pending_tokens = 0

    def count(self, state: State) -> int:
        return sum(1 for i in self.instances.values() if i.state is state)


class Fleet:
    """A multi-region, multi-model fleet driven by a `Kernel`; also the `FleetView` actors read.

    Parameters
    ----------
    kernel: the event clock (shared with the engines).
    workload: request table in `servesim.workload.schema` form.
    endpoints: one `EndpointConfig` per (model, region).
    engine_factory: builds an `Engine` for an instance that becomes ready.
    router_factory: ``(model, region) -> Router`` (one router per endpoint).
    global_router: ``route(ridx, fleet) -> (model, region) | None``; None = the request's own
        (model, region).
    latency_s: ``{src: {dst: seconds}}`` network latency; missing pairs fall back to the
        reverse pair, then 0 for src == dst; a missing cross-region pair is an error.
    region_capacity: ``{region: max instances held (billed + pooled)}``; absent = unlimited.
    pool: ``{region: {model: n}}`` instances in the region's pool at time 0.
    scale_in_to: where scaled-in instances go once drained: ``release`` or the region's ``pool``.
    requeue_on_drain: a draining instance hands back the requests its engine has not admitted
        yet, which are routed again; it only finishes its running requests. False: it serves
        everything already sent to it.
    window_s: look-back window for arrival rates in `EndpointStats`.
    pool_conversions: a scale-up may take a pooled instance holding another model's weights
        (a conversion) when none of its own model is pooled; False: only same-model reclaims.
    enforce_deadlines: tiers (``IW-F``, ``IW-N``, ``NIW``) whose requests end ``timeout`` when
        their ``deadline_s`` passes while they wait (see the module docstring); empty: report only.
    """

    def __init__(
        self,
        kernel: Kernel,
        workload: pd.DataFrame,
        endpoints: Sequence[EndpointConfig],
        engine_factory: EngineFactory,
        router_factory: Callable[[str, str], Any],
        *,
        global_router: Any = None,
        latency_s: dict[str, dict[str, float]] | None = None,
        region_capacity: dict[str, int] | None = None,
        pool: dict[str, dict[str, int]] | None = None,
        scale_in_to: str = "release",
        requeue_on_drain: bool = True,
        window_s: float = 60.0,
        enforce_deadlines: Sequence[str] = (),
        pool_conversions: bool = True,
    ) -> None:
        self.kernel = kernel
        self.engine_factory = engine_factory
        self.global_router = global_router
        self.latency_s = latency_s or {}
        self.region_capacity = dict(region_capacity or {})
        self.window_s = float(window_s)
        self.ledger = InstanceLedger()
        self.eps: dict[EndpointKey, Endpoint] = {}
        self.regions: list[str] = []
        self._by_id: dict[str, FleetInstance] = {}
        self._pools: dict[str, dict[str, list[FleetInstance]]] = {}
        self._held: dict[str, int] = {}  # region -> billed + pooled instances
        self._seq = 0
        self.scale_denied = 0
        if scale_in_to not in ("release", "pool"):
            raise ValueError(f"scale_in_to must be 'release' or 'pool', got {scale_in_to!r}")
        self.scale_in_to = scale_in_to
        self.requeue_on_drain = requeue_on_drain
        self.requeued = 0  # requests taken back from draining instances and routed again
        self.pool_conversions = pool_conversions
        self.conversions = 0  # instances switched to another model (Move, or a pooled one reclaimed)
        self._handles: dict[int, Any] = {}  # request -> engine request object to resume elsewhere

        w = workload
        self.n = len(w)
        self.arrival = w["arrival_s"].to_numpy(np.float64)
        self.prompt = w["prompt_tokens"].to_numpy(np.int64)
        self.output = w["output_tokens"].to_numpy(np.int64)
        self.req_model = shared_strings(w["model"])
        self.req_region = shared_strings(w["region"])
        self.workload = w
        self.state = np.full(self.n, "", dtype=object)
        self.reason = np.full(self.n, "", dtype=object)
        self.instance_of = np.full(self.n, "", dtype=object)
        self.records: dict[int, dict[str, Any]] = {}
        self._inst_of_req: dict[int, FleetInstance] = {}
        self.ended = 0
        self.done_s = 0.0  # when the last request ended
        self._next_arrival = 0
        self._hook: Callable[[int], Any] | None = None
        self._deferred: set[int] = set()
        self.timed_out = 0  # requests ended by deadline enforcement
        tiers = {str(t) for t in enforce_deadlines}
        bad = sorted(tiers - {"IW-F", "IW-N", "NIW"})
        if bad:
            raise ValueError(f"enforce_deadlines: unknown tier(s) {bad}; known: ['IW-F', 'IW-N', 'NIW']")
        self.enforce_deadlines = tuple(sorted(tiers))
        self._deadline = w["deadline_s"].to_numpy(np.float64) if "deadline_s" in w else np.full(self.n, np.nan)
        self._enforce: np.ndarray | None = None
        if tiers and self.n:
            self._enforce = (w["tier"].isin(tiers).to_numpy(bool) & ~np.isnan(self._deadline))

        for cfg in endpoints:
            key = (cfg.model, cfg.region)
            if key in self.eps:
                raise ValueError(f"endpoint {key} configured twice")
            self.eps[key] = Endpoint(cfg, router_factory(cfg.model, cfg.region))
            if cfg.region not in self.regions:
                self.regions.append(cfg.region)
        for region in list(self.region_capacity) + list((pool or {}).keys()):
            if region not in self.regions:
                self.regions.append(region)
        for r in self.regions:
            self._pools[r] = {}
            self._held[r] = 0
        for key, ep in self.eps.items():
            for _ in range(ep.cfg.instances):
                inst = self._new_instance(ep.region, ep.model, State.READY)
                self._make_ready(inst, ep)
        for region, models in (pool or {}).items():
            for model, k in models.items():
                for _ in range(k):
                    inst = self._new_instance(region, model, State.POOLED)
                    self._pools[region].setdefault(model, []).append(inst)
        self._check_capacity()

    # ------------------------------------------------------------------ setup helpers
    def _check_capacity(self) -> None:
        for r, cap in self.region_capacity.items():
            if self._held[r] > cap:
                raise ValueError(f"region {r!r}: {self._held[r]} initial instances exceed capacity {cap}")

    def _new_instance(self, region: str, model: str, state: State) -> FleetInstance:
        iid = f"{region}/i{self._seq}"
        inst = FleetInstance(iid, self._seq, region, model, state)
        self._seq += 1
        self._by_id[iid] = inst
        self._held[region] = self._held.get(region, 0) + 1
        self.ledger.start(self.kernel.now, iid, model, region, state)
        return inst

    # ------------------------------------------------------------------ lifecycle
    def _to(self, inst: FleetInstance, state: State, model: str | None = None) -> None:
        self.ledger.transition(self.kernel.now, inst.id, state, model)
        inst.state = state
        if model is not None:
            inst.model = model

    def _later(self, inst: FleetInstance, delay: float, fn: Callable[[], None]) -> None:
        """Run `fn` after `delay` unless the instance's timer is bumped meanwhile (cancel)."""
        token = inst.timer

        def fire(_: Any) -> None:
            if inst.timer == token:
                fn()

        self.kernel.after(delay, fire, None, PRIO_CONTROL)

    def _make_ready(self, inst: FleetInstance, ep: Endpoint) -> None:
        if inst.state is not State.READY:
            self._to(inst, State.READY)
        ep.instances[inst.id] = inst
        if inst.engine is None:
            inst.engine = self.engine_factory(inst.model, inst.region, inst.id, self._on_end)
        ep.router.add(inst)
        self._dispatch_queue(ep)

    def _start_loading(self, inst: FleetInstance, ep: Endpoint, load_s: float) -> None:
        """`inst` (already in ep.instances, state LOADING) becomes ready after `load_s`."""
        self._later(inst, load_s, lambda: self._make_ready(inst, ep))

    def _provision(self, ep: Endpoint) -> FleetInstance:
        inst = self._new_instance(ep.region, ep.model, State.REQUESTED)
        ep.instances[inst.id] = inst
        lead = ep.cfg.lead

        def boot() -> None:
            self._to(inst, State.PROVISIONING)
            self._later(inst, lead.provision_s, load)

        def load() -> None:
            self._to(inst, State.LOADING)
            self._start_loading(inst, ep, lead.load_s)

        self._later(inst, lead.request_s, boot)
        return inst

    def _drain(self, inst: FleetInstance, after: str = "release", move_to: str | None = None) -> None:
        ep = self.eps[(inst.model, inst.region)]
        if inst.state is State.READY:
            ep.router.remove(inst)
            self._to(inst, State.DRAINING)
            if self.requeue_on_drain:
                self._requeue(inst, ep)
        inst.after_drain, inst.move_to = after, move_to
        if inst.state is State.DRAINING and inst.outstanding == 0:
            self._finish_drain(inst)

    def _requeue(self, inst: FleetInstance, ep: Endpoint) -> None:
        """Take the requests `inst`'s engine has not admitted yet and route them again (ahead
        of the endpoint's queue: they arrived earlier)."""
        taken = inst.engine.take_waiting()
        back = []
        for i, handle in taken:
            self._unsend(i, inst, ep)
            self._handles[i] = handle
            target = ep.router.select(i)
            if target is None:
                back.append(i)
            else:
                self._send(i, target, ep)
        ep.queue.extendleft(reversed(back))
        self.requeued += len(taken)

    def _finish_drain(self, inst: FleetInstance) -> None:
        ep = self.eps[(inst.model, inst.region)]
        del ep.instances[inst.id]
        if inst.after_drain == "move":
            self._convert(inst, self.eps[(inst.move_to, inst.region)])
            return
        inst.engine = None  # a later tenure gets a fresh engine
        if inst.after_drain == "pool":
            self._to(inst, State.POOLED)
            self._pools[inst.region].setdefault(inst.model, []).append(inst)
        else:
            self._to(inst, State.RELEASED)
            self._held[inst.region] -= 1
            del self._by_id[inst.id]

    def _convert(self, inst: FleetInstance, target: Endpoint) -> None:
        """Switch `inst` (drained, or pooled with another model's weights) to `target`'s model:
        state ``converting`` for the target's ``convert_s``, then ready. A drained instance keeps
        its engine and switches its model in place (``Engine.switch_model``) where the engine
        supports that; otherwise the instance gets a fresh engine when it becomes ready."""
        lead = target.cfg.lead.conversion_s
        self._to(inst, State.CONVERTING, model=target.model)
        target.instances[inst.id] = inst
        switch = getattr(inst.engine, "switch_model", None)
        if switch is None or not switch(target.model, lead):
            inst.engine = None
        self.conversions += 1
        self._start_loading(inst, target, lead)

    def _cancel(self, inst: FleetInstance) -> None:
        """Give back a not-yet-ready instance (to the pool if scale-ins go there and the VM
        exists already, else released)."""
        ep = self.eps[(inst.model, inst.region)]
        inst.timer += 1
        del ep.instances[inst.id]
        if self.scale_in_to == "pool" and inst.state in (State.PROVISIONING, State.LOADING, State.CONVERTING):
            inst.engine = None
            self._to(inst, State.POOLED)
            self._pools[inst.region].setdefault(inst.model, []).append(inst)
            return
        inst.engine = None
        self._to(inst, State.RELEASED)
        self._held[inst.region] -= 1
        del self._by_id[inst.id]

    # ------------------------------------------------------------------ actions
    def apply(self, action: Action) -> None:
        """Apply one control action now."""
        if isinstance(action, Scale):
            ep = self._endpoint(action.model, action.region)
            if action.delta > 0:
                for _ in range(action.delta):
                    if not self._scale_up(ep):
                        self.scale_denied += 1
            elif action.delta < 0:
                self._scale_down(ep, -action.delta)
        elif isinstance(action, Drain):
            inst = self._instance(action.instance)
            if inst.state not in (State.READY, State.DRAINING):
                raise ValueError(f"Drain({inst.id}): instance is {inst.state.value}")
            self._drain(inst, "pool" if action.to_pool else "release")
        elif isinstance(action, Move):
            inst = self._instance(action.instance)
            self._endpoint(action.model, inst.region)
            if inst.state is State.POOLED:
                self._unpool(inst, self.eps[(action.model, inst.region)])
            elif inst.state in (State.READY, State.DRAINING):
                self._drain(inst, "move", action.model)
            else:
                raise ValueError(f"Move({inst.id}): instance is {inst.state.value}")
        else:
            raise TypeError(f"unknown action {action!r}")

    def _endpoint(self, model: str, region: str) -> Endpoint:
        try:
            return self.eps[(model, region)]
        except KeyError:
            raise KeyError(f"no endpoint for model {model!r} in region {region!r}") from None

    def _instance(self, iid: str) -> FleetInstance:
        try:
            return self._by_id[iid]
        except KeyError:
            raise KeyError(f"no live instance {iid!r}") from None

    def _active(self, ep: Endpoint) -> int:
        return sum(1 for i in ep.instances.values() if i.state is not State.DRAINING)

    def _unpool(self, inst: FleetInstance, ep: Endpoint) -> None:
        self._pools[inst.region][inst.model].remove(inst)
        if inst.model != ep.model:  # another model's weights: a conversion
            self._convert(inst, ep)
            return
        self._to(inst, State.LOADING)
        ep.instances[inst.id] = inst
        self._start_loading(inst, ep, ep.cfg.lead.reclaim_s)

    def _scale_up(self, ep: Endpoint) -> bool:
        if ep.cfg.max_instances is not None and self._active(ep) >= ep.cfg.max_instances:
            return False
        # 1. re-activate a draining instance of this endpoint (no cold start)
        draining = [i for i in ep.instances.values() if i.state is State.DRAINING and i.after_drain != "move"]
        if draining:
            inst = max(draining, key=lambda i: (i.outstanding, -i.seq))
            self._make_ready(inst, ep)
            return True
        # 2. the region's pool: same model's weights first, then another model's instance
        pool = self._pools[ep.region]
        if pool.get(ep.model):
            self._unpool(pool[ep.model][0], ep)
            return True
        for m in sorted(pool) if self.pool_conversions else ():
            if pool[m]:
                self._unpool(pool[m][0], ep)
                return True
        # 3. a new instance, if the region has room
        cap = self.region_capacity.get(ep.region)
        if cap is not None and self._held[ep.region] >= cap:
            return False
        self._provision(ep)
        return True

    def _scale_down(self, ep: Endpoint, k: int) -> None:
        floor = ep.cfg.min_instances
        k = min(k, self._active(ep) - floor)
        if k <= 0:
            return
        starting = sorted((i for i in ep.instances.values() if i.state in
                           (State.REQUESTED, State.PROVISIONING, State.LOADING, State.CONVERTING)),
                          key=lambda i: -i.seq)
        for inst in starting[:k]:
            self._cancel(inst)
        k -= min(k, len(starting))
        if k:
            ready = sorted((i for i in ep.instances.values() if i.state is State.READY),
                           key=lambda i: (i.outstanding, i.pending_tokens, -i.seq))
            for inst in ready[:k]:
                self._drain(inst, self.scale_in_to)

    # ------------------------------------------------------------------ requests
    def start(self) -> None:
        """Hand the workload's arrivals to the kernel (call once before running it)."""
        self.kernel.add_stream(self.arrival, self._arrive)

    def _arrive(self, i: int) -> None:
        self._next_arrival = i + 1
        if self._enforce is not None and self._enforce[i]:
            self.kernel.at(max(float(self._deadline[i]), self.kernel.now), self._on_deadline, i, PRIO_CONTROL)
        if self._hook is not None and self._hook(i):
            self._deferred.add(i)
            return
        self._route(i)

    def _route(self, i: int) -> None:
        """Global routing of request `i` (at arrival, or at release without an endpoint)."""
        src = self.req_region[i]
        dest = self.global_router.route(i, self) if self.global_router is not None else None
        if dest is None:
            dest = (self.req_model[i], src)
        ep = self.eps.get(dest)
        if ep is None:
            self._end(i, "rejected", f"no endpoint for model {dest[0]!r} in region {dest[1]!r}", {})
            return
        self._travel(i, ep)

    def _travel(self, i: int, ep: Endpoint) -> None:
        d = self.latency(self.req_region[i], ep.region)
        if d > 0:  # a request that timed out on the way is not delivered
            self.kernel.after(d, lambda _: self.state[i] or self._at_endpoint(i, ep), None, PRIO_ARRIVAL)
        else:
            self._at_endpoint(i, ep)

    # ------------------------------------------------------------------ deferral (public)
    def set_arrival_hook(self, hook: Callable[[int], Any] | None) -> None:
        """Call ``hook(i)`` on every arrival before global routing; a true return defers request
        `i` (the row index is the handle): it waits outside the fleet until `release` or
        `end_deferred`. None removes the hook. Set it before the run starts."""
        if hook is not None and not callable(hook):
            raise TypeError(f"arrival hook must be callable, got {hook!r}")
        self._hook = hook

    def _check_request(self, i: Any, what: str) -> int:
        if isinstance(i, (bool, np.bool_)) or not isinstance(i, (int, np.integer)) or not 0 <= int(i) < self.n:
            raise IndexError(f"{what}({i!r}): no such request; request handles are row indices 0..{self.n - 1}")
        i = int(i)
        if i not in self._deferred:
            where = (f"it already ended ({self.state[i]})" if self.state[i] else
                     "it has not arrived yet" if i >= self._next_arrival else "it was routed at arrival or released")
            raise ValueError(f"{what}({i}): request {i} is not deferred: {where}")
        return i

    def deadline_of(self, i: int) -> float:
        """Request `i`'s ``deadline_s`` (NaN when it has none)."""
        if not 0 <= i < self.n:
            raise IndexError(f"deadline_of({i!r}): no such request; request handles are row indices 0..{self.n - 1}")
        return float(self._deadline[i])

    def is_deferred(self, i: int) -> bool:
        """Request `i` was deferred by the arrival hook and is neither released nor ended."""
        return i in self._deferred

    @property
    def deferred(self) -> int:
        """Requests deferred now."""
        return len(self._deferred)

    def has_endpoint(self, model: str, region: str) -> bool:
        return (model, region) in self.eps

    def release(self, i: int, model: str | None = None, region: str | None = None) -> None:
        """Hand deferred request `i` back to the fleet now: with neither `model` nor `region`,
        through the global router as if it arrived now; else straight to endpoint (model,
        region) (each defaults to the request's own), after the network latency from the
        request's region. Its latency clock still starts at its arrival.

        Raises IndexError for a handle that is no request, ValueError for a request that is not
        deferred (never deferred, released already, or ended), KeyError for an unknown endpoint
        (the request then stays deferred)."""
        i = self._check_request(i, "release")
        if model is None and region is None:
            self._deferred.remove(i)
            self._route(i)
            return
        ep = self._endpoint(self.req_model[i] if model is None else model,
                            self.req_region[i] if region is None else region)
        self._deferred.remove(i)
        self._travel(i, ep)

    def end_deferred(self, i: int, state: str = "timeout", reason: str = "") -> None:
        """End deferred request `i` without serving it (e.g. its holder's deadline passed)."""
        i = self._check_request(i, "end_deferred")
        self._deferred.remove(i)
        self._end(i, state, reason, {})

    # ------------------------------------------------------------------ deadlines
    def _on_deadline(self, i: int) -> None:
        """`deadline_s` of an enforced request: time it out if it is still waiting."""
        if self.state[i]:
            return
        dl = float(self._deadline[i])
        if i in self._deferred:
            self._deferred.remove(i)
            self._timeout(i, f"deadline {dl:.6g} s passed while deferred (never released)")
            return
        inst = self._inst_of_req.get(i)
        if inst is not None:
            withdraw = getattr(inst.engine, "withdraw", None)
            if withdraw is None or not withdraw(i):
                return  # started (or an engine that cannot withdraw): runs to its end
            ep = self.eps[(inst.model, inst.region)]
            self._unsend(i, inst, ep)
            if inst.state is State.READY:
                ep.router.update(inst)
            self._timeout(i, f"deadline {dl:.6g} s passed while queued in {inst.id} (not started)")
            if inst.state is State.DRAINING and inst.outstanding == 0:
                self._finish_drain(inst)
            return
        for ep in self.eps.values():
            if i in ep.queue:
                ep.queue.remove(i)
                self._timeout(i, f"deadline {dl:.6g} s passed while queued at endpoint {ep.model}@{ep.region}")
                return
        self._timeout(i, f"deadline {dl:.6g} s passed in transit to its endpoint")

    def _timeout(self, i: int, reason: str) -> None:
        self.timed_out += 1
        self._end(i, "timeout", reason, {})

    def latency(self, src: str, dst: str) -> float:
        """Network latency (s) from region `src` to `dst`."""
        if src == dst:
            return float(self.latency_s.get(src, {}).get(dst, 0.0))
        row = self.latency_s.get(src, {})
        if dst in row:
            return float(row[dst])
        back = self.latency_s.get(dst, {})
        if src in back:
            return float(back[src])
        raise KeyError(f"no network latency given between regions {src!r} and {dst!r}")

    def _at_endpoint(self, i: int, ep: Endpoint) -> None:
        now = self.kernel.now
        ep.recent.append((now, int(self.prompt[i])))
        ep.recent_tokens += int(self.prompt[i])
        ep.arrived += 1
        ep.arrived_tokens += int(self.prompt[i])
        self._trim(ep, now)
        inst = ep.router.select(i)
        if inst is None:
            ep.queue.append(i)
        else:
            self._send(i, inst, ep)

    def _trim(self, ep: Endpoint, now: float) -> None:
        lo = now - self.window_s
        while ep.recent and ep.recent[0][0] <= lo:
            ep.recent_tokens -= ep.recent.popleft()[1]

    def _unsend(self, i: int, inst: FleetInstance, ep: Endpoint) -> None:
        del self._inst_of_req[i]
        inst.outstanding -= 1
        inst.pending_tokens -= int(self.prompt[i]) + 1
        ep.outstanding -= 1
        ep.pending_tokens -= int(self.prompt[i]) + 1
        self.instance_of[i] = ""

    def _send(self, i: int, inst: FleetInstance, ep: Endpoint) -> None:
        inst.outstanding += 1
        inst.pending_tokens += int(self.prompt[i]) + 1
        ep.outstanding += 1
        ep.pending_tokens += int(self.prompt[i]) + 1
        ep.router.update(inst)
        self.instance_of[i] = inst.id
        self._inst_of_req[i] = inst
        inst.engine.submit(i, self._handles.pop(i, None))

    def _dispatch_queue(self, ep: Endpoint) -> None:
        while ep.queue:
            inst = ep.router.select(ep.queue[0])
            if inst is None:
                return
            self._send(ep.queue.popleft(), inst, ep)

    def _on_end(self, i: int, state: str, reason: str, record: dict[str, Any]) -> None:
        """Engine callback: request `i` ended inside an engine."""
        inst = self._inst_of_req.pop(i)
        ep = self.eps[(inst.model, inst.region)]
        inst.outstanding -= 1
        inst.pending_tokens -= int(self.prompt[i]) + 1
        ep.outstanding -= 1
        ep.pending_tokens -= int(self.prompt[i]) + 1
        if inst.state is State.READY:
            ep.router.update(inst)
        self._end(i, state, reason, record)
        if inst.state is State.DRAINING and inst.outstanding == 0:
            self._finish_drain(inst)

    def _end(self, i: int, state: str, reason: str, record: dict[str, Any]) -> None:
        if self.state[i]:
            raise RuntimeError(f"request {i} ended twice ({self.state[i]} then {state})")
        if state not in TERMINAL:
            raise ValueError(f"request {i}: unknown terminal state {state!r}")
        self.state[i] = state
        self.reason[i] = reason
        if record:
            self.records[i] = record
        self.ended += 1
        if self.ended == self.n:
            self.done_s = self.kernel.now
            for inst in self._by_id.values():
                inst.timer += 1  # nothing left to serve: pending start-ups no longer matter

    @property
    def done(self) -> bool:
        """Every request has arrived and ended."""
        return self.ended == self.n

    # ------------------------------------------------------------------ FleetView
    @property
    def now(self) -> float:
        return self.kernel.now

    def endpoints(self) -> list[EndpointKey]:
        return list(self.eps)

    def endpoint(self, model: str, region: str) -> EndpointStats:
        ep = self._endpoint(model, region)
        counts: dict[State, int] = {}
        kv, nkv = 0.0, 0
        ready_ids = []
        for inst in ep.instances.values():
            counts[inst.state] = counts.get(inst.state, 0) + 1
            if inst.engine is not None and inst.state in (State.READY, State.DRAINING):
                kv += inst.engine.kv_util()
                nkv += 1
            if inst.state is State.READY:
                ready_ids.append((inst.seq, inst.id))
        now = self.kernel.now
        self._trim(ep, now)
        window = max(min(self.window_s, now), 1e-9)
        return EndpointStats(
            model=model, region=region, counts=counts, outstanding=ep.outstanding,
            pending_tokens=ep.pending_tokens, queued=len(ep.queue),
            kv_util=kv / nkv if nkv else 0.0,
            arrivals_rate=len(ep.recent) / window,
            prompt_token_rate=ep.recent_tokens / window,
            window_s=self.window_s,
            instance_ids=tuple(iid for _, iid in sorted(ready_ids)),
        )

    def kv_util(self, model: str, region: str) -> float:
        """Mean KV utilisation of the endpoint's ready and draining instances (0 if none).
        O(instances of that endpoint)."""
        ep = self._endpoint(model, region)
        kv, n = 0.0, 0
        for inst in ep.instances.values():
            if inst.engine is not None and inst.state in (State.READY, State.DRAINING):
                kv += inst.engine.kv_util()
                n += 1
        return kv / n if n else 0.0

    def pooled(self, region: str) -> dict[str, int]:
        return {m: len(v) for m, v in self._pools.get(region, {}).items() if v}

    def instance_state(self, iid: str) -> State:
        return self.ledger.state(iid)

    def instance_endpoint(self, iid: str) -> EndpointKey:
        """(model, region) instance `iid` serves, or last served (released/pooled ones)."""
        m, r, _ = self.ledger.where(iid)
        return m, r

    # ------------------------------------------------------------------ control actors
    def add_actor(self, actor: Any, start_s: float | None = None) -> None:
        """Call ``actor.act(self)`` every ``actor.period_s`` seconds while work remains."""
        period = float(actor.period_s)
        if period <= 0:
            raise ValueError(f"{type(actor).__name__}: period_s must be > 0, got {period}")

        view = ReadOnlyView(self)

        def tick(_: Any) -> None:
            if self.done:
                return
            for a in actor.act(view) or ():
                self.apply(a)
            self.kernel.after(period, tick, None, PRIO_CONTROL)

        self.kernel.at(period if start_s is None else float(start_s), tick, None, PRIO_CONTROL)

    def add_sampler(self, period_s: float, sink: list) -> None:
        """Append `sample()` rows to `sink` at 0, period_s, 2 period_s, ... while work remains
        (after everything else at each instant), and once more when the run ends."""

        t0 = self.kernel.now
        count = [0]

        def tick(_: Any) -> None:
            if self.done:  # the run's closing sample is taken at the end time
                return
            sink.extend(self.sample())
            count[0] += 1
            self.kernel.at(t0 + count[0] * period_s, tick, None, PRIO_SAMPLE)  # no drift

        self.kernel.at(t0, tick, None, PRIO_SAMPLE)

    # ------------------------------------------------------------------ sampling
    def sample(self, t: float | None = None) -> list[dict[str, Any]]:
        """One time-series row per endpoint at `now` (walks the endpoint's instances);
        `t` overrides the time stamp (final sample at the end of the run)."""
        now = self.kernel.now if t is None else t
        rows = []
        for (model, region), ep in self.eps.items():
            row: dict[str, Any] = {"time_s": now, "model": model, "region": region}
            for s in (State.REQUESTED, State.PROVISIONING, State.LOADING, State.CONVERTING, State.READY,
                      State.DRAINING):
                row[f"n_{s.value}"] = 0
            kv, nkv, waiting, running = 0.0, 0, 0, 0
            for inst in ep.instances.values():
                row[f"n_{inst.state.value}"] += 1
                if inst.engine is not None:
                    kv += inst.engine.kv_util()
                    nkv += 1
                    waiting += inst.engine.queue_len()
                    running += inst.engine.running()
            row["n_pooled"] = len(self._pools.get(region, {}).get(model, ()))
            row["endpoint_queue"] = len(ep.queue)
            row["engine_waiting"] = waiting
            row["running"] = running
            row["outstanding"] = ep.outstanding
            row["kv_util"] = kv / nkv if nkv else 0.0
            row["arrivals"] = ep.arrived - ep._sampled[0]  # since the previous sample
            row["prompt_tokens_in"] = ep.arrived_tokens - ep._sampled[1]
            ep._sampled = (ep.arrived, ep.arrived_tokens)
            rows.append(row)
        return rows

    # ------------------------------------------------------------------ end of run
    def finalize(self, end_s: float) -> None:
        """Close the books at `end_s`: requests not ended become ``unfinished`` (partial)."""
        for inst in list(self._by_id.values()):
            if inst.engine is not None:
                for i, rec in inst.engine.finalize(end_s):
                    if not self.state[i]:
                        self.records[i] = rec
        for i in np.flatnonzero(self.state == ""):
            i = int(i)
            where = "in an engine" if i in self._inst_of_req else "deferred (not released)" if (
                i in self._deferred) else ("waiting at its endpoint" if i < self._next_arrival else "not yet arrived")
            self.state[i] = "unfinished"
            self.reason[i] = f"run ended {where}"
        self.ledger.close(end_s)

    def billed_hours(self) -> float:
        return sum(sec for (_, _, s), sec in self.ledger.seconds.items() if s in BILLED) / 3600.0


class ReadOnlyView:
    """What a control actor gets: the `FleetView` queries of a fleet, nothing that mutates it."""

    __slots__ = ("_f",)

    def __init__(self, fleet: Fleet) -> None:
        self._f = fleet

    @property
    def now(self) -> float:
        return self._f.kernel.now

    def endpoints(self) -> list[EndpointKey]:
        return self._f.endpoints()

    def endpoint(self, model: str, region: str) -> EndpointStats:
        return self._f.endpoint(model, region)

    def kv_util(self, model: str, region: str) -> float:
        return self._f.kv_util(model, region)

    def pooled(self, region: str) -> dict[str, int]:
        return self._f.pooled(region)

    def regions(self) -> list[str]:
        return list(self._f.regions)

    def instance_state(self, iid: str) -> State:
        return self._f.instance_state(iid)
