"""Periodic samples of instance state (KV use, queue length, running requests).

A :class:`Sampler` fires every ``interval`` seconds at priority ``PRIO_SAMPLE`` (after everything
else at that instant) and records, per instance, the state at that time (decode runs in progress
are synced first, so fast and reference modes give identical samples). O(instances) per sample.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping

import numpy as np
import pandas as pd

from .kernel import PRIO_SAMPLE, Kernel

TIMESERIES_COLUMNS = ("time_s", "instance", "kv_used_blocks", "kv_usage", "waiting", "running")


class Sampler:
    """Samples ``instances`` every ``interval`` s from ``start`` until ``stop``, or until no arrival
    is pending and every instance is idle (the kernel's rule for periodic observers, so a sampler
    and another observer, e.g. a polling router, never keep each other alive).

    ``probes``: extra columns, name -> function of an instance (e.g. PreServe's queued prompt
    tokens), recorded after ``TIMESERIES_COLUMNS``."""

    def __init__(self, kernel: Kernel, instances: list, interval: float, start: float = 0.0,
                 stop: float = math.inf, probes: Mapping[str, Callable] | None = None) -> None:
        if not interval > 0:
            raise ValueError(f"sample interval={interval!r} must be > 0")
        clash = set(probes or ()) & set(TIMESERIES_COLUMNS)
        if clash:
            raise ValueError(f"sampler probes {sorted(clash)} would replace standard columns {TIMESERIES_COLUMNS}")
        self.kernel = kernel
        self.instances = instances
        self.interval = float(interval)
        self.stop = stop
        self.probes = dict(probes or {})
        self._extra: dict[str, list] = {k: [] for k in self.probes}
        self._t: list[float] = []
        self._i: list[int] = []
        self._kv: list[int] = []
        self._cap: list[int] = []
        self._w: list[int] = []
        self._r: list[int] = []
        self._n = 0
        self.start = start
        kernel.at(start, self._fire, None, PRIO_SAMPLE)

    def _fire(self, _arg) -> None:
        t = self.kernel.now
        for j, inst in enumerate(self.instances):
            self._t.append(t)
            self._i.append(j)
            self._kv.append(inst.kv_used_blocks())
            self._cap.append(inst.num_blocks)
            self._w.append(inst.num_waiting)
            self._r.append(inst.num_running)
            for k, f in self.probes.items():
                self._extra[k].append(f(inst))
        self._n += 1
        nxt = self.start + self._n * self.interval  # no drift from repeated addition
        if nxt <= self.stop and (self.kernel.arrivals_pending()
                                 or any(i.busy or i.outstanding for i in self.instances)):
            self.kernel.at(nxt, self._fire, None, PRIO_SAMPLE)

    def frame(self, names: list[str] | None = None) -> pd.DataFrame:
        """Samples as a DataFrame with TIMESERIES_COLUMNS, then the probes' columns."""
        idx = np.asarray(self._i, dtype=np.int64)
        kv = np.asarray(self._kv, dtype=np.int64)
        inst = np.asarray(names, dtype=object)[idx] if names is not None else idx.astype(str)
        return pd.DataFrame({
            "time_s": np.asarray(self._t, dtype=np.float64),
            "instance": pd.array(inst, dtype="string"),
            "kv_used_blocks": kv,
            "kv_usage": kv / np.maximum(np.asarray(self._cap, dtype=np.float64), 1),
            "waiting": np.asarray(self._w, dtype=np.int64),
            "running": np.asarray(self._r, dtype=np.int64),
            **{k: np.asarray(v) for k, v in self._extra.items()},
        })
