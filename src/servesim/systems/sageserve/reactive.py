"""Reactive scaling as the authors' code does it (``SageServeConfig.use_locks``).

The paper's Reactive waits a 15-s cooldown after every scaling event (the fleet's
`ReactiveAutoscaler`). The code (`BasicArbiter`) has no cooldown; instead, after a scale-up the
endpoint is locked for 65 s when the instance is a same-model reclaim from the pool and 155 s
when it is a conversion (another model's instance or a new VM), and a scale-in locks nothing
(spec §1.6). The code's lock is per model; we hold it per (model, region) endpoint.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from ...policies.autoscalers import ReactiveAutoscaler


def lock_after_up(view, model: str, region: str, reclaim_s: float, conversion_s: float) -> float:
    """Lock length after scaling ``(model, region)`` up: a reclaim if the region's pool holds an
    instance with this model's weights, else a conversion."""
    return reclaim_s if view.pooled(region).get(model, 0) > 0 else conversion_s


@dataclass
class LockedReactive(ReactiveAutoscaler):
    """`ReactiveAutoscaler` with the code's asymmetric locks instead of a cooldown."""

    lock_reclaim_s: float = 65.0
    lock_conversion_s: float = 155.0
    _until: dict = field(default_factory=dict, repr=False)

    def holding(self, key: tuple[str, str], now: float) -> bool:
        return now < self._until.get(key, -math.inf)

    def scaled(self, view, key: tuple[str, str], delta: int, now: float) -> None:
        if delta > 0:  # a scale-in locks nothing
            self._until[key] = now + lock_after_up(view, *key, self.lock_reclaim_s, self.lock_conversion_s)
