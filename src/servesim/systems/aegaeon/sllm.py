"""The request-level baselines as the artifact simulated them (spec aegaeon §2): ServerlessLLM and
ServerlessLLM+.

Both run ``sllm_workers`` (16) GPU workers, no prefill/decode split, one resident model each.
A worker serves the front of its queue: if the front request's model is not resident it swaps
(weights / load_bw, no prefetch, no init cost) and every request in its queue loses its KV
(recomputed later: its "prefill" then covers prompt + tokens so far and yields the next token);
otherwise it batches the consecutive same-model requests at the front (vLLM-like, prefills
first: a step runs the batch's prefills if it has any, else its decodes; KV capacity by the rule
Aegaeon's instances get, ``vram_fraction`` x GPU memory - weights, over the KV bytes per token
(``Settings.sllm_kv``; the authors' simulator's (GPU memory - weights) x 0.8 is the reading
``ae``); requests left out lose their KV). A request whose
first token has not been produced, and that is not in the running step, ``sllm_timeout_s`` (15 s)
after arrival fails and counts 0 (the artifact checks this lazily at the next arrival).

- ``policy="sllm"`` (R = 1, QS = 4): a request goes to the worker whose queue tail has the fewest
  (< QS) requests of its model; if no such slot exists, to an idle/empty worker or else the least
  recently used worker of another model, behind its whole queue (head-of-line blocking).
- ``policy="sllm_plus"``: oracle-length SRTF. A request joins a same-model batch (< QS) on any
  worker, else a new batch on the worker with the fewest batches; at every arrival each worker's
  batches are reordered by estimated remaining time (prefill: its prefill time; decode: the step
  time at mid-context times the remaining tokens of the batch's first request).
"""

from __future__ import annotations

import math

from ...catalog import kv_capacity
from ...sim.kernel import SimulationError
from .pool import BaseSim, PoolResult
from .request import Req, to_table

POLICIES = ("sllm", "sllm_plus")
#: repeat an unchanged decode step without a new kick (False: always kick; the tests compare)
REPEAT_STEPS = True


class Worker:
    def __init__(self, name: str, sim: "SllmSim"):
        self.name, self.sim = name, sim
        self.model: str | None = None
        self.queue: list[Req] = []
        self.last_batch = 0.0
        self.busy = False
        # set when a request of this queue may have ended (finished, timed out, rejected): `live`
        # filters only then, not at each of the millions of steps a saturated sweep takes
        self.stale = False
        # the decode batch of the running step, its context and `epoch` at the kick that chose
        # it; `epoch` counts this queue's changes (placement, reorder, a failure), so while it
        # holds and nobody finished, the next kick would pick the same batch one token longer
        self.epoch = 0
        self._dec: tuple | None = None

    def live(self) -> list[Req]:
        if self.stale:
            self.queue = [r for r in self.queue if not r.done]
            self.stale = False
        return self.queue

    def kick(self, now: float) -> None:
        if self.busy:
            return
        q = self.live()
        sim = self.sim
        while q:
            head = q[0]
            if head.model != self.model:
                for r in q:  # a swap drops every queued request's KV (recompute)
                    r.preemptions += r.on_device
                    r.on_device = False
                lat = sim.switch(self, self.model, head.model, 0.0, now, prefetch=False)
                for r in q:
                    if r.model == head.model:
                        r.switch_wait_s += lat
                self.model = head.model
                self.busy = True
                sim.kernel.at(now + lat, self._wake, None)
                return
            c = sim.costs_of(self.model)
            cap = sim.kv_tokens(self.model)
            pre, dec = [], []
            acc = acc_b = n = 0
            model = self.model
            for r in q[: sim.s.sllm_max_batch]:
                if r.model != model:
                    break
                st = r.prompt + len(r.tokens)  # r.ctx
                sb = 1 if r.on_device else st
                if acc + st > cap or acc_b + sb > cap:
                    break
                acc += st
                acc_b += sb
                n += 1
                (dec if r.on_device else pre).append(r)
            if not n:  # the head alone exceeds the KV capacity: it can never run
                head.fail("rejected", f"context of {head.ctx} tokens exceeds the worker's KV capacity ({cap} tokens)")
                sim.n_failed += 1
                self.stale = True
                self.epoch += 1
                q = self.live()
                continue
            for r in q[n:]:  # the batch is q[:n]: every other request holding KV loses it
                if r.on_device:
                    r.preemptions += 1
                    r.on_device = False
            run = pre if pre else dec
            sim.check_resident(self, run[0].model)
            if pre:
                dt = c.prefill_batch_s([r.ctx for r in pre])
                self._dec = None
            else:
                ctx = sum(r.ctx for r in dec)
                dt = c.decode_s(len(dec), ctx)
                self._dec = (dec, ctx, cap, c, self.epoch)
            for r in run:
                r.in_step = True
                if not r.started:
                    r.started, r.prefill_start = True, now
                r.exec_s += dt
            self.busy = True
            sim.kernel.at(now + dt, self._done, run)
            return

    def _wake(self, _) -> None:
        self.busy = False
        self.kick(self.sim.kernel.now)

    def _done(self, run: list[Req]) -> None:
        now = self.sim.kernel.now
        ended = False
        for r in run:
            r.in_step = False
            tk = r.tokens
            tk.append(now)
            r.on_device = True
            if r.failed or len(tk) >= r.output:  # r.done
                self.stale = True
                ended = True
                self.sim.finished(r, now)
        self.last_batch = now
        d = self._dec
        if REPEAT_STEPS and not ended and d is not None and d[0] is run and d[4] == self.epoch:
            # kick would pick this batch again: the queue is as it was, every request still decodes,
            # and its context grew by one token each (the batch's prefix sums stay under the KV
            # capacity while its total does; the request after it stays out for the reason it was)
            n = len(run)
            ctx = d[1] + n
            if ctx <= d[2]:
                dt = d[3].decode_s(n, ctx)
                for r in run:
                    r.in_step = True
                    r.exec_s += dt
                self._dec = (run, ctx, d[2], d[3], d[4])
                self.sim.kernel.at(now + dt, self._done, run)
                return
        self.busy = False
        self.kick(now)


class SllmSim(BaseSim):
    def __init__(self, settings=None, policy: str = "sllm"):
        super().__init__(settings)
        if policy not in POLICIES:
            raise ValueError(f"sllm: policy={policy!r}; expected one of {POLICIES}")
        self.policy = policy
        self.workers = [Worker(f"w{i}", self) for i in range(self.s.sllm_workers)]
        self._worker = {w.name: w for w in self.workers}  # r.inst -> the worker whose queue holds r
        self.reqs: list[Req] = []
        self.n_failed = 0
        self._kv_tokens: dict[str, int] = {}
        self._prefill_s: dict[tuple, float] = {}  # (requests of a prefill batch) -> its step time

    def kv_tokens(self, model: str) -> int:
        k = self._kv_tokens.get(model)
        if k is None:
            c = self.costs_of(model)
            if self.s.sllm_kv == "pool":  # the rule Aegaeon's instances get (ModelCosts.kv_blocks_capacity), in tokens
                k = kv_capacity(c.usable_bytes, c.weight_bytes, c.kv_bytes_per_token, fraction=1.0, fraction_of="total")
            else:  # the authors' simulator: sllm_kv_fraction of the memory the weights leave
                k = kv_capacity(c.gpu_bytes, c.weight_bytes, c.kv_bytes_per_token,
                                fraction=self.s.sllm_kv_fraction, fraction_of="free")
            self._kv_tokens[model] = k
        return k

    # -- placement ----------------------------------------------------------------------------------
    def _place_sllm(self, r: Req) -> None:
        s = self.s
        states = []
        for w in self.workers:
            q = w.live()
            m = w.model if not q else q[-1].model
            n = 0
            for x in reversed(q):
                if x.model != m:
                    break
                n += 1
            states.append((w, m, n))
        slots = sum(max(0, s.sllm_qs - n) for _, m, n in states if m == r.model)
        if slots < s.sllm_r:
            target, lru = None, math.inf
            for w, m, _ in states:
                if m is None:
                    target = w
                    break
                if m == r.model:
                    continue
                if w.last_batch < lru:
                    target, lru = w, w.last_batch
            if target is not None:
                target.queue.append(r)
                target.epoch += 1
                r.inst = target.name
                return
        best = min(((n, i) for i, (w, m, n) in enumerate(states) if m == r.model), default=None)
        if best is None:
            raise SimulationError(f"sllm: no worker for {r}")
        w = states[best[1]][0]
        w.queue.append(r)
        w.epoch += 1
        r.inst = w.name

    def _place_plus(self, r: Req) -> None:
        qs = self.s.sllm_qs
        batched = {}
        for w in self.workers:
            # a request joins the first batch of its model with room; batches of a model fill in
            # order, so that is the one opened last (`open_`), if it still has room
            bs: list[list[Req]] = []
            open_: dict[str, list[Req]] = {}
            for x in w.live():
                b = open_.get(x.model)
                if b is not None and len(b) < qs:
                    b.append(x)
                else:
                    b = open_[x.model] = [x]
                    bs.append(b)
            batched[w] = bs
        placed = False
        for w in self.workers:
            for b in batched[w]:
                if b[0].model == r.model and len(b) < qs:
                    b.append(r)
                    r.inst = w.name
                    placed = True
                    break
            if placed:
                break
        if not placed:
            w = min(self.workers, key=lambda w: len(batched[w]))
            batched[w].append([r])
            r.inst = w.name
        for w, bs in batched.items():
            bs.sort(key=self._remaining_s)
            w.queue = [x for b in bs for x in b]
            w.epoch += 1

    def _remaining_s(self, b: list[Req]) -> float:
        c = self.costs_of(b[0].model)
        pre = tuple(x for x in b if not x.on_device)
        if pre:
            # every arrival re-sorts every worker's batches: a prefill batch's time depends only on
            # which requests it holds (their prompts), so it is computed once per set
            t = self._prefill_s.get(pre)
            if t is None:
                t = self._prefill_s[pre] = c.prefill_batch_s([x.prompt for x in pre])
            return t
        h = b[0]
        mid = (h.ctx + h.prompt + h.output) // 2
        return c.decode_s(1, mid) * (h.prompt + h.output - h.ctx)

    # -- events -------------------------------------------------------------------------------------
    def _arrive(self, i: int) -> None:
        r = self.reqs[i]
        now = self.kernel.now
        (self._place_sllm if self.policy == "sllm" else self._place_plus)(r)
        self.kernel.at(now + self.s.sllm_timeout_s, self._timeout, r)
        for w in self.workers:
            w.kick(now)

    def _timeout(self, r: Req) -> None:
        if not r.tokens and not r.in_step and not r.done:
            r.fail("timeout", f"no first token within sllm_timeout_s ({self.s.sllm_timeout_s:g} s) of arrival")
            self.n_failed += 1
            w = self._worker[r.inst]
            w.stale = True
            w.epoch += 1

    def run(self, reqs: list[Req]) -> PoolResult:
        self._simulate(reqs, f"{self.policy}: run")
        stats = {"failed": self.n_failed, "events": self.kernel.events_processed, "end_s": self.kernel.now}
        return PoolResult(to_table(reqs), self.switches_table(), stats)
