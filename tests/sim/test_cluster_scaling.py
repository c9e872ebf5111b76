"""Cluster: instances added mid-run, drain callbacks, pick-then-pull KV hand-off, most-free-kv router."""

import numpy as np
import pytest

from servesim.sim import Cluster, InstanceConfig, MostFreeKV

from .simutil import DYADIC, GENERIC, workload

CFG = InstanceConfig(num_blocks=64, block_size=16, max_num_seqs=4, max_num_batched_tokens=512)
P = InstanceConfig(num_blocks=100, role="prefill")
D = InstanceConfig(num_blocks=100, role="decode")


def steady(n=40, gap=0.25, prompt=64, output=8):
    return workload(np.arange(n) * gap, [prompt] * n, [output] * n)


@pytest.mark.parametrize("mode", ["fast", "reference"])
def test_added_instance_serves_only_after_it_joins(mode):
    cl = Cluster.uniform(1, CFG, DYADIC, mode=mode, router="round-robin", check_invariants=True)
    j = cl.add_instance(CFG, DYADIC, name="late", at=5.0)
    res = cl.run(steady())
    req = res.requests
    assert j == 1 and (req.state == "finished").all()
    late = req[req.instance == "late"]
    assert len(late) > 0 and (late.arrival_s >= 5.0).all()
    assert (req[req.arrival_s < 5.0].instance == "i0").all()


def test_drain_then_replace_runs_the_callback_when_it_stops():
    cl = Cluster.uniform(2, CFG, DYADIC, router="round-robin")
    seen = []

    def replace(j, t):
        seen.append((j, t))
        cl.add_instance(CFG, DYADIC, name="new", at=t + 1.0)

    cl.drain(0, at=2.0, on_stopped=replace)
    res = cl.run(steady())
    req = res.requests
    t_stop = res.stats["drained"]["i0"]
    assert seen == [(0, t_stop)] and t_stop == pytest.approx(req[req.instance == "i0"].finish_s.max())
    new = req[req.instance == "new"]
    assert len(new) > 0 and (new.arrival_s >= t_stop + 1.0).all() and (req.state == "finished").all()


def test_instance_drained_before_it_joins_never_serves():
    cl = Cluster.uniform(1, CFG, DYADIC, router="round-robin")
    j = cl.add_instance(CFG, DYADIC, name="never", at=4.0)
    cl.drain(j, at=1.0)
    req = cl.run(steady()).requests
    assert (req.instance == "i0").all() and cl.is_drained(j)


def test_add_instance_role_must_match_the_cluster():
    with pytest.raises(ValueError, match="disaggregated"):
        Cluster.uniform(1, CFG, DYADIC).add_instance(D, DYADIC)


@pytest.mark.parametrize("mode", ["fast", "reference"])
def test_pick_then_pull_transfer_depends_on_the_pair(mode):
    # one prefill (i0) and two decode instances; the link from i0 to i2 is 10x slower
    link = {(0, 1): 0.5, (0, 2): 5.0}
    cl = Cluster([P, D, D], [DYADIC] * 3, mode=mode, decode_router="round-robin",
                 kv_link_s=lambda r, a, b: link[(a, b)], check_invariants=True)
    df = cl.run(workload([0.0, 10.0], [16, 16], [3, 3])).requests
    # prefill 0.25 + 16/64 -> 0.5; round-robin: first to i1 (+0.5), second to i2 (+5.0); decode 0.28125 a step
    a, b = df.iloc[0], df.iloc[1]
    assert (a.instance, b.instance) == ("i1", "i2")
    assert a.tbt_max_s == pytest.approx(0.5 + 0.28125) and b.tbt_max_s == pytest.approx(5.0 + 0.28125)
    assert cl.inbound_tokens == [0, 0, 0]


def test_kv_link_needs_disaggregation():
    with pytest.raises(ValueError, match="disaggregated"):
        Cluster.uniform(2, CFG, DYADIC, kv_link_s=lambda r, a, b: 0.0)


def test_most_free_kv_picks_the_emptiest_decode_instance():
    # i1 holds a long request's KV; the next request must go to i2, though i1 has fewer in the queue
    cl = Cluster([P, D, D], [DYADIC] * 3, decode_router="most-free-kv", kv_link_s=lambda r, a, b: 0.0)
    df = cl.run(workload([0.0, 1.0, 1.5], [800, 16, 16], [200, 4, 4])).requests
    assert list(df.instance) == ["i1", "i2", "i2"]


def test_most_free_kv_counts_inbound_tokens():
    cl = Cluster([P, D, D], [GENERIC] * 3, decode_router=MostFreeKV(), kv_link_s=lambda r, a, b: 1.0)
    rt = cl.decode_router
    cl.inbound_tokens[1] = 50
    assert rt.select(None).seq == 2
    cl.inbound_tokens[2] = 60
    assert rt.select(None).seq == 1


def test_most_free_kv_counts_requests_queued_for_kv():
    # an instance whose KV is nearly free but with a long queue routed to it is not the emptiest
    cl = Cluster([P, D, D], [GENERIC] * 3, decode_router="most-free-kv", kv_link_s=lambda r, a, b: 1.0)
    rt = cl.decode_router
    cl.loads[1].pending_tokens = 900  # requests routed to i1 and not done (queued there)
    cl.inbound_tokens[2] = 100        # KV on its way to i2
    assert rt.free_tokens(cl.loads[1]) == 1600 - 900 and rt.free_tokens(cl.loads[2]) == 1600 - 100
    assert rt.select(None).seq == 2
