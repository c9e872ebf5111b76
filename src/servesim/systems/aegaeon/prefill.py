"""Prefill instances and the grouped-FCFS dispatcher (§4.2, Algorithm 1).

An arriving request joins the first same-model group (over the node's prefill instances, in
order) that is still open; otherwise it opens a new group on the least loaded instance. An
instance serves its front group one request at a time (prefill batch size 1), switching model
first when the group's model is not loaded. Group rules (``Settings.group_rule``):

- ``"paper"``: a group is open while its *cumulative* size (popped requests count) < MAX_GPSIZE,
  and an instance's load is the estimated time of its queued groups (prefills + switches, App. A.2);
- ``"artifact"``: the *current* group length < MAX_GPSIZE, and load = number of queued requests.
"""

from __future__ import annotations

from collections import deque

from .request import Req


class Group:
    __slots__ = ("model", "reqs", "total")

    def __init__(self, r: Req):
        self.model = r.model
        self.reqs: deque[Req] = deque([r])
        self.total = 1  # cumulative size (the paper's g.size)


class PrefillInstance:
    def __init__(self, name: str, pool):
        self.name, self.pool = name, pool
        self.queue: deque[Group] = deque()
        self.model: str | None = None       # logical model whose weights are resident
        self.busy_until: float | None = None
        self.credit = 0.0                   # compute time since the last switch (prefetch credit)

    # -- dispatcher view ------------------------------------------------------------------------
    def open_group(self, model: str, rule: str, max_gpsize: int) -> Group | None:
        for g in self.queue:
            if g.model == model and (g.total if rule == "paper" else len(g.reqs)) < max_gpsize:
                return g
        return None

    def load(self, now: float, rule: str) -> float:
        if rule == "artifact":
            return float(sum(len(g.reqs) for g in self.queue))
        pool = self.pool
        t = max(0.0, self.busy_until - now) if self.busy_until is not None else 0.0
        prev = self.model
        for g in self.queue:
            c = pool.costs_of(g.model)
            if g.model != prev:
                t += c.c_est_s
                prev = g.model
            t += sum(c.prefill_s(r.prompt) for r in g.reqs)
        return t

    # -- execution ------------------------------------------------------------------------------
    def kick(self, now: float) -> None:
        """Start the next prefill if idle."""
        if self.busy_until is not None or not self.queue:
            return
        g = self.queue[0]
        r = g.reqs.popleft()
        if not g.reqs:
            self.queue.popleft()
        pool = self.pool
        sw = 0.0
        if g.model != self.model:
            nxt = self.queue[0].model if self.queue and self.queue[0].model != g.model else None
            sw = pool.switch(self, self.model, g.model, self.credit, now, nxt)
            self.model, self.credit = g.model, 0.0
        pool.check_resident(self, r.model)
        dt = pool.costs_of(r.model).prefill_s(r.ctx)
        self.credit += dt
        r.started = True
        r.prefill_start, r.prefill_switch_s = now, sw
        r.exec_s += dt
        end = now + sw + dt
        self.busy_until = end
        pool.kernel.at(end, self._done, r)

    def _done(self, r: Req) -> None:
        now = self.pool.kernel.now
        self.busy_until = None
        r.tokens.append(now)
        self.pool.prefill_done(r, now)
        self.kick(now)


def dispatch(instances: list[PrefillInstance], r: Req, now: float, rule: str, max_gpsize: int) -> PrefillInstance:
    """Algorithm 1: join an open same-model group, else a new group on the least loaded instance
    (ties: the first)."""
    for inst in instances:
        g = inst.open_group(r.model, rule, max_gpsize)
        if g is not None:
            g.reqs.append(r)
            g.total += 1
            return inst
    best = min(instances, key=lambda i: i.load(now, rule))
    best.queue.append(Group(r))
    return best
