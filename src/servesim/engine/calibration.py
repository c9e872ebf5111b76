"""Held-out workloads for simulator-vs-engine comparison, at fractions of measured capacity.

The profiling sweep (:mod:`.profile`) measures the engine's saturation throughput on a request
mix; the comparison workloads use the same length mix with different seeds (so they are not the
sweep's requests) and Poisson arrivals at ``load x capacity`` requests per second.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from servesim.engine.profile import request_mix

#: seed offset of held-out workloads: far from the sweep's seeds (plan.seed, plan.seed + 1)
HELDOUT_SEED = 1000


def heldout_workload(fit_json: str | Path, load: float, n_requests: int, seed: int = 0) -> pd.DataFrame:
    """``n_requests`` of the profile's mix arriving as a Poisson process at ``load`` x capacity."""
    fit = json.loads(Path(fit_json).read_text())
    if "capacity_req_s" not in fit:
        raise ValueError(f"{fit_json}: no capacity_req_s (profile with --capacity-requests > 0)")
    rate = float(load) * float(fit["capacity_req_s"])
    ss = np.random.SeedSequence([HELDOUT_SEED + seed, int(round(load * 1000))])
    arr_rng = np.random.default_rng(ss.spawn(1)[0])
    arrivals = np.cumsum(arr_rng.exponential(1.0 / rate, n_requests))
    arrivals -= arrivals[0]
    return request_mix(n_requests, int(ss.generate_state(1)[0]), tuple(fit["prompt_range"]),
                       tuple(fit["output_range"]), arrival_s=arrivals)
