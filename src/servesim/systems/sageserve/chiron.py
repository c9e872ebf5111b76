"""Chiron as a SageServe baseline (journal §7.2; spec §1.6): three pools per model-region.

- interactive pool (``<model>@int``): IW requests go here first;
- mixed pool (``<model>``): IW overflow when the interactive pool's KV utilisation exceeds the
  gate (R: 0.7);
- batch pool (``<model>@niw``): NIW requests, served on arrival.

Scaling (R ``chiron.yaml``, every ``period_s`` with the config's cooldown per pool): the
interactive pool grows by one while the interactive batch proportion ibp (the share of
interactive + mixed ready instances with at least one request in flight) exceeds Θ (0.6), else
shrinks by one; the batch pool grows while pending·10 + pending_tokens/(100·instances) > 86 400
(its queue would not finish within a day) and shrinks when empty. Starting sizes: paper 10/5/5,
code 20/10/10 (``chiron_interactive/mixed/batch``). Which pool ibp resizes is not stated; we
resize the interactive pool and keep the mixed pool at its start size.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ...fleet.control import Scale
from ...fleet.lifecycle import State
from .config import SageServeConfig

INT_SUFFIX = "@int"


class ChironRouter:
    """Global router: IW of ``m@int`` overflows to the mixed pool ``m`` above the gate."""

    def __init__(self, gate: float = 0.7) -> None:
        self.gate = gate
        self.fleet = None  # the fleet, seen at the first request (the scaler reads instances through it)

    def route(self, ridx: int, fleet: Any) -> tuple[str, str] | None:
        self.fleet = fleet
        m = fleet.req_model[ridx]
        if not m.endswith(INT_SUFFIX):
            return None
        r = fleet.req_region[ridx]
        base = m.removesuffix(INT_SUFFIX)
        if fleet.kv_util(m, r) > self.gate and (base, r) in fleet.eps:
            return (base, r)
        return None


@dataclass
class ChironScaler:
    router: ChironRouter
    config: SageServeConfig
    models: list[str]
    regions: list[str]
    niw_suffix: str = "@niw"
    period_s: float = 5.0
    _last: dict = field(default_factory=dict)
    log: list = field(default_factory=list)

    def _ibp(self, fleet: Any, m: str, r: str) -> float:
        busy = n = 0
        for key in ((m + INT_SUFFIX, r), (m, r)):
            ep = fleet.eps.get(key)
            if ep is None:
                continue
            for inst in ep.instances.values():
                if inst.state is State.READY:
                    n += 1
                    busy += inst.outstanding > 0
        return busy / n if n else 0.0

    def act(self, view) -> list:
        fleet = self.router.fleet
        if fleet is None:
            return []
        c, now, out = self.config, view.now, []
        for m in self.models:
            for r in self.regions:
                ik, bk = (m + INT_SUFFIX, r), (m + self.niw_suffix, r)
                if ik in fleet.eps and now - self._last.get(ik, -1e18) >= c.cooldown_s:
                    ibp = self._ibp(fleet, m, r)
                    step = 1 if ibp > c.chiron_theta else -1
                    out.append(Scale(*ik, step))
                    self._last[ik] = now
                    self.log.append({"time_s": now, "pool": "interactive", "region": r, "ibp": ibp, "step": step})
                if bk in fleet.eps and now - self._last.get(bk, -1e18) >= c.cooldown_s:
                    st = view.endpoint(*bk)
                    pending = st.outstanding + st.queued
                    n = max(st.active, 1)
                    step = 0
                    if pending * 10 + st.pending_tokens / (100 * n) > 86_400:
                        step = 1
                    elif pending == 0:
                        step = -1
                    if step:
                        out.append(Scale(*bk, step))
                        self._last[bk] = now
        return out
