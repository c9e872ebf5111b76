"""The NIW queue manager and the tier policies in the simulation loop (journal §6.2, §6.5).

The fleet routes every request on arrival; SageServe instead holds NIW requests in its queue
manager and releases them to their (model, region) endpoint when that endpoint's effective
memory utilisation is low. This module wraps the fleet's engine side (the ``engines`` hook of
`servesim.fleet.run_scenario`, which sees the fleet before its arrivals start) so that:

- an NIW arrival goes into `NIWQueueManager` instead of the global router (the fleet's public
  arrival hook defers it: `Fleet.set_arrival_hook`);
- every request completion at an endpoint is a signal (the authors' code), and so is a periodic
  tick every ``niw_signal_period_s`` (so an idle endpoint still drains the queue); each signal
  releases 0, 1 or 2 requests by the configured rule (``niw_release_rule`` paper | code);
- with ``niw_deadline_enforce`` (paper: 24 h deadline) queued NIW requests past their deadline
  end as ``timeout`` (and the scenario's ``enforce_deadlines`` also times out released NIW
  requests still queued, not started, in an instance); without it (authors' code) nothing
  expires and leftovers end ``unfinished`` when the run stops;
- released requests enter the signalling endpoint now (`Fleet.release`), or go back through the
  global router (``niw_release_route="global"``, the authors' code); their latency clock still
  starts at arrival. A request's deadline is its ``deadline_s`` (set from ``niw_deadline_s``).

The tier policies (FCFS / EDF / PF / DPA) order each instance's waiting queue: a queue order of
the scenario's engine (`tiers.queue_order`, `servesim.sim.queue_orders`), not part of this loop.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from ...sim.kernel import PRIO_ARRIVAL, PRIO_CONTROL
from .config import SageServeConfig
from .niw import NIWQueueManager, NIWRequest


class NIWLoop:
    """Holds NIW arrivals of one run in a `NIWQueueManager`; releases them on signals."""

    def __init__(self, workload: pd.DataFrame, config: SageServeConfig) -> None:
        self.cfg = config
        self.manager = NIWQueueManager(config, expire=config.niw_deadline_enforce)
        # (comparing the column itself: astype(str) of a categorical makes a str object per row)
        self.is_niw = (workload["tier"] == "NIW").to_numpy(bool)
        self.release_s = np.full(len(workload), np.nan)
        self.signals = 0
        self.fleet = None

    # -- engines hook (`run_scenario(..., engines=loop.engines)`) --------------------------
    def engines(self, sc: Any, workload: pd.DataFrame, seed: int) -> _Engines:
        from ...fleet.engine_sim import SimEngines

        return _Engines(SimEngines(sc, workload, seed), self)

    def attach(self, fleet: Any) -> None:
        self.fleet = fleet
        is_niw = self.is_niw

        def hold(i: int) -> bool:
            """Arrival hook: defer NIW requests into the queue manager."""
            if not is_niw[i]:
                return False
            self.manager.push(NIWRequest(i, fleet.req_model[i], fleet.req_region[i], float(fleet.arrival[i]),
                                         int(fleet.prompt[i]), int(fleet.output[i]),
                                         float(fleet.deadline_of(i))))
            self._schedule_tick()
            return True

        fleet.set_arrival_hook(hold)
        self._tick_on = False

    # -- signals -----------------------------------------------------------------------------
    def _schedule_tick(self) -> None:
        if not self._tick_on:
            self._tick_on = True
            self.fleet.kernel.after(self.cfg.niw_signal_period_s, self._tick, None, PRIO_CONTROL)

    def _tick(self, _: Any) -> None:
        f = self.fleet
        self._expire()
        for key in list(self.manager._q):
            if self.manager.queued(*key):
                self.signal(*key)
        if len(self.manager) and not f.done:
            f.kernel.after(self.cfg.niw_signal_period_s, self._tick, None, PRIO_CONTROL)
        else:
            self._tick_on = False

    def _expire(self) -> None:
        f = self.fleet
        for r in self.manager.expire(f.kernel.now):
            if f.is_deferred(r.request_id):  # the fleet's own deadline enforcement may be first
                f.end_deferred(r.request_id, "timeout", "NIW deadline passed in the queue manager")

    def on_completion(self, model: str, region: str) -> None:
        if self.manager.queued(model, region):  # release after the completion has been booked
            self.fleet.kernel.after(0.0, lambda _: self.signal(model, region), None, PRIO_ARRIVAL)

    def signal(self, model: str, region: str) -> None:
        f = self.fleet
        if not f.has_endpoint(model, region):
            return
        self.signals += 1
        m = self.manager
        n_expired = len(m.expired)
        released = m.on_signal(model, region, f.kv_util(model, region), f.kernel.now)
        for r in m.expired[n_expired:]:  # on_signal expires first: end those in the fleet too
            if f.is_deferred(r.request_id):
                f.end_deferred(r.request_id, "timeout", "NIW deadline passed in the queue manager")
        for r in released:
            if not f.is_deferred(r.request_id):
                continue  # timed out by the fleet's deadline enforcement meanwhile
            self.release_s[r.request_id] = f.kernel.now
            if self.cfg.niw_release_route == "global":
                f.release(r.request_id)
            else:
                f.release(r.request_id, model, region)


class _Engines:
    """`SimEngines` whose end callbacks also signal the NIW loop."""

    def __init__(self, inner: Any, loop: NIWLoop) -> None:
        self.inner, self.loop, self.kernel = inner, loop, inner.kernel

    def factory(self, model: str, region: str, name: str, on_end):
        loop = self.loop

        def end(i: int, state: str, reason: str, record: dict) -> None:
            # the endpoint it ended at: the instance's model may change later (a conversion)
            m, r = loop.fleet.instance_endpoint(name)
            on_end(i, state, reason, record)
            loop.on_completion(m, r)

        return self.inner.factory(model, region, name, end)

    def attach(self, fleet: Any) -> None:
        self.inner.attach(fleet)
        self.loop.attach(fleet)

    def timing(self):
        return self.inner.timing()
