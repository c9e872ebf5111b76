"""Periodic scalers that act on a `servesim.control.FleetView`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar, Literal

from pydantic import Field, StrictBool, model_validator

from ..control import Action, FleetView, Scale, State
from ..workload.spec import PosSeconds, Seconds, Strict
from .registry import register_controller


class ReactiveOptions(Strict):
    """Scenario options of ``autoscaler: {name: reactive, ...}`` (durations take units)."""

    period_s: PosSeconds = 5.0
    up: float = Field(0.7, ge=0)
    down: float = Field(0.3, ge=0)
    cooldown_s: Seconds = 15.0
    step: int = Field(1, ge=1)
    metric: Literal["kv", "outstanding"] = "kv"
    target_outstanding: float = Field(16.0, gt=0)
    count_starting: StrictBool = True
    kv_count_starting: StrictBool = False
    down_for_s: Seconds = 0.0

    @model_validator(mode="after")
    def _thresholds(self):
        if self.down >= self.up:
            raise ValueError(f"down ({self.down}) must be below up ({self.up})")
        return self


@register_controller("reactive")
@dataclass
class ReactiveAutoscaler:
    """Utilisation-threshold scaler, one decision per endpoint per period.

    util > `up` -> +`step` instances; util < `down` -> -`step`; after any action on an
    endpoint, no further action there for `cooldown_s`. `metric`:
      - ``kv``: mean KV-cache utilisation of the ready and draining instances (SageServe's
        "effective memory utilisation"); with `kv_count_starting` instances still starting count
        as empty memory (the mean is diluted by them), so a scale-up is not repeated while the
        first one boots; off by default (SageServe's paper: the memory of the serving instances);
      - ``outstanding``: outstanding requests per active instance / `target_outstanding`; with
        `count_starting` (default) instances still starting count as capacity already requested.
    Defaults are SageServe's paper values (70 % / 30 %, 15-s cooldown). `down_for_s` > 0: scale
    in only once util has stayed below `down` at every decision for that long (PreServe's
    Reactive baseline: "< 30 % for 5 min").
    """

    period_s: float = 5.0
    up: float = 0.7
    down: float = 0.3
    cooldown_s: float = 15.0
    step: int = 1
    metric: str = "kv"
    target_outstanding: float = 16.0
    count_starting: bool = True
    kv_count_starting: bool = False
    down_for_s: float = 0.0
    _last: dict = field(default_factory=dict, repr=False)
    _below: dict = field(default_factory=dict, repr=False)
    Options: ClassVar[type[Strict]] = ReactiveOptions

    def __post_init__(self) -> None:
        if not 0 <= self.down < self.up:
            raise ValueError(f"reactive autoscaler: need 0 <= down < up, got down={self.down}, up={self.up}")
        if self.metric not in ("kv", "outstanding"):
            raise ValueError(f"reactive autoscaler: metric must be 'kv' or 'outstanding', got {self.metric!r}")
        if self.step < 1:
            raise ValueError(f"reactive autoscaler: step must be >= 1, got {self.step}")

    def utilisation(self, st) -> float:
        if self.metric == "kv":
            if st.ready == 0:
                return float("inf") if (st.queued or st.outstanding) else 0.0
            util = st.kv_util
            if self.kv_count_starting and st.starting:
                n_mem = st.ready + st.counts.get(State.DRAINING, 0)  # the instances kv_util averages over
                util *= n_mem / (n_mem + st.starting)
        else:
            n = st.active if self.count_starting else st.ready
            if n == 0:
                return float("inf") if (st.queued or st.outstanding) else 0.0
            util = (st.outstanding + st.queued) / (n * self.target_outstanding)
            if self.count_starting and st.starting:
                util *= st.ready / st.active  # capacity on its way dilutes the load
        return util

    def holding(self, key: tuple[str, str], now: float) -> bool:
        """Is endpoint ``key`` barred from scaling now? (the cooldown after its last action)"""
        last = self._last.get(key)
        return last is not None and now - last < self.cooldown_s

    def scaled(self, view: FleetView, key: tuple[str, str], delta: int, now: float) -> None:
        """Book an action of ``delta`` instances on endpoint ``key`` (starts its cooldown)."""
        self._last[key] = now

    def act(self, view: FleetView) -> list[Action]:
        now = view.now
        actions: list[Action] = []
        for key in view.endpoints():
            if self.holding(key, now):
                continue
            st = view.endpoint(*key)
            u = self.utilisation(st)
            delta = self.step if u > self.up else (-self.step if u < self.down else 0)
            if u < self.down:
                since = self._below.setdefault(key, now)
                if now - since < self.down_for_s:
                    delta = 0
            else:
                self._below.pop(key, None)
            if delta < 0 and st.active <= 0:
                delta = 0
            if delta:
                actions.append(Scale(key[0], key[1], delta))
                self.scaled(view, key, delta, now)
                if delta < 0:
                    self._below.pop(key, None)  # the next scale-in waits down_for_s again
        return actions
