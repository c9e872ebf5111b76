"""SageServe on the fleet's public API: NIW deadline enforcement (paper vs code reading) and
conversions of another model's spot instances (scaling_level 2)."""

import numpy as np
import pytest

from servesim.systems.sageserve.config import SageServeConfig
from servesim.systems.sageserve.strategies import run_strategy, scenario_dict
from servesim.workload import sageserve_week

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
                          reactive_scale_out=0.999, reactive_scale_in=0.99)
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
