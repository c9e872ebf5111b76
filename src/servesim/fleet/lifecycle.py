"""Instance lifecycle: states, the allowed transitions, and instance-hours per state.

A fleet instance is one VM (a replica's worth of GPUs). It moves along

    requested -> provisioning -> loading -> ready -> draining -> released

with three detours: a draining instance may be re-activated (draining -> ready, no cold start,
as PreServe assumes), and a region's spot/free pool may hold instances between tenures
(draining -> pooled -> loading for the same model, or pooled -> released), and an instance may
switch to another model in place (draining -> converting -> ready, or pooled -> converting ->
ready when the pooled VM holds another model's weights): ``converting`` hours are the scale-up
waste of conversions (SageServe's "Other>model" bars), booked under the *new* model.
Not-yet-ready instances can be cancelled (requested/provisioning/loading -> released, or a VM
that already exists -> pooled when scale-ins go to the pool).
Every transition goes through `InstanceLedger.transition`, which rejects any other edge and
books the time spent in the state being left to (model, region, state).
"""

from __future__ import annotations

from collections import defaultdict

from ..control import State  # defined beside the actions and views that report it
from ..metrics import BILLED_STATES


STATES: tuple[State, ...] = tuple(State)

#: state -> states it may move to
ALLOWED: dict[State, frozenset[State]] = {
    State.REQUESTED: frozenset({State.PROVISIONING, State.RELEASED}),
    State.PROVISIONING: frozenset({State.LOADING, State.RELEASED, State.POOLED}),
    State.LOADING: frozenset({State.READY, State.RELEASED, State.POOLED}),
    State.READY: frozenset({State.DRAINING}),
    State.CONVERTING: frozenset({State.READY, State.RELEASED, State.POOLED}),
    State.DRAINING: frozenset({State.READY, State.RELEASED, State.POOLED, State.LOADING, State.CONVERTING}),
    State.POOLED: frozenset({State.LOADING, State.CONVERTING, State.RELEASED}),
    State.RELEASED: frozenset(),
}

#: states that cost money: one definition, `servesim.metrics.BILLED_STATES`
BILLED: frozenset[State] = frozenset(State(s) for s in BILLED_STATES)


class LifecycleError(RuntimeError):
    """A transition along an edge that `ALLOWED` does not contain, or time going back."""


class InstanceLedger:
    """Books every instance's time per (model, region, state) and logs the transitions.

    The log is a list of (time_s, instance_id, model, region, from_state, to_state), which
    tests replay to check that only allowed edges occur and that hours add up.
    """

    def __init__(self) -> None:
        self.seconds: dict[tuple[str, str, State], float] = defaultdict(float)
        self.log: list[tuple[float, str, str, str, str, str]] = []
        self._since: dict[str, float] = {}
        self._where: dict[str, tuple[str, str, State]] = {}

    def start(self, now: float, iid: str, model: str, region: str, state: State) -> None:
        """Register a new instance in its first state (`REQUESTED`, or `READY` at time 0)."""
        if iid in self._where:
            raise LifecycleError(f"instance {iid} registered twice")
        self._since[iid] = now
        self._where[iid] = (model, region, state)
        self.log.append((now, iid, model, region, "", state.value))

    def state(self, iid: str) -> State:
        return self._where[iid][2]

    def where(self, iid: str) -> tuple[str, str, State]:
        """(model, region, state) of instance `iid` now."""
        return self._where[iid]

    def transition(self, now: float, iid: str, to: State, model: str | None = None) -> None:
        """Move `iid` to `to` (optionally re-labelled with a new model, e.g. pooled -> loading)."""
        m, r, s = self._where[iid]
        if to not in ALLOWED[s]:
            raise LifecycleError(f"instance {iid}: {s.value} -> {to.value} is not an allowed transition")
        since = self._since[iid]
        if now < since:
            raise LifecycleError(f"instance {iid}: transition at {now} before previous one at {since}")
        self.seconds[(m, r, s)] += now - since
        m2 = m if model is None else model
        self._since[iid] = now
        self._where[iid] = (m2, r, to)
        self.log.append((now, iid, m2, r, s.value, to.value))

    def close(self, now: float) -> None:
        """Book the open interval of every live instance up to `now` (end of the run);
        released instances no longer exist and accrue nothing. Idempotent per `now`."""
        for iid, (m, r, s) in self._where.items():
            since = self._since[iid]
            if s is not State.RELEASED and now > since:
                self.seconds[(m, r, s)] += now - since
                self._since[iid] = now

    def hours_table(self):
        """Instance-hours as a DataFrame with columns model, region, state, hours (sorted)."""
        import pandas as pd

        rows = [(m, r, s.value, sec / 3600.0) for (m, r, s), sec in self.seconds.items()]
        df = pd.DataFrame(rows, columns=["model", "region", "state", "hours"])
        return df.sort_values(["model", "region", "state"], kind="stable").reset_index(drop=True)

    def log_table(self):
        import pandas as pd

        return pd.DataFrame(self.log, columns=["time_s", "instance", "model", "region", "from_state", "to_state"])
