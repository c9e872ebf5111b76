"""The fleet's request path: arrival, global routing, network travel, endpoint queues,
engines; deferral and deadlines.

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

Per-request events cost O(log n) in the endpoint's size at most (router heaps) and nothing in
the number of endpoints or regions (dict lookups). `RequestPath` is one of the parts
`servesim.fleet.core.Fleet` is made of.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..sim.kernel import PRIO_ARRIVAL, PRIO_CONTROL
from .instances import Endpoint, FleetInstance
from .lifecycle import State

TERMINAL = ("finished", "rejected", "unfinished", "timeout", "error")


class RequestPath:
    """Requests through a `Fleet`: routing, queues, deferral, deadlines (see the module docstring)."""

    # ------------------------------------------------------------------ arrival and routing
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

    # ------------------------------------------------------------------ endpoints and engines
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


__all__ = ["TERMINAL", "RequestPath"]
