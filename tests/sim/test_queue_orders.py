"""Waiting-queue orders (`servesim.sim.queue_orders`): an instance configured with one serves its
queue in the order's sequence, through `Cluster.run` and through a fleet scenario; bad names and
options are errors that name them."""

import copy
import math

import numpy as np
import pandas as pd
import pytest

from servesim.fleet import parse_scenario, run_scenario
from servesim.fleet.scenario import ScenarioError
from servesim.sim import InstanceConfig, get_order
from servesim.sim.queue_orders import TIER_RANK, tier_ranks
from servesim.workload import schema
from tests.sim.simutil import DYADIC, run

# request 0 (IW-N) takes the only slot at t = 0; 1 (NIW), 2 (IW-N), 3 (IW-F) queue behind it
TIERS = ["IW-N", "NIW", "IW-N", "IW-F"]
ARRIVAL = [0.0, 0.1, 0.2, 0.3]
DEADLINE = [60.0, 86_400.0, 0.25, 4.0]  # request 2's TTFT deadline is earliest


def _workload(model="default", region="r") -> pd.DataFrame:
    w = schema.make(np.array(ARRIVAL), np.array([64] * 4), np.array([8] * 4), model=model)
    w["region"] = pd.array([region] * 4, dtype="string")
    w["tier"] = pd.array(TIERS, dtype="string")
    w["deadline_s"] = DEADLINE
    return w


def _served(df: pd.DataFrame) -> list[int]:
    """Request ids in the order they were first scheduled."""
    return df.sort_values("scheduled_s")["request_id"].tolist()


@pytest.mark.parametrize("order,options,expected", [
    (None, {}, [0, 1, 2, 3]),                             # the policy's own arrival order
    ("pf", {}, [0, 3, 2, 1]),                             # IW-F, IW-N, NIW
    ("edf", {}, [0, 2, 3, 1]),                            # earliest deadline
    ("fcfs", {"niw_bump_s": 3600.0}, [0, 2, 3, 1]),       # IW by arrival, the young NIW last
    ("fcfs", {"niw_bump_s": 0.0}, [0, 1, 2, 3]),          # the NIW past its bump ranks as IW
    ("dpa", {"tau_n_s": 10.0, "tau_p_s": 1.0}, [0, 3, 2, 1]),  # when 0 ends (t ~3.2 s) request 3
    # is urgent IW-F, 2 recently expired (after every IW not expired), the NIW (no bump) last
])
@pytest.mark.parametrize("mode", ["fast", "reference"])
def test_an_instance_serves_its_queue_in_the_orders_sequence(order, options, expected, mode):
    cfg = InstanceConfig(num_blocks=64, max_num_seqs=1, queue_order=order, queue_order_options=options)
    res = run(_workload(), cfg, step=DYADIC, mode=mode)
    assert (res.requests["state"] == "finished").all()
    assert _served(res.requests) == expected


def test_a_fleet_scenario_names_its_engines_queue_order():
    sc = {"name": "q", "duration_s": 60.0, "regions": [{"name": "r"}],
          "models": {"m": {"engine": {"kv_capacity_tokens": 1024, "max_num_seqs": 1, "policy": "vllm-v1",
                                      "queue_order": {"name": "pf"}},
                           "step_time": {"c0": 0.25, "c_pt": 1 / 64, "c_ds": 1 / 32}}},
          "endpoints": [{"model": "m", "region": "r", "instances": 1}]}
    ordered = run_scenario(parse_scenario(copy.deepcopy(sc)), workload=_workload("m"), seed=0).requests
    del sc["models"]["m"]["engine"]["queue_order"]
    plain = run_scenario(parse_scenario(sc), workload=_workload("m"), seed=0).requests
    assert _served(ordered) == [0, 3, 2, 1] and _served(plain) == [0, 1, 2, 3]


def test_bad_orders_and_options_are_named():
    with pytest.raises(ValueError, match="unknown queue order 'lifo'.*dpa"):
        InstanceConfig(num_blocks=8, queue_order="lifo")
    with pytest.raises(ValueError, match="queue_order.tau_p_s: unknown option"):
        InstanceConfig(num_blocks=8, queue_order="edf", queue_order_options={"tau_p_s": 1.0})
    with pytest.raises(ValueError, match="queue_order_options.*without a queue_order"):
        InstanceConfig(num_blocks=8, queue_order_options={"niw_bump_s": 1.0})
    with pytest.raises(ValueError, match="tau_n_s"):
        get_order("dpa", tau_n_s=-1.0)
    assert get_order("fcfs", niw_bump_s="10h").niw_bump_s == 36_000.0 and get_order("edf").niw_bump_s == math.inf
    sc = {"name": "q", "regions": [{"name": "r"}], "endpoints": [{"model": "m", "region": "r"}],
          "models": {"m": {"engine": {"kv_capacity_tokens": 1024, "queue_order": {"tau_p_s": 1.0}}}}}
    with pytest.raises(ScenarioError, match="s.yaml: models.m.engine.*queue_order needs a name"):
        parse_scenario(sc, "s.yaml")


def test_tier_ranks_follow_the_schema_and_mark_others():
    assert tier_ranks(np.array(["NIW", "IW-F", "batch", "IW-N"], dtype=object)).tolist() == [2, 0, -1, 1]
    assert tier_ranks(pd.Series(["IW-N", None, "NIW"], dtype="category")).tolist() == [1, -1, 2]
    assert TIER_RANK == {"IW-F": 0, "IW-N": 1, "NIW": 2}
