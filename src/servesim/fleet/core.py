"""The fleet: regions, endpoints (a model's instances in a region), pools and lifecycle.

`Fleet` is made of three parts, one subject each:

- `servesim.fleet.instances.InstancePools`: instance lifecycle, endpoints' capacity, regions'
  pools, control actions (``Scale``, ``Drain``, ``Move``) and conversions;
- `servesim.fleet.requests.RequestPath`: arrival, global routing, network travel, endpoint
  queues and engines, deferral (``set_arrival_hook`` / ``release`` / ``end_deferred``) and
  deadlines;
- `servesim.fleet.view.FleetQueries`: the read-only `FleetView` queries and time-series samples
  (`ReadOnlyView` is what control actors get).

This module holds the state they share (`Fleet.__init__`) and the periodic drivers (actors and
the sampler). Per-request events cost O(log n) in the endpoint's size at most (router heaps) and
nothing in the number of endpoints or regions (dict lookups); only control ticks and
time-series samples walk instances, and they run at fixed periods.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pandas as pd

from ..sim.kernel import PRIO_CONTROL, PRIO_SAMPLE
from .control import EndpointKey
from .instances import Endpoint, EndpointConfig, FleetInstance, InstancePools, LeadTimes
from .lifecycle import InstanceLedger, State
from .protocols import EngineFactory, Kernel
from .requests import TERMINAL, RequestPath
from .view import FleetQueries, ReadOnlyView


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


class Fleet(InstancePools, RequestPath, FleetQueries):
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
        # configuration; instances, endpoints and pools (InstancePools)
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

        # requests: per-row arrays over the workload, deferral, deadlines (RequestPath)
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

        # the fleet at time 0: endpoints with their routers, ready instances, pooled ones
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

    # ------------------------------------------------------------------ sampling
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


__all__ = ["TERMINAL", "Endpoint", "EndpointConfig", "Fleet", "FleetInstance", "LeadTimes", "ReadOnlyView",
           "shared_strings"]
