"""OServe's flow network (C1-C3 LP), App. C completion times and the §4.3 initialization."""

import numpy as np
import pytest

from servesim.systems.oserve import (OServeConfig, completion_time, lcm_capacity, max_flow, min_gpus_per_replica,
                                     min_makespan, paper_inputs, unit_costs)


def test_lcm_and_costs():
    assert lcm_capacity([80, 50]) == 400 and unit_costs([80, 50]) == [5, 8]
    assert lcm_capacity([6, 0, 4]) == 12 and unit_costs([6, 0, 4]) == [2, 0, 3]
    for bad in ([0, 0], [2.5, 4], [-1, 3]):
        with pytest.raises(ValueError):
            lcm_capacity(bad)


def test_max_flow_respects_c1_c3_and_finds_the_optimum():
    n = np.array([[80, 50], [40, 30], [40, 30]])
    a = max_flow([90, 60], n)
    assert np.all(a.x.sum(axis=0) <= np.array([90, 60]) + 1e-6)          # C1
    assert np.all(a.load <= 1 + 1e-6)                                    # C3
    # each replica's best type alone: 80 + 40 + 40 type-1 slots but only 90 demanded, so the LP
    # fills the rest with type 2: 142.5 requests is the optimum of this instance
    assert a.phi == pytest.approx(142.5, abs=1e-6) and a.saturated == [0, 1, 2]


def test_max_flow_when_demand_fits_serves_all_and_leaves_slack():
    a = max_flow([10, 5], [[80, 50], [40, 30]])
    assert a.phi == pytest.approx(15) and a.underused


def test_edge_capacity_and_unservable_type():
    a = max_flow([100, 100], [[80, 0], [40, 30]], e=[[10, 0], [40, 30]])
    assert a.x[0, 1] == 0 and a.x[0, 0] <= 10 + 1e-9


def test_appc_cases_with_stated_numbers():
    ex = paper_inputs()["appc_example"]
    got = {c: completion_time(ex["lam"], v["rates"], v["fractions"])[0] for c, v in ex["cases"].items()}
    assert got == pytest.approx({"case1": 10.0, "case2": 10.0, "case3": 11.8})
    lp, f = min_makespan(ex["lam"], ex["cases"]["case2"]["rates"])
    assert lp == pytest.approx(55 / 6, abs=1e-5) and f.sum(axis=0) == pytest.approx([1, 1])
    assert completion_time(ex["lam"], ex["cases"]["case2"]["rates"], f)[0] == pytest.approx(lp, abs=1e-5)
    with pytest.raises(ValueError):
        completion_time([1, 1], [[1, 0]], [[0.5, 0.5]])


def test_init_and_config():
    assert min_gpus_per_replica(138e9, 80 * 2**30, 64) == 2
    assert min_gpus_per_replica(10e9, 80 * 2**30, 64) == 1
    assert min_gpus_per_replica(132e9, 40e9, 72) == 4   # 3 x 40 GB is too small
    assert min_gpus_per_replica(132e9, 50e9, 72) == 3   # TP=3 divides 72 heads
    assert min_gpus_per_replica(132e9, 50e9, 64) == 4   # ... but not 64
    with pytest.raises(ValueError):
        min_gpus_per_replica(1e13, 80e9, 64)
    c = OServeConfig.paper()
    assert c.total_gpus == 32 and c.search_patience == 20
    with pytest.raises(ValueError, match="unknown"):
        OServeConfig.paper(patience=3)
