"""A pipeline-parallel replica as vLLM V0 runs it: ``pp`` virtual engines over shared stages.

``InstanceConfig.pp_engines`` names how a replica with ``pp > 1`` is simulated:

- ``"lumped"``: one :class:`~servesim.sim.instance.Instance` with one scheduler; every iteration
  is a barrier (its micro-batches cross every stage before the next iteration starts), and with
  the V0 policy a prefill iteration stops every running sequence of the replica.
- ``"virtual"``: vLLM V0's design for PP (``LLMEngine`` keeps one ``Scheduler`` per virtual
  engine, ``pipeline_parallel_size`` of them): each virtual engine (VE) is an ``Instance`` with
  its own waiting and running queues, ``1/pp`` of the replica's KV blocks (V0's scheduler takes
  ``num_gpu_blocks // pp``) and ``1/pp`` of the replica's ``max_num_seqs`` and
  ``max_num_batched_tokens`` (the replica's totals as the config states them; OServe's configs
  give ``pp`` times vLLM's per-scheduler limits). A new request joins the VE with the fewest
  unfinished requests (V0's ``add_request`` rule; ties: the lowest VE). A VE's iteration is one
  micro-batch through the ``pp`` stages, which all VEs share first come, first served: so the
  VEs' iterations overlap across the pipeline, and a prefill in one VE delays the others'
  micro-batches only while it holds a stage.

Stage timing (:class:`PipelineStages`). The step-time model gives a micro-batch's latency ``T``
through every stage (``latency``: the sum of the stages and the hand-offs, plus the CPU-side
costs). The CPU-side part (``overhead_s`` + ``seq_overhead_s`` per sequence: scheduling,
sampling, output processing on the driver) runs before the micro-batch enters stage 1 and
overlaps other VEs' GPU work; the rest is split evenly over the stages (every stage holds the
same layers, as the step model assumes). A micro-batch that starts at ``t`` leaves stage ``k`` at
``max(its exit from stage k-1, stage k free) + s`` with ``s = (T - cpu) / pp``: exact for FIFO
stages (micro-batches enter in the order their iterations start, and none overtakes another).
Alone in the pipeline a VE's iteration takes ``T``, so one VE at a time behaves like the lumped
replica's one-micro-batch iteration.

A VE plans one iteration at a time (no decode runs: its duration depends on the other VEs'
micro-batches in the stages). :class:`VirtualEngines` presents the replica to the cluster,
routers, migration and the systems with the ``Instance`` interface they use; a request's own
engine is ``engine_of(r)``.
"""

from __future__ import annotations

from collections import deque
from dataclasses import replace
from typing import Callable

import numpy as np

from ..perf.base import StepTimeModel
from .instance import PP_ENGINES, Instance, InstanceConfig, InstanceListener
from .kernel import Kernel, SimulationError
from .request import Req

__all__ = ["PP_ENGINES", "PipelineStages", "StagedStepTime", "VirtualEngines", "engine_config", "make_instance"]


class PipelineStages:
    """The free times of a replica's ``pp`` stages, shared by its virtual engines."""

    __slots__ = ("free",)

    def __init__(self, pp: int) -> None:
        self.free = [0.0] * int(pp)

    def traverse(self, start: float, per_stage: float) -> float:
        """A micro-batch entering stage 1 at ``start`` with ``per_stage`` seconds of work in every
        stage: the time it leaves the last one (and each stage is busy until it leaves it)."""
        t = start
        free = self.free
        for k in range(len(free)):
            if free[k] > t:
                t = free[k]
            t += per_stage
            free[k] = t
        return t


class StagedStepTime:
    """One VE's iteration time: its CPU-side work, then its micro-batch through the shared stages
    (module docstring). Scalar calls only: a VE plans one iteration at a time."""

    def __init__(self, base: StepTimeModel, stages: PipelineStages, kernel: Kernel) -> None:
        if not callable(getattr(base, "latency", None)):
            raise TypeError(f"pp_engines='virtual' needs a step model with latency() (a pipelined one); got {type(base).__name__}")
        self.base = base
        self.stages = stages
        self.kernel = kernel
        self.pp = len(stages.free)
        self._cpu = float(getattr(base, "overhead_s", 0.0))
        self._cpu_seq = float(getattr(base, "seq_overhead_s", 0.0))

    def step_time(self, prefill_tokens, prefill_ctx, decode_seqs, decode_ctx) -> float:
        if type(prefill_tokens) is np.ndarray or type(decode_seqs) is np.ndarray:
            raise SimulationError("a virtual engine's step time is scalar (it plans one iteration at a time)")
        T = float(self.base.latency(prefill_tokens, prefill_ctx, decode_seqs, decode_ctx))
        if T <= 0.0:
            return T
        cpu = self._cpu + self._cpu_seq * (float(decode_seqs) + (1.0 if prefill_tokens > 0 else 0.0))
        cpu = min(cpu, T)
        now = self.kernel.now
        return self.stages.traverse(now + cpu, (T - cpu) / self.pp) - now

    __call__ = step_time


def engine_config(cfg: InstanceConfig) -> InstanceConfig:
    """One VE's config: 1/pp of the replica's KV blocks and engine limits (module docstring)."""
    pp = cfg.pp
    if cfg.num_blocks < pp:
        raise ValueError(f"InstanceConfig.num_blocks={cfg.num_blocks}: fewer than pp={pp} (one per virtual engine)")
    mbt = cfg.max_num_batched_tokens
    return replace(cfg, num_blocks=cfg.num_blocks // pp, max_num_seqs=max(1, cfg.max_num_seqs // pp),
                   max_num_batched_tokens=None if mbt is None else max(1, mbt // pp), pp_engines="lumped")


class _Running:
    """The replica's running requests: a read-only view over its engines' ``running`` dicts."""

    __slots__ = ("_engines",)

    def __init__(self, engines: list[Instance]) -> None:
        self._engines = engines

    def __contains__(self, r) -> bool:
        return any(r in e.running for e in self._engines)

    def __iter__(self):
        for e in self._engines:
            yield from list(e.running)

    def __len__(self) -> int:
        return sum(len(e.running) for e in self._engines)


class VirtualEngines:
    """A ``pp > 1`` replica with ``pp_engines="virtual"``: its VEs (``engines``) behind the
    ``Instance`` interface (module docstring). The cluster is every VE's listener: a VE reports
    requests under the replica's ``index``."""

    def __init__(self, kernel: Kernel, cfg: InstanceConfig, step_model: StepTimeModel, *,
                 name: str = "i0", index: int = 0, mode: str = "fast",
                 listener: InstanceListener | None = None) -> None:
        if cfg.pp < 2 or cfg.pp_engines != "virtual":
            raise ValueError(f"VirtualEngines: a replica with pp >= 2 and pp_engines='virtual' (pp={cfg.pp}, "
                             f"pp_engines={cfg.pp_engines!r})")
        self.kernel = kernel
        self.cfg = cfg
        self.step_model = step_model
        self.name = name
        self.index = index
        self.mode = mode
        self.listener = listener or InstanceListener()
        self.model = cfg.model
        self.stages = PipelineStages(cfg.pp)
        ecfg = engine_config(cfg)
        self.engines = [Instance(kernel, ecfg, StagedStepTime(step_model, self.stages, kernel), name=f"{name}/ve{v}",
                                 index=index, mode=mode, listener=self.listener, decode_runs=False)
                        for v in range(cfg.pp)]
        self.num_blocks = sum(e.num_blocks for e in self.engines)
        self.running = _Running(self.engines)
        self.switches = 0

    # ------------------------------------------------------------------ queries (sums over the VEs)
    @property
    def now(self) -> float:
        return self.kernel.now

    @property
    def used(self) -> int:
        return sum(e.used for e in self.engines)

    @property
    def free(self) -> int:
        return self.num_blocks - self.used

    @property
    def busy(self) -> bool:
        return any(e.busy for e in self.engines)

    @property
    def num_waiting(self) -> int:
        return sum(e.num_waiting for e in self.engines)

    @property
    def num_running(self) -> int:
        return sum(e.num_running for e in self.engines)

    @property
    def outstanding(self) -> int:
        return sum(e.outstanding for e in self.engines)

    @property
    def waiting(self) -> list[Req]:
        """Every VE's waiting requests by arrival (a copy: queue through :meth:`submit`)."""
        return sorted((r for e in self.engines for r in e.waiting), key=lambda r: (r.arrival, r.rid))

    @property
    def parked(self) -> dict[str, deque[Req]]:
        out: dict[str, deque[Req]] = {}
        for e in self.engines:
            for m, q in e.parked.items():
                out.setdefault(m, deque()).extend(q)
        return out

    @property
    def queued_prefill_tokens(self) -> int:
        return sum(e.queued_prefill_tokens for e in self.engines)

    @property
    def iterations(self) -> int:
        return sum(e.iterations for e in self.engines)

    @property
    def events(self) -> int:
        return sum(e.events for e in self.engines)

    @property
    def check_invariants(self) -> bool:
        return self.engines[0].check_invariants

    @check_invariants.setter
    def check_invariants(self, on: bool) -> None:
        for e in self.engines:
            e.check_invariants = on

    def kv_used_blocks(self) -> int:
        return sum(e.kv_used_blocks() for e in self.engines)

    def kv_usage(self) -> float:
        return self.kv_used_blocks() / self.num_blocks

    def pending_decode_tokens(self, predicted: bool = False) -> int:
        return sum(e.pending_decode_tokens(predicted) for e in self.engines)

    def engine_of(self, r: Req) -> Instance:
        """The VE that holds ``r`` running (else the first VE)."""
        for e in self.engines:
            if r in e.running:
                return e
        return self.engines[0]

    def generated(self, r: Req) -> int:
        return self.engine_of(r).generated(r)

    # ------------------------------------------------------------------ work
    def _pick(self, front: bool = False) -> Instance:
        # max / min keep the first of ties: the lowest VE
        if front:  # a request migrated in with its KV: the VE with the most free blocks
            return max(self.engines, key=lambda e: e.num_blocks - e.kv_used_blocks())
        return min(self.engines, key=lambda e: e.outstanding)  # V0: the fewest unfinished

    def submit(self, r: Req, front: bool = False, by_arrival: bool = False) -> None:
        self._pick(front).submit(r, front=front, by_arrival=by_arrival)

    def submit_by_arrival(self, rs: list[Req]) -> None:
        counts = [e.outstanding for e in self.engines]
        groups: dict[int, list[Req]] = {}
        for r in sorted(rs, key=lambda r: r.arrival):
            v = counts.index(min(counts))
            counts[v] += 1
            groups.setdefault(v, []).append(r)
        for v, g in groups.items():
            self.engines[v].submit_by_arrival(g)

    def take_waiting(self) -> list[Req]:
        out = [r for e in self.engines for r in e.take_waiting()]
        out.sort(key=lambda r: (r.arrival, r.rid))
        return out

    def migrate_out(self, r: Req, then: Callable[[Req | None], None]) -> None:
        self.engine_of(r).migrate_out(r, then)

    # ------------------------------------------------------------------ control (every VE)
    def sync(self) -> None:
        for e in self.engines:
            e.sync()

    def hold_until(self, t: float) -> None:
        for e in self.engines:
            e.hold_until(t)

    def release_hold(self) -> None:
        for e in self.engines:
            e.release_hold()

    def pause(self) -> None:
        for e in self.engines:
            e.pause()

    def resume(self) -> None:
        for e in self.engines:
            e.resume()

    def stop(self, reason: str = "instance stopped") -> None:
        for e in self.engines:
            e.stop(reason)

    def check(self) -> None:
        for e in self.engines:
            e.check()

    def switch_model(self, *a, **kw) -> None:
        raise SimulationError(f"{self.name}: switch_model is not simulated for pp_engines='virtual'")


def make_instance(kernel: Kernel, cfg: InstanceConfig, step_model: StepTimeModel, *, name: str, index: int,
                  mode: str, listener: InstanceListener | None) -> Instance | VirtualEngines:
    """The simulated replica for ``cfg``: virtual engines where it asks for them and ``pp > 1``."""
    if cfg.pp > 1 and cfg.pp_engines == "virtual":
        return VirtualEngines(kernel, cfg, step_model, name=name, index=index, mode=mode, listener=listener)
    return Instance(kernel, cfg, step_model, name=name, index=index, mode=mode, listener=listener)
