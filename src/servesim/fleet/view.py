"""What a fleet shows without changing it: endpoint statistics, KV utilisation, pools,
instance states (the `servesim.fleet.control.FleetView` protocol) and time-series samples.

`FleetQueries` is one of the parts `servesim.fleet.core.Fleet` is made of; `ReadOnlyView` is
what a control actor gets: those queries and nothing that mutates the fleet. Only these
queries and samples walk instances, and they run at fixed periods.
"""

from __future__ import annotations

from typing import Any

from .control import EndpointKey, EndpointStats
from .lifecycle import State


class FleetQueries:
    """Read-only queries of a `Fleet` (the `FleetView` protocol) and its time-series rows."""

    # ------------------------------------------------------------------ FleetView
    @property
    def now(self) -> float:
        return self.kernel.now

    def endpoints(self) -> list[EndpointKey]:
        return list(self.eps)

    def endpoint(self, model: str, region: str) -> EndpointStats:
        ep = self._endpoint(model, region)
        counts: dict[State, int] = {}
        kv, nkv = 0.0, 0
        ready_ids = []
        for inst in ep.instances.values():
            counts[inst.state] = counts.get(inst.state, 0) + 1
            if inst.engine is not None and inst.state in (State.READY, State.DRAINING):
                kv += inst.engine.kv_util()
                nkv += 1
            if inst.state is State.READY:
                ready_ids.append((inst.seq, inst.id))
        now = self.kernel.now
        self._trim(ep, now)
        window = max(min(self.window_s, now), 1e-9)
        return EndpointStats(
            model=model, region=region, counts=counts, outstanding=ep.outstanding,
            pending_tokens=ep.pending_tokens, queued=len(ep.queue),
            kv_util=kv / nkv if nkv else 0.0,
            arrivals_rate=len(ep.recent) / window,
            prompt_token_rate=ep.recent_tokens / window,
            window_s=self.window_s,
            instance_ids=tuple(iid for _, iid in sorted(ready_ids)),
        )

    def kv_util(self, model: str, region: str) -> float:
        """Mean KV utilisation of the endpoint's ready and draining instances (0 if none).
        O(instances of that endpoint)."""
        ep = self._endpoint(model, region)
        kv, n = 0.0, 0
        for inst in ep.instances.values():
            if inst.engine is not None and inst.state in (State.READY, State.DRAINING):
                kv += inst.engine.kv_util()
                n += 1
        return kv / n if n else 0.0

    def decode_states(self, model: str, region: str, queued: bool = False) -> list[tuple[str, Any]]:
        """(instance id, ``engine.decode_state(queued)``) of the endpoint's ready instances, by
        seq; engines without ``decode_state`` are left out. O(requests of the endpoint)."""
        ep = self._endpoint(model, region)
        out = []
        for inst in sorted(ep.instances.values(), key=lambda i: i.seq):
            f = getattr(inst.engine, "decode_state", None)
            if inst.state is State.READY and f is not None:
                out.append((inst.id, f(queued)))
        return out

    def pooled(self, region: str) -> dict[str, int]:
        return {m: len(v) for m, v in self._pools.get(region, {}).items() if v}

    def instance_state(self, iid: str) -> State:
        return self.ledger.state(iid)

    def instance_endpoint(self, iid: str) -> EndpointKey:
        """(model, region) instance `iid` serves, or last served (released/pooled ones)."""
        m, r, _ = self.ledger.where(iid)
        return m, r

    # ------------------------------------------------------------------ sampling
    def sample(self, t: float | None = None) -> list[dict[str, Any]]:
        """One time-series row per endpoint at `now` (walks the endpoint's instances);
        `t` overrides the time stamp (final sample at the end of the run)."""
        now = self.kernel.now if t is None else t
        rows = []
        for (model, region), ep in self.eps.items():
            row: dict[str, Any] = {"time_s": now, "model": model, "region": region}
            for s in (State.REQUESTED, State.PROVISIONING, State.LOADING, State.CONVERTING, State.READY,
                      State.DRAINING):
                row[f"n_{s.value}"] = 0
            kv, nkv, waiting, running = 0.0, 0, 0, 0
            for inst in ep.instances.values():
                row[f"n_{inst.state.value}"] += 1
                if inst.engine is not None:
                    kv += inst.engine.kv_util()
                    nkv += 1
                    waiting += inst.engine.queue_len()
                    running += inst.engine.running()
            row["n_pooled"] = len(self._pools.get(region, {}).get(model, ()))
            row["endpoint_queue"] = len(ep.queue)
            row["engine_waiting"] = waiting
            row["running"] = running
            row["outstanding"] = ep.outstanding
            row["kv_util"] = kv / nkv if nkv else 0.0
            row["arrivals"] = ep.arrived - ep._sampled[0]  # since the previous sample
            row["prompt_tokens_in"] = ep.arrived_tokens - ep._sampled[1]
            ep._sampled = (ep.arrived, ep.arrived_tokens)
            rows.append(row)
        return rows


class ReadOnlyView:
    """What a control actor gets: the `FleetView` queries of a fleet, nothing that mutates it."""

    __slots__ = ("_f",)

    def __init__(self, fleet: FleetQueries) -> None:  # a `Fleet` (core.py), which is made of FleetQueries
        self._f = fleet

    @property
    def now(self) -> float:
        return self._f.kernel.now

    def endpoints(self) -> list[EndpointKey]:
        return self._f.endpoints()

    def endpoint(self, model: str, region: str) -> EndpointStats:
        return self._f.endpoint(model, region)

    def kv_util(self, model: str, region: str) -> float:
        return self._f.kv_util(model, region)

    def pooled(self, region: str) -> dict[str, int]:
        return self._f.pooled(region)

    def decode_states(self, model: str, region: str, queued: bool = False) -> list[tuple[str, Any]]:
        return self._f.decode_states(model, region, queued)

    def regions(self) -> list[str]:
        return list(self._f.regions)

    def instance_state(self, iid: str) -> State:
        return self._f.instance_state(iid)


__all__ = ["FleetQueries", "ReadOnlyView"]
