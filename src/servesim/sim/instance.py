"""One model replica (1..N GPUs) doing continuous batching, simulated exactly and fast.

An :class:`Instance` runs engine iterations back to back while it has work. At each iteration
boundary its scheduler policy (:mod:`servesim.sim.schedulers`) plans the next iteration; the
iteration's duration is ``step_model.step_time(prefill_tokens, prefill_ctx, decode_seqs,
decode_ctx)``; the clock advances by it.

Fast mode (default). When, after an iteration, the batch is all-decode and nothing can change it
by itself (no prefill chunk pending, the waiting head cannot be admitted, no finish), the
instance plans a *decode run*: the ``k`` iterations until the first request finishes or the KV
cache would run out, found in O(log n + block_size) from the decode set's finish heap and block
phase histogram. The run's durations come from ONE vectorised ``step_time`` call, its boundaries
from a sequential ``cumsum`` starting at the run's start (bit-identical to ``t += d`` one by one),
and it costs one event. An arrival or control action during a run truncates it at the first
boundary at or after that instant (where the iteration-by-iteration mode would plan next), and
:meth:`Instance.sync` applies the iterations already started, so anything observed mid-run
equals what reference mode shows. Reference mode (``mode="reference"``) plans every iteration
with the policy, with explicit per-request loops; the test suite checks both give identical
per-request results.

State semantics (same in both modes): an iteration's allocations, admissions and preemptions
happen when it is planned (its start); tokens it samples are stamped with its end time; requests
finishing in it leave the batch (and free their KV) at its end.

TBT: each instance logs the end time of every iteration that decodes. A request's decode stints
(ranges of those iterations) give its token gaps exactly; they are materialised as small arrays
when a stint closes (finish, preemption, swap-out), so TBT mean/max/p99 are exact in both modes
without per-token events. ``tbt_mean = (last_token - first_token) / (output - 1)``.

Hooks for the fleet layer and the papers' systems:
- ``role="prefill"``: requests leave after their prefill (first token) through
  ``listener.on_handoff`` (P/D disaggregation); a request submitted with ``kv_ready=True``
  (its KV arrives from elsewhere) skips its prefill and decodes at once.
- :meth:`switch_model`: swap the running requests' KV to host (or preempt them), load another
  model for ``load_s`` seconds, continue with that model's parked requests (swapping them in).
- :meth:`pause` / :meth:`resume`, :meth:`take_waiting`, :meth:`stop` for scaling and draining.
- :meth:`migrate_out` + ``submit(front=True)``: move a decoding request with its KV to another
  instance (live migration, :mod:`servesim.sim.migration`).
- ``tp``/``pp``/``hardware`` in :class:`InstanceConfig` describe the replica's shape; the
  step-time model passed in must have been built for that shape (the instance only holds it).
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from ..perf.base import StepTimeModel
from .kernel import PRIO_INSTANCE, Kernel, SimulationError
from .kvcache import FastDecodeSet, RefDecodeSet, cdiv
from .request import DROPPED, FINISHED, REJECTED, RUNNING, SWAPPED, TRANSFER, WAITING, Req
from .queue_orders import QueueOrdered, get_order
from .schedulers import SchedulerPolicy, get_policy

#: how a pp > 1 replica runs (InstanceConfig.pp_engines; servesim.sim.virtual_engines)
PP_ENGINES = ("lumped", "virtual")
#: longest decode run evaluated in one vectorised call (longer runs are chained exactly)
MAX_RUN = 1024
_AR = np.arange(MAX_RUN, dtype=np.int64)
# scratch inputs of the vectorised step_time call, shared by all instances (single-threaded;
# one shared set stays in CPU cache however many instances there are). Only index 0 of the
# prefill columns is ever written, so their tail stays zero.
_SCRATCH = tuple(np.zeros(MAX_RUN + 1, dtype=np.int64) for _ in range(4))
#: a decode run this short is timed by scalar calls: one array call costs tens of scalar ones in
#: numpy overhead, and by the StepTimeModel contract both give the same bits
SCALAR_RUN = 64

MODES = ("fast", "reference")
ROLES = ("both", "prefill", "decode")


@dataclass(frozen=True)
class InstanceConfig:
    """Static shape and engine limits of one replica.

    num_blocks: KV cache capacity in blocks of ``block_size`` tokens.
    max_num_seqs / max_num_batched_tokens: vLLM limits (``max_num_batched_tokens=None`` only for
      the ``orca`` policy: no token cap). max_model_len: longest prompt+output accepted
      (None: unlimited). policy / policy_options: scheduler (see ``schedulers``).
    queue_order / queue_order_options: the waiting queue's order (see ``queue_orders``; None: the
      policy's own, arrival order).
    model: the model served now. tp, pp, hardware: the replica's shape (informational here).
    pp_engines: how a pp > 1 replica runs (``servesim.sim.virtual_engines``): "lumped" (one
      scheduler, each iteration a barrier through the stages) or "virtual" (vLLM V0's pp virtual
      engines sharing the stages; the config's KV blocks and limits are the replica's totals).
    role: "both" | "prefill" | "decode" (P/D disaggregation).
    kv_bytes_per_token, host_bw: for KV swap costs (bytes, bytes/s); swap_latency_s: fixed part.
    """

    num_blocks: int
    block_size: int = 16
    max_num_seqs: int = 256
    max_num_batched_tokens: int | None = 8192
    max_model_len: int | None = None
    policy: str = "vllm-v1"
    policy_options: dict = field(default_factory=dict)
    queue_order: str | None = None
    queue_order_options: dict = field(default_factory=dict)
    model: str = "default"
    tp: int = 1
    pp: int = 1
    hardware: str | None = None
    role: str = "both"
    kv_bytes_per_token: float = 0.0
    host_bw: float = math.inf
    swap_latency_s: float = 0.0
    pp_engines: str = "lumped"

    def __post_init__(self) -> None:
        def bad(key, msg):
            raise ValueError(f"InstanceConfig.{key}={getattr(self, key)!r}: {msg}")
        for key in ("num_blocks", "block_size", "max_num_seqs", "tp", "pp"):
            v = getattr(self, key)
            if not isinstance(v, (int, np.integer)) or v < 1:
                bad(key, "must be a positive int")
        if self.max_num_batched_tokens is None:
            if self.policy != "orca":
                bad("max_num_batched_tokens", "None (no token cap) is only valid with policy 'orca'")
        elif self.max_num_batched_tokens < self.max_num_seqs and self.policy == "vllm-v1":
            bad("max_num_batched_tokens", f"must be >= max_num_seqs={self.max_num_seqs} (as vLLM requires)")
        elif self.max_num_batched_tokens < 1:
            bad("max_num_batched_tokens", "must be positive")
        if self.max_model_len is not None and self.max_model_len < 1:
            bad("max_model_len", "must be positive or None")
        if self.role not in ROLES:
            bad("role", f"must be one of {ROLES}")
        if self.pp_engines not in PP_ENGINES:
            bad("pp_engines", f"must be one of {PP_ENGINES}")
        if not self.kv_bytes_per_token >= 0:
            bad("kv_bytes_per_token", "must be >= 0")
        if not self.host_bw > 0:
            bad("host_bw", "must be > 0")
        get_policy(self.policy, **self.policy_options)  # validates name and options
        if self.queue_order is not None:
            get_order(self.queue_order, **self.queue_order_options)
        elif self.queue_order_options:
            bad("queue_order_options", "given without a queue_order")

    @property
    def gpus(self) -> int:
        """GPUs the replica occupies (tp * pp)."""
        return self.tp * self.pp

    @property
    def kv_capacity_tokens(self) -> int:
        return self.num_blocks * self.block_size


class InstanceListener:
    """What an instance tells its owner. Override what you need."""

    def on_done(self, inst: "Instance", r: Req) -> None:
        """``r`` reached a terminal state (finished, rejected, dropped) at ``inst.now``."""

    def on_preempt(self, inst: "Instance", r: Req) -> None:
        """``r`` was preempted (recompute: back at the head of ``inst``'s waiting queue, no KV),
        while the iteration at ``inst.now`` is being planned: change queues only from a later
        event (``kernel.at(now, ..., PRIO_CONTROL)``)."""

    def on_handoff(self, inst: "Instance", r: Req) -> None:
        """(role="prefill") ``r`` finished its prefill; its KV (``r.computed`` tokens) must now
        be sent to a decode instance (``submit`` it there with ``r.kv_ready`` True)."""
        raise SimulationError(f"instance {inst.name} has role=prefill but no hand-off listener")


class Instance:
    """One replica; see the module docstring. Create it, then :meth:`submit` requests.

    Public read-only state: ``name``, ``index``, ``cfg``, ``model``, ``num_waiting``,
    ``num_running``, ``outstanding`` (waiting + running + parked + swapped),
    :meth:`kv_used_blocks` / :meth:`kv_usage`, ``queued_prefill_tokens``, ``busy``.
    """

    __slots__ = (
        "kernel",
        "cfg",
        "step_model",
        "name",
        "index",
        "mode",
        "fast",
        "listener",
        "policy",
        "_reserved",
        "_role_prefill",
        "model",
        "num_blocks",
        "used",
        "ds",
        "waiting",
        "running",
        "prefilling",
        "parked",
        "_adm",
        "_chunks",
        "_dec",
        "busy",
        "_ver",
        "_wake",
        "_gen_end",
        "_finishing",
        "_handoffs",
        "_run",
        "_k",
        "_a",
        "_elog",
        "_e0",
        "_paused",
        "_blocked_until",
        "_stopped",
        "iterations",
        "events",
        "switches",
        "_on_event_cb",
        "_on_wake_cb",
        "_pending_ctl",
        "check_invariants",
        "_decode_runs",
    )

    def __init__(self, kernel: Kernel, cfg: InstanceConfig, step_model: StepTimeModel, *,
                 name: str = "i0", index: int = 0, mode: str = "fast",
                 listener: InstanceListener | None = None, decode_runs: bool = True) -> None:
        if mode not in MODES:
            raise ValueError(f"mode={mode!r} must be one of {MODES}")
        if not isinstance(step_model, StepTimeModel) and not callable(getattr(step_model, "step_time", None)):
            raise TypeError("step_model must provide step_time(prefill_tokens, prefill_ctx, decode_seqs, decode_ctx)")
        self.kernel = kernel
        self.cfg = cfg
        self.step_model = step_model
        self.name = name
        self.index = index
        self.mode = mode
        self.fast = mode == "fast"
        self.listener = listener or InstanceListener()
        self.policy: SchedulerPolicy = get_policy(cfg.policy, **cfg.policy_options)
        if cfg.queue_order is not None:
            self.policy = QueueOrdered(self.policy, get_order(cfg.queue_order, **cfg.queue_order_options))
        self._reserved = self.policy.reserves_full
        self._role_prefill = cfg.role == "prefill"
        self.model = cfg.model
        self.num_blocks = cfg.num_blocks
        self.used = 0
        self.ds = FastDecodeSet(cfg.block_size) if self.fast else RefDecodeSet(cfg.block_size)
        self.waiting: deque[Req] = deque()
        self.running: dict[Req, None] = {}
        self.prefilling: list[Req] = []
        self.parked: dict[str, deque[Req]] = {}
        self._adm = 0
        # planning scratch
        self._chunks: list = []
        self._dec = False
        # iteration / run in progress
        self.busy = False
        self._ver = 0
        self._wake = False
        self._gen_end = 0.0
        self._finishing: list[Req] = []
        self._handoffs: list[Req] = []
        self._run: np.ndarray | None = None
        self._k = 0
        self._a = 0
        # decode-iteration end-time log (for exact TBT): _elog[j] is the end of decode step
        # _e0 + j. Steps before every open stint's start are dropped when it fills (_log_ends), so
        # it stays as long as the longest stint instead of growing with the instance's lifetime
        # (8 B per decode iteration: GBs over a simulated week of a fleet).
        self._elog = np.empty(1024)
        self._e0 = 0
        # control state
        self._paused = False
        self._blocked_until = -math.inf
        self._stopped = False
        self.iterations = 0      # iterations executed (planned)
        self.events = 0          # instance events handled
        self.switches = 0         # model switches done
        self._on_event_cb = self._on_event
        self._pending_ctl: list | None = None
        #: run :meth:`check` after every event (tests; O(n) per event)
        self.check_invariants = False
        self._on_wake_cb = self._on_wake
        #: plan decode runs in fast mode (off for a virtual engine, whose step times depend on its
        #: siblings' micro-batches: servesim.sim.virtual_engines)
        self._decode_runs = decode_runs

    # ------------------------------------------------------------------ public queries
    @property
    def now(self) -> float:
        return self.kernel.now

    @property
    def num_waiting(self) -> int:
        return len(self.waiting)

    @property
    def num_running(self) -> int:
        return len(self.running)

    @property
    def outstanding(self) -> int:
        """Requests held here in any non-terminal state."""
        return len(self.waiting) + len(self.running) + sum(len(q) for q in self.parked.values())

    @property
    def free(self) -> int:
        return self.num_blocks - self.used

    def kv_used_blocks(self) -> int:
        """KV blocks in use now (applies the part of a decode run that has started)."""
        self.sync()
        return self.used

    def kv_usage(self) -> float:
        """Fraction of KV blocks in use now."""
        return self.kv_used_blocks() / self.num_blocks

    @property
    def queued_prefill_tokens(self) -> int:
        """Prompt (or recompute) tokens not yet computed: waiting queue + partial prefills."""
        return (sum(r.num_tokens - r.computed for r in self.waiting)
                + sum(r.num_tokens - r.computed for r in self.prefilling))

    def pending_decode_tokens(self, predicted: bool = False) -> int:
        """Output tokens still to be generated by the requests held here (any state).

        ``predicted``: count each request's predicted length ``r.pred`` (its true ``output``
        where none was given) instead of the true one, never below 0: what a router that may
        not know the true lengths sees."""
        self.sync()
        if predicted:
            tot = 0
            for r in self.running:
                if r.state == RUNNING:
                    tot += max(0, (r.pred if r.pred >= 0 else r.output) - self.generated(r))
            for r in self.waiting:
                tot += max(0, (r.pred if r.pred >= 0 else r.output) - r.generated)
            for q in self.parked.values():
                for r in q:
                    tot += max(0, (r.pred if r.pred >= 0 else r.output) - r.generated)
            return tot
        tot = self.ds.remaining()
        for r in self.running:
            if not r.dec and r.state == RUNNING:
                tot += r.output - r.generated
        for r in self.waiting:
            tot += r.output - r.generated
        for q in self.parked.values():
            for r in q:
                tot += r.output - r.generated
        return tot

    def engine_of(self, r: Req) -> "Instance":
        """The scheduler that holds ``r``: this instance (a virtual-engine replica has several)."""
        return self

    def generated(self, r: Req) -> int:
        """Output tokens ``r`` has sampled so far (counting the iteration in progress)."""
        self.sync()
        return self.ds.generated(r) if r.dec else r.generated

    # ------------------------------------------------------------------ submitting work
    def submit(self, r: Req, front: bool = False, by_arrival: bool = False) -> None:
        """Hand ``r`` to this instance at the current time (queued; joins at the next boundary).

        ``front``: queue it ahead of the waiting requests (a request migrated in with its KV,
        whose blocks the destination admits first, as Llumnix pre-allocates them).
        ``by_arrival``: queue it ahead of the waiting requests that arrived after it (a request
        taken back from another instance keeps its place in first-come-first-served order;
        :meth:`submit_by_arrival` does it for many at once).

        Requests that can never run here end ``rejected`` at once with a reason. A request for
        another model than the one loaded is parked until :meth:`switch_model` loads it.

        Call it from an arrival or control event (the fleet's router, a kernel callback with
        ``PRIO_ARRIVAL``/``PRIO_CONTROL``). From inside an instance callback (``on_done``,
        ``on_handoff``) schedule it with ``kernel.at(t, ..., PRIO_CONTROL)`` instead; then both
        modes agree unless ``t`` coincides exactly with this instance's iteration boundary.
        """
        cfg = self.cfg
        r.inst = self.index
        if self._stopped:
            return self._terminal(r, REJECTED, "instance stopped")
        if cfg.max_model_len is not None:
            if r.prompt > cfg.max_model_len:
                return self._terminal(r, REJECTED, f"prompt_tokens {r.prompt} > max_model_len {cfg.max_model_len}")
            if r.prompt + r.output > cfg.max_model_len:
                return self._terminal(r, REJECTED, f"prompt+output {r.prompt + r.output} > max_model_len {cfg.max_model_len}")
        reason = self.policy.never_fits(self, r)
        if reason:
            return self._terminal(r, REJECTED, reason)
        r.state = WAITING
        if r.model != self.model:
            self.parked.setdefault(r.model, deque()).append(r)
            return None
        if front:
            self.waiting.appendleft(r)
        elif by_arrival and self.waiting and self.waiting[-1].arrival > r.arrival:
            self._merge_waiting([r])
        else:
            self.waiting.append(r)
        self._poke()
        return None

    def submit_by_arrival(self, rs: list[Req]) -> None:
        """:meth:`submit` each of ``rs`` (in arrival order), each ahead of the waiting requests that
        arrived after it: one merge of the two queues (each keeps its own order)."""
        ok = []
        for r in sorted(rs, key=lambda r: r.arrival):
            n = len(self.waiting)
            self.submit(r)  # checks it, parks or rejects it, or appends it
            if len(self.waiting) > n:
                ok.append(self.waiting.pop())
        if ok:
            self._merge_waiting(ok)
            self._poke()

    def _merge_waiting(self, rs: list[Req]) -> None:
        """Merge ``rs`` (sorted by arrival) into the waiting queue by arrival: each goes ahead of
        the first waiting request (in queue order) that arrived after it."""
        out: deque[Req] = deque()
        i, n = 0, len(rs)
        for w in self.waiting:
            while i < n and rs[i].arrival < w.arrival:
                out.append(rs[i])
                i += 1
            out.append(w)
        out.extend(rs[i:])
        self.waiting.clear()
        self.waiting.extend(out)

    def _terminal(self, r: Req, state: int, reason: str) -> None:
        r.state = state
        r.reason = reason
        r.finish_t = self.kernel.now
        self.listener.on_done(self, r)

    # ------------------------------------------------------------------ event plumbing
    def _poke(self) -> None:
        """New work arrived now: wake up if idle; cut a decode run at the next boundary."""
        if not self.busy:
            if not self._wake and self.kernel.now >= self._blocked_until and not self._paused:
                self._wake = True
                self.kernel.at(self.kernel.now, self._on_wake_cb, None, PRIO_INSTANCE)
        elif self._k:
            self._truncate(self.kernel.now)

    def _on_wake(self, _arg: Any) -> None:
        self._wake = False
        if not self.busy and self.kernel.now >= self._blocked_until and not self._paused:
            self._plan()  # (held or paused since the wake-up was scheduled: the hold's end plans)

    def _truncate(self, t: float) -> None:
        """Keep only the run iterations that start before ``t``."""
        if t <= self._gen_end:
            m = 0
        else:
            m = 1 + int(np.searchsorted(self._run[: self._k - 1], t, side="left"))
        if m < self._k:
            self._k = m
            self._ver += 1
            end = self._run[m - 1] if m else self._gen_end
            self.kernel.at(float(end), self._on_event_cb, self._ver, PRIO_INSTANCE)

    def sync(self) -> None:
        """Apply the decode-run iterations that have started by now.

        "Started" matches the reference mode's event order: an iteration starting exactly now
        counts only once instance events at this instant are done (i.e. when called from an
        observer with priority after ``PRIO_INSTANCE``, or after the kernel stopped), not from an
        arrival or control event, which come first.
        """
        if not self._k:
            return
        kernel = self.kernel
        t = kernel.now
        if t < self._gen_end or (t == self._gen_end and kernel.prio <= PRIO_INSTANCE):
            return
        side = "right" if kernel.prio > PRIO_INSTANCE else "left"
        m = 1 + int(np.searchsorted(self._run[: self._k - 1], t, side=side))
        if m > self._a:
            self._apply(m - self._a)

    def _apply(self, m: int) -> None:
        ds = self.ds
        D = ds.D
        self.used += ds.demand_range(m)
        self._log_ends(D, self._run[self._a: self._a + m])
        ds.advance_many(m)
        self._a += m
        self.iterations += m

    def _log_ends(self, D: int, ends, leaving=()) -> None:
        """Log the end times of decode steps D, D+1, ... (``ends``); ``leaving``: requests already
        out of the decode set whose stints are still to be closed."""
        e0 = self._e0
        n = D + len(ends) - e0
        if n > len(self._elog):
            # full: keep only the steps from the earliest open stint's start on (closed stints
            # were materialised into their requests), and grow only if that is still over half
            lo = min(self.ds.min_d0(), D, *(r.d0 for r in leaving))
            lo = max(e0, lo)  # (min_d0 may come from a stale heap entry, below e0)
            keep = D - lo
            size = len(self._elog)
            if keep + len(ends) > size // 2:
                size = max(2 * size, keep + len(ends))
            new = np.empty(size)
            new[:keep] = self._elog[lo - e0: D - e0]
            self._elog = new
            self._e0 = e0 = lo
            n = D + len(ends) - e0
        self._elog[D - e0:n] = ends

    def _on_event(self, ver: int) -> None:
        if ver != self._ver:
            return
        self.events += 1
        now = self.kernel.now
        if self._k:
            if self._k > self._a:
                self._apply(self._k - self._a)
            done = self.ds.pop_finished()
            for r in done:
                self._close_stint(r)
                r.dec = False
            self._finishing.extend(done)
            self._k = 0
            self._run = None
        if self._finishing:
            fin = self._finishing
            self._finishing = []
            for r in fin:
                self.used -= r.held
                r.held = 0
                del self.running[r]
                self._finish(r, now)
        if self._handoffs:
            hand = self._handoffs
            self._handoffs = []
            for r in hand:
                self.used -= r.held
                r.held = 0
                del self.running[r]
                r.state = TRANSFER
                r.kv_ready = True
                self.listener.on_handoff(self, r)
        self.busy = False
        if self._pending_ctl:
            self._run_control()
        if now >= self._blocked_until and not self._paused:
            self._plan()
        if self.check_invariants:
            self.check()

    # ------------------------------------------------------------------ planning
    def _admit(self) -> Req:
        """Move the waiting head into the running batch (called by policies)."""
        r = self.waiting.popleft()
        self._adm += 1
        r.adm = self._adm
        r.state = RUNNING
        self.running[r] = None
        if r.sched_t != r.sched_t:  # NaN: first admission
            r.sched_t = self.kernel.now
        return r

    def _preempt(self, r: Req) -> None:
        """Recompute preemption of running request ``r`` (called by policies)."""
        del self.running[r]
        if r.dec:
            freed = self.ds.remove(r)
            self._close_stint(r)
            r.dec = False
        else:
            freed = r.held
            if r in self.prefilling:
                self.prefilling.remove(r)
        self.used -= freed
        r.held = 0
        r.computed = 0
        r.kv_ready = False
        r.preemptions += 1
        r.state = WAITING
        self.waiting.appendleft(r)
        self.listener.on_preempt(self, r)

    def _drop_head(self, reason: str) -> None:
        r = self.waiting.popleft()
        self._terminal(r, DROPPED, reason)

    def _close_stint(self, r: Req) -> None:
        """r leaves the decode set now: materialise its token gaps on this instance."""
        a = r.d0
        b = self.ds.D
        if b <= a:
            return
        seg = self._elog[a - self._e0:b - self._e0]
        g = np.empty(b - a)
        g[0] = seg[0] - r.last_t
        np.subtract(seg[1:], seg[:-1], out=g[1:])
        if r.stints is None:
            r.stints = [g]
        else:
            r.stints.append(g)
        r.last_t = float(seg[-1])

    def _finish(self, r: Req, now: float) -> None:
        r.state = FINISHED
        r.finish_t = now
        self.listener.on_done(self, r)

    def _plan(self) -> None:
        """Plan and start the next iteration at ``now`` (and, in fast mode, a decode run).

        The batch composition of the iteration (and of a following decode run) does not depend
        on its duration, so all state changes are made first; then one ``step_time`` call
        (scalar in reference mode, vectorised over 1 + run length in fast mode) gives the
        times, and token timestamps are filled in.
        """
        if self.busy:
            raise SimulationError(f"{self.name}: planning while busy")
        self._chunks.clear()
        self._dec = False
        self.policy.schedule(self)
        chunks = self._chunks
        ds = self.ds
        dec = self._dec
        if not chunks and not dec:
            return
        now = self.kernel.now
        self.iterations += 1
        pt = 0
        pc = 0
        n0 = ds.n if dec else 0
        dc = ds.ctx() if dec else 0
        for r, ntok in chunks:
            if r.kv_ready:
                n0 += 1
                dc += r.computed + 1
            else:
                pt += ntok
                pc += ntok * (r.computed + ntok)
        # --- state changes of this iteration (no times needed)
        fin = self._finishing
        D = ds.D
        done = ds.advance() if dec else ()
        toks = []
        prefilling = self.prefilling
        for r, ntok in chunks:
            r.computed += ntok
            if r.computed < r.num_tokens:
                if r not in prefilling:
                    prefilling.append(r)
                continue
            if prefilling and r in prefilling:
                prefilling.remove(r)
            if r.output == 0:
                fin.append(r)
                continue
            r.generated += 1
            r.kv_ready = False
            toks.append(r)
            if r.generated >= r.output:
                fin.append(r)
            elif self._role_prefill:
                self._handoffs.append(r)
            else:
                ds.add(r, self._reserved)
                r.dec = True
        k = 0
        if (self.fast and self._decode_runs and not done and not fin and not self._handoffs and not prefilling and ds.n
                and not self._pending_ctl and not self.policy.head_admissible(self)):
            k = min(ds.min_fin() - ds.D, ds.iterations_fitting(self.num_blocks - self.used), MAX_RUN)
        # --- times
        if self.fast and 0 < k < SCALAR_RUN:
            # the array branch below, unrolled: cumsum adds in this order too
            st = self.step_model.step_time
            n = ds.n
            c = ds.ctx()
            e = acc = now + float(st(pt, pc, n0, dc))
            run = [0.0] * k
            for i in range(k):
                acc += float(st(0, 0, n, c + i * n))
                run[i] = acc
            self._run = np.array(run)
            self._k = k
            self._a = 0
            end = acc
        elif self.fast and k > 0:
            PT, PC, NS, DC = _SCRATCH
            PT[0] = pt
            PC[0] = pc
            NS[0] = n0
            DC[0] = dc
            if k > 0:
                n = ds.n
                NS[1: k + 1] = n
                np.multiply(_AR[:k], n, out=DC[1: k + 1])
                DC[1: k + 1] += ds.ctx()
            k1 = k + 1
            dur = self.step_model.step_time(PT[:k1], PC[:k1], NS[:k1], DC[:k1])
            buf = np.empty(k + 2)
            buf[0] = now
            buf[1:] = dur
            buf.cumsum(out=buf)
            e = float(buf[1])
            self._run = buf[2:]
            self._k = k
            self._a = 0
            end = float(buf[k1])
        else:
            # one iteration (reference mode, or no decode run): the scalar call, bit-identical to
            # the array call by the StepTimeModel contract and ~10x cheaper; == cumsum([now, d])[1]
            e = now + float(self.step_model.step_time(pt, pc, n0, dc))
            end = e
        if not e > now:
            # a zero-time iteration would let the clock stall forever
            raise SimulationError(f"{self.name}: step_time gave {e - now!r} s for a non-empty batch")
        self._gen_end = e
        self.busy = True
        if dec:
            j = D - self._e0
            if j >= len(self._elog):
                self._log_ends(D, (e,), done)
            else:
                self._elog[j] = e
            for r in done:
                self._close_stint(r)
                r.dec = False
            fin.extend(done)
        for r in toks:
            if r.generated == 1:
                r.first_t = e
            elif r.gaps is None:
                r.gaps = [e - r.last_t]
            else:
                r.gaps.append(e - r.last_t)
            r.last_t = e
        self._ver += 1
        self.kernel.at(end, self._on_event_cb, self._ver, PRIO_INSTANCE)

    # ------------------------------------------------------------------ control hooks
    def _control(self, fn: Callable[[], None]) -> None:
        """Run ``fn`` at the next iteration boundary (now if idle)."""
        if not self.busy:
            fn()
            return
        if self._pending_ctl is None:
            self._pending_ctl = []
        self._pending_ctl.append(fn)
        if self._k:
            self._truncate(self.kernel.now)

    def _run_control(self) -> None:
        fns = self._pending_ctl
        self._pending_ctl = None
        for fn in fns:
            fn()

    def _block_for(self, seconds: float) -> None:
        """No iterations for ``seconds`` from now (switching, swapping); then continue."""
        t = self.kernel.now + seconds
        self._blocked_until = max(self._blocked_until, t)
        self.kernel.at(self._blocked_until, self._on_unblock, None, PRIO_INSTANCE)

    def _on_unblock(self, _arg: Any) -> None:
        if self.kernel.now >= self._blocked_until and not self.busy and not self._paused:
            self._plan()

    def hold_until(self, t: float) -> None:
        """Start no iteration before ``t`` (``math.inf``: until another ``hold_until`` or
        :meth:`release_hold`); work submitted meanwhile waits in the queue (an instance that is
        not up yet: ``Cluster.add_instance``, ``Cluster.hold``). Replaces an earlier hold."""
        if t <= self.kernel.now:
            return self.release_hold()
        self._blocked_until = float(t)
        if math.isfinite(t):
            self.kernel.at(float(t), self._on_unblock, None, PRIO_INSTANCE)
        return None

    def release_hold(self) -> None:
        """Lift :meth:`hold_until` now: start on the queued work."""
        if self._blocked_until > self.kernel.now:
            self._blocked_until = self.kernel.now
        if not self.busy:
            self._poke()

    def pause(self) -> None:
        """Stop starting iterations after the current one (requests stay queued)."""
        def do():
            self._paused = True
        self._control(do)

    def resume(self) -> None:
        """Undo :meth:`pause`."""
        self._paused = False
        if not self.busy:
            self._poke()

    def take_waiting(self) -> list[Req]:
        """Remove and return the requests not yet admitted (waiting + parked), e.g. to re-route
        them when this instance is scaled in. Their state is reset to NEW."""
        out = list(self.waiting)
        self.waiting.clear()
        for q in self.parked.values():
            out.extend(r for r in q if r.state != SWAPPED)
            kept = deque(r for r in q if r.state == SWAPPED)
            q.clear()
            q.extend(kept)
        for r in out:
            r.state = 0
            r.inst = -1
        return out

    def migrate_out(self, r: Req, then: Callable[[Req | None], None]) -> None:
        """Take decoding request ``r`` out of this instance at the next iteration boundary, with
        its KV state (live migration's last stage): its blocks are freed here, it leaves in state
        ``TRANSFER`` with ``kv_ready`` set and ``computed == prompt + generated - 1``, so that
        :meth:`submit` on another instance resumes its decoding without a prefill. ``then(r)``
        is called at that boundary, or ``then(None)`` when ``r`` is no longer decoding here by
        then (it finished, was preempted, or was never here)."""
        def do():
            self.sync()
            if r not in self.running or not r.dec:
                then(None)
                return
            self.ds.remove(r)
            if hasattr(self.ds, "purge"):
                self.ds.purge(r)
            self._close_stint(r)
            r.dec = False
            del self.running[r]
            self.used -= r.held
            r.held = 0
            r.state = TRANSFER
            r.kv_ready = True
            then(r)

        self._control(do)

    def stop(self, reason: str = "instance stopped") -> None:
        """Drop everything held here now (terminal state ``dropped``) and refuse new work."""
        self.sync()
        self._stopped = True
        self._ver += 1
        self._k = 0
        self.busy = False
        victims = list(self.running) + list(self.waiting)
        for q in self.parked.values():
            victims.extend(q)
        self.running.clear()
        self.waiting.clear()
        self.parked.clear()
        self.prefilling.clear()
        self._finishing = []
        self._handoffs = []
        for r in victims:
            if r.dec:
                self.ds.remove(r)
                r.dec = False
            self._terminal(r, DROPPED, reason)
        self.used = 0

    def swap_time(self, tokens: int) -> float:
        """Seconds to move ``tokens`` tokens of KV between GPU and host memory."""
        if tokens <= 0:
            return 0.0
        return self.cfg.swap_latency_s + tokens * self.cfg.kv_bytes_per_token / self.cfg.host_bw

    def switch_model(self, model: str, load_s: float, *, step_model: StepTimeModel | None = None,
                     num_blocks: int | None = None, preempt: str = "swap",
                     on_ready: Callable[["Instance"], None] | None = None) -> None:
        """Switch this instance to serve ``model`` (Aegaeon-style auto-scaling).

        At the next iteration boundary: running requests of the current model are swapped out to
        host memory (``preempt="swap"``: KV kept, costs :meth:`swap_time`) or preempted
        (``"recompute"``), and parked with the waiting ones; then the weights load for
        ``load_s`` seconds; then requests parked for ``model`` resume, swapped ones first (their
        swap-in time is paid before the first iteration). ``step_model`` / ``num_blocks`` replace
        the current ones when given. ``on_ready`` is called when the instance can run again.
        """
        if preempt not in ("swap", "recompute"):
            raise ValueError(f"preempt={preempt!r} must be 'swap' or 'recompute'")
        if not load_s >= 0:
            raise ValueError(f"load_s={load_s!r} must be >= 0")

        def do():
            self.sync()
            old = self.model
            park = self.parked.setdefault(old, deque())
            out_tokens = 0
            outgoing = list(self.running)
            for r in reversed(outgoing):
                if r.dec:
                    self.ds.remove(r)
                    self._close_stint(r)
                    r.dec = False
                elif r in self.prefilling:
                    self.prefilling.remove(r)
                del self.running[r]
                self.used -= r.held
                r.held = 0
                if preempt == "swap" and r.computed > 0:
                    out_tokens += r.computed
                    r.state = SWAPPED
                    r.kv_ready = r.computed == r.num_tokens - 1
                    if not r.kv_ready:  # a partial prefill: keep nothing, recompute it
                        r.computed = 0
                        r.state = WAITING
                else:
                    r.computed = 0
                    r.kv_ready = False
                    r.preemptions += 1
                    r.state = WAITING
                park.appendleft(r)
            # waiting requests of the old model go behind the running ones
            park.extend(self.waiting)
            self.waiting.clear()
            if self.used != 0:
                raise SimulationError(f"{self.name}: {self.used} KV blocks still used after switch-out")
            self.model = model
            if step_model is not None:
                self.step_model = step_model
            if num_blocks is not None:
                self.num_blocks = int(num_blocks)
            incoming = self.parked.pop(model, deque())
            in_tokens = 0
            for r in incoming:
                if r.state == SWAPPED:
                    in_tokens += r.computed
                    r.state = WAITING
                self.waiting.append(r)
            self.switches += 1
            delay = self.swap_time(out_tokens) + load_s + self.swap_time(in_tokens)
            self._block_for(delay)
            if on_ready is not None:
                self.kernel.at(self._blocked_until, lambda _a: on_ready(self), None, PRIO_INSTANCE)

        self._control(do)

    # ------------------------------------------------------------------ checking
    def check(self) -> None:
        """Raise SimulationError if an internal invariant is broken (tests; O(n)).

        KV conservation (blocks in use == blocks held by running requests), capacity bounds,
        decode-phase token accounting (computed == prompt + generated - 1, blocks held ==
        ceil(computed / block_size) unless reserved), queued requests hold nothing.
        """
        ds = self.ds
        bs = self.cfg.block_size
        held = 0
        ndec = 0
        for r in self.running:
            if r.dec:
                ndec += 1
                h = ds.held(r)
                c = ds.computed(r)
                g = ds.generated(r)
                if r in self.prefilling:
                    raise SimulationError(f"{self.name}: decoding request {r.rid} listed as prefilling")
                if c != r.prompt + g - 1 and not any(r is f for f in self._finishing):
                    raise SimulationError(f"{self.name}: request {r.rid} computed={c} prompt={r.prompt} generated={g}")
                if r.hkey != -1 and h != cdiv(c, bs):
                    raise SimulationError(f"{self.name}: request {r.rid} holds {h} blocks for {c} tokens")
                if not 0 < g < r.output + 1:
                    raise SimulationError(f"{self.name}: request {r.rid} generated={g} of {r.output}")
                held += h
            else:
                held += r.held
        for r in self.waiting:
            if r.held:
                raise SimulationError(f"{self.name}: waiting request {r.rid} holds {r.held} blocks")
        if held != self.used:
            raise SimulationError(f"{self.name}: used={self.used} but requests hold {held}")
        if not 0 <= self.used <= self.num_blocks:
            raise SimulationError(f"{self.name}: used={self.used} outside [0, {self.num_blocks}]")
        if ds.n != ndec:
            raise SimulationError(f"{self.name}: decode set has {ds.n} members, running has {ndec}")
