import numpy as np
import pytest

from servesim.systems.sageserve.config import SageServeConfig
from servesim.systems.sageserve.strategies import run_strategy, summarise
from servesim.workload import sageserve_week


@pytest.fixture(scope="module")
def small_workload():
    wk = sageserve_week(scale=0.02, seed=3, days=1)
    wl = wk[(wk.model == "llama-2-70b") & (wk.region == "eastus") & (wk.arrival_s < 14 * 3600)]
    return wl.reset_index(drop=True)


@pytest.mark.parametrize("strategy", ["reactive", "lt_i"])
def test_strategy_runs_conserve_requests_and_bill_instances(small_workload, strategy):
    cfg = SageServeConfig(start_instances=4, forecast_mode="rolling")
    res, actor = run_strategy(strategy, small_workload, t0_s=13 * 3600, config=cfg, seed=0, max_instances=6)
    s = summarise(res, strategy)
    n_in = int((small_workload.arrival_s >= 13 * 3600).sum())
    assert s["all"]["requests"] == n_in == len(res.requests)
    assert set(res.requests["state"]) <= {"finished", "rejected", "unfinished", "timeout", "error"}
    # at most max_instances billed over the ~1 h run (the run stops once every request ended)
    assert 0 < s["instance_hours"]["billed"] <= 6 * 1.1
    if strategy == "lt_i":
        targets = [r for r in actor.log if r["kind"] == "target"]
        assert targets and all(2 <= r["target"] <= 6 for r in targets)


def test_same_seed_same_result(small_workload):
    cfg = SageServeConfig(start_instances=3)
    a, _ = run_strategy("reactive", small_workload, t0_s=13.5 * 3600, config=cfg, seed=1, max_instances=5)
    b, _ = run_strategy("reactive", small_workload, t0_s=13.5 * 3600, config=cfg, seed=1, max_instances=5)
    np.testing.assert_array_equal(a.requests["finish_s"].to_numpy(), b.requests["finish_s"].to_numpy())
    assert a.instance_hours.equals(b.instance_hours)


def test_unknown_strategy(small_workload):
    with pytest.raises(ValueError, match="strategy"):
        run_strategy("bogus", small_workload)


def test_siloed_serves_niw_from_its_own_pool(small_workload):
    assert (small_workload.tier == "NIW").any()
    cfg = SageServeConfig(siloed_iw_instances=3, siloed_niw_instances=1)
    res, actor = run_strategy("siloed", small_workload, t0_s=13.5 * 3600, config=cfg, seed=0, max_instances=5)
    assert actor is None
    req = res.requests
    niw = req[req["tier"] == "NIW"]
    assert len(niw) and (niw["model"] == "llama-2-70b@niw").all()
    assert (req.loc[req["tier"] != "NIW", "model"] == "llama-2-70b").all()
    assert set(res.instance_hours["model"]) == {"llama-2-70b", "llama-2-70b@niw"}


def test_chiron_three_pools_and_overflow(small_workload):
    cfg = SageServeConfig(chiron_interactive=2, chiron_mixed=2, chiron_batch=2, iw_region_gate=0.05)
    res, actor = run_strategy("chiron", small_workload, t0_s=13.5 * 3600, config=cfg, seed=0, max_instances=4)
    req = res.requests
    n_in = int((small_workload.arrival_s >= 13.5 * 3600).sum())
    assert len(req) == n_in
    assert set(res.instance_hours["model"]) == {"llama-2-70b", "llama-2-70b@int", "llama-2-70b@niw"}
    niw = req[req["tier"] == "NIW"]
    assert (niw["model"] == "llama-2-70b@niw").all() and niw["instance"].str.len().gt(0).all()
    iw = req[req["tier"] != "NIW"]
    # IW requests are served by the interactive pool or, above the gate, by the mixed pool
    served = iw["instance"].map(dict(zip(res.lifecycle["instance"], res.lifecycle["model"])))
    assert set(served.dropna()) == {"llama-2-70b", "llama-2-70b@int"}  # the low gate makes some overflow
    assert actor.log and {r["pool"] for r in actor.log} == {"interactive"}
