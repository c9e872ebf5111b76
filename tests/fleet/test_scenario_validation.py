import copy

import numpy as np
import pytest

from servesim.fleet.scenario import (
    ScenarioError,
    build_workload,
    parse_duration,
    parse_scenario,
)
from tests.data_marks import needs_azure_code

BASE = {
    "name": "t",
    "seed": 3,
    "workload": {"generator": "poisson", "duration_s": "2min", "streams": [
        {"model": "m", "region": "r", "rate_rps": 2.0, "prompt_tokens": {"mean": 100, "cv": 0.5},
         "output_tokens": {"mean": 50}}]},
    "regions": [{"name": "r"}],
    "models": {"m": {"engine": {"kv_capacity_tokens": 10000}}},
    "endpoints": [{"model": "m", "region": "r", "instances": 2}],
}


def err(mutate):
    d = copy.deepcopy(BASE)
    mutate(d)
    with pytest.raises(ScenarioError) as e:
        parse_scenario(d, "s.yaml")
    return str(e.value)


def test_base_is_valid_and_durations_parse():
    sc = parse_scenario(copy.deepcopy(BASE))
    assert sc.workload.duration_s == 120.0
    assert parse_duration("250ms") == 0.25 and parse_duration("1.5h") == 5400 and parse_duration(7) == 7


@pytest.mark.parametrize("mutate,needle", [
    (lambda d: d["endpoints"][0].update(instanse=3), "s.yaml: endpoints.0.instanse: unknown key"),
    (lambda d: d["endpoints"][0].update(instances=-1), "endpoints.0.instances: Input should be greater than or equal to 0"),
    (lambda d: d["models"]["m"].update(lead={"load_s": "2 parsecs"}), "models.m.lead.load_s: unknown time unit 'parsecs'"),
    (lambda d: d["models"]["m"]["engine"].pop("kv_capacity_tokens"), "models.m.engine.kv_capacity_tokens: Field required"),
    (lambda d: d["workload"]["streams"][0].update(rate_rps=0), "workload.streams.0.rate_rps: Input should be greater than 0"),
    (lambda d: d["workload"]["streams"][0].update(model="zz"), "workload.streams.0.model: unknown model 'zz'"),
    (lambda d: d["endpoints"][0].update(region="nowhere"), "endpoints.0.region: unknown region 'nowhere'"),
    (lambda d: d.update(router={"name": "fastest"}), "router.name: unknown router 'fastest'"),
    (lambda d: d.update(autoscaler={"name": "reactive", "up": 0.2, "down": 0.5}), "autoscaler: down (0.5) must be below up (0.2)"),
    (lambda d: d.update(autoscaler={"name": "magic"}), "autoscaler.name"),
    (lambda d: d.update(latency_s={"r": {"mars": 1}}), "latency_s.r.mars: unknown region 'mars'"),
    (lambda d: d.update(workload={"file": "x.parquet", "limt": 3}), "workload.limt: unknown key"),
    (lambda d: d.update(colour="blue"), "s.yaml: colour: unknown key"),
    # no truthy or YAML 1.1 reading of a boolean: "no" would be true in Python, "yes" is not YAML 1.2
    (lambda d: d.update(pool_conversions="yes"), "s.yaml: pool_conversions: expected true or false, got 'yes'"),
    (lambda d: d.update(requeue_on_drain=1), "requeue_on_drain: expected true or false, got 1"),
    (lambda d: d.update(autoscaler={"name": "reactive", "count_starting": "no"}),
     "autoscaler.count_starting: expected true or false, got 'no'"),
    (lambda d: d["regions"].__setitem__(0, {"name": "r", "capacity": 1}), "regions.0.capacity: 1 is below the 2 instances"),
    (lambda d: (d["regions"].append({"name": "q"}),
                d.update(global_router={"name": "preference", "preferences": {"r": ["r", "q"]}})),
     "latency_s: no latency between 'r' and 'q' (needed by global_router.preferences.r)"),
])
def test_errors_name_the_key(mutate, needle):
    assert needle in err(mutate)


def test_block_larger_than_the_kv_cache_is_refused():
    # issue 34: was rounded up to one block (a cache bigger than the one configured), silently
    msg = err(lambda d: d["models"]["m"]["engine"].update(kv_capacity_tokens=100, block_size=4096))
    assert "s.yaml: models.m.engine: block_size=4096 is larger than kv_capacity_tokens=100" in msg
    ok = copy.deepcopy(BASE)
    ok["models"]["m"]["engine"].update(kv_capacity_tokens=100, block_size=100)  # one whole block fits
    assert parse_scenario(ok).models["m"].engine.block_size == 100


def test_generator_is_seeded_and_follows_steps():
    d = copy.deepcopy(BASE)
    d["workload"]["streams"][0]["steps"] = [["60s", 20.0]]
    sc = parse_scenario(d)
    a = build_workload(sc, np.random.default_rng(1))
    b = build_workload(sc, np.random.default_rng(1))
    assert a.equals(b)
    n1 = (a.arrival_s < 60).sum()
    n2 = (a.arrival_s >= 60).sum()
    assert n2 > 5 * n1 and a.arrival_s.is_monotonic_increasing
    assert (a.output_tokens == 50).all() and a.prompt_tokens.std() > 0


@needs_azure_code
def test_named_generator():
    d = copy.deepcopy(BASE)
    d["workload"] = {"generator": "oserve", "options": {"level": "S1"}, "scale": 0.2, "limit": 50}
    sc = parse_scenario(d)
    w = build_workload(sc, np.random.default_rng(0))
    assert 0 < len(w) <= 50 and w["arrival_s"].is_monotonic_increasing


def test_named_generator_errors():
    d = copy.deepcopy(BASE)
    d["workload"] = {"generator": "nope"}
    with pytest.raises(ScenarioError, match="workload: unknown generator 'nope'"):
        parse_scenario(d, "s.yaml")
    d["workload"] = {"generator": "oserve", "scael": 2}
    with pytest.raises(ScenarioError, match="workload.scael: unknown key"):
        parse_scenario(d, "s.yaml")


def test_file_workload_relative_path_and_bad_file(tmp_path):
    import yaml

    from servesim.fleet.scenario import load_scenario
    from servesim.workload.schema import make, write

    write(make([0.0, 1.0, 2.0], [10, 20, 30], [5, 5, 5], model="m", region="r"), tmp_path / "w.parquet")
    d = copy.deepcopy(BASE)
    d["workload"] = {"file": "w.parquet", "limit": 2}
    (tmp_path / "s.yaml").write_text(yaml.safe_dump(d))
    w = build_workload(load_scenario(tmp_path / "s.yaml"), np.random.default_rng(0))
    assert list(w["prompt_tokens"]) == [10, 20]
    (tmp_path / "bad.csv").write_text("request_id,arrival_s\n0,1.0\n")
    d["workload"] = {"file": "bad.csv"}
    (tmp_path / "s.yaml").write_text(yaml.safe_dump(d))
    with pytest.raises(ScenarioError, match=r"workload.file: .*bad.csv: missing column"):
        build_workload(load_scenario(tmp_path / "s.yaml"), np.random.default_rng(0))
    d["workload"] = {"file": "absent.parquet"}
    (tmp_path / "s.yaml").write_text(yaml.safe_dump(d))
    with pytest.raises(ScenarioError, match=r"absent\.parquet: workload file does not exist"):
        build_workload(load_scenario(tmp_path / "s.yaml"), np.random.default_rng(0))


def test_other_perf_backends_by_name_and_their_errors():
    d = copy.deepcopy(BASE)
    d["models"] = {"llama-2-7b": {"engine": {"kv_capacity_tokens": 10000}, "hardware": "a100-80gb",
                                  "step_time": {"backend": "roofline", "eff_compute": 0.5}}}
    d["workload"]["streams"][0]["model"] = "llama-2-7b"
    d["endpoints"][0]["model"] = "llama-2-7b"
    sc = parse_scenario(copy.deepcopy(d))
    st = sc.models["llama-2-7b"].build_step_time("llama-2-7b")
    assert st.name == "roofline" and st.step_time(100, 100 * 100, 0, 0) > 0
    d["models"]["llama-2-7b"]["step_time"]["colour"] = 1
    with pytest.raises(ScenarioError, match=r"models.llama-2-7b.step_time: .*unknown option\(s\) colour"):
        parse_scenario(copy.deepcopy(d), "s.yaml")
    d["models"]["llama-2-7b"]["step_time"] = {"backend": "warp-drive"}
    with pytest.raises(ScenarioError, match="unknown step-time backend 'warp-drive'"):
        parse_scenario(copy.deepcopy(d), "s.yaml")
    d["models"]["llama-2-7b"]["step_time"] = {"backend": "linear", "c9": 1}
    with pytest.raises(ScenarioError, match=r"models.llama-2-7b.step_time.c9: unknown key"):
        parse_scenario(copy.deepcopy(d), "s.yaml")


def test_workload_spec_stands_alone_and_matches_the_scenarios_table():
    import pandas as pd
    from pydantic import TypeAdapter

    from servesim.workload.spec import WorkloadSpec, materialise

    spec = TypeAdapter(WorkloadSpec).validate_python(BASE["workload"])
    a = materialise(spec, np.random.default_rng(1), name="t")
    b = build_workload(parse_scenario(copy.deepcopy(BASE)), np.random.default_rng(1))
    pd.testing.assert_frame_equal(a, b)
    assert len(a) > 0 and set(a["model"]) == {"m"}
