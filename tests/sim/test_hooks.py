"""Model switching with KV swap (Aegaeon), P/D disaggregation, pause/stop, TP/PP shape."""


import numpy as np
import pandas as pd
import pytest

from servesim.perf import LinearStepTime
from servesim.sim import PRIO_CONTROL, Cluster, InstanceConfig
from .simutil import GENERIC, workload

STEP = LinearStepTime(c0=1.0, c_pt=0.0625, c_pc=0.0, c_ds=0.5, c_dc=0.0)
MODES = ("fast", "reference")


def switching_run(mode, preempt="swap"):
    w = pd.concat([workload([0.0], [16], [4], model="A"), workload([1.0], [16], [2], model="B")])
    w["request_id"] = [0, 1]
    cfg = InstanceConfig(num_blocks=100, model="A", kv_bytes_per_token=1.0, host_bw=16.0)
    cl = Cluster.uniform(1, cfg, STEP, mode=mode, check_invariants=True)
    inst = cl.instances[0]
    k = cl.kernel
    ready = []
    k.at(3.0, lambda _: inst.switch_model("B", 2.0, preempt=preempt,
                                          on_ready=lambda i: ready.append(k.now)), None, PRIO_CONTROL)
    k.at(10.0, lambda _: inst.switch_model("A", 2.0, on_ready=lambda i: ready.append(k.now)),
         None, PRIO_CONTROL)
    return cl.run(w.reset_index(drop=True), allow_unloaded_models=True).requests, ready, inst


@pytest.mark.parametrize("mode", MODES)
def test_model_switch_swaps_kv_out_and_back_in(mode):
    df, ready, inst = switching_run(mode)
    a, b = df.iloc[0], df.iloc[1]
    # A: prefill -> 2.0, decode -> 3.5; switch requested at 3.0 acts at the 3.5 boundary:
    # swap out 17 tokens (17/16 s) + load 2 s -> B runs from 6.5625: prefill -> 8.5625, -> 10.0625.
    assert ready[0] == 3.5 + 17 / 16 + 2.0
    assert (b.first_token_s, b.finish_s, b.state) == (8.5625, 10.0625, "finished")
    # switch back at 10.0 acts at 10.0625: load 2 s + swap in 17 tokens -> 13.125; A continues
    # with its KV (no recompute): tokens at 14.625 and 16.125.
    assert ready[1] == 13.125
    assert (a.first_token_s, a.finish_s, a.preemptions) == (2.0, 16.125, 0)
    assert a.tbt_max_s == 14.625 - 3.5
    assert a.tbt_mean_s == (16.125 - 2.0) / 3
    assert inst.switches == 2 and inst.model == "A" and inst.used == 0


@pytest.mark.parametrize("mode", MODES)
def test_model_switch_with_recompute(mode):
    df, ready, _ = switching_run(mode, preempt="recompute")
    a = df.iloc[0]
    # no swap-out cost: B ready at 3.5 + 2; A recomputes 18 tokens after switching back
    assert ready[0] == 5.5
    assert a.preemptions == 1 and a.state == "finished"
    # B: 5.5 -> 7.5 -> 9.0 ; switch back at 10.0 (idle: immediately) -> 12.0; A prefill 18
    # tokens: 1 + 18/16 -> 14.125 (token 3), decode -> 15.625
    assert ready[1] == 12.0
    assert a.finish_s == 15.625


@pytest.mark.parametrize("mode", MODES)
def test_prefill_decode_disaggregation(mode):
    cfgP = InstanceConfig(num_blocks=100, role="prefill")
    cfgD = InstanceConfig(num_blocks=100, role="decode")
    cl = Cluster([cfgP, cfgD], [STEP, STEP], mode=mode, kv_transfer_s=lambda r: 0.5,
                 check_invariants=True)
    df = cl.run(workload([0.0], [16], [3])).requests
    r = df.iloc[0]
    # prefill on i0 -> 2.0 (first token); KV arrives at i1 at 2.5; decodes 1.5 each -> 4.0, 5.5
    assert (r.first_token_s, r.finish_s, r.instance) == (2.0, 5.5, "i1")
    assert (r.tbt_max_s, r.tbt_mean_s) == (2.0, 1.75)
    assert all(i.used == 0 for i in cl.instances)


def test_disaggregated_fast_equals_reference_and_default_transfer_cost():
    rng = np.random.default_rng(8)
    n = 300
    w = workload(np.cumsum(rng.exponential(0.03, n)), rng.integers(1, 600, n), rng.integers(1, 150, n))
    cfgs = [InstanceConfig(num_blocks=200, role="prefill", kv_bytes_per_token=5e5)] * 2 + \
           [InstanceConfig(num_blocks=150, role="decode", max_num_seqs=32)] * 3
    out = {}
    for mode in MODES:
        cl = Cluster(cfgs, [GENERIC] * 5, mode=mode, check_invariants=True)
        out[mode] = cl.run(w, allow_unloaded_models=True).requests
    pd.testing.assert_frame_equal(out["fast"], out["reference"], check_exact=True)
    df = out["fast"]
    assert (df.state == "finished").all()
    assert set(df.instance[df.output_tokens >= 2]) <= {"i2", "i3", "i4"}
    assert set(df.instance[df.output_tokens < 2]) <= {"i0", "i1"}  # done at the first token
    # transfer of P tokens * 0.5 MB at 25 GB/s delays the second token
    one = df[df.output_tokens >= 2].iloc[0]
    assert one.tbt_max_s >= one.prompt_tokens * 5e5 / 25e9


@pytest.mark.parametrize("mode", MODES)
def test_pause_resume_and_stop(mode):
    cl = Cluster.uniform(1, InstanceConfig(num_blocks=100), STEP, mode=mode)
    inst = cl.instances[0]
    k = cl.kernel
    k.at(2.5, lambda _: inst.pause(), None, PRIO_CONTROL)      # acts at the 3.5 boundary
    k.at(20.0, lambda _: inst.resume(), None, PRIO_CONTROL)
    w = workload([0.0, 30.0], [16, 16], [4, 2])
    df = cl.run(w).requests
    # 2.0 (first), 3.5 (paused there), resumes at 20: 21.5, 23.0
    assert tuple(df.iloc[0][["first_token_s", "finish_s"]]) == (2.0, 23.0)
    assert df.iloc[0].tbt_max_s == 18.0
    cl = Cluster.uniform(1, InstanceConfig(num_blocks=100), STEP, mode=mode)
    inst = cl.instances[0]
    cl.kernel.at(2.5, lambda _: inst.stop("scaled in"), None, PRIO_CONTROL)
    df = cl.run(workload([0.0, 1.0, 3.0], [16, 16, 16], [4, 4, 4])).requests
    assert list(df.state) == ["error", "error", "rejected"]
    assert list(df.reason) == ["scaled in", "scaled in", "instance stopped"]
    assert inst.used == 0


def test_config_validation_names_the_key_and_shape_is_held():
    with pytest.raises(ValueError, match="num_blocks"):
        InstanceConfig(num_blocks=0)
    with pytest.raises(ValueError, match="max_num_batched_tokens"):
        InstanceConfig(num_blocks=10, max_num_seqs=512, max_num_batched_tokens=256)
    with pytest.raises(ValueError, match="unknown scheduler policy"):
        InstanceConfig(num_blocks=10, policy="nope")
    with pytest.raises(ValueError, match="bad option"):
        InstanceConfig(num_blocks=10, policy="orca", policy_options={"bogus": 1})
    with pytest.raises(ValueError, match="role"):
        InstanceConfig(num_blocks=10, role="middle")
    cfg = InstanceConfig(num_blocks=10, tp=4, pp=2, hardware="h800", model="qwen-72b")
    assert cfg.gpus == 8 and cfg.kv_capacity_tokens == 160
