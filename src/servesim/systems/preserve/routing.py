"""PreServe's load-aware router (§4.3.3, Eq. 1) and the MU (minimum-use) baseline (§3.2.2).

Both are registered routers (``servesim.sim.routers``) for a :class:`~servesim.sim.Cluster`;
RR and LR are the shared ``round-robin`` and ``least-outstanding``.

``preserve`` sends request r (P prompt tokens, predicted D = ``r.pred``) to

    argmin_i  L_p,i + L_d,i + beta * L_m,i                                     (Eq. 1; argmin meant)
    L_p,i = queued_p,i + P          queued prompt tokens (waiting + partial prefills) + P
    L_d,i = current_d,i + D         predicted output tokens still to come on i + D
    L_m,i = max(0, U_k - T_mem) * M peak anticipated KV use over the next l iterations with r
                                    virtually added (the instance's :class:`LoadAnticipator`)

current_d counts requests routed to i and not prefilled yet at their predicted D and those in
the map at their remaining predicted span (extensions included). Requests enter an instance's
map when their prefill completes (checked lazily at each routing decision: vLLM V0 admits in
FIFO order, so the routed-not-prefilled requests form a queue) and leave it when they end. The
router reads ``Req.pred`` only (never the true length); a request without a prediction is an
error. ``select_s`` keeps the wall time of every routing decision (anticipator upkeep included):
Fig 10's measured "other" overhead.

``min-use`` (MU): the lowest 0.5 x GPU utilisation + 0.5 x KV usage, GPU utilisation = the
fraction of the last ``window_s`` seconds the instance was busy (sampled every ``sample_s``);
the weights and window are not stated [A]. What MU sees, ``kv_source``:

- ``scraped`` (default): both values as a router outside the engines has them, read every
  ``scrape_s`` = 1 s and held until the next read. vLLM exposes KV usage only through its
  Prometheus ``/metrics`` endpoint (gauge ``vllm:gpu_cache_usage_perc``, set by V0's
  ``PrometheusStatLogger`` at every engine step) and GPU utilisation comes from NVML / DCGM
  (nvidia-smi's ``utilization.gpu`` is the busy fraction over a sample period of up to 1 s), so a
  router reads them by polling. 1 s is the favourable end for MU: vLLM's production-stack router
  scrapes its engines every ``--engine-stats-interval`` = 30 s by default, Prometheus every 15 s
  in its example configuration. Between reads every request goes to the instance that looked
  least used at the last read.
- ``oracle``: the engine's exact, instantaneous KV usage and the live busy fraction at every
  routing decision (the reading before issue 31): no deployed router has it.
"""

from __future__ import annotations

import time
from collections import deque
from typing import Any

import numpy as np

from ...sim.kernel import PRIO_SAMPLE
from ...sim.request import RUNNING
from ...sim.routers import ListRouter, register_router
from .anticipator import LoadAnticipator


class _Track:
    """Per-instance state of the PreServe router."""

    __slots__ = ("ant", "queue", "queued_pred", "gone")

    def __init__(self, ant: LoadAnticipator) -> None:
        self.ant = ant
        self.queue: deque = deque()   # routed requests whose prefill has not completed, in routing order
        self.queued_pred = 0          # sum of their predicted lengths
        self.gone: set[int] = set()   # ended before leaving the queue


@register_router("preserve")
class PreServeRouter(ListRouter):
    """Eq. 1 over each instance's queued prompts, predicted decode load and anticipated KV use."""

    def __init__(self, rng: np.random.Generator | None = None, t_mem: float = 0.8, beta: float = 1.0,
                 lookahead: int = 100, horizon: int = 4096, extension: float = 0.2) -> None:
        super().__init__(rng)
        self.t_mem, self.beta = float(t_mem), float(beta)
        self.lookahead, self.horizon, self.extension = int(lookahead), int(horizon), float(extension)
        self.track: dict[int, _Track] = {}
        self.select_s: list[float] = []

    def bind(self, cluster: Any, pool: list[int]) -> None:
        super().bind(cluster, pool)
        for j in pool:
            cap = cluster.instances[j].cfg.kv_capacity_tokens
            self.track[j] = _Track(LoadAnticipator(cap, horizon=self.horizon, lookahead=self.lookahead,
                                                   extension=self.extension))
        prev = cluster.on_request_done

        def done(r):
            self.on_done(r)
            if prev is not None:
                prev(r)
        cluster.on_request_done = done

    # ------------------------------------------------------------------ upkeep
    def _sync(self, j: int) -> _Track:
        """Bring instance ``j``'s map to now: clock, completed prefills, extensions."""
        inst = self.cluster.instances[j]
        tr = self.track[j]
        inst.sync()
        tr.ant.advance(inst.iterations)
        q, now = tr.queue, inst.now
        while q:
            r = q[0]
            if r.idx in tr.gone:
                tr.gone.discard(r.idx)
                q.popleft()
                continue
            if not (r.first_t <= now and r.state == RUNNING):
                break
            q.popleft()
            tr.queued_pred -= r.pred
            tr.ant.add(r.idx, r.prompt, r.pred, inst.generated(r))
        return tr

    def on_done(self, r) -> None:
        tr = self.track.get(r.inst)
        if tr is None:
            return
        if r.idx in tr.ant:
            inst = self.cluster.instances[r.inst]
            tr.ant.advance(max(tr.ant.clock, inst.iterations))
            tr.ant.end(r.idx)
        else:  # still in the routed-not-prefilled queue (rejected, or ended before a sync saw it)
            tr.gone.add(r.idx)
            tr.queued_pred -= r.pred

    # ------------------------------------------------------------------ Eq. 1
    def loads(self, r) -> dict[int, tuple[float, float, float]]:
        """(L_p, L_d, L_m) of every routable instance for request ``r``."""
        out = {}
        for rec in self._items:
            j = rec.seq
            tr = self._sync(j)
            inst = self.cluster.instances[j]
            D = min(max(r.pred, 1), self.horizon)
            lp = inst.queued_prefill_tokens + r.prompt
            ld = tr.ant.remaining_decode() + tr.queued_pred + D
            lm = max(0.0, tr.ant.peak(r.prompt, D) - self.t_mem) * tr.ant.M
            out[j] = (lp, ld, lm)
        return out

    def select(self, r) -> Any | None:
        if not self._items:
            return None
        if r.pred < 0:
            raise ValueError(f"router preserve: request {r.rid} carries no predicted length (Req.pred)")
        t0 = time.perf_counter()
        best, best_key = None, None
        for j, (lp, ld, lm) in self.loads(r).items():
            key = (lp + ld + self.beta * lm, j)
            if best_key is None or key < best_key:
                best, best_key = j, key
        tr = self.track[best]
        tr.queue.append(r)
        tr.queued_pred += r.pred
        rec = self.cluster.loads[best]
        self.select_s.append(time.perf_counter() - t0)
        return rec


#: what the MU router reads (the first is the default; see the module doc)
MU_KV_SOURCES = ("scraped", "oracle")


@register_router("min-use")
class MinUseRouter(ListRouter):
    """MU: the lowest ``w_util`` x GPU utilisation + (1 - ``w_util``) x KV usage (see module doc).
    ``kv_source``: ``scraped`` (both values read every ``scrape_s``, a multiple of ``sample_s``)
    or ``oracle`` (exact and live at every decision)."""

    def __init__(self, rng: np.random.Generator | None = None, w_util: float = 0.5, window_s: float = 1.0,
                 sample_s: float = 0.1, kv_source: str = "scraped", scrape_s: float = 1.0) -> None:
        super().__init__(rng)
        if not 0 <= w_util <= 1 or not window_s > 0 or not sample_s > 0:
            raise ValueError("min-use: need 0 <= w_util <= 1, window_s > 0, sample_s > 0")
        if kv_source not in MU_KV_SOURCES:
            raise ValueError(f"min-use: kv_source must be one of {MU_KV_SOURCES}, got {kv_source!r}")
        per = scrape_s / sample_s
        if not scrape_s > 0 or abs(per - round(per)) > 1e-9 or round(per) < 1:
            raise ValueError(f"min-use: scrape_s ({scrape_s}) must be a positive multiple of sample_s ({sample_s})")
        self.w_util = float(w_util)
        self.n_samples = max(1, int(round(window_s / sample_s)))
        self.sample_s = float(sample_s)
        self.kv_source, self.scrape_s = kv_source, float(scrape_s)
        self._per_scrape = int(round(per))
        self._busy: dict[int, deque] = {}
        self.seen: dict[int, tuple[float, float]] = {}  # scraped: (utilisation, KV usage) at the last read
        self.scrapes = 0

    def bind(self, cluster: Any, pool: list[int]) -> None:
        super().bind(cluster, pool)
        for j in pool:
            self._busy[j] = deque(maxlen=self.n_samples)
        self._k = 0
        cluster.kernel.at(0.0, self._sample, None, PRIO_SAMPLE)

    def _sample(self, _arg) -> None:
        kernel = self.cluster.kernel
        insts = self.cluster.instances
        for j, d in self._busy.items():
            d.append(1.0 if insts[j].busy else 0.0)
        if self.kv_source == "scraped" and self._k % self._per_scrape == 0:
            self.scrape()
        self._k += 1
        if kernel.arrivals_pending() or any(insts[j].busy or insts[j].outstanding for j in self._busy):
            kernel.at(self._k * self.sample_s, self._sample, None, PRIO_SAMPLE)

    def scrape(self) -> None:
        """Read every instance's utilisation and KV usage now (what the next decisions see)."""
        insts = self.cluster.instances
        self.seen = {j: (self.utilisation(j), insts[j].kv_usage()) for j in self._busy}
        self.scrapes += 1

    def utilisation(self, j: int) -> float:
        d = self._busy.get(j)
        return sum(d) / len(d) if d else 0.0

    def signals(self, j: int) -> tuple[float, float]:
        """(GPU utilisation, KV usage) of instance ``j`` as this router sees them now."""
        if self.kv_source == "oracle":
            return self.utilisation(j), self.cluster.instances[j].kv_usage()
        return self.seen.get(j, (0.0, 0.0))

    def select(self, r) -> Any | None:
        best, best_key = None, None
        for rec in self._items:
            j = rec.seq
            util, kv = self.signals(j)
            u = self.w_util * util + (1 - self.w_util) * kv
            key = (u, j)
            if best_key is None or key < best_key:
                best, best_key = rec, key
        return best


__all__ = ["MU_KV_SOURCES", "MinUseRouter", "PreServeRouter"]
