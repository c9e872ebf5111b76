"""The narrow interfaces the fleet needs from the simulation kernel and from an engine instance.

`servesim.fleet.engine_sim` adapts `servesim.sim` to them; unit tests use fakes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol


class Kernel(Protocol):
    """The part of `servesim.sim.kernel.Kernel` the fleet uses: callbacks run in (time,
    priority, insertion) order; ``add_stream`` merges a sorted array of arrival times."""

    now: float

    def at(self, t: float, callback: Callable[[Any], Any], arg: Any = None, prio: int = 1) -> int: ...

    def after(self, delay: float, callback: Callable[[Any], Any], arg: Any = None, prio: int = 1) -> int: ...

    def add_stream(self, times: Any, callback: Callable[[int], Any]) -> None: ...

    def run(self, until: float = ...) -> None: ...


#: called by an engine when a request ends: (request index, state, reason, timing record)
EndCallback = Callable[[int, str, str, dict[str, Any]], None]


class Engine(Protocol):
    """One serving engine replica (a model loaded on an instance)."""

    def submit(self, ridx: int, handle: Any = None) -> None:
        """Start serving workload row `ridx` now (it joins the engine's waiting queue);
        `handle` is the request object another engine gave back (`take_waiting`) to resume."""
        ...

    def take_waiting(self) -> list[tuple[int, Any]]:
        """Remove the requests not yet admitted to a batch: (request index, handle) each."""
        ...

    # optional: ``withdraw(ridx) -> bool`` removes a request that waits never admitted to a
    # batch (deadline enforcement); ``switch_model(model, load_s) -> bool`` switches a drained
    # engine to another model in place (conversions). Engines without them: deadlines only
    # time out requests outside engines, and a conversion builds a fresh engine.
    # ``decode_state(queued=False) -> (context, remaining, capacity_tokens)`` (int arrays over
    # the decoding requests, with ``queued`` also the not-yet-prefilled ones, and the KV capacity
    # in tokens) serves load anticipators (`FleetView.decode_states`).

    def kv_util(self) -> float:
        """Fraction of KV capacity in use now."""
        ...

    def queue_len(self) -> int:
        """Requests waiting in the engine (admitted to no batch yet)."""
        ...

    def running(self) -> int:
        """Requests in the running batch."""
        ...

    def finalize(self, now: float) -> list[tuple[int, dict[str, Any]]]:
        """End of run: (request index, timing record) of requests still inside the engine."""
        ...


#: engine factory: (model, region, instance name, end callback) -> Engine
EngineFactory = Callable[[str, str, str, EndCallback], Engine]
