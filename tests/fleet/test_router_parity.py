"""One router implementation: the same router name makes the same choices through
`servesim.sim.Cluster` and through the fleet (same instances, same step model, same seed)."""

import numpy as np
import pytest

from servesim.fleet import parse_scenario
from servesim.fleet.run import run_scenario
from servesim.sim import Cluster, InstanceConfig, make_router
from servesim.workload import schema

SCENARIO = {
    "name": "router-parity",
    "seed": 3,
    "workload": {"generator": "poisson", "duration_s": 10,
                 "streams": [{"model": "m", "region": "r", "rate_rps": 1,
                              "prompt_tokens": {"mean": 100}, "output_tokens": {"mean": 10}}]},
    "regions": [{"name": "r"}],
    "models": {"m": {
        "engine": {"kv_capacity_tokens": 4096, "block_size": 16, "max_num_seqs": 8,
                   "max_num_batched_tokens": 512},
        "step_time": {"backend": "linear", "c0": 5.0e-3, "c_pt": 1.0e-4, "c_pc": 0.0,
                      "c_ds": 2.0e-5, "c_dc": 1.0e-8},
    }},
    "endpoints": [{"model": "m", "region": "r", "instances": 3, "min_instances": 3, "max_instances": 3}],
}


def workload(n=120, seed=11):
    rng = np.random.default_rng(seed)
    return schema.make(np.cumsum(rng.exponential(0.05, n)), rng.integers(1, 600, n),
                       rng.integers(1, 80, n), model="m", region="r")


@pytest.mark.parametrize("name", ["round-robin", "random", "power-of-two", "least-outstanding", "jsq-tokens"])
def test_same_choices_in_cluster_and_fleet(name):
    w = workload()
    sc = parse_scenario({**SCENARIO, "router": {"name": name}})
    fleet_inst = run_scenario(sc, workload=w).requests["instance"].tolist()
    assert all(x.startswith("r/i") for x in fleet_inst)
    fleet_idx = [int(x[3:]) for x in fleet_inst]

    # the fleet seeds each endpoint's router from SeedSequence([seed, 2]); give the Cluster's the same
    rng = np.random.default_rng(np.random.SeedSequence([sc.seed, 2]).spawn(1)[0])
    e = sc.models["m"].engine
    cfg = InstanceConfig(num_blocks=e.kv_capacity_tokens // e.block_size, block_size=e.block_size,
                         max_num_seqs=e.max_num_seqs, max_num_batched_tokens=e.max_num_batched_tokens,
                         model="m")
    underscored = name.replace("-", "_")  # the Cluster accepts either spelling
    cl = Cluster.uniform(3, cfg, sc.models["m"].build_step_time("m"), router=make_router(underscored, rng))
    res = cl.run(w)
    cluster_idx = [int(x[1:]) for x in res.requests["instance"]]

    assert cluster_idx == fleet_idx
    assert len(set(cluster_idx)) == 3  # every instance was used
    if name in ("least-outstanding", "jsq-tokens"):  # load-aware routers saw completions
        assert (res.requests["finish_s"] < w["arrival_s"].iloc[-1]).sum() > 10
