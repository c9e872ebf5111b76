"""Per-request routing cost vs endpoint size (should stay flat / logarithmic).

Simulates the router traffic of a busy endpoint: each request selects an instance, its
counters go up (update), and an earlier request completes (update). Prints one JSON line:
CPU microseconds per routed request for each router and endpoint size.
"""

from __future__ import annotations

import json
import time
from collections import deque
from dataclasses import dataclass

import numpy as np

from servesim.policies import ROUTERS


@dataclass(eq=False)
class _Inst:
    seq: int
    outstanding: int = 0
    pending_tokens: int = 0


def bench(name: str, n: int, reqs: int = 50_000) -> float:
    rng = np.random.default_rng(0)
    r = ROUTERS[name](np.random.default_rng(1))
    insts = [_Inst(i) for i in range(n)]
    for x in insts:
        r.add(x)
    prompts = rng.integers(1, 2000, reqs)
    inflight: deque[tuple[_Inst, int]] = deque()
    t0 = time.process_time()
    for k in range(reqs):
        x = r.select(None)
        if x is None:
            raise RuntimeError(f"{name} picks no instance from counters alone (it reads simulated instance state)")
        p = int(prompts[k])
        x.outstanding += 1
        x.pending_tokens += p + 1
        r.update(x)
        inflight.append((x, p))
        if len(inflight) > 4 * n:  # keep ~4 requests per instance in flight
            y, q = inflight.popleft()
            y.outstanding -= 1
            y.pending_tokens -= q + 1
            r.update(y)
    return (time.process_time() - t0) / reqs * 1e6


if __name__ == "__main__":
    sizes = [10, 100, 1000, 10000]
    out, skipped = {}, {}
    for name in sorted(ROUTERS):
        try:
            out[name] = {str(n): round(bench(name, n), 2) for n in sizes}
        except RuntimeError as e:  # routers reading instance state (KV) need a simulated cluster
            skipped[name] = str(e)
    print(json.dumps({"benchmark": "fleet_routing_us_per_request", "results": out, "skipped": skipped}))
