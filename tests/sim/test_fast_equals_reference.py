"""Fast mode (decode runs fast-forwarded) == reference mode (every iteration planned), exactly.

Random workloads, configurations and policies; small caches so that preemption, chunking,
rejections and queueing all happen; dyadic step costs so arrivals often land exactly on
iteration boundaries. Per-request tables and sampled time series must be identical (==).
"""

import numpy as np
import pandas as pd
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from servesim.sim import Cluster, InstanceConfig
from servesim.sim import instance as instance_mod
from .simutil import DYADIC, GENERIC, workload

POLICIES = [("vllm-v1", {}), ("vllm-v1", {"chunked_prefill": False}), ("vllm-v0", {}),
            ("orca", {}), ("orca", {"reserve": "incremental"})]


@st.composite
def scenario(draw):
    seed = draw(st.integers(0, 2**31))
    rng = np.random.default_rng(seed)
    n = draw(st.integers(1, 60))
    grid = draw(st.booleans())
    gaps = rng.integers(0, 6, n) * 0.25 if grid else rng.exponential(draw(st.sampled_from([0.05, 0.5, 2.0])), n)
    arrival = np.cumsum(gaps)
    pmax = draw(st.sampled_from([8, 64, 400]))
    omax = draw(st.sampled_from([2, 20, 120]))
    prompt = rng.integers(1, pmax + 1, n)
    output = rng.integers(0 if draw(st.booleans()) else 1, omax + 1, n)
    policy, opts = draw(st.sampled_from(POLICIES))
    bs = draw(st.sampled_from([1, 4, 16]))
    seqs = draw(st.integers(1, 12))
    budget = draw(st.sampled_from([16, 64, 512, 4096]))
    budget = max(budget, seqs)
    if draw(st.booleans()):
        budget = max(budget, pmax + omax)  # else long whole prompts are rejected or dropped
    if policy == "orca" and draw(st.booleans()):
        budget = None
    cfg = InstanceConfig(
        num_blocks=draw(st.integers(2, 120)), block_size=bs, max_num_seqs=seqs,
        max_num_batched_tokens=budget, policy=policy, policy_options=opts,
        max_model_len=draw(st.sampled_from([None, 300, 1000])))
    step = draw(st.sampled_from([DYADIC, GENERIC]))
    k = draw(st.integers(1, 3))
    router = draw(st.sampled_from(["round_robin", "least_outstanding"]))
    until = draw(st.sampled_from([None, None, float(arrival[-1]) * 0.7 + 0.3]))
    return workload(arrival, prompt, output), cfg, step, k, router, until


def simulate(w, cfg, step, k, router, until, mode, sample=None):
    cl = Cluster.uniform(k, cfg, step, mode=mode, router=router, check_invariants=True,
                         sample_interval=sample)
    return cl.run(w, until=until)


def _all_runs_as_arrays(run):
    """``run()`` with every decode run timed by one array call (short ones are unrolled into
    scalar calls by default, SCALAR_RUN)."""
    saved = instance_mod.SCALAR_RUN
    instance_mod.SCALAR_RUN = 1
    try:
        return run()
    finally:
        instance_mod.SCALAR_RUN = saved


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenario())
def test_fast_equals_reference(sc):
    w, cfg, step, k, router, until = sc
    fast = simulate(w, cfg, step, k, router, until, "fast", sample=0.75)
    ref = simulate(w, cfg, step, k, router, until, "reference", sample=0.75)
    arrays = _all_runs_as_arrays(lambda: simulate(w, cfg, step, k, router, until, "fast", sample=0.75))
    for other in (ref, arrays):
        pd.testing.assert_frame_equal(fast.requests, other.requests, check_exact=True)
        pd.testing.assert_frame_equal(fast.timeseries, other.timeseries, check_exact=True)
        assert fast.stats["iterations"] == other.stats["iterations"]
    # the fast mode must actually fast-forward when there is decode work to skip
    assert fast.stats["instance_events"] <= ref.stats["instance_events"]


def test_fast_mode_uses_far_fewer_events_on_long_outputs():
    rng = np.random.default_rng(3)
    n = 200
    w = workload(np.cumsum(rng.exponential(0.5, n)), rng.integers(10, 200, n), rng.integers(100, 400, n))
    cfg = InstanceConfig(num_blocks=2000)
    fast = simulate(w, cfg, GENERIC, 2, "round_robin", None, "fast")
    ref = simulate(w, cfg, GENERIC, 2, "round_robin", None, "reference")
    pd.testing.assert_frame_equal(fast.requests, ref.requests, check_exact=True)
    assert fast.stats["instance_events"] * 10 < ref.stats["instance_events"]


@st.composite
def control_scenario(draw):
    seed = draw(st.integers(0, 2**31))
    rng = np.random.default_rng(seed)
    n = draw(st.integers(1, 50))
    arrival = np.cumsum(rng.exponential(draw(st.sampled_from([0.05, 0.3])), n))
    models = np.array(["A", "B"])[rng.integers(0, 2, n)]
    w = workload(arrival, rng.integers(1, 200, n), rng.integers(1, 60, n), model=models)
    horizon = float(arrival[-1]) + 1.0
    actions = []
    for _ in range(draw(st.integers(0, 6))):
        t = float(rng.uniform(0, horizon))
        kind = draw(st.sampled_from(["switch", "switch", "pause", "resume"]))
        actions.append((t, kind, int(rng.integers(0, 2)), str(rng.choice(["A", "B"])),
                        float(rng.choice([0.0, 0.4, 1.3])), draw(st.sampled_from(["swap", "recompute"]))))
    actions.append((horizon + 5.0, "resume", 0, "", 0.0, ""))
    actions.append((horizon + 5.0, "resume", 1, "", 0.0, ""))
    actions.append((horizon + 6.0, "switch", 0, "B", 0.5, "swap"))
    actions.append((horizon + 6.0, "switch", 1, "A", 0.5, "swap"))
    actions.append((horizon + 60.0, "switch", 0, "A", 0.5, "swap"))
    actions.append((horizon + 60.0, "switch", 1, "B", 0.5, "swap"))
    cfg = InstanceConfig(num_blocks=draw(st.integers(20, 200)), block_size=draw(st.sampled_from([4, 16])),
                         max_num_seqs=draw(st.integers(1, 10)), max_num_batched_tokens=256,
                         policy=draw(st.sampled_from(["vllm-v1", "vllm-v0", "orca"])),
                         model="A", kv_bytes_per_token=1.0, host_bw=4000.0)
    return w, cfg, actions


def run_with_controls(w, cfg, actions, mode):
    from servesim.sim import PRIO_CONTROL
    cl = Cluster.uniform(2, cfg, GENERIC, mode=mode, check_invariants=True, sample_interval=0.5)
    insts = cl.instances

    def act(a):
        _, kind, j, model, load, how = a
        inst = insts[j]
        if kind == "switch":
            inst.switch_model(model, load, preempt=how)
        elif kind == "pause":
            inst.pause()
        else:
            inst.resume()

    for a in actions:
        cl.kernel.at(a[0], act, a, PRIO_CONTROL)
    return cl.run(w, allow_unloaded_models=True)  # the test switches models itself


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(control_scenario())
def test_fast_equals_reference_with_switches_and_pauses(sc):
    w, cfg, actions = sc
    fast = run_with_controls(w, cfg, actions, "fast")
    ref = run_with_controls(w, cfg, actions, "reference")
    pd.testing.assert_frame_equal(fast.requests, ref.requests, check_exact=True)
    pd.testing.assert_frame_equal(fast.timeseries, ref.timeseries, check_exact=True)
    assert fast.requests.state.isin(["finished", "rejected"]).all()  # nothing left behind
