"""Decoding instances: weighted round-robin turns (§4.3, Algorithm 2, Eq. 2-3), as the artifact runs them.

- A round starts by re-batching every request on the instance in FCFS (arrival) order: each joins
  the first same-model batch that fits (sum of ceil((len + 64) / 16) KV blocks <= the GPU's KV
  blocks for that model), else opens a batch; batches are then ordered by model (same model adjacent).
- Each batch gets quota q_i (Eq. 2-3 via `wrr.quotas`) from its estimated step time at the current
  lengths and c = the sum of the scheduler's switch estimates over the distinct models of the round.
- A turn switches model if needed (actual load time, with the prefetch credit), swaps the batch's
  KV in (bytes / bandwidth), runs a first step, then starts the quota clock; it ends at the first
  step that ends at or past the quota, or when the batch empties. At turn end the batch's KV goes
  back to the host unless it is the instance's only batch.
- KV swap-in (``Settings.kv_sync``): ``"per-request"`` (§5.3) copies the batch's requests one after
  another on the instance's one copy stream, in FCFS order, and a step runs the requests whose KV
  has arrived (the first step starts when the first one is resident); ``"batch"`` waits for the
  whole batch before the first step (the authors' simulator).
- KV re-check (``Settings.kv_recheck``): ``"step"`` fits the batch's resident KV (its context plus
  the token the step adds, per request) in the GPU's blocks before every step; where it does not
  fit, the requests admitted last are swapped out (bandwidth, as a turn's end) and wait for the next
  round in a batch of their own. ``"admission"`` checks only when a batch is formed or joined.
- A request arriving mid-round joins a same-model batch that fits (any of the round's batches) and
  is decoded from that batch's next step after its own KV swap-in; otherwise it opens a batch that
  waits for the next round.
"""

from __future__ import annotations

import math

from .request import Req
from .wrr import quotas

#: repeat an unchanged step without rescanning its batch (False: always rescan; the tests compare)
REPEAT_STEPS = True


class Batch:
    __slots__ = ("model", "reqs", "quota")

    def __init__(self, model: str):
        self.model = model
        self.reqs: list[Req] = []
        self.quota = 0.0

    def live(self) -> list[Req]:
        return [r for r in self.reqs if not r.done]


class DecodeInstance:
    def __init__(self, name: str, pool):
        self.name, self.pool = name, pool
        self.batches: list[Batch] = []   # this round's work list
        self.pending: list[Batch] = []   # batches opened mid-round, run from the next round
        self.turn = -1                   # index into batches of the running turn (-1: no round)
        self.model: str | None = None
        self.credit = 0.0
        self.quota_start: float | None = None
        self.active = False              # a round is in progress (a step or switch is scheduled)
        self.rounds = 0
        self.alphas: list[float] = []
        self.busy_until = 0.0            # end of the in-flight step (or of the turn's switch + swap-in)
        self.h2d_free = 0.0              # when the copy stream is free (kv_sync="per-request")
        self.recheck = pool.s.kv_recheck == "step"
        self._bt = pool.s.kv_block_tokens
        self._control_s = pool.s.control_step_s  # before every step (a what-if; 0 by default)
        self.evictions = 0               # requests swapped out mid-turn by the KV re-check
        self._caps: dict[str, float] = {}  # model -> KV blocks of this GPU
        # the last step's active requests and their context, while every live request of the
        # running batch is in it: the next step is then the same requests one token longer
        # (`_step_done` skips the rescan). `_joins` counts the round's batch changes (a join)
        self._run: tuple | None = None
        self._joins = 0

    # -- admission --------------------------------------------------------------------------------
    def blocks(self, r: Req) -> int:
        s = self.pool.s
        return math.ceil((r.ctx + s.kv_lookahead_tokens) / s.kv_block_tokens)

    def cap(self, model: str) -> float:
        """The GPU's KV blocks for ``model`` (unbounded for a cost model without KV: unit tests)."""
        c = self._caps.get(model)
        if c is None:
            costs = self.pool.costs_of(model)
            c = costs.kv_blocks_capacity(self.pool.s.kv_block_tokens) if costs.kv_bytes_per_token > 0 else math.inf
            self._caps[model] = c
        return c

    def fits(self, b: Batch, r: Req) -> bool:
        cap = self.cap(r.model)
        return sum(self.blocks(x) for x in b.reqs if not x.done) + self.blocks(r) <= cap

    def n_batches(self) -> int:
        return sum(1 for b in self.batches if b.live()) + len(self.pending)

    def try_join(self, r: Req, now: float) -> bool:
        """Join a same-model batch of this round that fits (Alg. 2 arrival)."""
        for k, b in enumerate(self.batches):
            if b.model == r.model and b.live() and self.fits(b, r):
                b.reqs.append(r)
                self._joins += 1
                if self.active and k == self.turn:
                    self._swap_in([r], now)  # joins the running turn after its own swap-in, which
                    # overlaps the in-flight step or switch: only what outlasts it is waited for
                    r.kv_wait_s += max(0.0, r.dev_ready - max(now, self.busy_until))
                return True
        for b in self.pending:  # a batch opened earlier this round, waiting for the next
            if b.model == r.model and self.fits(b, r):
                b.reqs.append(r)
                return True
        return False

    def add_new_batch(self, r: Req, now: float, start: bool = True) -> None:
        """Open a batch for ``r``; an idle instance starts a round (``start=False`` defers it, so
        several batches can enter one round)."""
        b = Batch(r.model)
        b.reqs.append(r)
        self.pending.append(b)
        if start and not self.active:
            self._start_round(now)

    def start(self, now: float) -> None:
        if not self.active:
            self._start_round(now)

    # -- rounds and turns -------------------------------------------------------------------------
    def _start_round(self, now: float) -> None:
        pool = self.pool
        reqs = [r for b in self.batches + self.pending for r in b.reqs if not r.done]
        reqs.sort(key=lambda r: (r.arrival, r.rid))
        batches: list[Batch] = []
        for r in reqs:
            for b in batches:
                if b.model == r.model and self.fits(b, r):
                    b.reqs.append(r)
                    break
            else:
                b = Batch(r.model)
                b.reqs.append(r)
                batches.append(b)
        batches.sort(key=lambda b: (b.reqs[0].mid, b.model))
        self.batches, self.pending = batches, []
        if not batches:
            self.active, self.turn = False, -1
            return
        s = pool.s
        steps = [pool.costs_of(b.model).decode_s(len(b.reqs), sum(r.ctx for r in b.reqs)) for b in batches]
        c = sum(pool.costs_of(m).c_est_s for m in dict.fromkeys(b.model for b in batches))
        q = quotas(steps, s.tbt_s, c, s.q_max_s, s.alpha_floor)
        for b, qi in zip(batches, q.quota_s):
            b.quota = float(qi)
        self.alphas.append(q.alpha)
        self.rounds += 1
        self.active = True
        self.turn = 0
        self._begin_turn(now)

    def _swap_in(self, reqs: list[Req], now: float) -> float:
        """KV host -> device for requests not resident; returns the transfer time. Per-request
        sync queues the copies on the instance's copy stream (each request ready when its own copy
        ends); the batch reading times each copy from ``now`` and the caller waits for their sum."""
        pool = self.pool
        stream = pool.s.kv_sync == "per-request"
        start = max(now, self.h2d_free) if stream else now
        byts = 0.0
        for r in reqs:
            if not r.on_device:
                pool.from_host(r, now)
                dt = pool.costs_of(r.model).kv_bytes(r.ctx) / pool.s.kv_bw
                r.kv_s += dt
                byts += dt
                r.dev_ready = start + byts if stream else now + dt
                r.on_device = True
        if stream:
            self.h2d_free = start + byts
        pool.kv_h2d_s += byts
        return byts

    def _swap_out(self, r: Req, now: float) -> None:
        """KV device -> host cache; the copy overlaps (T3): it costs bandwidth, not time."""
        pool = self.pool
        pool.to_host(r, now)
        dt = pool.costs_of(r.model).kv_bytes(r.ctx) / pool.s.kv_bw
        r.kv_s += dt
        pool.kv_d2h_s += dt
        r.on_device = False

    def _begin_turn(self, now: float) -> None:
        while self.turn < len(self.batches) and not self.batches[self.turn].live():
            self.turn += 1
        if self.turn >= len(self.batches):
            self._start_round(now)
            return
        b = self.batches[self.turn]
        pool = self.pool
        sw = 0.0
        if b.model != self.model:
            nxt = next((x.model for x in self.batches[self.turn + 1:] + self.batches[:self.turn]
                        if x.model != b.model and x.live()), None)
            sw = pool.switch(self, self.model, b.model, self.credit, now, nxt)
            self.model, self.credit = b.model, 0.0
        t = now + sw
        live = b.live()
        for r in live:
            r.switch_wait_s += sw
        was = {r.rid: r.dev_ready for r in live}  # a request that joined the last turn may still be swapping in
        si = self._swap_in(live, t)
        if pool.s.kv_sync == "per-request":  # each waits for its own copy; the step starts with the first
            for r in live:
                r.kv_wait_s += max(0.0, r.dev_ready - max(t, was[r.rid]))  # the part not counted at the join
            first = max(t, min(r.dev_ready for r in live))
        else:  # whole batch swap-in before its first step
            for r in live:
                r.kv_wait_s += max(0.0, t + si - max(t, was[r.rid]))  # the part of it not counted at the join
                r.dev_ready = max(t + si, was[r.rid])
            first = t + si
        self.quota_start = None
        self.busy_until = first
        pool.kernel.at(first, self._step, None)

    def _step(self, _=None) -> None:
        # the hot loop of every Aegaeon sweep (about 1.4 M steps in a quick 10-point sweep): one pass
        # over the batch, `Req.done` and `Req.ctx` written out inline
        pool = self.pool
        now = pool.kernel.now
        b = self.batches[self.turn]
        act = []
        first_wait = math.inf  # earliest swap-in still under way
        ctx = 0
        n_wait = ctx_wait = 0  # live requests whose KV is still arriving
        for r in b.reqs:
            n = len(r.tokens)
            if r.failed or n >= r.output:
                continue
            if r.dev_ready <= now:
                act.append(r)
                ctx += r.prompt + n
            else:
                n_wait += 1
                ctx_wait += r.prompt + n
                if r.dev_ready < first_wait:
                    first_wait = r.dev_ready
        # the running batch's live requests are all resident or arriving; an upper bound of their
        # blocks after this step, sum(ceil((c + 1) / bt)) <= (sum(c) + n) / bt + n, keeps the exact
        # count (`_fit_kv`) off the hot path until it is near the GPU's capacity
        n_on = len(act) + n_wait
        if (self.recheck and n_on and (ctx + ctx_wait + n_on) / self._bt + n_on
                > (self._caps.get(b.model) or self.cap(b.model))):
            if self._fit_kv(b, now):
                self._step()
                return
        if not act:
            if first_wait < math.inf:  # only requests still swapping in: wait for the first
                pool.kernel.at(first_wait, self._step, None)
                return
            self._end_turn(now)
            return
        pool.check_resident(self, b.model)
        self._run = (act, ctx, self._joins, b) if not n_wait else None
        self._launch(b, act, ctx, now)

    def _launch(self, b: Batch, act: list[Req], ctx: int, now: float) -> None:
        dt = self.pool.costs_of(b.model).decode_s(len(act), ctx)
        for r in act:
            r.in_step = True
        end = now + self._control_s + dt  # the control plane's dispatch, then the step
        self.busy_until = end
        self.pool.kernel.at(end, self._step_done, (act, dt))

    def _fit_kv(self, b: Batch, now: float) -> bool:
        """The KV re-check: swap out the resident requests admitted last until the rest, each with
        the token this step adds, fit the GPU; they wait in a batch of their own for the next round.
        A lone request that cannot fit is failed as ``rejected``. True if anything left the batch."""
        bt = self._bt
        cap = self.cap(b.model)
        on = [r for r in b.reqs if r.on_device and not r.done]
        need = sum(-(-(r.ctx + 1) // bt) for r in on)
        if need <= cap:
            return False
        out: list[Req] = []
        while need > cap and len(on) > 1:
            r = on.pop()  # b.reqs is in admission order: the last admitted goes first
            need -= -(-(r.ctx + 1) // bt)
            out.append(r)
        if need > cap:  # one request alone outgrows the GPU: it can never run here
            r = on.pop()
            r.fail("rejected", f"context of {r.ctx} tokens outgrows the decode GPU's {cap} KV blocks")
            r.on_device = False
            return True
        for r in out:
            b.reqs.remove(r)
            self._swap_out(r, now)
        self.evictions += len(out)
        nb = Batch(b.model)
        nb.reqs = out[::-1]
        self.pending.append(nb)
        return True

    def _step_done(self, arg) -> None:
        act, dt = arg
        pool = self.pool
        now = pool.kernel.now
        self.credit += self._control_s + dt
        ended = False
        for r in act:
            r.in_step = False
            r.exec_s += dt
            tk = r.tokens
            tk.append(now)
            if r.failed or len(tk) >= r.output:  # r.done
                pool.finished(r, now)
                ended = True
        b = self.batches[self.turn]
        if self.quota_start is None:
            self.quota_start = now  # the quota clock starts after the turn's first step
            expired = b.quota <= 0
        else:
            expired = now - self.quota_start >= b.quota
        if expired or (ended and all(r.failed or len(r.tokens) >= r.output for r in b.reqs)):  # none live
            self._end_turn(now)
            return
        run = self._run
        if REPEAT_STEPS and not ended and run is not None and run[0] is act and run[2] == self._joins and run[3] is b:
            # nothing joined, left or ended: _step would find these requests, each one token longer
            n = len(act)
            ctx = run[1] + n
            if not (self.recheck and (ctx + n) / self._bt + n > self._caps[b.model]):
                self._run = (act, ctx, run[2], b)
                self._launch(b, act, ctx, now)
                return
        self._step()

    def _end_turn(self, now: float) -> None:
        b = self.batches[self.turn]
        if self.n_batches() > 1:
            for r in b.reqs:
                if r.on_device and not r.done:
                    self._swap_out(r, now)
                r.on_device = False
        self.quota_start = None
        self.turn += 1
        self._begin_turn(now)
