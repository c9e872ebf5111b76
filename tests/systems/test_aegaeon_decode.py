"""Aegaeon decode instances and switch costs, on hand-checkable step times (fakes: fixed costs)."""

import math

import pytest

from servesim.perf.base import LinearStepTime
from servesim.systems.aegaeon.models import ModelCosts
from servesim.systems.aegaeon.pool import AegaeonPool
from servesim.systems.aegaeon.request import Req
from servesim.systems.aegaeon.settings import Settings
from tests.data_marks import needs_aegaeon_profiles

T = 1 / 32  # decode step (exact in binary, so quota arithmetic has no rounding)


def fixed(step=T, switch=1.0, c_est=1.0, kv_per_token=0.0, weights=16e9):
    return ModelCosts(key="fake", weight_bytes=weights, kv_bytes_per_token=kv_per_token, max_context=4096,
                      step=LinearStepTime(c0=step, c_pt=0.0, c_pc=0.0, c_ds=0.0, c_dc=0.0), switch_s=switch,
                      c_est_s=c_est, usable_bytes=72e9, gpu_bytes=80e9)


def pool(models, s=None, **kw):
    s = s or Settings(layout="single", n_nodes=1, prefill_per_node=1, decode_per_node=1, prefetch=False)
    p = AegaeonPool(s)
    for m in models:
        p._costs[m] = fixed(**kw)
    return p


def prefilled(rid, model, output, t=0.0, prompt=100):
    r = Req(rid, model, t, prompt, output)
    r.tokens.append(t)
    return r


def test_wrr_worked_example_on_the_real_scheduler():
    # §4.3: d / t = 4, c = 3 (three models, 1 s each), Q_MAX = 3 -> alpha = 1, q = 3 s per batch
    s = Settings(layout="single", n_nodes=1, prefill_per_node=1, decode_per_node=1, prefetch=False,
                 tbt_s=4 * T, q_max_s=3.0)
    models = ["m_00", "m_01", "m_02"]
    p = pool(models, s)
    d = p.decode[0][0]
    reqs = [prefilled(i, m, output=1000) for i, m in enumerate(models)]
    for r in reqs:
        d.add_new_batch(r, 0.0, start=False)
    d.start(0.0)
    assert d.alphas == [1.0]
    assert [b.quota for b in d.batches] == [3.0, 3.0, 3.0]
    p.kernel.run(until=14.0)
    # the quota clock starts after the first step; the turn ends at the first step ending at or past q
    per_turn = 1 + math.ceil(3.0 / T)
    assert per_turn == 97
    a = reqs[0].tokens[1:]  # decoded tokens of the first batch
    assert a[per_turn - 1] == pytest.approx(1.0 + per_turn * T)  # switch 1 s, then 97 steps
    assert a[per_turn] > a[per_turn - 1] + 1.0  # next token only in the next round
    # one round = 3 switches + 3 turns of 97 steps
    round_s = 3 * 1.0 + 3 * per_turn * T
    assert a[per_turn] == pytest.approx(round_s + 1.0 + T)
    # buffered deadlines: 97 tokens x 0.125 s >= the 12.09 s round, so no token of a later round is late
    for r in reqs:
        k0 = r.tokens[1]
        assert all(t <= k0 + k * 4 * T + 1e-9 for k, t in enumerate(r.tokens[1:]))


def test_turn_ends_at_first_step_past_quota_and_single_batch_keeps_running():
    s = Settings(layout="single", n_nodes=1, prefill_per_node=1, decode_per_node=1, prefetch=False, tbt_s=0.1)
    p = pool(["m_00"], s, step=0.03)
    d = p.decode[0][0]
    r = prefilled(0, "m_00", output=301)
    d.add_new_batch(r, 0.0)
    q = d.batches[0].quota
    p.kernel.run()
    assert r.done and len(r.tokens) == 301
    gaps = [b - a for a, b in zip(r.tokens[1:], r.tokens[2:])]
    # one batch: it stays on the GPU and rounds follow each other without a switch
    assert max(gaps) == pytest.approx(0.03)
    assert d.rounds >= 2
    # alpha floor binds: q = c / (n (0.5 - 1/n)) = 1 / (10/3 * 0.2) = 1.5 s -> 51 tokens a turn
    assert q == pytest.approx(1.5)
    assert d.rounds == math.ceil(300 / 51)


@needs_aegaeon_profiles
def test_switch_cost_is_bytes_over_bandwidth_and_prefetch_credit():
    s = Settings(layout="single", n_nodes=1, prefill_per_node=1, decode_per_node=1, prefetch=False, load_bw=16e9)
    p = AegaeonPool(s)
    c = p.costs_of("model_08")  # llama-2-13b from the catalog (needs its profile only for steps)
    assert c.switch_s == c.weight_bytes / 16e9
    lat = p.switch(p.decode[0][0], "model_00", "model_08", credit=0.5, now=0.0)
    assert lat == c.weight_bytes / 16e9  # prefetch off: full load
    sp = s.with_(prefetch=True)
    p2 = AegaeonPool(sp)
    lat2 = p2.switch(p2.decode[0][0], "model_00", "model_08", credit=0.5, now=0.0)
    assert lat2 == pytest.approx(c.weight_bytes / 16e9 - 0.5)
    assert p2.switch(p2.decode[0][0], "model_00", "model_08", credit=99.0, now=0.0) == sp.min_switch_s
    # prefetch is off when two models leave too little KV memory (AE: 13B + 13B in 75 % of 80 GiB)
    p3 = AegaeonPool(sp.with_(vram_fraction=0.75))
    assert p3.switch(p3.decode[0][0], "model_09", "model_08", credit=99.0, now=0.0) == c.weight_bytes / 16e9


def test_kv_swap_in_time_and_join_mid_turn():
    s = Settings(layout="single", n_nodes=1, prefill_per_node=1, decode_per_node=1, prefetch=False, kv_bw=1e9)
    p = pool(["m_00"], s, step=0.01, kv_per_token=1e6, switch=0.5)  # 1 MB per token at 1 GB/s: 1 ms/token
    d = p.decode[0][0]
    a = prefilled(0, "m_00", output=50, prompt=99)
    d.add_new_batch(a, 0.0)
    # switch 0.5 s, swap-in of 100 tokens = 0.1 s, then the first step
    assert a.kv_s == pytest.approx(0.1)
    p.kernel.run(until=0.65)
    assert a.tokens[1] == pytest.approx(0.5 + 0.1 + 0.01)
    b = prefilled(1, "m_00", output=10, t=0.65, prompt=199)
    assert d.try_join(b, 0.65)  # joins the running batch after its own 0.2 s swap-in
    p.kernel.run()
    assert b.tokens[1] >= 0.65 + 0.2
    assert b.tokens[1] - 0.85 <= 0.01 + 1e-9
    assert b.done and a.done


def test_prefill_kv_goes_to_host_before_decode():
    s = Settings(layout="single", n_nodes=1, prefill_per_node=1, decode_per_node=1, prefetch=False, kv_bw=1e9)
    p = pool(["m_00"], s, step=0.01, kv_per_token=1e6, switch=0.5)
    r = Req(0, "m_00", 0.0, 99, 5)
    p.reqs = [r]
    p.kernel.add_stream([0.0], p._arrive)
    p.kernel.run()
    # prefill: switch 0.5 + step 0.01; D2H 100 tokens = 0.1 s; decode: switch 0.5 + H2D 0.1 + steps
    assert r.tokens[0] == pytest.approx(0.51)
    assert r.tokens[1] == pytest.approx(0.51 + 0.1 + 0.5 + 0.1 + 0.01)
    assert r.kv_s == pytest.approx(0.2)
    assert p.kv_d2h_s == pytest.approx(p.kv_h2d_s)


def test_time_accounting_of_one_request():
    s = Settings(layout="single", n_nodes=1, prefill_per_node=1, decode_per_node=1, prefetch=False, kv_bw=1e9)
    p = pool(["m_00"], s, step=0.01, kv_per_token=1e6, switch=0.5)
    r = Req(0, "m_00", 0.0, 99, 5)
    p.reqs = [r]
    p.kernel.add_stream([0.0], p._arrive)
    p.kernel.run()
    assert r.prefill_start == 0.0 and r.prefill_switch_s == 0.5
    assert r.exec_s == pytest.approx(5 * 0.01)       # 1 prefill + 4 decode steps
    assert r.switch_wait_s == 0.5                     # the decode instance's load
    # everything between arrival and the last token is switch, KV transfer or compute here
    assert r.tokens[-1] == pytest.approx(r.prefill_switch_s + r.switch_wait_s + r.kv_s + r.exec_s)


@pytest.mark.parametrize("kv_sync", ["per-request", "batch"])
def test_kv_swap_in_per_request_events_or_whole_batch(kv_sync):
    # two requests of one model, KV on the host: 100 ctx tokens x 1.6e8 B / 16e9 B/s = 1 s of copy each
    s = Settings(layout="single", n_nodes=1, prefill_per_node=1, decode_per_node=1, prefetch=False, kv_sync=kv_sync,
                 kv_bw=16e9)
    p = pool(["m_00"], s, step=0.25, switch=0.5, kv_per_token=1.6e8, weights=1e9)
    d = p.decode[0][0]
    reqs = [prefilled(i, "m_00", output=20, t=0.0, prompt=99) for i in range(2)]
    for r in reqs:
        r.on_device = False
        d.add_new_batch(r, 0.0, start=False)
    d.start(0.0)
    p.kernel.run(until=3.0)
    first_a, first_b = reqs[0].tokens[1], reqs[1].tokens[1]
    if kv_sync == "per-request":
        # §5.3: copies in FCFS order on one stream after the 0.5-s switch; the first request's step
        # starts when its own KV lands (1.5 s), the second joins the step after its copy (2.5 s)
        assert first_a == pytest.approx(1.5 + 0.25)
        assert first_b == pytest.approx(2.5 + 0.25)
        assert [r.kv_wait_s for r in reqs] == pytest.approx([1.0, 2.0])
    else:
        # the whole batch is copied before the first step: both wait 2 s
        assert first_a == first_b == pytest.approx(0.5 + 2.0 + 0.25)
        assert [r.kv_wait_s for r in reqs] == pytest.approx([2.0, 2.0])


def test_control_time_delays_every_decode_step_and_is_counted_as_control():
    # one model, one batch, no switches: every decode step takes the control time, then T
    c = 1 / 64
    s = Settings(layout="single", n_nodes=1, prefill_per_node=1, decode_per_node=1, prefetch=False,
                 control_step_s=c)
    p = pool(["m_00"], s)
    d = p.decode[0][0]
    r = prefilled(0, "m_00", output=9)
    d.add_new_batch(r, 0.0, start=False)
    d.start(0.0)
    p.kernel.run(until=10.0)
    gaps = [b - a for a, b in zip(r.tokens, r.tokens[1:])]
    assert len(r.tokens) == 9
    assert gaps[1:] == pytest.approx([c + T] * 7)  # the first gap also holds the model's load
    assert r.exec_s == pytest.approx(8 * T)         # compute time alone
    # eight decode steps, each with its control time, which Fig 14's breakdown reads as control
    # overhead; the six parts still sum to the request's time
    from servesim.metrics.time_breakdown import CATEGORIES, request_breakdown
    from servesim.systems.aegaeon.request import to_table

    r.prefill_start = 0.0
    t = to_table([r], s.control_step_s)
    assert t.control_s.iloc[0] == pytest.approx(8 * c)
    br = request_breakdown(t)
    assert br.control_overhead.iloc[0] == pytest.approx(8 * c)
    assert br[list(CATEGORIES)].sum(axis=1).iloc[0] == pytest.approx(br.total.iloc[0])


def test_control_time_is_zero_by_default_and_never_negative():
    assert Settings().control_step_s == 0.0
    with pytest.raises(ValueError, match="control_step_s"):
        Settings(control_step_s=-0.001)
