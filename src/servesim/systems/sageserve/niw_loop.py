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

`register_tier_scheduler` adds a scheduler policy that orders each instance's waiting queue by a
tier policy (FCFS / EDF / PF / DPA, `tiers.sort_key`) before the base policy plans an iteration;
`unregister_tier_scheduler` drops it when the run ends (`strategies.run_strategy`).
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import pandas as pd

from ...fleet.core import shared_strings
from ...sim.kernel import PRIO_ARRIVAL, PRIO_CONTROL
from ...sim.schedulers import _REGISTRY, register
from .config import SageServeConfig
from .niw import NIWQueueManager, NIWRequest
from .tiers import TIER_RANK


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


# ------------------------------------------------------------------------------------------
_names = itertools.count()


def tier_key(policy: str, workload: pd.DataFrame, config: SageServeConfig):
    """``key(row, now)``: the sort key of workload row ``row`` under tier ``policy`` at ``now``
    (as `tiers.sort_key`): NIW has priority 1 until older than ``niw_priority_bump_s``, then
    ranks as IW; d_r = deadline_s - now (the TTFT deadline for IW)."""
    if policy not in ("fcfs", "edf", "pf", "dpa"):
        raise ValueError(f"tier policy must be fcfs|edf|pf|dpa, got {policy!r}")
    tier = shared_strings(workload["tier"])  # (astype(str) would make a str object per row)
    rank = np.array([TIER_RANK[t] for t in tier], dtype=np.int64)
    arrival = workload["arrival_s"].to_numpy(np.float64)
    deadline = workload["deadline_s"].to_numpy(np.float64)
    bump, tau_n, tau_p = config.niw_priority_bump_s, config.dpa_tau_n_s, config.dpa_tau_p_s

    def key(idx: int, now: float) -> tuple:
        niw = rank[idx] == 2
        prio = 1 if niw and now - arrival[idx] <= bump else 0
        if policy == "fcfs":
            return (prio, arrival[idx], idx)
        if policy == "edf":
            return (deadline[idx], arrival[idx], idx)
        if policy == "pf":
            return (rank[idx], arrival[idx], idx)
        if prio:  # dpa: unbumped NIW after every IW category
            return (6, deadline[idx], idx)
        d = deadline[idx] - now
        if d < -tau_n:
            cat = 0
        elif d < 0:
            cat = 5
        elif rank[idx] == 1:
            cat = 2 if d <= tau_p else 4
        else:
            cat = 1 if d <= tau_p else 3
        return (cat, deadline[idx], idx)

    return key


def register_tier_scheduler(policy: str, workload: pd.DataFrame, config: SageServeConfig,
                            base: str = "vllm-v1") -> str:
    """Register a scheduler that sorts each instance's waiting queue by `tier_key` (then plans
    like ``base``); returns its registry name."""
    key = tier_key(policy, workload, config)
    base_cls = _REGISTRY[base]

    def reorder(inst) -> None:
        w = inst.waiting
        if len(w) > 1:
            now = inst.now
            items = sorted(w, key=lambda r: key(r.idx, now))
            w.clear()
            w.extend(items)

    class TierOrdered(base_cls):
        def schedule(self, inst) -> None:
            reorder(inst)
            super().schedule(inst)

        def head_admissible(self, inst) -> bool:
            reorder(inst)
            return super().head_admissible(inst)

    name = f"sageserve-{policy}-{next(_names)}"
    register(name)(TierOrdered)
    return name


def unregister_tier_scheduler(name: str) -> None:
    """Drop a scheduler `register_tier_scheduler` added (it holds its run's workload): a long
    process running many strategies keeps no class per run."""
    if not name.startswith("sageserve-"):
        raise ValueError(f"{name!r} is not a scheduler register_tier_scheduler added")
    _REGISTRY.unregister(name)
