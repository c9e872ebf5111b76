"""Full-scale presets and the NIW queue manager's fast expiry (same requests, same order)."""

import random

import numpy as np
import pytest

from servesim.systems.sageserve.niw import NIWQueueManager, NIWRequest
from servesim.analysis.runs import run as declared_run
from servesim.systems.sageserve.runs import MODELS_4, REGIONS_3
from servesim.systems.sageserve.strategies import MODEL_DEFAULTS, scenario_dict
from servesim.systems.sageserve.config import SageServeConfig


def _window(name):
    """The declared full-scale run's window (workflow/runs/sageserve.yaml), parsed as runs.py parses it."""
    import argparse

    from servesim.systems.sageserve.runs import add_window_args, window_of

    ap = argparse.ArgumentParser()
    add_window_args(ap)
    return window_of(ap.parse_known_args(list(declared_run("sageserve", name, "full").args))[0])


def test_full_presets_are_4_models_by_3_regions():
    full, week = _window("runs/reactive"), _window("runs_week/reactive")
    assert full["models"] == MODELS_4 and full["regions"] == REGIONS_3
    assert (full["from_h"], full["to_h"]) == (24.0, 48.0)  # trace day 1
    assert week["days"] == 7 and week["to_h"] == 168.0
    assert week["models"] == MODELS_4 and week["regions"] == REGIONS_3
    assert set(MODELS_4) <= set(MODEL_DEFAULTS)  # every model of the presets has an instance reading


def test_multi_region_scenario_has_inter_region_latency():
    import pandas as pd

    wl = pd.DataFrame({"model": ["llama-2-70b", "llama-3.2-3b"], "region": ["westus", "eastus"]})
    sc = scenario_dict("reactive", wl, SageServeConfig.paper(), 60.0)
    assert sc["latency_s"]["westus"]["eastus"] == SageServeConfig.paper().inter_region_latency_s
    assert "westus" not in sc["latency_s"]["westus"]


def _slow_expire(queues, now):
    """The reference: filter every queue (what `expire` did before the prefix fast path)."""
    out = []
    for q in queues.values():
        keep = [r for r in q if r.deadline_s > now]
        out += [r for r in q if r.deadline_s <= now]
        q[:] = keep
    return out


@pytest.mark.parametrize("shuffled", [False, True])
def test_expire_fast_path_matches_full_scan(shuffled):
    rng = random.Random(3)
    m = NIWQueueManager()
    ref: dict = {}
    arr = sorted(rng.uniform(0, 1000) for _ in range(300))
    for i, a in enumerate(arr):
        dl = a + (rng.uniform(0, 500) if shuffled else 200.0)  # shuffled: deadlines out of order
        r = NIWRequest(i, rng.choice("AB"), rng.choice(["east", "west"]), a, 10, 5, dl)
        m.push(r)
        ref.setdefault((r.model, r.region), []).append(r)
    for now in np.linspace(0, 1600, 17):
        got = m.expire(float(now))
        want = _slow_expire(ref, float(now))
        assert [r.request_id for r in got] == [r.request_id for r in want]
        assert len(m) == sum(len(q) for q in ref.values())
        for key, q in ref.items():  # releases keep the order too
            if q:
                rel = m.on_signal(key[0], key[1], 0.1, float(now))
                assert [r.request_id for r in rel] == [r.request_id for r in q[:len(rel)]]
                del q[:len(rel)]
