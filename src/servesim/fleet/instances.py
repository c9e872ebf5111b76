"""The fleet's instances: lifecycle, endpoints' capacity, regions' pools, control actions.

An instance moves through `servesim.fleet.lifecycle` states (requested -> provisioning ->
loading -> ready -> draining -> released or pooled), each change booked in the instance-hours
ledger. Control actions (`Scale`, `Drain`, `Move`) act here: a scale-up re-activates a draining
instance, else reclaims one from the region's pool, else provisions a new one if the region has
room; a scale-down cancels starting instances first, then drains the least-loaded ready ones.

Conversions: ``Move`` of a ready instance to another model drains it (requeues what its engine
has not admitted, finishes its running requests), then switches the engine's model in place
(``Engine.switch_model`` where the engine has it, else a fresh engine) in state ``converting``
for ``LeadTimes.convert_s``; a pooled instance holding another model's weights converts the
same way when it is reclaimed. Converting hours are their own state in the instance-hours table.

`InstancePools` is one of the parts `servesim.fleet.core.Fleet` is made of; its methods use the
state `Fleet.__init__` sets up and the request path's `_send` / `_unsend` / `_dispatch_queue`.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..sim.kernel import PRIO_CONTROL
from .control import Action, Drain, Move, Scale
from .lifecycle import BILLED, State
from .protocols import Engine


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


class InstancePools:
    """Instance lifecycle, pools and control actions of a `Fleet` (see the module docstring)."""

    # ------------------------------------------------------------------ creation
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

    # ------------------------------------------------------------------ accounting
    def billed_hours(self) -> float:
        return sum(sec for (_, _, s), sec in self.ledger.seconds.items() if s in BILLED) / 3600.0


__all__ = ["Endpoint", "EndpointConfig", "FleetInstance", "InstancePools", "LeadTimes"]
