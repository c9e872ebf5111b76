"""What periodic control actors (autoscalers, forecasters, planners) see and may do.

An actor is any object with ``period_s`` and ``act(view) -> list[Action]``; the fleet calls it
every ``period_s`` seconds (first at ``start_s``, default one period in) with a read-only
`FleetView` and applies the returned actions in order.

The contract between the fleet (`servesim.fleet`, which runs actors) and the policies that
implement them (`servesim.policies`, `servesim.systems.*`): the instance lifecycle `State`s a view
reports, the actions, and the view. A leaf module, below both; `servesim.fleet.control` and
`servesim.fleet.lifecycle` re-export its names.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Protocol


class State(str, Enum):
    """An instance's lifecycle state (its allowed moves: `servesim.fleet.lifecycle.ALLOWED`)."""

    REQUESTED = "requested"
    PROVISIONING = "provisioning"
    LOADING = "loading"
    CONVERTING = "converting"
    READY = "ready"
    DRAINING = "draining"
    POOLED = "pooled"
    RELEASED = "released"


EndpointKey = tuple[str, str]  # (model, region)


@dataclass(frozen=True)
class Scale:
    """Change an endpoint's instance count by `delta` (+: reclaim from the pool or provision;
    -: cancel not-yet-ready instances first, then drain the least-loaded ready ones)."""

    model: str
    region: str
    delta: int


@dataclass(frozen=True)
class Drain:
    """Stop routing to `instance`; it finishes its requests, then goes to the pool (if
    `to_pool`) or is released."""

    instance: str
    to_pool: bool = False


@dataclass(frozen=True)
class Move:
    """Re-purpose `instance` (same region) for `model`: a ready instance drains (finishes its
    running requests, hands back queued ones), then switches model in place (state
    ``converting`` for the endpoint's ``LeadTimes.convert_s``) and joins that endpoint; a pooled
    one converts at once (or reclaims, if it holds `model`'s weights already)."""

    instance: str
    model: str


Action = Scale | Drain | Move


@dataclass(frozen=True)
class EndpointStats:
    """Read-only snapshot of one endpoint (model, region) at `now`."""

    model: str
    region: str
    counts: dict[State, int]  # instances by lifecycle state (pooled counted per region, not here)
    outstanding: int  # requests routed to its instances and not yet ended
    pending_tokens: int
    queued: int  # requests waiting at the endpoint for a ready instance
    kv_util: float  # mean KV utilisation over ready + draining instances (0 if none)
    arrivals_rate: float  # requests/s that arrived over the last `window_s`
    prompt_token_rate: float  # prompt tokens/s over the last `window_s`
    window_s: float
    instance_ids: tuple[str, ...] = field(default=())  # ready instances, by seq

    @property
    def ready(self) -> int:
        return self.counts.get(State.READY, 0)

    @property
    def starting(self) -> int:
        """Instances on their way to ready (requested, provisioning, loading, converting)."""
        return sum(self.counts.get(s, 0) for s in (State.REQUESTED, State.PROVISIONING, State.LOADING,
                                                   State.CONVERTING))

    @property
    def active(self) -> int:
        """Ready plus starting: the count a scaler steers."""
        return self.ready + self.starting


class FleetView(Protocol):
    """What an actor may read (`servesim.fleet.core.ReadOnlyView` over a `Fleet`)."""

    @property
    def now(self) -> float: ...

    def endpoints(self) -> Sequence[EndpointKey]: ...

    def endpoint(self, model: str, region: str) -> EndpointStats: ...

    def pooled(self, region: str) -> dict[str, int]:
        """Pooled instances in `region` by the model whose weights they hold."""
        ...

    def kv_util(self, model: str, region: str) -> float:
        """Mean KV utilisation of the endpoint's ready and draining instances."""
        ...

    def regions(self) -> list[str]: ...

    def decode_states(self, model: str, region: str, queued: bool = False) -> list:
        """(instance id, (context tokens, remaining output tokens, KV capacity tokens)) of the
        endpoint's ready instances whose engines report their decoding requests (``queued``:
        and the requests waiting for their prefill)."""
        ...

    def instance_state(self, iid: str) -> State: ...


class Actor(Protocol):
    period_s: float

    def act(self, view: FleetView) -> list[Action]: ...
