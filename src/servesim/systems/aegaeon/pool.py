"""The Aegaeon token-level pool: per-node prefill and decode instances on one event kernel.

A request goes to node ``model index % n_nodes`` (``layout="parity"``; ``"single"``: one pool),
is prefilled by the grouped-FCFS prefill pool (`prefill`), its KV is copied device -> host
(bytes / kv_bw; the request reaches decoding when the copy ends), then a decoding instance runs it
in weighted round-robin turns (`decode`). Model switches cost weights / load_bw, less the
artifact's prefetch credit (compute time since the instance's last switch, floor min_switch_s),
unless prefetching would leave too little KV memory (`models.prefetch_fits`).
"""

from __future__ import annotations

import pandas as pd

from ...sim.kernel import Kernel, SimulationError
from .decode import DecodeInstance
from .hostcache import SlabCache
from .models import ModelCosts, checkpoint, costs, prefetch_fits
from .prefill import PrefillInstance, dispatch
from .request import Req, to_table
from .settings import Settings


class PoolResult:
    """What a pool run produced: the per-request table (`request.to_table`: the standard
    REQUEST_COLUMNS, then the Aegaeon columns), the switch log and totals. Not
    ``servesim.sim.cluster.SimResult``."""

    def __init__(self, requests: pd.DataFrame, switches: pd.DataFrame, stats: dict):
        self.requests, self.switches, self.stats = requests, switches, stats


class BaseSim:
    """Shared plumbing: the kernel, cost cache and switch log."""

    def __init__(self, settings: Settings | None = None):
        self.s = settings or Settings()
        self.kernel = Kernel()
        self._costs: dict[str, ModelCosts] = {}
        self._by_ckpt: dict[str, ModelCosts] = {}
        self.switch_log: list[tuple] = []
        self.n_finished = 0

    def costs_of(self, model: str) -> ModelCosts:
        c = self._costs.get(model)
        if c is None:
            k = checkpoint(model, self.s.checkpoints)
            c = self._by_ckpt.get(k)
            if c is None:
                c = self._by_ckpt[k] = costs(k, self.s)
            self._costs[model] = c
        return c

    def switch(self, inst, cur: str | None, new: str, credit: float, now: float, nxt: str | None = None,
               prefetch: bool | None = None) -> float:
        """Latency of loading ``new`` on ``inst`` (logged)."""
        c = self.costs_of(new)
        full = c.switch_s
        pf = self.s.prefetch if prefetch is None else prefetch
        pf = pf and cur is not None and prefetch_fits(self.costs_of(cur), c, self.s)
        lat = max(self.s.min_switch_s, full - credit) if pf else full
        self.switch_log.append((now, inst.name, cur, new, c.key, lat, full, pf))
        return lat

    def finished(self, r: Req, now: float) -> None:
        self.n_finished += 1

    def _simulate(self, reqs: list[Req], who: str) -> None:
        """Feed ``reqs`` at their arrival times, run to the end, and check every one finished."""
        self.reqs = self.label(reqs)
        self.kernel.add_stream([r.arrival for r in reqs], self._arrive)
        self.kernel.run()
        left = [r for r in reqs if not r.done]
        if left:
            raise SimulationError(f"{who} ended with {len(left)} unfinished requests, e.g. {left[:3]}")

    def label(self, reqs: list[Req]) -> list[Req]:
        """Set each request's checkpoint from the settings' mapping."""
        for r in reqs:
            r.ckpt = checkpoint(r.model, self.s.checkpoints)
        return reqs

    @staticmethod
    def check_resident(inst, model: str) -> None:
        """Invariant: no model runs without its weights resident."""
        if inst.model != model:
            raise SimulationError(f"{inst.name}: runs {model} while {inst.model} is resident")

    def switches_table(self) -> pd.DataFrame:
        return pd.DataFrame(self.switch_log, columns=["time_s", "instance", "from_model", "to_model", "checkpoint",
                                                      "latency_s", "full_load_s", "prefetched"])


class AegaeonPool(BaseSim):
    def __init__(self, settings: Settings | None = None):
        super().__init__(settings)
        s = self.s
        n_nodes = s.n_nodes if s.layout == "parity" else 1
        per_p = s.prefill_per_node if s.layout == "parity" else s.prefill_per_node * s.n_nodes
        per_d = s.decode_per_node if s.layout == "parity" else s.decode_per_node * s.n_nodes
        self.prefill = [[PrefillInstance(f"n{n}p{i}", self) for i in range(per_p)] for n in range(n_nodes)]
        self.decode = [[DecodeInstance(f"n{n}d{i}", self) for i in range(per_d)] for n in range(n_nodes)]
        self.host = [SlabCache(s.slab_bytes, s.slabs_per_node, s.move_period_s) for _ in range(n_nodes)]
        self.kv_h2d_s = 0.0
        self.kv_d2h_s = 0.0
        self.reqs: list[Req] = []

    def _arrive(self, i: int) -> None:
        r = self.reqs[i]
        now = self.kernel.now
        r.node = r.mid % len(self.prefill)
        inst = dispatch(self.prefill[r.node], r, now, self.s.group_rule, self.s.max_gpsize)
        r.inst = inst.name
        inst.kick(now)

    def prefill_done(self, r: Req, now: float) -> None:
        if r.done:
            self.finished(r, now)
            return
        dt = self.costs_of(r.model).kv_bytes(r.ctx) / self.s.kv_bw  # device -> host after prefill
        self.to_host(r, now)
        r.kv_s += dt
        r.kv_wait_s += dt  # the request reaches decoding only when the copy ends
        self.kv_d2h_s += dt
        r.on_device = False
        self.kernel.at(now + dt, self._to_decode, r)

    def to_host(self, r: Req, now: float) -> None:
        c = self.costs_of(r.model)
        if c.kv_bytes_per_token <= 0:  # a cost model without KV (unit tests): nothing to hold
            return
        bt = self.s.kv_block_tokens
        self.host[r.node].alloc(r.rid, c.key, c.host_kv_bytes_per_token * bt, -(-r.ctx // bt), now)

    def from_host(self, r: Req, now: float) -> None:
        self.host[r.node].free(r.rid, now)

    def _to_decode(self, r: Req) -> None:
        now = self.kernel.now
        decs = self.decode[r.node]
        for inst in decs:
            if inst.try_join(r, now):
                r.inst = inst.name
                return
        inst = min(decs, key=lambda d: d.n_batches())
        r.inst = inst.name
        inst.add_new_batch(r, now)

    def run(self, reqs: list[Req]) -> PoolResult:
        self._simulate(reqs, "aegaeon pool")
        decs = [d for n in self.decode for d in n]
        stats = {"kv_h2d_s": self.kv_h2d_s, "kv_d2h_s": self.kv_d2h_s, "rounds": sum(d.rounds for d in decs),
                 "kv_evictions": sum(d.evictions for d in decs),
                 "host_cache": [h.report() for h in self.host],
                 "host_cache_overflow_blocks": sum(h.overflow_blocks for h in self.host),
                 "events": self.kernel.events_processed, "end_s": self.kernel.now}
        return PoolResult(to_table(reqs, self.s.control_step_s), self.switches_table(), stats)
