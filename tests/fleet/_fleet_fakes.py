"""Test-only fakes: a heap event clock and an engine with fixed service times."""

from __future__ import annotations

import heapq
import itertools


class FakeKernel:
    """Same calling conventions as servesim.sim.kernel.Kernel (at/after/add_stream/run)."""

    def __init__(self):
        self._h = []
        self._c = itertools.count()
        self.now = 0.0
        self.times = []

    def at(self, t, fn, arg=None, prio=1):
        assert t >= self.now - 1e-12, (t, self.now)
        heapq.heappush(self._h, (t, prio, next(self._c), fn, arg))

    def after(self, d, fn, arg=None, prio=1):
        self.at(self.now + d, fn, arg, prio)

    def add_stream(self, times, cb):
        for i, t in enumerate(times):
            self.at(float(t), cb, i, 0)

    def pending(self):
        return bool(self._h)

    def schedule(self, t, fn):  # test convenience: a no-argument callback at t
        self.at(t, lambda _: fn(), None, 1)

    def run(self, until=None):
        while self._h:
            t, _, _, fn, arg = self._h[0]
            if until is not None and t > until:
                break
            heapq.heappop(self._h)
            assert t >= self.now
            self.now = t
            self.times.append(t)
            fn(arg)
        if until is not None and until > self.now:
            self.now = until


class FakeEngine:
    """Serves up to `slots` requests at once; each takes base + per_token*(prompt+output) s.
    KV utilisation = (running + waiting) / slots, capped at 1."""

    def __init__(self, kernel, fleet_ref, name, on_end, slots=4, base=0.5, per_token=0.001):
        self.k, self.fleet_ref, self.name, self.on_end = kernel, fleet_ref, name, on_end
        self.slots, self.base, self.per_token = slots, base, per_token
        self.wait, self.run_ = [], set()

    def take_waiting(self):
        out = [(i, None) for i in self.wait]
        self.wait = []
        return out

    def submit(self, i, handle=None):
        from servesim.fleet.lifecycle import State

        # invariant: only ready instances receive requests (draining ones take no new work)
        assert self.fleet_ref[0]._by_id[self.name].state is State.READY
        self.wait.append(i)
        self._pump()

    def _pump(self):
        f = self.fleet_ref[0]
        while self.wait and len(self.run_) < self.slots:
            i = self.wait.pop(0)
            self.run_.add(i)
            d = self.base + self.per_token * (int(f.prompt[i]) + int(f.output[i]))
            start = self.k.now
            self.k.at(start + d, lambda _, i=i, start=start: self._done(i, start), None, 2)

    def _done(self, i, start):
        self.run_.discard(i)
        f = self.fleet_ref[0]
        self.on_end(i, "finished", "", {"scheduled_s": start, "finish_s": self.k.now,
                                       "e2e_s": self.k.now - float(f.arrival[i])})
        self._pump()

    def withdraw(self, i):
        """Deadline enforcement: drop `i` if it waits here unstarted."""
        if i in self.wait:
            self.wait.remove(i)
            return True
        return False

    def kv_util(self):
        return min(1.0, (len(self.run_) + len(self.wait)) / self.slots)

    def queue_len(self):
        return len(self.wait)

    def running(self):
        return len(self.run_)

    def finalize(self, now):
        return [(i, {}) for i in sorted(self.run_) + list(self.wait)]


def make_fleet(workload, endpoints, router="least-outstanding", slots=4, base=0.5, **kw):
    import numpy as np

    from servesim.fleet.core import Fleet
    from servesim.policies.registry import ROUTERS

    k = FakeKernel()
    ref = [None]
    seeds = iter(np.random.SeedSequence(7).spawn(64))
    f = Fleet(k, workload, endpoints,
              engine_factory=lambda m, r, name, cb: FakeEngine(k, ref, name, cb, slots=slots, base=base),
              router_factory=lambda m, r: ROUTERS[router](np.random.default_rng(next(seeds))), **kw)
    ref[0] = f
    return f, k


class FakeEngines:
    """`run_scenario(engines=...)` hook: fake kernel + fake engines (service time from the
    scenario's linear step-time c0 scaled up, so scenario settings still matter)."""

    def __init__(self, sc, workload, seed):
        self.kernel = FakeKernel()
        self._ref = [None]
        self.sc = sc

    def factory(self, model, region, name, on_end):
        st = self.sc.models[model].step_time
        return FakeEngine(self.kernel, self._ref, name, on_end, slots=8, base=st.c0 * 100, per_token=st.c_pt)

    def attach(self, fleet):
        self._ref[0] = fleet
