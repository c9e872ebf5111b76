"""Pipeline parallelism in the roofline step model (pp micro-batches in flight, stage-bottleneck
interval, hand-off over the stage link) and in the simulator that runs it."""

import numpy as np
import pandas as pd
import pytest

from servesim.perf import RooflineStepTime
from servesim.sim import Cluster, InstanceConfig

from .simutil import workload


def _random_steps(n, seed=0):
    rng = np.random.default_rng(seed)
    pt = rng.integers(0, 3000, n) * (rng.random(n) < 0.3)
    ds = rng.integers(0, 300, n)
    return pt, pt * pt + rng.integers(0, 5000, n) * (pt > 0), ds, ds * rng.integers(1, 2000, n)


@pytest.mark.parametrize("pp", [2, 3, 4])
def test_scalar_equals_vector_bit_for_bit(pp):
    m = RooflineStepTime("opt-66b", "h100-80gb", tp=2, pp=pp)
    pt, pc, ds, dc = _random_steps(400, seed=pp)
    v = m.step_time(pt, pc, ds, dc)
    s = np.array([m.step_time(int(a), int(b), int(c), int(d)) for a, b, c, d in zip(pt, pc, ds, dc)])
    assert np.array_equal(v, s)
    assert m.step_time(0, 0, 0, 0) == 0.0


def test_pp1_unchanged_by_schedule():
    a = RooflineStepTime("opt-30b", "h100-80gb", tp=2)
    b = RooflineStepTime("opt-30b", "h100-80gb", tp=2, pp_schedule="sequential")
    pt, pc, ds, dc = _random_steps(200)
    assert np.array_equal(a.step_time(pt, pc, ds, dc), b.step_time(pt, pc, ds, dc))
    assert np.array_equal(a.pipeline_interval(pt, pc, ds, dc), a.step_time(pt, pc, ds, dc))


def test_pipelined_period_hand_checked():
    m = RooflineStepTime("opt-66b", "h100-80gb", tp=2, pp=2)
    seq = RooflineStepTime("opt-66b", "h100-80gb", tp=2, pp=2, pp_schedule="sequential")
    # one decode sequence cannot be split: the period is one pass through both stages
    assert m.step_time(0, 0, 1, 500) == seq.step_time(0, 0, 1, 500) == m.latency(0, 0, 1, 500)
    # 64 decodes: two micro-batches of 32; period = max(2 * interval(32), latency(32))
    want = max(2 * m.pipeline_interval(0, 0, 32, 32000.0), m.latency(0, 0, 32, 32000.0))
    assert m.step_time(0, 0, 64, 64000) == pytest.approx(want, rel=1e-12)
    assert m.step_time(0, 0, 64, 64000) < seq.step_time(0, 0, 64, 64000)
    # micro-batches: prefill sequences from tokens^2 / ctx (4 equal prompts of 512)
    assert m.micro_batches(2048, 4 * 512 * 512, 0) == 2.0
    assert m.micro_batches(512, 512 * 512, 0) == 1.0
    assert RooflineStepTime("opt-66b", "h100-80gb", tp=2, pp=4).micro_batches(2048, 4 * 512 * 512, 1) == 4.0


def test_cross_node_handoff_costs_more():
    intra = RooflineStepTime("opt-66b", "h100-80gb", tp=2, pp=2)
    inter = RooflineStepTime("opt-66b", "h100-80gb", tp=2, pp=2, pp_link_bw=200e9 / 8)  # IB 200 Gb/s
    assert inter.step_time(4096, 4 * 1024**2, 0, 0) > intra.step_time(4096, 4 * 1024**2, 0, 0)
    with pytest.raises(ValueError, match="pp_schedule"):
        RooflineStepTime("opt-66b", "h100-80gb", tp=2, pp=2, pp_schedule="gpipe")


def _cfg(pp, seqs=256):
    return InstanceConfig(num_blocks=20000, max_num_seqs=seqs * pp, max_num_batched_tokens=8192 * pp, tp=4 // pp, pp=pp)


@pytest.mark.parametrize("policy,pp", [("vllm-v1", 2), ("vllm-v0", 2), ("vllm-v0", 4)])
def test_fast_equals_reference_with_pp(policy, pp):
    rng = np.random.default_rng(7 + pp)
    n = 150
    w = workload(np.cumsum(rng.exponential(0.02, n)), rng.integers(10, 1500, n), rng.integers(1, 200, n))
    m = RooflineStepTime("opt-30b", "h100-80gb", tp=1, pp=pp, pp_link_bw=25e9)
    cfg = InstanceConfig(num_blocks=3000, max_num_seqs=64, max_num_batched_tokens=4096, tp=1, pp=pp, policy=policy)
    fast = Cluster.uniform(2, cfg, m, mode="fast", check_invariants=True).run(w)
    ref = Cluster.uniform(2, cfg, m, mode="reference", check_invariants=True).run(w)
    pd.testing.assert_frame_equal(fast.requests, ref.requests, check_exact=True)


def _saturated_rps(model, pp, prompt, output, n=120):
    w = workload(np.zeros(n), np.full(n, prompt), np.full(n, output))
    res = Cluster.uniform(1, _cfg(pp), model).run(w)
    return n / float(res.requests["finish_s"].max())


@pytest.mark.parametrize("prompt,output", [(1800, 2), (64, 400)])
def test_tp2pp2_beats_tp4_only_where_the_step_model_says(prompt, output):
    """Saturation throughput of the simulator orders (TP2, PP2) vs TP4 as the step model's own
    per-token cost of the dominant step (a full prefill batch or a full decode batch) does."""
    tp4 = RooflineStepTime("opt-66b", "h100-80gb", tp=4)
    pp2 = RooflineStepTime("opt-66b", "h100-80gb", tp=2, pp=2)
    if output <= 2:  # prefill-bound: a full token budget of prompts
        k = 8192 // prompt
        args = (k * prompt, k * prompt * prompt, 0, 0)
        a, b = tp4.step_time(*args), pp2.step_time(prompt * 2 * k, 2 * k * prompt * prompt, 0, 0) / 2
    else:  # decode-bound: the whole batch decoding
        a, b = tp4.step_time(0, 0, 120, 120 * (prompt + output // 2)), pp2.step_time(0, 0, 120, 120 * (prompt + output // 2))
    r4, r22 = _saturated_rps(tp4, 1, prompt, output), _saturated_rps(pp2, 2, prompt, output)
    assert (r22 > r4) == (b < a)
    assert r22 != r4
