"""OServe replicas' step models: measured profiles by default, the roofline prior only where none is."""

import pytest

from servesim.systems.oserve import replica as R


@pytest.mark.parametrize("model", ["opt-30b", "opt-66b", "llama-30b", "llama-2-70b"])
def test_every_oserve_model_steps_from_its_measured_profile(model):
    for shape in R.strategies(model, 8):
        sm = R.step_model(model, shape)
        assert sm.name == "gpu-bench-fit" and sm.tp == shape.tp and sm.pp == shape.pp
        assert sm.meta["source"].startswith(f"gpu-bench {model}")


def test_cross_node_stages_hand_off_over_infiniband():
    a = R.step_model("opt-66b", R.Shape(4, 4))
    b = R.step_model("opt-66b", R.Shape(4, 4, cross_node=True))
    assert b.pp_link_bw == R.IB_BPS and a.pp_link_bw is None
    assert b.step_time(4096, 4096**2, 0, 0) > a.step_time(4096, 4096**2, 0, 0)


def test_a_model_with_no_profile_falls_back_to_the_prior_and_is_labelled():
    sm = R.step_model("llama-2-70b", R.Shape(2), hardware="a100-80gb")
    assert sm.name == "roofline" and sm.meta["source"].startswith("roofline prior (no gpu_bench profile")
    assert R.step_model("llama-2-70b", R.Shape(2), backend="roofline").params() == sm.params()


def test_pp_replicas_run_as_virtual_engines_by_default_and_lumped_as_a_reading(monkeypatch):
    import numpy as np

    from servesim.sim import Cluster
    from servesim.sim.virtual_engines import VirtualEngines
    from servesim.workload import schema

    shape = R.Shape(2, 4)
    assert R.instance_config("llama-2-70b", shape).pp_engines == "virtual"
    assert R.instance_config("llama-2-70b", shape, pp_engines="lumped").pp_engines == "lumped"
    with pytest.raises(ValueError, match="pp_engines"):
        R.set_pp_engines("gpipe")
    rng = np.random.default_rng(0)
    n = 300
    w = schema.make(np.cumsum(rng.exponential(1 / 3.0, n)), rng.integers(200, 3000, n), rng.integers(20, 400, n),
                    model="llama-2-70b")
    res = {}
    for reading in R.PP_ENGINE_READINGS:
        monkeypatch.setattr(R, "PP_ENGINES", reading)
        cl = Cluster([R.instance_config("llama-2-70b", shape)], [R.step_model("llama-2-70b", shape)])
        assert isinstance(cl.instances[0], VirtualEngines) == (reading == "virtual")
        res[reading] = cl.run(w).requests
    # the same requests: a decode waits behind another engine's prefill only while it holds a stage,
    # instead of for the whole pass of a lumped prefill iteration
    v, lu = res["virtual"], res["lumped"]
    assert (v.state == "finished").all() and (lu.state == "finished").all()
    assert v.tbt_mean_s.median() < 0.8 * lu.tbt_mean_s.median()
