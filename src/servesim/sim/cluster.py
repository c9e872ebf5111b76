"""A minimal driver: push a workload through N instances with a router; get DataFrames.

The fleet layer (``servesim.fleet``) builds endpoints, regions and control loops on the same
kernel and instances; this module is what benchmarks, tests and notebooks use directly::

    from servesim.perf import LinearStepTime
    from servesim.sim import Cluster, InstanceConfig

    cl = Cluster.uniform(4, InstanceConfig(num_blocks=2000), LinearStepTime(),
                         router="least-outstanding")
    res = cl.run(workload)          # a servesim.workload.schema DataFrame
    res.requests                    # REQUEST_COLUMNS table
    cl2 = Cluster.uniform(..., sample_interval=1.0); cl2.run(w).timeseries

P/D disaggregation: give ``roles`` ("prefill"/"decode") per instance (or configs with ``role``);
requests are routed to the prefill pool, and after their first token handed to the decode pool
by ``decode_router`` after ``kv_transfer_s(req)`` seconds (default: prompt KV bytes over
``kv_transfer_bw``).

Pick-then-pull hand-off: with ``kv_link_s(req, prefill_index, decode_index)`` the decode instance
is chosen when the prefill ends (counted in its load at once) and the KV takes that many seconds to
reach it, so the transfer time can depend on where the two instances sit (NVLink vs network).

Draining: ``cl.drain(j, at=t)`` (before or during ``run``) stops routing to instance ``j`` at
``t``; with ``requeue`` (default) the requests it has not admitted yet, and those it preempts
while it drains, are routed again to the rest of its pool, else it serves them too; once it holds nothing it stops (``stats["drained"]`` gives
the time per instance name, ``cl.is_drained(j)``; ``on_stopped(j, t)`` is called then).

Scaling up: ``cl.add_instance(cfg, step_model, at=t)`` (before or during ``run``) adds an instance
that joins its role's pool(s) at ``t`` (a worker brought up elsewhere, e.g. after a drain); it
starts no iteration before it joins (work handed to it directly, e.g. a migration's KV, waits in
its queue). ``add_instance(..., defer=True)`` adds one whose join time is not known yet (it waits
for GPUs that other instances still hold): ``cl.join(j, at=t)`` sets it later (``cl.join(j)``:
now, at once). ``cl.hold(j, until)`` keeps a routable instance from serving until then
(``math.inf``: until the next ``hold``): requests routed to it wait in its queue.

Re-routing order: with ``requeue_order="arrival"`` the requests taken back from a draining
instance, and the held ones routed again, are queued at their new instance by arrival, ahead of
the requests that came after them (first come, first served across the move); ``"back"``
(default) queues them behind everything there.

Holding: with ``hold_unroutable=True`` a request that no routable instance can take (the router
returns None: every instance of the pool is draining or not up yet, or a class router has no
instance for its class) is held by the cluster, in arrival order, and routed again once the
instances joining at an instant have all joined, or when the owner calls ``cl.reroute_held()`` (after changing a router's weights);
draining the last routable instance is then allowed. Without it such a request is an error.

Request classes: ``run(workload, classes=...)`` carries a per-row int on each request
(``Req.cls``) for routers that route by class (``WeightedRouter``: shares per class).

Routers are those of :mod:`servesim.sim.routers` (the fleet's too): the cluster keeps one
:class:`~servesim.sim.routers.InstanceLoad` per instance (``loads``; ``seq`` = instance index,
``outstanding`` and ``pending_tokens`` counting requests routed to it and not yet finished or
handed off) and calls the routers' ``update`` whenever those counters change.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ..perf.base import StepTimeModel
from ..workload import schema
from .instance import Instance, InstanceConfig, InstanceListener
from .kernel import PRIO_ARRIVAL, PRIO_CONTROL, Kernel
from .queue_orders import tier_ranks
from .request_log import RequestLog, request_frame
from .request import NEW, Req
from .routers import CallableRouter, InstanceLoad, Router, make_router
from .timeseries import Sampler
from .virtual_engines import make_instance


@dataclass
class SimResult:
    """What a run returns: the per-request table, optional time series, and run statistics."""

    requests: pd.DataFrame
    timeseries: pd.DataFrame | None = None
    stats: dict = field(default_factory=dict)


class Cluster(InstanceListener):
    """Instances on one kernel + routers + a workload driver."""

    def __init__(self, configs: list[InstanceConfig], step_models: list[StepTimeModel], *,
                 router="round-robin", decode_router="least-outstanding", mode: str = "fast",
                 names: list[str] | None = None, kv_transfer_s: Callable[[Req], float] | None = None,
                 kv_transfer_bw: float = 25e9, sample_interval: float | None = None,
                 tbt_p99: bool = True, check_invariants: bool = False,
                 kv_link_s: Callable[[Req, int, int], float] | None = None,
                 hold_unroutable: bool = False, requeue_order: str = "back") -> None:
        if len(configs) != len(step_models):
            raise ValueError(f"{len(configs)} configs but {len(step_models)} step models")
        if not configs:
            raise ValueError("a cluster needs at least one instance")
        self.kernel = Kernel()
        self.mode = mode
        self.names = list(names) if names is not None else [f"i{j}" for j in range(len(configs))]
        if len(self.names) != len(configs):
            raise ValueError("names must have one entry per instance")
        self.instances = [
            make_instance(self.kernel, c, m, name=nm, index=j, mode=mode, listener=self)
            for j, (c, m, nm) in enumerate(zip(configs, step_models, self.names))
        ]
        for inst in self.instances:
            inst.check_invariants = check_invariants
        prefill_pool = [j for j, c in enumerate(configs) if c.role in ("both", "prefill")]
        decode_pool = [j for j, c in enumerate(configs) if c.role in ("both", "decode")]
        self.disaggregated = any(c.role != "both" for c in configs)
        if self.disaggregated and not any(c.role == "prefill" for c in configs):
            raise ValueError("role='decode' instances need role='prefill' instances to feed them")
        self.loads = [InstanceLoad(j) for j in range(len(configs))]
        # set before the routers bind: a router may chain itself in (servesim.systems.preserve)
        self.on_request_done: Callable[[Req], None] | None = None
        self.router: Router = make_router(router)
        self.router.bind(self, prefill_pool)
        self.decode_router: Router | None = None
        if self.disaggregated:
            self.decode_router = make_router(decode_router)
            self.decode_router.bind(self, decode_pool)
        self.kv_transfer_bw = kv_transfer_bw
        self._kv_transfer_s = kv_transfer_s
        self.sample_interval = sample_interval
        self.tbt_p99 = tbt_p99
        self.log: RequestLog | None = None
        self._in_transfer: dict[int, Req] = {}
        self._pools = (set(prefill_pool), set(decode_pool))
        self._draining: set[int] = set()
        self._requeue_on: set[int] = set()   # draining with requeue: preempted requests go back too
        self._requeue_due: set[int] = set()  # a requeue is scheduled for this instant
        self._drained: dict[int, float] = {}  # instance index -> time it stopped
        self._on_stopped: dict[int, Callable[[int, float], None]] = {}
        self.requeued = 0  # requests taken back from draining instances and routed again
        self._kv_link_s = kv_link_s
        if kv_link_s is not None and not self.disaggregated:
            raise ValueError("kv_link_s needs a disaggregated cluster (role='prefill'/'decode' instances)")
        self._mode_check = check_invariants
        #: KV tokens on their way to each instance (pick-then-pull hand-offs not yet delivered)
        self.inbound_tokens = [0] * len(configs)
        self.hold_unroutable = bool(hold_unroutable)
        if requeue_order not in ("back", "arrival"):
            raise ValueError(f"requeue_order={requeue_order!r}: 'back' or 'arrival'")
        self.requeue_order = requeue_order
        self._held: list[tuple[Router, Req]] = []  # requests no routable instance could take yet
        self._reroute_due = False
        self._joined: set[int] = set(range(len(configs)))

    @classmethod
    def uniform(cls, n: int, cfg: InstanceConfig, step_model: StepTimeModel, **kw) -> Cluster:
        """``n`` identical instances."""
        return cls([cfg] * n, [step_model] * n, **kw)

    def add_instance(self, cfg: InstanceConfig, step_model: StepTimeModel, *, name: str | None = None,
                     at: float | None = None, defer: bool = False) -> int:
        """Add an instance (its index is returned) that joins the pool(s) of its role at ``at``
        (default now); until then no router sees it and it starts no iteration (requests handed
        to it directly wait in its queue). ``defer``: no join time yet; call :meth:`join` later.
        Before or during ``run``."""
        if defer and at is not None:
            raise ValueError("add_instance: give either at= or defer=True, not both")
        if (cfg.role != "both") != self.disaggregated:
            raise ValueError(f"add_instance: role={cfg.role!r} in a {'' if self.disaggregated else 'non-'}disaggregated cluster")
        j = len(self.instances)
        inst = make_instance(self.kernel, cfg, step_model, name=name or f"i{j}", index=j, mode=self.mode, listener=self)
        inst.check_invariants = self._mode_check
        self.instances.append(inst)
        self.names.append(inst.name)
        self.loads.append(InstanceLoad(j))
        self.inbound_tokens.append(0)
        if at is not None and at < self.kernel.now:
            raise ValueError(f"add_instance(at={at}): the clock is already at {self.kernel.now}")
        if defer:
            inst.hold_until(math.inf)
            return j
        if at is not None and at > self.kernel.now:
            inst.hold_until(float(at))
        self.kernel.at(self.kernel.now if at is None else float(at), lambda _: self._join(j), None, PRIO_CONTROL)
        return j

    def join(self, j: int, at: float | None = None) -> None:
        """Let instance ``j`` (added with ``defer=True``) join its pool(s) and serve from ``at``
        (default: now, at once)."""
        if not 0 <= j < len(self.instances):
            raise IndexError(f"join({j}): no instance {j}; the cluster has {len(self.instances)}")
        if at is None:
            self.instances[j].release_hold()
            self._join(j)
            return
        if at < self.kernel.now:
            raise ValueError(f"join({j}, at={at}): the clock is already at {self.kernel.now}")
        self.instances[j].hold_until(float(at))
        self.kernel.at(float(at), lambda _: self._join(j), None, PRIO_CONTROL)

    def hold(self, j: int, until: float) -> None:
        """Instance ``j`` starts no iteration before ``until`` (``math.inf``: until the next
        ``hold``); routable or not, requests handed to it wait in its queue (a replica that is
        routed to but not up yet)."""
        if not 0 <= j < len(self.instances):
            raise IndexError(f"hold({j}): no instance {j}; the cluster has {len(self.instances)}")
        self.instances[j].hold_until(float(until))

    def is_joined(self, j: int) -> bool:
        """Instance ``j`` has joined its pool(s) (routers may pick it), drained or not since."""
        return j in self._joined

    def _join(self, j: int) -> None:
        if j in self._draining or j in self._drained or j in self._joined:
            return  # drained before it joined: it never serves (or joined already)
        self._joined.add(j)
        role = self.instances[j].cfg.role
        for pool, rt, roles in ((self._pools[0], self.router, ("both", "prefill")),
                                (self._pools[1], self.decode_router, ("both", "decode"))):
            if rt is not None and role in roles:
                pool.add(j)
                rt.add(self.loads[j])
        if self._held and not self._reroute_due:  # after every join of this instant (ties: insertion order)
            self._reroute_due = True
            self.kernel.at(self.kernel.now, self._reroute_now, None, PRIO_CONTROL)

    def _reroute_now(self, _arg) -> None:
        self._reroute_due = False
        self.reroute_held()

    # ---------------------------------------------------------------- holding
    @property
    def held(self) -> int:
        """Requests held now for want of a routable instance (``hold_unroutable``)."""
        return len(self._held)

    def _hold(self, router: Router, r: Req) -> None:
        if not self.hold_unroutable:
            raise RuntimeError(f"request {r.rid}: no routable instance (router {type(router).__name__}); "
                               "Cluster(hold_unroutable=True) holds such requests until one joins")
        r.state = NEW
        r.inst = -1
        self._held.append((router, r))

    def reroute_held(self) -> None:
        """Route the held requests again, in the order they were held (those still without a
        routable instance stay held). Call it from a kernel event, e.g. after changing a
        router's weights."""
        held, self._held = self._held, []
        self._route_all(held)

    def _route_all(self, items: list[tuple[Router, Req]]) -> None:
        """Route ``(router, request)`` pairs in turn; with ``requeue_order="arrival"`` each is
        queued at its instance by arrival."""
        if self.requeue_order == "back":
            for rt, r in items:
                self._route(rt, r)
            return
        to: dict[int, list[Req]] = {}
        for rt, r in items:
            rec = rt.select(r)
            if rec is None:
                self._hold(rt, r)
                continue
            self._count(rec, r)
            to.setdefault(rec.seq, []).append(r)
        for j, rs in to.items():
            self.instances[j].submit_by_arrival(rs)

    # ---------------------------------------------------------------- listener
    def on_done(self, inst: Instance, r: Req) -> None:
        self.log.record(r)
        self._release(inst.index, r)
        if self.on_request_done is not None:
            self.on_request_done(r)

    def _release(self, j: int, r: Req) -> None:
        """``r`` left instance ``j`` (terminal or handed off): update its load record."""
        rec = self.loads[j]
        rec.outstanding -= 1
        rec.pending_tokens -= r.prompt + 1
        self.router.update(rec)
        if self.decode_router is not None:
            self.decode_router.update(rec)
        if self._draining and j in self._draining and rec.outstanding == 0:
            self._stop_drained(j)

    # ---------------------------------------------------------------- draining
    def drain(self, j: int, *, requeue: bool = True, at: float | None = None,
              on_stopped: Callable[[int, float], None] | None = None) -> None:
        """Drain instance ``j``: no new requests; with ``requeue`` its not-yet-admitted requests
        (waiting, or parked for another model) go back to the routers of its pool(s) now, else it
        serves them; when it holds no request it stops (later submits would be rejected).

        ``at``: do it at that simulated time (schedule before ``run`` or from a callback);
        default now. Draining the last routable instance of a pool is an error (its requests
        would have nowhere to go) unless the cluster holds unroutable requests
        (``hold_unroutable``), and so is draining under a callable router (it picks indices
        itself and cannot be told an instance left). ``on_stopped(j, t)`` runs when it stops.
        """
        if not 0 <= j < len(self.instances):
            raise IndexError(f"drain({j}): no instance {j}; the cluster has {len(self.instances)}")
        if at is not None:
            if at < self.kernel.now:
                raise ValueError(f"drain({j}, at={at}): the clock is already at {self.kernel.now}")
            self.kernel.at(float(at), lambda _: self.drain(j, requeue=requeue, on_stopped=on_stopped), None, PRIO_CONTROL)
            return
        if j in self._draining or j in self._drained:
            return
        if on_stopped is not None:
            self._on_stopped[j] = on_stopped
        routers = [(rt, pool) for rt, pool in ((self.router, self._pools[0]), (self.decode_router, self._pools[1]))
                   if rt is not None and j in pool]
        for rt, _ in routers:
            if isinstance(rt, CallableRouter):
                raise TypeError(f"drain({j}): a callable router cannot be told that an instance left")
            if len(rt) <= 1 and not self.hold_unroutable:
                raise ValueError(f"drain({j}): instance {self.names[j]} is the last routable one of its pool "
                                 "(Cluster(hold_unroutable=True) holds its requests until another joins)")
        rec = self.loads[j]
        for rt, _ in routers:
            rt.remove(rec)
        self._draining.add(j)
        if requeue:
            self._requeue_on.add(j)
            self._requeue_waiting(j)
        elif rec.outstanding == 0:
            self._stop_drained(j)

    def _requeue_waiting(self, j: int) -> None:
        """Route instance ``j``'s not-yet-admitted requests again (it is draining)."""
        self._requeue_due.discard(j)
        if j not in self._draining:
            return
        rec = self.loads[j]
        items = []
        for r in self.instances[j].take_waiting():
            rec.outstanding -= 1
            rec.pending_tokens -= r.prompt + 1
            self.requeued += 1
            items.append((self.decode_router if (r.kv_ready and self.decode_router is not None) else self.router, r))
        self._route_all(items)
        if rec.outstanding == 0:
            self._stop_drained(j)

    def on_preempt(self, inst: Instance, r: Req) -> None:
        j = inst.index
        if j in self._requeue_on and j not in self._requeue_due:  # a draining instance's preempted request
            self._requeue_due.add(j)
            self.kernel.at(self.kernel.now, lambda _: self._requeue_waiting(j), None, PRIO_CONTROL)

    def _stop_drained(self, j: int) -> None:
        self._draining.discard(j)
        self._drained[j] = self.kernel.now
        # stop after the event in progress (this may run inside the instance's own callback)
        self.kernel.at(self.kernel.now, lambda _: self.instances[j].stop("instance drained"), None, PRIO_CONTROL)
        cb = self._on_stopped.pop(j, None)
        if cb is not None:
            self.kernel.at(self.kernel.now, lambda _: cb(j, self.kernel.now), None, PRIO_CONTROL)

    def is_drained(self, j: int) -> bool:
        """Instance ``j`` was drained and has stopped."""
        return j in self._drained

    def _route(self, router: Router, r: Req) -> None:
        """Send ``r`` to the instance ``router`` picks, counting it in that instance's load (or
        hold it: ``hold_unroutable``)."""
        rec = router.select(r)
        if rec is None:
            return self._hold(router, r)
        self._count(rec, r)
        self.instances[rec.seq].submit(r)

    def _pick(self, router: Router, r: Req) -> InstanceLoad:
        rec = router.select(r)
        if rec is None:
            raise RuntimeError(f"request {r.rid}: no routable instance (router {type(router).__name__})")
        self._count(rec, r)
        return rec

    def _count(self, rec: InstanceLoad, r: Req) -> None:
        rec.outstanding += 1
        rec.pending_tokens += r.prompt + 1
        self.router.update(rec)
        if self.decode_router is not None:
            self.decode_router.update(rec)

    def on_handoff(self, inst: Instance, r: Req) -> None:
        self._release(inst.index, r)
        r.prefill_inst = inst.index
        if self._kv_link_s is not None:  # pick the decode instance now; it pulls the KV
            rec = self._pick(self.decode_router, r)
            self.inbound_tokens[rec.seq] += r.computed
            self._in_transfer[r.idx] = r
            delay = float(self._kv_link_s(r, inst.index, rec.seq))
            self.kernel.at(self.kernel.now + delay, self._deliver_to, (r, rec.seq), PRIO_ARRIVAL)
            return
        delay = self.kv_transfer_time(inst, r)
        self._in_transfer[r.idx] = r
        self.kernel.at(self.kernel.now + delay, self._deliver, r, PRIO_ARRIVAL)

    def kv_transfer_time(self, inst: Instance, r: Req) -> float:
        """Seconds to move ``r``'s KV from prefill to decode instance."""
        if self._kv_transfer_s is not None:
            return float(self._kv_transfer_s(r))
        return r.computed * inst.cfg.kv_bytes_per_token / self.kv_transfer_bw

    def _deliver(self, r: Req) -> None:
        del self._in_transfer[r.idx]
        self._route(self.decode_router, r)

    def _deliver_to(self, arg: tuple[Req, int]) -> None:
        r, j = arg
        del self._in_transfer[r.idx]
        self.inbound_tokens[j] -= r.computed
        self.instances[j].submit(r)

    # ---------------------------------------------------------------- driving
    def run(self, workload: pd.DataFrame, until: float | None = None, *,
            validate: bool = True, allow_unloaded_models: bool = False,
            predicted=None, classes=None) -> SimResult:
        """Simulate ``workload`` (request schema) to completion, or until ``until`` seconds.

        ``predicted``: per-row predicted output tokens (array-like, aligned with ``workload``),
        carried on the requests as ``Req.pred`` for routers that must use predictions.
        ``classes``: per-row int classes (>= 0, aligned with ``workload``), carried as ``Req.cls``
        for routers that route by class. Where an instance has a ``queue_order``, each request
        also carries its ``tier`` (rank) and ``deadline_s`` (``Req.tier`` / ``Req.deadline``).

        Requests not terminal when the run stops are reported ``unfinished`` and ``partial``.
        A request for a model no instance has loaded waits (parked) until some instance
        ``switch_model``s to it; unless ``allow_unloaded_models`` (you schedule such switches),
        a workload naming such a model is an error rather than a run that serves nothing.
        """
        if self.log is not None:
            raise RuntimeError("Cluster.run can be called once; build a new Cluster for another run")
        if validate:
            workload = schema.validate(workload, "<Cluster.run workload>")
        if not allow_unloaded_models and len(workload):
            loaded = {inst.model for inst in self.instances}
            unloaded = sorted(set(workload["model"].astype(str).unique()) - loaded)
            if unloaded:
                raise ValueError(f"workload model(s) {unloaded} are loaded on no instance (instances serve "
                                 f"{sorted(loaded)}): set InstanceConfig(model=...), or pass "
                                 "allow_unloaded_models=True if your run switches models")
        n = len(workload)
        self.log = RequestLog(n, tbt_p99=self.tbt_p99)
        arrival = workload["arrival_s"].to_numpy(dtype=np.float64)
        prompt = workload["prompt_tokens"].to_numpy(dtype=np.int64).tolist()
        output = workload["output_tokens"].to_numpy(dtype=np.int64).tolist()
        rid = workload["request_id"].to_numpy(dtype=np.int64).tolist()
        mcol = workload["model"]
        models = mcol.astype(str).tolist() if mcol.nunique() > 1 else None
        model0 = str(mcol.iloc[0]) if n else "default"
        arr_list = arrival.tolist()
        if predicted is None:
            pred = [-1] * n
        else:
            pred = np.asarray(predicted, dtype=np.int64)
            if pred.shape != (n,):
                raise ValueError(f"predicted: {pred.shape[0] if pred.ndim else 0} values for {n} workload rows")
            if n and pred.min() < 0:
                raise ValueError(f"predicted: row {int(np.argmin(pred))} is negative")
            pred = pred.tolist()
        if classes is None:
            cls = [-1] * n
        else:
            cls = np.asarray(classes)
            if cls.shape != (n,) or (n and not np.issubdtype(cls.dtype, np.integer)):
                raise ValueError(f"classes: need {n} ints aligned with the workload rows, got shape {cls.shape} "
                                 f"of {cls.dtype}")
            if n and cls.min() < 0:
                raise ValueError(f"classes: row {int(np.argmin(cls))} is negative")
            cls = cls.astype(np.int64).tolist()
        router = self.router
        hold = self._hold
        insts = self.instances
        # a queue order reads each request's tier and deadline: carried only where one is set
        tiers = deadlines = None
        if any(inst.cfg.queue_order is not None for inst in insts):
            tiers = tier_ranks(workload["tier"]).tolist()
            deadlines = workload["deadline_s"].to_numpy(np.float64).tolist()

        def new_req(i: int) -> Req:
            r = Req(i, arr_list[i], prompt[i], output[i], models[i] if models else model0, rid[i])
            r.pred = pred[i]
            r.cls = cls[i]
            if tiers is not None:
                r.tier = tiers[i]
                r.deadline = deadlines[i]
            return r

        if self.decode_router is None:  # the hot path, the routing inlined
            def arrive(i: int) -> None:
                r = new_req(i)
                rec = router.select(r)
                if rec is None:
                    return hold(router, r)
                rec.outstanding += 1
                rec.pending_tokens += r.prompt + 1
                router.update(rec)
                insts[rec.seq].submit(r)
        else:
            def arrive(i: int) -> None:
                self._route(router, new_req(i))

        self.kernel.add_stream(arrival, arrive)
        sampler = None
        if self.sample_interval is not None:
            sampler = Sampler(self.kernel, insts, self.sample_interval,
                              stop=until if until is not None else math.inf)
        t0 = time.perf_counter()
        self.kernel.run(until if until is not None else math.inf)
        wall = time.perf_counter() - t0
        self._close_partial()
        df = request_frame(self.log, workload, self.names)
        stats = {
            "wall_s": wall,
            "events": self.kernel.events_processed,
            "iterations": sum(i.iterations for i in insts),
            "instance_events": sum(i.events for i in insts),
            "sim_end_s": self.kernel.now,
            "mode": self.mode,
            "requeued": self.requeued,
            "held_at_end": len(self._held),
            "drained": {self.names[j]: t for j, t in sorted(self._drained.items())},
        }
        ts = sampler.frame(self.names) if sampler is not None else None
        return SimResult(df, ts, stats)

    def _close_partial(self) -> None:
        """Record requests still in flight as unfinished/partial."""
        log = self.log
        for inst in self.instances:
            inst.sync()
            live = list(inst.waiting) + list(inst.running)
            for q in inst.parked.values():
                live.extend(q)
            for r in live:
                if r.dec:
                    inst.engine_of(r).ds.materialize(r)
                log.record(r, partial=True)
        for r in self._in_transfer.values():
            log.record(r, partial=True)
        for _, r in self._held:  # arrived, never routed: no instance took them before the end
            log.record(r, partial=True)
        # requests never routed (arrivals after `until`) stay state 0 (unfinished), not partial
