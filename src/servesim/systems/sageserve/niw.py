"""NIW queue manager (journal §6.2): per-(model, region) queues released on low utilisation.

Paper: an endpoint signals when its effective memory utilisation is low; below 60 % one
request is released, below 50 % two. NIW requests have a 24 h deadline; older than 10 h they
get priority 0 (as IW), else 1. The authors' code instead releases after every completion:
util > 0.6 nothing, (0.5, 0.6] two, <= 0.5 one (inverted), and never expires requests.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

from .config import SageServeConfig


@dataclass
class NIWRequest:
    request_id: int
    model: str
    region: str
    arrival_s: float
    prompt_tokens: int
    output_tokens: int
    deadline_s: float


class NIWQueueManager:
    """FIFO queue per (model, region); ``on_signal`` returns the requests to release."""

    def __init__(self, config: SageServeConfig | None = None, expire: bool = True) -> None:
        self.cfg = config or SageServeConfig()
        self.expire_enabled = expire
        self._q: dict[tuple[str, str], deque[NIWRequest]] = {}
        self.released = 0
        self.expired: list[NIWRequest] = []
        # queues whose deadlines are non-decreasing front to back (pushes in arrival order with
        # one deadline offset): there the expired requests are a prefix, popped in O(expired)
        self._sorted: dict[tuple[str, str], bool] = {}
        self._n = 0

    def push(self, req: NIWRequest) -> None:
        key = (req.model, req.region)
        q = self._q.get(key)
        if q is None:
            q = self._q[key] = deque()
            self._sorted[key] = True
        elif q and req.deadline_s < q[-1].deadline_s:
            self._sorted[key] = False
        q.append(req)
        self._n += 1

    def __len__(self) -> int:
        return self._n

    def queued(self, model: str, region: str) -> int:
        return len(self._q.get((model, region), ()))

    def release_count(self, util: float) -> int:
        """How many requests one signal at effective utilisation ``util`` releases."""
        c = self.cfg
        if c.niw_release_rule == "paper":
            if util < c.niw_release_two_below:
                return 2
            return 1 if util < c.niw_release_one_below else 0
        # authors' code (spec §1.3): inverted amounts
        if util > c.niw_release_one_below:
            return 0
        return 2 if util > c.niw_release_two_below else 1

    def priority(self, req: NIWRequest, now: float) -> int:
        """0 (as IW) once older than the bump age, else 1."""
        return 0 if now - req.arrival_s > self.cfg.niw_priority_bump_s else 1

    def expire(self, now: float) -> list[NIWRequest]:
        """Drop and return queued requests past their deadline (no-op when expiry is off)."""
        if not self.expire_enabled:
            return []
        out = []
        for key, q in self._q.items():
            if self._sorted[key]:
                while q and q[0].deadline_s <= now:
                    out.append(q.popleft())
                continue
            keep = deque(r for r in q if r.deadline_s > now)
            if len(keep) != len(q):
                out += [r for r in q if r.deadline_s <= now]
                q.clear()
                q.extend(keep)
                self._sorted[key] = all(a.deadline_s <= b.deadline_s for a, b in zip(keep, list(keep)[1:]))
        self._n -= len(out)
        self.expired += out
        return out

    def on_signal(self, model: str, region: str, util: float, now: float) -> list[NIWRequest]:
        """An endpoint reports utilisation ``util``: pop the oldest requests it may take."""
        self.expire(now)
        q = self._q.get((model, region))
        if not q:
            return []
        n = min(self.release_count(util), len(q))
        out = [q.popleft() for _ in range(n)]
        self.released += len(out)
        self._n -= len(out)
        return out
