"""Aegaeon's grouped-FCFS prefill dispatcher (Algorithm 1), both group rules."""

import pytest

from servesim.perf.base import LinearStepTime
from servesim.systems.aegaeon.models import ModelCosts
from servesim.systems.aegaeon.pool import AegaeonPool
from servesim.systems.aegaeon.prefill import dispatch
from servesim.systems.aegaeon.request import Req
from servesim.systems.aegaeon.settings import Settings


def fixed():
    # prefill of L tokens: 0.01 + 1e-4 * L s; switch 0.5 s
    return ModelCosts(key="fake", weight_bytes=8e9, kv_bytes_per_token=0.0, max_context=4096,
                      step=LinearStepTime(c0=0.01, c_pt=1e-4, c_pc=0.0, c_ds=0.0, c_dc=0.0), switch_s=0.5,
                      c_est_s=0.5, usable_bytes=72e9, gpu_bytes=80e9)


def pool(models, **kw):
    kw = {"prefill_per_node": 3, **kw}
    p = AegaeonPool(Settings(layout="single", n_nodes=1, decode_per_node=1, prefetch=False, **kw))
    for m in models:
        p._costs[m] = fixed()
    return p


def test_same_model_requests_group_up_to_max_gpsize():
    p = pool(["m_00"])
    inst = p.prefill[0]
    got = [dispatch(inst, Req(i, "m_00", 0.0, 100, 10), 0.0, "paper", 8) for i in range(10)]
    assert got[:8] == [inst[0]] * 8          # one group of 8 on the first instance
    assert got[8] is inst[1] and got[9] is inst[1]  # the 9th opens a group on the least loaded instance
    assert [len(g.reqs) for g in inst[0].queue] == [8]


def test_other_model_goes_to_least_loaded_instance():
    p = pool(["m_00", "m_01"])
    inst = p.prefill[0]
    dispatch(inst, Req(0, "m_00", 0.0, 1000, 10), 0.0, "paper", 8)
    dispatch(inst, Req(1, "m_01", 0.0, 100, 10), 0.0, "paper", 8)
    dispatch(inst, Req(2, "m_01", 0.0, 100, 10), 0.0, "paper", 8)  # joins m_01's group
    assert [g.model for g in inst[0].queue] == ["m_00"]
    assert [len(g.reqs) for g in inst[1].queue] == [2]
    assert inst[0].load(0.0, "paper") == pytest.approx(0.5 + 0.01 + 0.1)  # switch estimate + prefill
    assert inst[1].load(0.0, "artifact") == 2.0


def test_cumulative_vs_current_group_size():
    for rule, joins in (("paper", False), ("artifact", True)):
        p = pool(["m_00"])
        inst = p.prefill[0]
        for i in range(8):
            dispatch(inst, Req(i, "m_00", 0.0, 100, 10), 0.0, rule, 8)
        inst[0].kick(0.0)  # pops one request into a running prefill
        assert len(inst[0].queue[0].reqs) == 7 and inst[0].queue[0].total == 8
        got = dispatch(inst, Req(9, "m_00", 0.0, 100, 10), 0.0, rule, 8)
        assert (got is inst[0]) is joins


def test_one_request_at_a_time_and_switch_before_group():
    p = pool(["m_00", "m_01"], prefill_per_node=1)
    inst = p.prefill[0][0]
    a, b, c = Req(0, "m_00", 0.0, 100, 1), Req(1, "m_00", 0.0, 200, 1), Req(2, "m_01", 0.0, 300, 1)
    for r in (a, b, c):
        dispatch([inst], r, 0.0, "paper", 8)
    inst.kick(0.0)
    p.kernel.run()
    # batch size 1: 0.5 switch + 0.02, then 0.03, then a 0.5 switch + 0.04
    assert a.tokens == [pytest.approx(0.52)]
    assert b.tokens == [pytest.approx(0.55)]
    assert c.tokens == [pytest.approx(1.09)]
    assert [x[3] for x in p.switch_log] == ["m_00", "m_01"]
