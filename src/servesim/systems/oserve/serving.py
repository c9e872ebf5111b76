"""Serving a deployment that changes span by span as ONE cluster of the shared simulator (OServe's
online loop, §3 / §5.2, and the vLLM baselines it is compared with).

Every system of an experiment runs as one :class:`~servesim.sim.Cluster`: its instances are the
replicas of the spans' layouts (``switching.layout``: a shape on GPU ids), one instance per
replica lifetime (the spans over which the same shape stays on the same GPUs).

Routing happens at arrival, by the cluster's router:
- ``weighted`` (OServe and its ablations): the span's plan gives each replica a share of each
  request type (OServe: the flow's x_kj; the ablation's middle rung: capacity shares, equal for
  every type); ``sim.WeightedRouter`` spreads each type over its replicas by smooth weighted
  round-robin (``weighted_mode="random"``: a seeded cumulative draw per request, the reading the
  loop used before it served one cluster);
- ``round-robin`` (vLLM static and reload): true round-robin over the replicas that are up.
At every span boundary the span's plan sets the weights before any request arriving at that
instant is routed.

A switch (the layout changes at the span boundary t0):
1. the new plan's weights apply at t0, over the new layout: a new replica takes its share of the
   requests from t0 and they wait in its queue until it is up (``route_new="at-switch"``, the
   paper's "the engine dispatches requests according to the assignment"; ``"when-up"``: it joins
   the router only when up, its share held by the cluster or sent to the replicas that are up);
2. the retired replicas (in the old layout, not the new) leave the router at t0; the requests
   queued on them (not admitted, or preempted while they drain) are routed again by the new plan,
   each queued at its new replica by arrival (first come, first served across the move);
3. their in-flight requests: short-output types (SISO, LISO) drain where they are; long-output
   types' KV moves live (``servesim.sim.migration``, the one migration model, Llumnix's too: the
   request decodes on while its KV is copied; all of a switch's moves at once, the copies queued
   per link at NVLink / InfiniBand speed) to a replica of the new layout that the new plan routes
   its type to: one that is up and has KV room for it (it decodes on there), else the new replica
   with the most room (its KV waits in the pre-allocated buffer, §5.2, and it resumes when that
   replica is up); with no such replica it drains where it is;
4. a new replica's switch (``switching``: ad hoc = restart + Alg. 2's parameter transfer; naive
   reload = restart + the weights from storage) starts when every GPU it takes is free, i.e.
   every retired replica on those GPUs has stopped (drained and migrated out), and it serves from
   the end of its switch (``Cluster.hold`` until then).
So no two live replicas hold one GPU at any time, and a retired replica starts no request after
t0. Kept replicas serve on. Every wait is in the simulated times: nothing is added to the
results afterwards. ``switches`` rows add ``drain_s`` (t0 to the last retired replica's stop)
and ``ready_s`` (t0 to the end of the last new replica's switch) to the switch plan's columns.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ...catalog import get_model
from ...sim import PRIO_CONTROL, Cluster, WeightedRouter, make_router
from ...sim.kvcache import cdiv
from ...sim.migration import LiveMigrator
from ...sim.request import TERMINAL
from . import switching as SW
from .replica import DEFAULT_BACKEND, GPU, instance_config, step_model

SO_TYPES = ("SISO", "LISO")  # short-output types drain at a switch; the others migrate
ROUTERS = ("weighted", "round-robin")
SWITCHES = ("adhoc", "reload", "none")
ROUTE_NEW = ("at-switch", "when-up")  # when a new replica's plan share is routed to it
POLL_S = 0.05  # how often pending KV moves of a switch are retried (a request still in its prefill)


def layouts(plans, gpus: int) -> tuple[list, list]:
    """Each span's layout (``switching.layout``, keeping unchanged replicas in place) and the map
    from the plan's replica rows (``search.place`` order) to the layout's entries."""
    lays, orders, prev = [], [], ()
    for p in plans:
        lay = SW.layout(p.shapes, gpus, prev)
        taken, order = set(), []
        for sh in p.shapes:  # the plan's replicas to the layout's: same (tp, pp), in turn
            i = next(i for i, q in enumerate(lay) if (q.shape.tp, q.shape.pp) == (sh.tp, sh.pp) and i not in taken)
            taken.add(i)
            order.append(i)
        lays.append(lay)
        orders.append(order)
        prev = lay
    return lays, orders


class PlanServer:
    """Serves a workload on one plan per span (see the module docstring); :meth:`run`."""

    def __init__(self, model: str, gpus: int, plans, *, switch: str = "adhoc", router: str = "weighted",
                 span_s: float = 60.0, seed: int = 0, backend: str = DEFAULT_BACKEND, restart_s: float = SW.RESTART_S,
                 type_names=(), weighted_mode: str = "smooth", hardware: str = GPU, mode: str = "fast",
                 check_invariants: bool = False, route_new: str = "at-switch") -> None:
        if switch not in SWITCHES:
            raise ValueError(f"switch {switch!r} is not one of {SWITCHES}")
        if router not in ROUTERS:
            raise ValueError(f"router {router!r} is not one of {ROUTERS}")
        if route_new not in ROUTE_NEW:
            raise ValueError(f"route_new {route_new!r} is not one of {ROUTE_NEW}")
        self.route_new = route_new
        self.model, self.gpus, self.plans = model, gpus, list(plans)
        self.switch, self.span_s, self.restart_s = switch, float(span_s), float(restart_s)
        self.backend, self.hardware = backend, hardware
        self.lays, self.orders = layouts(self.plans, gpus)
        self.lo_types = {i for i, t in enumerate(type_names) if t not in SO_TYPES}
        if router == "weighted":
            self.router = WeightedRouter(rng=np.random.default_rng(seed), mode=weighted_mode)
        else:
            self.router = make_router("round-robin")
        self._models: dict = {}
        lay0 = self.lays[0]
        self.cl = Cluster([self._cfg(q) for q in lay0], [self._sm(q) for q in lay0], router=self.router,
                          hold_unroutable=True, requeue_order="arrival", mode=mode, check_invariants=check_invariants)
        self.placed = list(lay0)                       # instance index -> its replica (shape on GPUs)
        self.active = {q: j for j, q in enumerate(lay0)}  # the current layout's replicas -> instance
        self.holder: dict[int, int] = {g: j for j, q in enumerate(lay0) for g in q.gpus}
        self.start_s = [0.0] * len(lay0)               # when each instance took its GPUs
        self.up_s = [0.0] * len(lay0)                  # when it started serving (nan: never)
        self.stop_s = [math.nan] * len(lay0)           # when it stopped (retired and empty)
        self.retire_s = [math.nan] * len(lay0)         # when it left the router (retired)
        self.queued_at_retire: dict[int, list[int]] = {}  # retired instance -> request ids routed away
        self._pending: dict[int, tuple[float, dict]] = {}  # new instance -> (switch time, its switch row)
        self._retired_row: dict[int, dict] = {}
        self.switches: list[dict] = []
        m = get_model(model)
        self.kv = float(m.kv_bytes_per_token(m.dtype_bytes))
        self.mig = LiveMigrator(self.cl, self.kv, self._link, max_per_instance=1 << 30, on_end=self._moved)
        self._to_move: list = []                       # (request, source instance) of LO requests to move
        self._moving: dict[int, tuple[int, int]] = {}  # request id -> (destination, KV tokens) of a move under way
        self._assigned: dict[int, int] = {}            # destination -> KV tokens on their way to it
        self.result = None
        self._poll_at = math.inf
        self._set_weights(0)

    # ---- replicas -------------------------------------------------------------------------------
    def _cfg(self, q):
        return instance_config(self.model, q.shape, self.hardware)

    def _sm(self, q):
        key = (q.shape.tp, q.shape.pp, q.shape.cross_node)
        if key not in self._models:
            self._models[key] = step_model(self.model, q.shape, self.hardware, self.backend)
        return self._models[key]

    def _link(self, a: int, b: int) -> float:
        nodes = {g // SW.GPUS_PER_NODE for g in self.placed[a].gpus + self.placed[b].gpus}
        return SW.NVLINK_BPS if len(nodes) == 1 else SW.IB_BPS

    def _set_weights(self, s: int) -> None:
        if not isinstance(self.router, WeightedRouter):
            return
        F = np.asarray(self.plans[s].fractions, float)
        lay, order = self.lays[s], self.orders[s]
        self.router.set_weights({self.active[lay[order[k]]]: F[k] for k in range(F.shape[0])})

    # ---- the loop -------------------------------------------------------------------------------
    def _span(self, i: int) -> None:
        s = i + 1
        prev, lay = self.lays[s - 1], self.lays[s]
        changed = set(lay) != set(prev)
        if changed:
            new, retired, row = self._begin_switch(s, prev, lay)
        self._set_weights(s)
        if changed:
            for j in retired:
                self._retire(j, row)
            for j in new:
                self._pending[j] = (row["switch_s"], row)
            self._start_ready()
            self._pump()
        if self.cl.held:
            self.cl.reroute_held()

    def _begin_switch(self, s: int, prev, lay):
        t0 = self.cl.kernel.now
        sp = SW.plan(prev, lay, self.model)
        if self.switch == "adhoc":
            dur = SW.adhoc_switch_s(sp, self.restart_s)
        elif self.switch == "reload":
            dur = SW.reload_switch_s(sp, self.model, self.restart_s)
        else:
            dur = 0.0
        row = {"span": s, "from": " + ".join(q.shape.label() for q in prev), "to": " + ".join(q.shape.label() for q in lay),
               "switch_s": dur, "transfer_s": sp.transfer_s, "bytes_nvlink": sp.bytes_nvlink, "bytes_ib": sp.bytes_ib,
               "replicas_changed": len(sp.changed), "replicas_kept": len(sp.kept), "drain_s": 0.0, "ready_s": 0.0,
               "t0": t0}
        self.switches.append(row)
        lay_set = set(lay)
        retired = [self.active.pop(q) for q in prev if q not in lay_set]
        new = []
        for q in sp.changed:
            j = self.cl.add_instance(self._cfg(q), self._sm(q), defer=True)
            if self.route_new == "at-switch":  # routed to now (its plan share waits for it), serves once up
                self.cl.join(j)
                self.cl.hold(j, math.inf)
            self.placed.append(q)
            self.active[q] = j
            self.start_s.append(math.nan)
            self.up_s.append(math.nan)
            self.stop_s.append(math.nan)
            self.retire_s.append(math.nan)
            new.append(j)
        return new, retired, row

    def _retire(self, j: int, row: dict) -> None:
        inst = self.cl.instances[j]
        self.retire_s[j] = self.cl.kernel.now
        self._retired_row[j] = row
        self.queued_at_retire[j] = [int(r.rid) for r in inst.waiting]
        lo = [r for r in inst.running if r.cls in self.lo_types]
        self._pending.pop(j, None)  # a new replica retired before it was up: it never takes its GPUs
        self.cl.drain(j, requeue=True, on_stopped=self._stopped)
        self._to_move += [(r, j) for r in lo]

    def _stopped(self, j: int, t: float) -> None:
        self.stop_s[j] = t
        row = self._retired_row.get(j)
        if row is not None:
            row["drain_s"] = max(row["drain_s"], t - row["t0"])
        for g in self.placed[j].gpus:
            if self.holder.get(g) == j:
                del self.holder[g]
        self._start_ready()

    def _start_ready(self) -> None:
        """New replicas whose GPUs are all free take them and start their switch."""
        now = self.cl.kernel.now
        for j, (dur, row) in list(self._pending.items()):
            gpus = self.placed[j].gpus
            if any(g in self.holder for g in gpus):
                continue
            del self._pending[j]
            for g in gpus:
                self.holder[g] = j
            self.start_s[j] = now
            self.up_s[j] = now + dur
            row["ready_s"] = max(row["ready_s"], now + dur - row["t0"])
            if self.route_new == "at-switch":
                self.cl.hold(j, now + dur)
            else:
                self.cl.join(j, at=now + dur)

    # ---- KV moves of long-output requests ---------------------------------------------------------
    def _room(self, j: int) -> int:
        inst = self.cl.instances[j]
        return (inst.num_blocks - inst.kv_used_blocks()) * inst.cfg.block_size - self._assigned.get(j, 0)

    def _destination(self, r, src: int) -> int | None:
        """A replica of the current layout that the plan routes ``r``'s type to: one that is up with
        room for its KV first, else the one with the most room (None: nowhere to go)."""
        inst = self.cl.instances[src]
        need = cdiv(r.prompt + inst.generated(r) + 1, inst.cfg.block_size) * inst.cfg.block_size
        best, key = None, None
        now = self.cl.kernel.now
        weighted = isinstance(self.router, WeightedRouter)
        for j in sorted(self.active.values()):
            if weighted:
                w = self.router.weights(j)
                if w is None or r.cls < 0 or r.cls >= w.size or w[r.cls] <= 0:
                    continue
            room = self._room(j)
            k = (self.up_s[j] <= now and room >= need, room)  # (NaN: not up)
            if key is None or k > key:
                best, key = j, k
        if best is None or key[1] < need:
            return None
        return best

    def _pump(self) -> None:
        """Start the moves that can start; keep the others (still in their prefill) for later."""
        keep = []
        now = self.cl.kernel.now
        for r, src in self._to_move:
            if r.state in TERMINAL or r.inst != src:
                continue  # finished, or moved (delivered elsewhere)
            if r.rid in self._moving:
                keep.append((r, src))
                continue
            inst = self.cl.instances[src]
            if r not in inst.running:
                if r in inst.waiting or r.state == 0:  # preempted: it was routed again (no KV to move)
                    continue
                keep.append((r, src))  # leaving (last stage under way)
                continue
            if not (r.dec and r.first_t <= now):
                keep.append((r, src))  # in its prefill: no KV to copy yet
                continue
            dst = self._destination(r, src)
            if dst is None:
                continue  # nowhere with room: it drains where it is
            tok = r.prompt + inst.generated(r)
            if self.mig.start(r, src, dst):
                self._moving[r.rid] = (dst, tok)
                self._assigned[dst] = self._assigned.get(dst, 0) + tok
            else:
                keep.append((r, src))
        self._to_move = keep
        if keep and self._poll_at > now + POLL_S:
            self._poll_at = now + POLL_S
            self.cl.kernel.at(self._poll_at, self._poll, None, PRIO_CONTROL)

    def _poll(self, _arg) -> None:
        self._poll_at = math.inf
        self._pump()

    def _moved(self, rec) -> None:
        dst, tok = self._moving.pop(rec.rid)
        self._assigned[dst] -= tok
        if rec.outcome != "migrated" and self._to_move and self._poll_at == math.inf:
            self._poll_at = self.cl.kernel.now + POLL_S
            self.cl.kernel.at(self._poll_at, self._poll, None, PRIO_CONTROL)

    # ---- running --------------------------------------------------------------------------------
    def run(self, wl: pd.DataFrame, types: np.ndarray) -> tuple[pd.DataFrame, list[dict]]:
        """Serve ``wl`` (its rows' types ``types``): (per-request table, switches)."""
        n_spans = len(self.plans)
        cl = self.cl
        if n_spans > 1:  # added before the arrivals: wins ties with a request arriving at a boundary
            cl.kernel.add_stream(np.arange(1, n_spans) * self.span_s, self._span)
        base = wl.assign(model=pd.Categorical([self.model] * len(wl)))
        self.result = res = cl.run(base, classes=np.asarray(types, dtype=np.int64))
        df = res.requests.sort_values("request_id", kind="stable").reset_index(drop=True)
        rid = df["request_id"].to_numpy()
        arrival = wl["arrival_s"].to_numpy(float)
        idx = {nm: j for j, nm in enumerate(cl.names)}
        inst = np.array([idx.get(x, -1) for x in df["instance"].astype(str)], np.int64)
        labels = np.array([q.shape.label() for q in self.placed] + [""], dtype=object)
        df["arrival_s"] = arrival[rid]
        df["lifetime"] = inst
        df["shape"] = labels[inst]
        df["migrated"] = np.isin(rid, np.fromiter(self.mig.migrated, np.int64, len(self.mig.migrated)))
        df["span"] = np.minimum((arrival[rid] // self.span_s).astype(int), n_spans - 1)
        df["type"] = np.asarray(types)[rid]
        df.attrs["system_stats"] = {"requeued": int(res.stats["requeued"]), **self.mig.summary()}
        return df, [{k: v for k, v in row.items() if k != "t0"} for row in self.switches]

    def gpu_intervals(self) -> pd.DataFrame:
        """Per instance and GPU: when it held the GPU (took it, to its stop or the run's end)."""
        end = self.result.stats["sim_end_s"] if self.result is not None else math.inf
        rows = []
        for j, q in enumerate(self.placed):
            if math.isnan(self.start_s[j]):
                continue  # never took its GPUs (retired before they were free)
            stop = self.stop_s[j] if not math.isnan(self.stop_s[j]) else max(end, self.start_s[j])
            for g in q.gpus:
                rows.append({"instance": j, "gpu": g, "start_s": self.start_s[j], "up_s": self.up_s[j],
                             "retire_s": self.retire_s[j], "stop_s": stop})
        return pd.DataFrame(rows)


def serve_plans(model: str, gpus: int, plans, wl: pd.DataFrame, types: np.ndarray, *, switch: str, span_s: float,
                seed: int, backend: str = DEFAULT_BACKEND, restart_s: float = SW.RESTART_S, type_names=(),
                router: str = "weighted", weighted_mode: str = "smooth",
                route_new: str = "at-switch") -> tuple[pd.DataFrame, list[dict]]:
    """Serve ``wl`` span by span on ``plans`` (one per span) as one cluster; ``switch`` = adhoc |
    reload | none; ``router`` = weighted (the plans' shares by type) | round-robin."""
    srv = PlanServer(model, gpus, plans, switch=switch, router=router, span_s=span_s, seed=seed, backend=backend,
                     restart_s=restart_s, type_names=type_names, weighted_mode=weighted_mode, route_new=route_new)
    return srv.run(wl, types)
