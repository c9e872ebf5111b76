"""Cluster.drain: stop admitting, requeue or serve queued work, then stop."""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from servesim.sim import Cluster, InstanceConfig

from .simutil import DYADIC, GENERIC, workload

CFG = InstanceConfig(num_blocks=64, block_size=16, max_num_seqs=4, max_num_batched_tokens=512)


def steady(n=60, gap=0.05, prompt=64, output=16):
    return workload(np.arange(n) * gap, [prompt] * n, [output] * n)


@pytest.mark.parametrize("mode", ["fast", "reference"])
@pytest.mark.parametrize("requeue", [True, False])
def test_drain_stops_admitting_and_stops_when_empty(mode, requeue):
    w = steady()
    cl = Cluster.uniform(3, CFG, DYADIC, mode=mode, router="round-robin", check_invariants=True)
    cl.drain(0, at=0.5, requeue=requeue)
    res = cl.run(w)
    req = res.requests
    assert (req.state == "finished").all() and len(req) == len(w)
    on0 = req[req.instance == "i0"]
    t_stop = res.stats["drained"]["i0"]
    assert cl.is_drained(0) and not cl.is_drained(1)
    # nothing routed to i0 after the drain; it stopped when its last request ended
    assert (on0.arrival_s <= 0.5).all()
    assert t_stop == pytest.approx(on0.finish_s.max())
    if requeue:
        # i0 kept only what it had admitted by the drain; its queue went to the others
        assert (on0.scheduled_s <= 0.5).all() and res.stats["requeued"] > 0
        assert req.loc[req.arrival_s <= 0.5, "instance"].isin(["i1", "i2"]).any()
    else:
        assert res.stats["requeued"] == 0
    assert cl.instances[0].kv_used_blocks() == 0 and cl.instances[0].outstanding == 0


def test_idle_instance_stops_at_once_and_later_drains_are_noops():
    w = steady(n=10, gap=1.0)
    cl = Cluster.uniform(2, CFG, DYADIC, router="round-robin")
    cl.drain(1, at=0.0)
    cl.drain(1, at=3.0)  # already drained: nothing happens
    res = cl.run(w)
    assert res.stats["drained"] == {"i1": 0.0}
    assert (res.requests.instance == "i0").all() and (res.requests.state == "finished").all()


def test_drain_errors():
    cl = Cluster.uniform(2, CFG, DYADIC, router="round-robin")
    with pytest.raises(IndexError, match="no instance 5"):
        cl.drain(5)
    cl.drain(0)
    with pytest.raises(ValueError, match="last routable"):
        cl.drain(1)
    cl2 = Cluster.uniform(2, CFG, DYADIC, router=lambda c, r: 0)
    with pytest.raises(TypeError, match="callable router"):
        cl2.drain(1)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(n=st.integers(1, 60), drains=st.lists(st.tuples(st.integers(0, 3), st.floats(0, 5)), max_size=3),
       requeue=st.booleans(), seed=st.integers(0, 2**16))
def test_random_drains_conserve_requests_and_kv(n, drains, requeue, seed):
    rng = np.random.default_rng(seed)
    w = workload(np.sort(rng.uniform(0, 5, n)), rng.integers(1, 300, n), rng.integers(1, 60, n))
    cl = Cluster.uniform(4, CFG, GENERIC, router="jsq-tokens", check_invariants=True)
    targets = {}
    for j, t in drains:
        targets.setdefault(j, t)
    for j, t in list(targets.items())[:3]:  # never all four
        cl.drain(j, at=t, requeue=requeue)
    res = cl.run(w)
    req = res.requests
    assert len(req) == n and (req.state == "finished").all()  # every request ends once, served
    for name, t_stop in res.stats["drained"].items():
        j = int(name[1:])
        on = req[req.instance == name]
        assert (on.arrival_s <= targets[j]).all()
        if len(on):
            assert t_stop >= on.finish_s.max()
    for inst in cl.instances:
        assert inst.kv_used_blocks() == 0 and inst.outstanding == 0
