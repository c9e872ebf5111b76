"""The Llumnix baseline of OServe's Fig 17 (§6.2, App. H; Sun et al., OSDI'24), in the simulator.

Deployment: homogeneous instances, the best homogeneous deployment for the whole trace as vLLM
static picks it (``online.Planner.static``; spec §2: "best homogeneous parallel config, fixed over
the trace"); no switching. All instances serve the trace in ONE cluster, so that dispatch and
migration see each other's load.

Load reading (Llumnix's *virtual usage* and *freeness*, OSDI'24 §4.4: F = (M - ΣV) / B): an
instance's freeness is the number of decode steps its running batch can still run before its KV
cache is full,

    F = (free KV tokens - virtual usage of its queue) / B,   B = running requests (at least 1),

with a queued request's virtual usage = its demand (its prompt's KV blocks, in tokens): Llumnix's
load metric ``remaining_steps``. Two readings of the queue:
- dispatch (``dispatch_freeness``): every queued request counts, so F falls with the queued work;
- migration (``migration_freeness``): only the queue's head counts, so an instance whose head
  cannot be admitted reads negative: it needs room.
An instance holding no request has F = +inf.

Dispatch (Llumnix ``dispatch_policy=load``): each request goes at its arrival to the instance with
the largest dispatch freeness (the least loaded; ties: the lowest index). The sum of queued demands
is kept per instance from the requests dispatched to it and not yet admitted (FCFS queues: popped
from the head once admitted), not summed over the queue at every arrival.

Migration (Llumnix's defaults as the spec reads them: polling every 0.05 s, a pairing at every
poll): the instances whose migration freeness is below ``threshold_steps`` (sources, most loaded
first) are paired with those above it (destinations, least loaded first) while the load gap
F_dst - F_src exceeds ``threshold_steps``; each pair moves one decoding request, the one holding the
fewest KV tokens (our reading of Llumnix's ``SJF`` request policy: the cheapest to copy), with live
multi-stage copying (``servesim.sim.migration``: the request keeps decoding during the copy, only
the last stage blocks it). ``threshold_steps`` = 48 decode steps reads Llumnix's
``migrate_out_threshold`` 3.0 as 3 KV blocks of 16 tokens per request. KV copy time = KV bytes /
the link: NVLink (400 GB/s) between instances on one node, InfiniBand (200 GB/s) otherwise (§6.1).
Auto-scaling is off (Llumnix's default; the GPU count is fixed here).
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import asdict, dataclass, fields

import numpy as np
import pandas as pd

from ...catalog import get_model
from ...errors import InputError
from ...sim import PRIO_CONTROL, Cluster, ListRouter, register_router
from ...sim.kvcache import cdiv
from ...sim.migration import LiveMigrator
from ...sim.request import WAITING
from . import switching as SW
from .replica import DEFAULT_BACKEND, GPU, instance_config, step_model


@dataclass(frozen=True)
class LlumnixOptions:
    poll_s: float = 0.05            # Llumnix polling_interval (a pairing every poll)
    threshold_steps: float = 48.0   # migrate_out_threshold 3.0 blocks/request x 16-token blocks
    migration: bool = True          # False: load-aware dispatch only
    last_stage_tokens: int = 16     # the increment copied while the request is stopped
    max_stages: int = 8

    @classmethod
    def parse(cls, items) -> LlumnixOptions:
        """From ``KEY=VALUE`` strings (the CLI's ``--llumnix-option``)."""
        kinds = {f.name: f.type for f in fields(cls)}
        kw = {}
        for it in items or ():
            key, sep, val = str(it).partition("=")
            key = key.strip().replace("-", "_")
            if not sep or key not in kinds:
                raise InputError(f"--llumnix-option {it!r}: need KEY=VALUE with KEY one of {', '.join(kinds)}")
            try:
                if kinds[key] == "bool":
                    if val.lower() not in ("true", "false", "on", "off", "1", "0"):
                        raise ValueError(val)
                    kw[key] = val.lower() in ("true", "on", "1")
                else:
                    kw[key] = (int if kinds[key] == "int" else float)(val)
            except ValueError:
                raise InputError(f"--llumnix-option {it!r}: {val!r} is not a {kinds[key]}") from None
        o = cls(**kw)
        if not (o.poll_s > 0 and math.isfinite(o.poll_s)) or o.threshold_steps < 0 or o.max_stages < 1 or o.last_stage_tokens < 0:
            raise InputError("--llumnix-option: need poll_s > 0, threshold_steps >= 0, max_stages >= 1, last_stage_tokens >= 0")
        return o


def _demand(r, bs: int) -> int:
    """A queued request's virtual usage in tokens: the KV blocks its admission allocates."""
    return cdiv(r.num_tokens, bs) * bs  # prompt (+ tokens to recompute); a KV-ready one: computed + 1


class QueueDemand:
    """Per instance, the requests dispatched to it and not yet admitted (FCFS: the head leaves
    first) and the sum of their demands; ``total(j)`` is exact for FCFS queues (a recompute
    preemption's re-queued request is not counted: Llumnix's own reading of the queue is periodic)."""

    def __init__(self, n: int, block_size: list[int]) -> None:
        self.q = [deque() for _ in range(n)]
        self.sum = [0] * n
        self.bs = block_size

    def add(self, j: int, r) -> None:
        d = _demand(r, self.bs[j])
        self.q[j].append((r, d))
        self.sum[j] += d

    def total(self, j: int) -> int:
        q = self.q[j]
        while q and (q[0][0].state != WAITING or q[0][0].inst != j):
            self.sum[j] -= q.popleft()[1]
        return self.sum[j]


def _freeness(inst, queued: int) -> float:
    if inst.num_running == 0 and inst.num_waiting == 0:
        return math.inf
    free = (inst.num_blocks - inst.kv_used_blocks()) * inst.cfg.block_size
    return (free - queued) / max(inst.num_running, 1)


def dispatch_freeness(inst, queued_demand: int) -> float:
    """Decode steps the running batch can still run, every queued request's demand counted
    (``queued_demand`` tokens); +inf for an instance holding nothing."""
    return _freeness(inst, queued_demand)


def migration_freeness(inst) -> float:
    """Decode steps the running batch can still run, the queue head's demand counted; +inf for an
    instance holding nothing."""
    return _freeness(inst, _demand(inst.waiting[0], inst.cfg.block_size) if inst.waiting else 0)


@register_router("llumnix-load")
class LlumnixDispatch(ListRouter):
    """The routable instance with the largest dispatch freeness (Llumnix ``dispatch_policy=load``).
    Reads the instances' state: only meaningful bound to a Cluster."""

    def bind(self, cluster, pool) -> None:
        super().bind(cluster, pool)
        self.demand = QueueDemand(len(cluster.instances), [i.cfg.block_size for i in cluster.instances])

    def select(self, request):
        if not self._items:
            return None
        insts = self.cluster.instances
        best, key = None, None
        for rec in self._items:
            f = dispatch_freeness(insts[rec.seq], self.demand.total(rec.seq))
            k = (-f, rec.seq)
            if key is None or k < key:
                best, key = rec, k
        self.demand.add(best.seq, request)
        return best


def pairs(free: list[float], busy, threshold: float) -> list[tuple[int, int]]:
    """Llumnix's pairing: sources (freeness < threshold, most loaded first) with destinations
    (freeness >= threshold, least loaded first), while the gap exceeds ``threshold``."""
    idle = [j for j in range(len(free)) if not busy(j)]
    src = sorted((j for j in idle if free[j] < threshold), key=lambda j: (free[j], j))
    dst = sorted((j for j in idle if free[j] >= threshold), key=lambda j: (-free[j], j))
    return [(s, d) for s, d in zip(src, dst) if free[d] - free[s] > threshold]


def pick_request(inst):
    """The decoding request holding the fewest KV tokens (ties: the earliest admitted)."""
    best, key = None, None
    now = inst.now
    for r in inst.running:
        if r.dec and r.first_t <= now:
            k = (inst.engine_of(r).ds.computed(r), r.adm)
            if key is None or k < key:
                best, key = r, k
    return best


class Llumnix:
    """A cluster of homogeneous instances with Llumnix's dispatch and migration."""

    def __init__(self, model: str, shapes, gpus: int, *, backend: str = DEFAULT_BACKEND, options: LlumnixOptions | None = None,
                 configs=None, step_models=None, bandwidth=None, kv_bytes_per_token: float | None = None) -> None:
        self.opt = options or LlumnixOptions()
        m = get_model(model)
        configs = configs or [instance_config(model, s, GPU) for s in shapes]
        step_models = step_models or [step_model(model, s, GPU, backend) for s in shapes]
        if bandwidth is None:
            bandwidth = SW.link_bps(SW.layout(tuple(shapes), gpus))
        self.cluster = Cluster(configs, step_models, router=LlumnixDispatch())
        kv = kv_bytes_per_token if kv_bytes_per_token is not None else m.kv_bytes_per_token(m.dtype_bytes)
        self.migrator = LiveMigrator(self.cluster, kv, bandwidth, last_stage_tokens=self.opt.last_stage_tokens,
                                     max_stages=self.opt.max_stages)
        self.polls = 0
        self._left = 0

    def _poll(self, _arg) -> None:
        if self._left <= 0:
            return  # every request ended: stop polling so the run ends
        self.polls += 1
        insts = self.cluster.instances
        free = [migration_freeness(i) for i in insts]
        for s, d in pairs(free, self.migrator.busy, self.opt.threshold_steps):
            r = pick_request(insts[s])
            if r is not None:
                self.migrator.start(r, s, d)
        k = self.cluster.kernel
        k.at(k.now + self.opt.poll_s, self._poll, None, PRIO_CONTROL)

    def _done(self, r) -> None:
        self._left -= 1

    def run(self, workload: pd.DataFrame):
        cl = self.cluster
        self._left = len(workload)
        cl.on_request_done = self._done
        if self.opt.migration and len(cl.instances) > 1:
            t0 = float(workload["arrival_s"].min()) if len(workload) else 0.0
            cl.kernel.at(t0, self._poll, None, PRIO_CONTROL)
        return cl.run(workload)

    def stats(self) -> dict:
        return {"llumnix_polls": self.polls, **self.migrator.summary(),
                **{f"llumnix_{k}": v for k, v in asdict(self.opt).items()}}


def serve(model: str, gpus: int, shapes, wl: pd.DataFrame, types: np.ndarray, *, span_s: float, n_spans: int,
          backend: str = DEFAULT_BACKEND, options: LlumnixOptions | None = None) -> pd.DataFrame:
    """Serve the whole trace ``wl`` on Llumnix over ``shapes``: the per-request table with the
    columns ``online.serve_plans`` gives (``migrated``: moved at least once); ``attrs["system_stats"]``
    holds the migration counters for the run's summary."""
    ll = Llumnix(model, shapes, gpus, backend=backend, options=options)
    w = wl.assign(model=pd.Categorical([model] * len(wl)))
    res = ll.run(w)
    r = res.requests.sort_values("request_id", kind="stable").reset_index(drop=True)
    rid = r["request_id"].to_numpy()
    r["wait_s"] = 0.0
    r["lifetime"] = r["instance"].str.lstrip("i").replace("", "-1").astype(int)
    r["shape"] = shapes[0].label() if len(set(shapes)) == 1 else "mixed"
    r["migrated"] = np.isin(rid, np.fromiter(ll.migrator.migrated, np.int64, len(ll.migrator.migrated)))
    r["arrival_s"] = wl["arrival_s"].to_numpy(float)[rid]
    r["span"] = np.minimum((r["arrival_s"].to_numpy() // span_s).astype(int), n_spans - 1)
    r["type"] = types[rid]
    r.attrs["system_stats"] = ll.stats()
    return r
