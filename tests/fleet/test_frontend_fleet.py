"""A scenario's ``frontend``: every instance's API server as a queue (servesim.sim.frontend) in a
fleet run, switched on from the scenario file; off, the run is unchanged."""

import json

import numpy as np
import pytest
import yaml

from servesim.errors import InputError
from servesim.fleet import run_scenario
from servesim.fleet.scenario import ScenarioError, load_scenario, parse_scenario

SCENARIO = """
name: fe
seed: 3
workload:
  generator: poisson
  duration_s: 60s
  streams:
    - {model: m, region: r, tier: IW-F, rate_rps: 6, prompt_tokens: {mean: 200, cv: 1.0, max: 2000},
       output_tokens: {mean: 60, cv: 1.0, max: 400}}
regions: [{name: r}]
models:
  m:
    engine: {kv_capacity_tokens: 60000, max_num_seqs: 64, max_num_batched_tokens: 2048}
    step_time: {backend: linear, c0: 5.0e-3, c_pt: 1.0e-4, c_pc: 0.0, c_ds: 2.0e-4, c_dc: 1.0e-8}
endpoints: [{model: m, region: r, instances: 2}]
router: {name: round-robin}
"""


def scenario(**extra):
    d = yaml.safe_load(SCENARIO)
    d.update(extra)
    return parse_scenario(d)


def test_off_and_free_change_nothing():
    plain = run_scenario(scenario())
    free = run_scenario(scenario(frontend={"request_s": 0.0}))
    np.testing.assert_array_equal(free.requests["ttft_s"].to_numpy(), plain.requests["ttft_s"].to_numpy())
    assert free.summary["frontend"]["passes"] == 1 and "frontend" not in plain.summary


def test_costs_reach_the_client_and_the_summary(tmp_path):
    plain = run_scenario(scenario())
    res = run_scenario(scenario(frontend={"request_s": 0.004, "output_token_s": 0.0005}))
    info = res.summary["frontend"]
    assert info["settled"] and info["passes"] >= 2 and 0 < info["utilisation_max"] < 1
    ok = res.requests["state"] == "finished"
    assert (res.requests.loc[ok, "ttft_s"] >= 0.004 + 0.0005 - 1e-12).all()
    assert res.requests.loc[ok, "e2e_s"].mean() > plain.requests.loc[ok, "e2e_s"].mean()
    assert list(res.requests.columns) == list(plain.requests.columns)
    assert res.requests.dtypes.equals(plain.requests.dtypes)
    res.write(tmp_path / "out")  # the summary with its front-end info is JSON
    assert json.loads((tmp_path / "out" / "summary.json").read_text())["frontend"]["settled"]
    again = run_scenario(scenario(frontend={"request_s": 0.004, "output_token_s": 0.0005}))
    assert again.requests.equals(res.requests)


def test_a_measured_profile_relative_to_the_scenario(tmp_path):
    (tmp_path / "fe.json").write_text(json.dumps({"fit": {"request_s": 0.004, "prompt_token_s": 0.0,
                                                          "output_token_s": 0.0005}, "vllm": "0.32.0"}))
    d = yaml.safe_load(SCENARIO)
    d["frontend"] = {"profile": "fe.json"}
    (tmp_path / "s.yaml").write_text(yaml.safe_dump(d))
    a = run_scenario(load_scenario(tmp_path / "s.yaml"))
    b = run_scenario(scenario(frontend={"request_s": 0.004, "output_token_s": 0.0005}))
    np.testing.assert_array_equal(a.requests["ttft_s"].to_numpy(), b.requests["ttft_s"].to_numpy())


@pytest.mark.parametrize("fe, msg", [
    ({"profile": "x.json", "request_s": 0.1}, "not both"),
    ({}, "give profile or"),
    ({"request_s": -1}, "frontend.request_s"),
    ({"request_s": 0.1, "bogus": 1}, "frontend.bogus"),
])
def test_bad_frontend_sections_are_named(fe, msg):
    with pytest.raises(ScenarioError, match=msg):
        scenario(frontend=fe)


def test_extra_actors_are_refused_with_a_front_end():
    with pytest.raises(InputError, match="frontend"):
        run_scenario(scenario(frontend={"request_s": 0.001}), actors=[object()])
