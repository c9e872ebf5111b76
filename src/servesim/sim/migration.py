"""Live request migration between a :class:`~servesim.sim.cluster.Cluster`'s instances (the
mechanism; *when* and *what* to migrate is a policy's choice, e.g. servesim.systems.oserve.llumnix).

A decoding request's KV moves in stages while it keeps decoding on its source (Llumnix's live
migration, Sun et al. OSDI'24 §4.3): stage 0 copies the KV it holds at the start; every further
stage copies the tokens it generated during the previous one. When a stage's increment is at most
``last_stage_tokens`` (or after ``max_stages`` stages) the last stage starts: at the source's next
iteration boundary the request leaves its batch (:meth:`Instance.migrate_out`), the last increment
is copied — the only time it does not decode — and it joins the head of the destination's queue
with its KV (``submit(front=True)``), resuming without a prefill.

Time of a stage = tokens x ``kv_bytes_per_token`` / ``bandwidth(src, dst)`` (bytes/s of the link).
The migration is abandoned, the request staying where it is, when it stops decoding on the source
before the last stage (finished or preempted: its KV is gone) or when the destination has fewer
free KV blocks than the request needs at the last stage. Every attempt is logged in ``records``
(bytes copied, stages, downtime, outcome); ``busy(j)`` says whether instance ``j`` takes part in
``max_per_instance`` of them now (default 1: a policy moves one request per instance at a time,
as Llumnix does). With more at once (a batched move, e.g. OServe's KV hand-over at a deployment
switch), copies on the same link (source, destination) queue behind each other: the link's
bandwidth is shared, not multiplied. ``on_end(record)`` is called when a migration ends, whatever
its outcome. A destination drained or stopped while the KV was on its way hands the request to
the cluster's router instead.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass

import pandas as pd

from .kernel import PRIO_ARRIVAL
from .kvcache import cdiv
from .request import TERMINAL, Req

OUTCOMES = ("migrated", "finished", "preempted", "no-room")


@dataclass
class MigrationRecord:
    rid: int
    src: int
    dst: int
    start_s: float
    end_s: float = float("nan")
    stages: int = 0            # copy stages, the last (blocking) one included
    tokens: int = 0            # KV tokens copied (all stages)
    bytes: float = 0.0
    downtime_s: float = 0.0    # the last stage: out of every batch
    outcome: str = ""


class LiveMigrator:
    """Moves decoding requests between ``cluster``'s instances (see the module docstring).

    kv_bytes_per_token: KV bytes of one token of the model (all layers).
    bandwidth: bytes/s of the link from instance ``src`` to ``dst`` (a number: every pair).
    """

    def __init__(self, cluster, kv_bytes_per_token: float, bandwidth: float | Callable[[int, int], float], *,
                 last_stage_tokens: int = 16, max_stages: int = 8, max_per_instance: int = 1,
                 on_end: Callable[[MigrationRecord], None] | None = None) -> None:
        if not kv_bytes_per_token > 0:
            raise ValueError(f"kv_bytes_per_token={kv_bytes_per_token!r} must be > 0")
        if last_stage_tokens < 0 or max_stages < 1 or max_per_instance < 1:
            raise ValueError("last_stage_tokens must be >= 0, max_stages and max_per_instance >= 1")
        self.cluster = cluster
        self.kv = float(kv_bytes_per_token)
        self._bw = bandwidth if callable(bandwidth) else (lambda s, d, b=float(bandwidth): b)
        self.last_stage_tokens = int(last_stage_tokens)
        self.max_stages = int(max_stages)
        self.max_per_instance = int(max_per_instance)
        self.on_end = on_end
        self.records: list[MigrationRecord] = []
        self.migrated: set[int] = set()   # request ids moved at least once
        self._busy: dict[int, int] = {}   # instance -> migrations it takes part in now
        self._link_free: dict[tuple[int, int], float] = {}  # (src, dst) -> when its queued copies end

    # ------------------------------------------------------------------ queries
    def busy(self, j: int) -> bool:
        """Instance ``j`` takes part in ``max_per_instance`` migrations now."""
        return self._busy.get(j, 0) >= self.max_per_instance

    def copy_s(self, tokens: int, src: int, dst: int) -> float:
        """Seconds to copy ``tokens`` tokens of KV from ``src`` to ``dst``."""
        return tokens * self.kv / self._bw(src, dst)

    def frame(self) -> pd.DataFrame:
        cols = list(MigrationRecord.__dataclass_fields__)
        return pd.DataFrame([asdict(r) for r in self.records], columns=cols)

    def summary(self) -> dict:
        """Counts and means over the migrations so far (a run summary's columns)."""
        mf = self.frame()
        ok = mf[mf.outcome == "migrated"]
        nan = float("nan")
        return {"migrations_started": len(mf), "migrations_done": len(ok), "migrations_aborted": int(len(mf) - len(ok)),
                "migrated_requests": len(self.migrated),
                "migration_gb": float(mf["bytes"].sum() / 1e9) if len(mf) else 0.0,
                "migration_downtime_mean_s": float(ok["downtime_s"].mean()) if len(ok) else nan,
                "migration_downtime_max_s": float(ok["downtime_s"].max()) if len(ok) else nan,
                "migration_copy_mean_s": float((ok["end_s"] - ok["start_s"]).mean()) if len(ok) else nan}

    # ------------------------------------------------------------------ mechanism
    def start(self, r: Req, src: int, dst: int) -> bool:
        """Begin moving ``r`` (decoding on instance ``src``: its first token sampled) to ``dst`` now;
        False (nothing done) when either instance is busy migrating or ``r`` is not decoding on ``src``."""
        insts = self.cluster.instances
        if src == dst or self.busy(src) or self.busy(dst):
            return False
        s = insts[src]
        kernel = self.cluster.kernel
        if r.inst != src or r not in s.running or not r.dec or not r.first_t <= kernel.now:
            return False  # not decoding there (a prefill under way has no KV to copy yet)
        rec = MigrationRecord(int(r.rid), src, dst, kernel.now)
        self.records.append(rec)
        for j in (src, dst):
            self._busy[j] = self._busy.get(j, 0) + 1
        ctx = r.prompt + s.generated(r) - 1  # KV tokens it holds now
        self._stage(r, rec, ctx, 0, r.preemptions)
        return True

    def _stage(self, r: Req, rec: MigrationRecord, tokens: int, copied: int, preempts: int) -> None:
        """Copy ``tokens`` more tokens (``copied`` done) while ``r`` keeps decoding."""
        rec.stages += 1
        rec.tokens += tokens
        rec.bytes += tokens * self.kv
        t, _ = self._copy(tokens, rec.src, rec.dst)
        self.cluster.kernel.at(t, lambda _: self._after_stage(r, rec, copied + tokens, preempts), None, PRIO_ARRIVAL)

    def _copy(self, tokens: int, src: int, dst: int) -> tuple[float, float]:
        """(end time, seconds from now) of a copy of ``tokens`` tokens started now on the link
        ``src -> dst``, behind the copies already queued on it."""
        now = self.cluster.kernel.now
        d = self.copy_s(tokens, src, dst)
        free = self._link_free.get((src, dst), now)
        if free > now:
            t = free + d
            d = t - now
        else:
            t = now + d
        self._link_free[(src, dst)] = t
        return t, d

    def _after_stage(self, r: Req, rec: MigrationRecord, copied: int, preempts: int) -> None:
        s = self.cluster.instances[rec.src]
        if r.inst != rec.src or r not in s.running or not r.dec or r.preemptions != preempts:
            return self._end(rec, "finished" if r.state in TERMINAL else "preempted")
        held = r.prompt + s.generated(r) - 1
        new = held - copied
        if new > self.last_stage_tokens and rec.stages < self.max_stages:
            return self._stage(r, rec, new, copied, preempts)
        d = self.cluster.instances[rec.dst]
        need = cdiv(held + 2, d.cfg.block_size)  # its KV and the next token's (what is known, not its length)
        if d.num_blocks - d.kv_used_blocks() < need:
            return self._end(rec, "no-room")
        s.migrate_out(r, lambda got: self._last_stage(got, rec, copied))

    def _last_stage(self, r: Req | None, rec: MigrationRecord, copied: int) -> None:
        """``r`` has left the source's batch (None: it finished at that boundary)."""
        if r is None:
            return self._end(rec, "finished")
        cl = self.cluster
        cl._release(rec.src, r)
        cl._in_transfer[r.idx] = r
        left = r.computed - copied
        rec.stages += 1
        rec.tokens += left
        rec.bytes += left * self.kv
        t, rec.downtime_s = self._copy(left, rec.src, rec.dst)
        cl.kernel.at(t, lambda _: self._deliver(r, rec), None, PRIO_ARRIVAL)

    def _deliver(self, r: Req, rec: MigrationRecord) -> None:
        cl = self.cluster
        del cl._in_transfer[r.idx]
        self.migrated.add(int(r.rid))
        if cl.is_drained(rec.dst) or rec.dst in cl._draining:  # it left meanwhile: route it afresh
            self._end(rec, "migrated")
            cl._route(cl.decode_router or cl.router, r)
            return
        load = cl.loads[rec.dst]
        load.outstanding += 1
        load.pending_tokens += r.prompt + 1
        cl.router.update(load)
        self._end(rec, "migrated")
        cl.instances[rec.dst].submit(r, front=True)

    def _end(self, rec: MigrationRecord, outcome: str) -> None:
        rec.outcome = outcome
        rec.end_s = self.cluster.kernel.now
        for j in (rec.src, rec.dst):
            self._busy[j] -= 1
            if not self._busy[j]:
                del self._busy[j]
        if self.on_end is not None:
            self.on_end(rec)
