"""`servesim.sim` instances behind the fleet's `Engine` protocol.

Each time a fleet instance becomes ready for a model it gets a fresh `servesim.sim.Instance`
(named after the fleet instance, so the request table's ``instance`` column is the VM id);
all of them share one kernel and one `RequestLog`, whose rows give the timing columns.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from ..sim import (
    Instance,
    InstanceConfig,
    InstanceListener,
    Kernel,
    Req,
    RequestLog,
)
from ..sim.queue_orders import tier_ranks
from ..sim.request_log import timing_columns
from ..sim.request import DROPPED, FINISHED, REJECTED
from .core import shared_strings
from .protocols import EndCallback
from .scenario import Scenario

_STATE = {FINISHED: "finished", REJECTED: "rejected", DROPPED: "error"}


class _Engine(InstanceListener):
    """One sim `Instance` plus the glue to the fleet's end callback."""

    __slots__ = ("inst", "on_end", "owner")

    def __init__(self, owner: SimEngines, inst_factory, on_end: EndCallback) -> None:
        self.owner = owner
        self.on_end = on_end
        self.inst: Instance = inst_factory(self)

    # InstanceListener
    def on_done(self, inst: Instance, r: Req) -> None:
        self.owner.log.record(r)
        self.on_end(r.idx, _STATE[r.state], r.reason, {})

    # fleet Engine protocol
    def submit(self, ridx: int, handle: Req | None = None) -> None:
        o = self.owner
        if handle is None:
            handle = Req(ridx, o.arrival[ridx], o.prompt[ridx], o.output[ridx], o.model[ridx], o.rid[ridx])
            if o.tier is not None:
                handle.tier = o.tier[ridx]
                handle.deadline = o.deadline[ridx]
        self.inst.submit(handle)

    def take_waiting(self) -> list[tuple[int, Any]]:
        return [(r.idx, r) for r in self.inst.take_waiting()]

    def withdraw(self, ridx: int) -> bool:
        """Remove request `ridx` if it waits here never admitted to a batch (True), else leave
        everything as is (False). O(queued requests): the instance's queues are taken and the
        others handed back in order (what a fresh submit of each would do)."""
        inst = self.inst
        if not any(r.idx == ridx and r.sched_t != r.sched_t for r in inst.waiting) and not any(
                r.idx == ridx and r.sched_t != r.sched_t for q in inst.parked.values() for r in q):
            return False  # (sched_t is NaN until the first admission)
        back = inst.take_waiting()
        for r in back:
            if r.idx != ridx:
                inst.submit(r)
        return True

    def switch_model(self, model: str, load_s: float) -> bool:
        """Switch the (drained) instance to `model` in place (`Instance.switch_model`: its step
        model and KV capacity become `model`'s, and it runs nothing for `load_s`). Returns False
        (nothing done) when other engine settings differ: the fleet then builds a fresh engine."""
        o = self.owner
        old, new = o._cfg[self.inst.model], o._cfg[model]
        same = (old.block_size, old.max_num_seqs, old.max_num_batched_tokens, old.max_model_len, old.policy) == (
            new.block_size, new.max_num_seqs, new.max_num_batched_tokens, new.max_model_len, new.policy)
        if same:
            self.inst.switch_model(model, load_s, step_model=o._step[model], num_blocks=new.num_blocks)
        return same

    def kv_util(self) -> float:
        return self.inst.kv_usage()

    def queue_len(self) -> int:
        return self.inst.num_waiting

    def decode_state(self, queued: bool = False) -> tuple[np.ndarray, np.ndarray, int]:
        """KV tokens held (``computed``) and output tokens still to sample of every decoding
        request now, and the instance's KV capacity in tokens (ground-truth lengths: the
        simulator knows each request's output). ``queued``: also the requests not decoding yet
        (waiting or mid-prefill), with the KV they will hold once prefilled (prompt + generated)."""
        inst = self.inst
        inst.sync()
        ds = inst.ds
        dec = [r for r in inst.running if r.dec]
        ctx = [ds.computed(r) for r in dec]
        rem = [r.output - ds.generated(r) for r in dec]
        if queued:
            for r in [*inst.waiting, *(r for r in inst.running if not r.dec)]:
                ctx.append(r.prompt + r.generated)
                rem.append(r.output - r.generated)
        return np.asarray(ctx, np.int64), np.asarray(rem, np.int64), inst.num_blocks * inst.cfg.block_size

    def running(self) -> int:
        return self.inst.num_running

    def finalize(self, now: float) -> list[tuple[int, dict[str, Any]]]:
        inst = self.inst
        inst.sync()
        live = list(inst.waiting) + list(inst.running)
        for q in inst.parked.values():
            live.extend(q)
        out = []
        for r in live:
            if getattr(r, "dec", False):
                inst.ds.materialize(r)
            self.owner.log.record(r, partial=True)
            out.append((r.idx, {}))
        return out


def _items(col: pd.Series, dtype) -> memoryview:
    """A read-only memoryview of ``col`` as ``dtype``: ``v[i]`` is a Python float/int."""
    return memoryview(np.ascontiguousarray(col.to_numpy(dtype))).toreadonly()


class SimEngines:
    """Builds sim instances for a scenario; `timing` turns the shared log into columns."""

    def __init__(self, sc: Scenario, workload: pd.DataFrame, seed: int) -> None:
        self.sc = sc
        self.kernel = Kernel()
        self.workload = workload
        self.log = RequestLog(len(workload))
        # per-request inputs of `Req`: memoryviews of the workload's columns index to plain
        # float/int like a list does, at no memory of their own (a list of floats/ints takes
        # ~32-36 B a row); model names are shared str objects
        self.arrival = _items(workload["arrival_s"], np.float64)
        self.prompt = _items(workload["prompt_tokens"], np.int64)
        self.output = _items(workload["output_tokens"], np.int64)
        self.model = shared_strings(workload["model"]).tolist()
        self.rid = _items(workload["request_id"], np.int64)
        self.names: list[str] = []  # sim instance index -> fleet instance id
        self._cfg: dict[str, InstanceConfig] = {}
        self._step: dict[str, Any] = {}
        for name, m in sc.models.items():
            self._cfg[name] = m.engine.instance_config(name)
            self._step[name] = m.build_step_time(name)
        # a queue order reads each request's tier and deadline: carried only where one is set
        self.tier = self.deadline = None
        if any(c.queue_order is not None for c in self._cfg.values()):
            self.tier = memoryview(tier_ranks(workload["tier"])).toreadonly()
            self.deadline = _items(workload["deadline_s"], np.float64)

    def factory(self, model: str, region: str, name: str, on_end: EndCallback) -> _Engine:
        index = len(self.names)
        self.names.append(name)

        def make(listener):
            return Instance(self.kernel, self._cfg[model], self._step[model], name=name, index=index,
                            mode=self.sc.mode, listener=listener)

        return _Engine(self, make, on_end)

    def attach(self, fleet: Any) -> None:
        """Nothing to wire: engines reach the fleet through their end callbacks."""

    def timing(self) -> dict[str, np.ndarray]:
        """The timing columns of REQUEST_COLUMNS and ``preemptions`` for every row, as arrays:
        what `fleet.run.request_table` reads (a whole REQUEST_COLUMNS frame, or even a frame of
        these columns, would be one more copy of them at the run's memory peak)."""
        return timing_columns(self.log, self.workload["arrival_s"].to_numpy(np.float64))
