"""Global routers: which endpoint (model, region) a request goes to."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from ..workload.spec import Seconds, Strict
from .registry import register_global_router


@register_global_router("local")
class LocalRouter:
    """The request's own model in the request's own region (the default)."""

    def route(self, ridx: int, fleet: Any) -> tuple[str, str] | None:
        return None


@register_global_router("preference")
class PreferenceRouter:
    """Walk a per-region preference list; take the first region whose endpoint for the
    request's model has KV utilisation below `threshold` (SageServe's IW routing gate, 0.7),
    else the least-utilised one. `preferences`: ``{src_region: [region, ...]}``; regions
    not listed keep their requests local.

    Reading live KV utilisation costs O(instances of the endpoints tried) per request;
    `refresh_s` > 0 reuses an endpoint's reading for that long (a metrics-refresh interval),
    which makes the cost O(1) amortised on large fleets.
    """

    class Options(Strict):
        """Scenario options of ``global_router: {name: preference, ...}``."""

        preferences: dict[str, list[str]] = {}
        threshold: float = Field(0.7, ge=0, le=1)
        refresh_s: Seconds = 0.0  # 0: live KV readings per request; > 0: reuse a reading this long

    def __init__(self, preferences: dict[str, list[str]] | None = None, threshold: float = 0.7,
                 refresh_s: float = 0.0) -> None:
        self.preferences = preferences or {}
        self.threshold = threshold
        self.refresh_s = float(refresh_s)
        self._cache: dict[tuple[str, str], tuple[float, float]] = {}

    def _util(self, fleet: Any, model: str, region: str) -> float:
        if self.refresh_s <= 0:
            return fleet.kv_util(model, region)
        now = fleet.now
        hit = self._cache.get((model, region))
        if hit is not None and now - hit[0] < self.refresh_s:
            return hit[1]
        u = fleet.kv_util(model, region)
        self._cache[(model, region)] = (now, u)
        return u

    def route(self, ridx: int, fleet: Any) -> tuple[str, str] | None:
        src = fleet.req_region[ridx]
        model = fleet.req_model[ridx]
        prefs = self.preferences.get(src)
        if not prefs:
            return None
        best, best_u = None, float("inf")
        for r in prefs:
            if (model, r) not in fleet.eps:
                continue
            u = self._util(fleet, model, r)
            if u < self.threshold:
                return (model, r)
            if u < best_u:
                best, best_u = (model, r), u
        return best
