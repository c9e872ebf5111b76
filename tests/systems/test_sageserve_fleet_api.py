"""SageServe on the fleet's public API: NIW deadline enforcement (paper vs code reading) and
conversions of another model's spot instances (scaling_level 2)."""

import numpy as np
import pytest

from servesim.systems.sageserve.config import SageServeConfig
from servesim.systems.sageserve.strategies import run_strategy, scenario_dict, summarise
from servesim.workload import sageserve_week
from servesim.workload.schema import make

T0 = 13 * 3600


@pytest.fixture(scope="module")
def workload():
    wk = sageserve_week(scale=0.3, seed=3, days=1)
    wl = wk[(wk.model == "llama-2-70b") & (wk.region == "eastus") & (wk.arrival_s < T0 + 900)]
    return wl.reset_index(drop=True)


def test_readings_set_the_fleet_options(workload):
    p, c = SageServeConfig.paper(), SageServeConfig.code()
    assert p.niw_deadline_enforce and not c.niw_deadline_enforce
    assert scenario_dict("reactive", workload, p, 3600.0)["enforce_deadlines"] == ["NIW"]
    assert scenario_dict("reactive", workload, c, 3600.0)["enforce_deadlines"] == []
    assert scenario_dict("reactive", workload, p, 3600.0)["pool_conversions"] is True
    assert scenario_dict("reactive", workload, p.with_(scaling_level=1), 3600.0)["pool_conversions"] is False
    lead = scenario_dict("reactive", workload, p, 3600.0)["models"]["llama-2-70b"]["lead"]
    assert lead["convert_s"] == p.model_redeploy_s == 600.0


def congested(workload, enforce):
    """NIW with a 1-minute deadline on an endpoint held at one instance whose release gate is
    always open: released NIW requests queue in the instance past their deadline."""
    wl = workload.copy()
    niw = (wl.tier == "NIW").to_numpy()
    wl.loc[niw, "deadline_s"] = wl.loc[niw, "arrival_s"] + 60.0
    cfg = SageServeConfig(start_instances=1, min_per_endpoint=1, niw_deadline_s=60.0, niw_deadline_enforce=enforce,
                          niw_release_one_below=1.0, niw_release_two_below=1.0,
                          reactive_scale_out=0.999, reactive_scale_in=0.99,
                          niw_chunk_tokens=None)  # whole prompts: one request, one timeout state
    return run_strategy("reactive", wl, t0_s=T0, config=cfg, seed=0, max_instances=1)[0]


def test_paper_reading_times_out_waiting_niw_once(workload):
    res = congested(workload, True)
    req = res.requests
    to = req[req.state == "timeout"]
    assert len(to) > 0 and (to.tier == "NIW").all()
    # waited in an instance (released, never started) or in the queue manager (never released)
    in_inst = to.reason.str.contains("not started")
    assert in_inst.any()
    assert to.loc[in_inst, "niw_release_s"].notna().all() and to.scheduled_s.isna().all()
    assert to.loc[~in_inst, "niw_release_s"].isna().all()
    # nobody started after their deadline, IW untouched
    niw_started = req[(req.tier == "NIW") & req.scheduled_s.notna()]
    assert (niw_started.scheduled_s <= niw_started.deadline_s).all()
    assert not (req[req.tier != "NIW"].state == "timeout").any()


def test_code_reading_never_expires(workload):
    res = congested(workload, False)
    req = res.requests
    assert not (req.state == "timeout").any()
    niw = req[req.tier == "NIW"]
    late = niw[niw.scheduled_s > niw.deadline_s]
    assert len(late) > 0  # served past the deadline instead
    assert np.isin(niw.state, ["finished", "unfinished"]).all()


def shifting_load(seconds=900.0, hi=10.0, lo=0.5, seed=1):
    """Llama-2 busy then idle, Bloom idle then busy: Llama's scale-ins fill the spot pool that
    Bloom's scale-ups then take (scaling_level 2: a conversion)."""
    rng = np.random.default_rng(seed)
    parts = []
    for model, first in (("llama-2-70b", hi), ("bloom-176b", lo)):
        second = lo if first == hi else hi
        n1, n2 = rng.poisson(first * seconds), rng.poisson(second * seconds)
        parts.append((np.concatenate([rng.uniform(0, seconds, n1), rng.uniform(seconds, 2 * seconds, n2)]), model))
    t = np.concatenate([p[0] for p in parts])
    m = np.concatenate([[p[1]] * len(p[0]) for p in parts])
    o = np.argsort(t, kind="stable")
    t, m = t[o], m[o]
    n = len(t)
    return make(t, rng.integers(500, 2000, n), rng.integers(100, 400, n), model=m, region="eastus",
                tier="IW-F", deadline_s=t + 1.0)


@pytest.mark.parametrize("level", [2, 1])
def test_scaling_level_2_converts_other_models_spot_instances(level):
    cfg = SageServeConfig(start_instances=4, scaling_level=level, niw_queue=False)
    res, _ = run_strategy("reactive", shifting_load(), config=cfg, seed=0, max_instances=8)
    lc, h = res.lifecycle, res.instance_hours
    conv = lc[lc.to_state == "converting"]
    if level == 1:
        assert conv.empty and not (h.state == "converting").any()
        return
    assert len(conv) > 0 and (conv.from_state == "pooled").all()
    # each conversion: the VM changes model and is ready model_redeploy_s later
    for iid in conv.instance.unique():
        g = lc[lc.instance == iid].reset_index(drop=True)
        for k in np.flatnonzero(g.to_state == "converting"):
            assert g.model[k] != g.model[k - 1]
            if k + 1 < len(g):
                assert g.to_state[k + 1] in ("ready", "pooled", "released")
                if g.to_state[k + 1] == "ready":
                    assert g.time_s[k + 1] - g.time_s[k] == pytest.approx(cfg.model_redeploy_s)
    # converting hours are billed: the summary's instance-hours include them
    s = summarise(res, "reactive")
    billed = h[h.state.isin(["requested", "provisioning", "loading", "converting", "ready", "draining"])].hours.sum()
    assert s["instance_hours"]["billed"] == pytest.approx(billed) and h[h.state == "converting"].hours.sum() > 0
    assert res.requests.state.isin(["finished", "unfinished"]).all()  # (the run stops at the last minute)
