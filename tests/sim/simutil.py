"""Helpers shared by the simulator tests."""

from __future__ import annotations

import numpy as np
import pandas as pd

from servesim.perf import LinearStepTime
from servesim.sim import Cluster, InstanceListener
from servesim.workload import schema

#: dyadic coefficients: every time is exact in binary, so arrivals often tie with boundaries
DYADIC = LinearStepTime(c0=0.25, c_pt=1 / 64, c_pc=0.0, c_ds=1 / 32, c_dc=0.0)
#: generic float coefficients (context-dependent decode cost)
GENERIC = LinearStepTime(c0=4.7e-3, c_pt=1.1e-4, c_pc=3e-9, c_ds=2.3e-5, c_dc=1.3e-7)


def workload(arrival, prompt, output, model="default") -> pd.DataFrame:
    return schema.make(np.asarray(arrival, dtype=float), np.asarray(prompt), np.asarray(output),
                       model=model)


def run(w, cfg, step=DYADIC, n=1, mode="fast", router="round_robin", check=True, **kw):
    cl = Cluster.uniform(n, cfg, step, mode=mode, router=router, check_invariants=check, **kw)
    return cl.run(w)


class Recorder(InstanceListener):
    """Collects terminal requests (and counts how often each one ends)."""

    def __init__(self):
        self.done = []
        self.handoffs = []

    def on_done(self, inst, r):
        self.done.append((inst.kernel.now, r))

    def on_handoff(self, inst, r):
        self.handoffs.append((inst.kernel.now, r))
