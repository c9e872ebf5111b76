"""`perf.shard_fit`: the roofline fitted to a one-shard GPU profile, with the all-reduce put back."""

from dataclasses import replace

import numpy as np
import pytest

from servesim.errors import InputError
from servesim.perf import build, sources
from servesim.perf.measurements import AGGREGATES, mape
from servesim.perf.roofline import RooflineStepTime
from servesim.perf.shard_fit import measured_tps, nearest_tp, shard_params, shard_roofline
from tests.data_marks import needs_data

STEPS = [(2048, 2048**2, 0, 0), (0, 0, 64, 64 * 1024), (512, 512**2, 32, 32 * 2048)]


def test_tp_comm_off_removes_exactly_the_all_reduce():
    for tp in (1, 4):
        on = RooflineStepTime("llama-2-70b", "h100-80gb", tp=tp)
        off = replace(on, tp_comm=False)
        for s in STEPS:
            if tp == 1:
                assert on.step_time(*s) == off.step_time(*s)
            else:  # 2 ring all-reduces per layer: latency + 2(tp-1)/tp of the tokens' activations
                m = on.model
                tok = s[0] + s[2]
                ar = 2 * m.layers * (2 * (tp - 1) / tp * tok * m.hidden * m.dtype_bytes
                                     / (on.hardware.interconnect_bw * on.eff_net) + on.ar_latency_s)
                assert on.step_time(*s) - off.step_time(*s) == pytest.approx(ar, rel=1e-9)


def test_fit_follows_its_profile_and_adds_the_all_reduce_it_lacks():
    df = sources.gpu_bench("opt-30b", "h100-80gb", 4)
    m = shard_roofline("opt-30b", "h100-80gb", tp=4)
    assert m.meta["profile_tp"] == 4 and "datasheet all-reduce" in m.meta["source"]
    X = [df[c].to_numpy(float) for c in AGGREGATES]
    shard = replace(m, tp_comm=False)
    assert mape(df.step_s, shard.step_time(*X)) == pytest.approx(m.meta["mape_pct"])
    assert m.meta["mape_pct"] < 15  # a roofline with five parameters follows a measured table
    # the replica model is the shard plus the all-reduce: slower on every step, never faster
    assert (m.step_time(*X) > shard.step_time(*X)).all()
    # the prior alone is further from the measurement than the fit
    assert mape(df.step_s, RooflineStepTime("opt-30b", "h100-80gb", tp=4, tp_comm=False).step_time(*X)) > m.meta["mape_pct"]


def test_missing_degree_takes_the_nearest_measured_one_and_says_so():
    have = measured_tps("opt-66b", "h100-80gb")
    assert 2 in have and 3 not in have
    assert nearest_tp(3, [2, 4, 8]) == 4 and nearest_tp(6, [2, 4, 8]) == 8 and nearest_tp(1, [2, 4]) == 2
    m = shard_roofline("opt-66b", "h100-80gb", tp=6, pp=2)
    assert m.tp == 6 and m.pp == 2 and m.meta["profile_tp"] == 8 and "no tp6 table" in m.meta["source"]
    assert shard_params("opt-66b", "h100-80gb", 6)[0] == shard_params("opt-66b", "h100-80gb", 8)[0]
    with pytest.raises(InputError, match="no gpu_bench profile of .*a100"):
        shard_params("opt-66b", "a100-80gb", 2)


def test_backend_by_name_and_pp_link():
    a = build({"backend": "gpu-bench-fit"}, model="llama-2-70b", hardware="h100-80gb", tp=4, pp=2)
    b = build({"backend": "gpu-bench-fit", "pp_link_bw": 25e9}, model="llama-2-70b", hardware="h100-80gb", tp=4, pp=2)
    assert a.name == "gpu-bench-fit" and a.pp == 2
    assert b.step_time(*STEPS[0]) > a.step_time(*STEPS[0])  # a slower inter-stage link costs the hand-off


@needs_data("sageserve/perf_model.csv", "sageserve data")
def test_all_reduce_brings_the_profile_closer_to_an_engines_tp_steps():
    """Splitwise's measured Llama-2-70B steps on H100 at TP 4 and 8 (a real engine, real NCCL):
    the fitted shard with the datasheet all-reduce is closer to them than the bare profile and than
    the fitted shard without it."""
    for tp in (4, 8):
        df = sources.splitwise("perf_model.csv", "llama-2-70b", "h100-80gb", tp)
        X = [df[c].to_numpy(float) for c in AGGREGATES]
        m = shard_roofline("llama-2-70b", "h100-80gb", tp=tp)
        with_ar = mape(df.step_s, m.step_time(*X))
        without = mape(df.step_s, replace(m, tp_comm=False).step_time(*X))
        assert with_ar < without
        bare = build("gpu-bench", model="llama-2-70b", hardware="h100-80gb", tp=tp)
        inside = bare.inside(*X)
        assert mape(df.step_s[inside], m.step_time(*[x[inside] for x in X])) < mape(
            df.step_s[inside], bare.step_time(*[x[inside] for x in X]))
        assert np.isfinite(with_ar)
