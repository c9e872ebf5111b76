"""Cluster hooks for a deployment that changes mid-run: the class-weighted router, held requests
(no routable instance), instances added now that join later (``defer`` / ``join``) and do not
serve before, and batched live migrations (several per instance, the link's bandwidth shared)."""

import math

import numpy as np
import pytest

from servesim.perf import LinearStepTime
from servesim.sim import PRIO_CONTROL, Cluster, InstanceConfig, InstanceLoad, WeightedRouter
from servesim.sim.migration import LiveMigrator
from servesim.sim.request import Req

from .simutil import DYADIC, workload

CFG = InstanceConfig(num_blocks=64, block_size=16, max_num_seqs=4, max_num_batched_tokens=512)
STEP = LinearStepTime(c0=1.0, c_pt=0.0, c_pc=0.0, c_ds=0.0, c_dc=0.0)  # every iteration takes 1 s
MODES = ("fast", "reference")


def req(c):
    r = Req(0, 0.0, 16, 4)
    r.cls = c
    return r


def test_weighted_router_smooth_shares_per_class():
    rt = WeightedRouter(weights={0: [3.0, 0.0], 1: [1.0, 2.0], 2: [0.0, 2.0]})
    recs = [InstanceLoad(j) for j in range(3)]
    for x in recs:
        rt.add(x)
    picks = [rt.select(req(0)).seq for _ in range(8)]
    assert picks == [0, 0, 1, 0, 0, 0, 1, 0]  # nginx's smooth sequence for 3:1, no 2 (weight 0)
    picks = [rt.select(req(1)).seq for _ in range(4)]
    assert sorted(picks) == [1, 1, 2, 2] and picks[0] != picks[1]
    no_class = [rt.select(req(-1)).seq for _ in range(8)]  # no class: the summed weights 3, 3, 2
    assert [no_class.count(j) for j in range(3)] == [3, 3, 2]
    rt.remove(recs[0])
    assert {rt.select(req(0)).seq for _ in range(3)} == {1}  # the rest of class 0's share
    rt.remove(recs[1])
    assert rt.select(req(0)) is None  # no routable instance with a weight for class 0
    assert rt.select(req(5)) is None  # a class nobody was given
    with pytest.raises(ValueError, match="finite and >= 0"):
        rt.set_weights({0: [-1.0]})
    with pytest.raises(ValueError, match="mode"):
        WeightedRouter(mode="nope")


def test_weighted_router_random_mode_is_a_cumulative_draw():
    w = np.array([[0.5, 0.0], [0.0, 1.0], [0.5, 1.0]])
    rt = WeightedRouter(rng=np.random.default_rng(3), weights={j: w[j] for j in range(3)}, mode="random")
    for j in range(3):
        rt.add(InstanceLoad(j))
    cls = np.array([0, 1, 0, 0, 1, 1, 0, 1] * 50)
    got = [rt.select(req(int(c))).seq for c in cls]
    u = np.random.default_rng(3).random(cls.size)
    cum = np.cumsum(w, axis=0)
    want = [int(np.searchsorted(cum[:, c] / cum[-1, c], x, side="right")) for c, x in zip(cls, u)]
    assert got == want


@pytest.mark.parametrize("mode", MODES)
def test_requests_follow_class_weights_in_a_run(mode):
    n = 40
    w = workload(np.arange(n) * 0.5, [16] * n, [2] * n)
    cls = np.arange(n) % 2
    rt = WeightedRouter(weights={0: [1.0, 0.0], 1: [0.0, 1.0]})
    cl = Cluster.uniform(2, CFG, DYADIC, router=rt, mode=mode, check_invariants=True)
    req_ = cl.run(w, classes=cls).requests
    assert (req_.instance.to_numpy() == np.where(cls == 0, "i0", "i1")).all()
    with pytest.raises(ValueError, match="classes"):
        Cluster.uniform(1, CFG, DYADIC).run(w, classes=cls[:3])


@pytest.mark.parametrize("mode", MODES)
def test_held_requests_wait_for_a_deferred_instance_and_it_serves_nothing_before(mode):
    # i0 retires at 2 s (its queue held: nothing else is routable); i1 was added at 1 s without a join
    # time, gets one at 3 s: join at 6 s. Nothing starts on i1 before 6 s, everything ends once.
    n = 20
    w = workload(np.arange(n) * 0.5, [16] * n, [3] * n)
    cl = Cluster.uniform(1, CFG, DYADIC, router="round-robin", mode=mode, hold_unroutable=True,
                         check_invariants=True)
    box = {}
    cl.kernel.at(1.0, lambda _: box.setdefault("j", cl.add_instance(CFG, DYADIC, name="new", defer=True)), None,
                 PRIO_CONTROL)
    cl.drain(0, at=2.0)
    cl.kernel.at(3.0, lambda _: cl.join(box["j"], at=6.0), None, PRIO_CONTROL)
    res = cl.run(w)
    r = res.requests
    assert (r.state == "finished").all() and len(r) == n
    new = r[r.instance == "new"]
    assert len(new) > 0 and (new.scheduled_s >= 6.0).all()
    old = r[r.instance == "i0"]
    assert (old.scheduled_s < 2.0 + 1e-9).all() and res.stats["drained"]["i0"] <= new.scheduled_s.min()
    assert cl.is_joined(box["j"]) and cl.held == 0 and res.stats["held_at_end"] == 0


def test_held_requests_end_unfinished_when_nothing_joins_and_holding_is_opt_in():
    w = workload([0.0, 5.0], [16, 16], [3, 3])
    cl = Cluster.uniform(1, CFG, DYADIC, router="round-robin", hold_unroutable=True)
    cl.drain(0, at=1.0)
    r = cl.run(w).requests
    assert r.state.tolist() == ["finished", "unfinished"] and bool(r.partial.iloc[1])
    cl = Cluster.uniform(1, CFG, DYADIC, router="round-robin")
    with pytest.raises(ValueError, match="last routable"):
        cl.drain(0)
    cl = Cluster.uniform(1, CFG, DYADIC, router=WeightedRouter(weights={0: [0.0]}))
    with pytest.raises(RuntimeError, match="hold_unroutable"):
        cl.run(w, classes=[0, 0])


def test_add_instance_argument_errors():
    cl = Cluster.uniform(1, CFG, DYADIC)
    with pytest.raises(ValueError, match="not both"):
        cl.add_instance(CFG, DYADIC, at=1.0, defer=True)
    with pytest.raises(IndexError):
        cl.join(7)


@pytest.mark.parametrize("mode", MODES)
def test_migration_into_an_instance_that_is_not_up_waits_for_its_join(mode):
    # request 0 decodes on i0 from 1 s; at 2.5 it moves (32 + 2 KV tokens, 0.1 s each -> 5.9; then
    # the last stage at 6.0, 3 tokens, 0.3 s) to i1, added deferred; i1 joins at 20 s: it resumes then
    cl = Cluster([InstanceConfig(num_blocks=100)], [STEP], mode=mode, check_invariants=True, hold_unroutable=True)
    j = cl.add_instance(InstanceConfig(num_blocks=100), STEP, name="late", defer=True)
    ends = []
    mig = LiveMigrator(cl, 1e6, 1e7, on_end=ends.append)
    cl.kernel.at(2.5, lambda _: mig.start(next(iter(cl.instances[0].running)), 0, j), None, PRIO_CONTROL)
    cl.kernel.at(10.0, lambda _: cl.join(j, at=20.0), None, PRIO_CONTROL)
    r = cl.run(workload([0.0], [32], [10])).requests.iloc[0]
    assert [e.outcome for e in ends] == ["migrated"] and ends[0].end_s == pytest.approx(6.3)
    # 6 tokens by 6.0; the 7th at the first iteration on "late", 20 -> 21 s; the 10th at 24 s
    assert r.instance == "late" and r.finish_s == pytest.approx(24.0) and r.tbt_max_s == pytest.approx(15.0)


@pytest.mark.parametrize("mode", MODES)
def test_batched_migrations_share_the_link(mode):
    # two requests decode on i0; both move to i1 at once (max_per_instance=2): the second's copy
    # queues behind the first's on the one link, so the bytes go at the link's rate, not twice it
    cfgs = [InstanceConfig(num_blocks=100), InstanceConfig(num_blocks=100)]
    cl = Cluster(cfgs, [STEP, STEP], mode=mode, check_invariants=True, router=lambda c, r: 0)
    mig = LiveMigrator(cl, 1e6, 1e7, max_per_instance=2, last_stage_tokens=100)
    one = LiveMigrator(Cluster(cfgs, [STEP, STEP]), 1e6, 1e7)
    assert not one.busy(0) and one.max_per_instance == 1

    def go(_):
        rs = sorted(cl.instances[0].running, key=lambda r: r.idx)
        assert [mig.start(r, 0, 1) for r in rs] == [True, True] and mig.busy(0) and mig.busy(1)

    cl.kernel.at(2.5, go, None, PRIO_CONTROL)
    cl.run(workload([0.0, 0.0], [32, 32], [20, 20]))
    f = mig.frame().sort_values("rid")
    # 34 KV tokens each at 0.1 s a token: the first copy 2.5 -> 5.9, the second queued 5.9 -> 9.3
    assert f.outcome.tolist() == ["migrated", "migrated"]
    assert f.tokens.iloc[0] == 34 + 3 and f.tokens.iloc[1] == 34 + 7
    # the first's last stage (3 tokens at 6.0) waits behind the second's first copy: 9.3 -> 9.6
    assert f.end_s.tolist() == pytest.approx([9.6, 10.7]) and f.downtime_s.tolist() == pytest.approx([3.6, 0.7])
    assert not mig.busy(0) and not math.isnan(f.downtime_s.max())


@pytest.mark.parametrize("mode", MODES)
def test_a_draining_instance_hands_its_preempted_requests_back(mode):
    # both requests go to i0 (4 blocks of 16 tokens); it drains at 0.1 s. Growing to 16 + 40 tokens
    # each, they outgrow its KV: the one preempted is routed again, to i1, not recomputed on i0
    small = InstanceConfig(num_blocks=4, block_size=16, max_num_seqs=4, max_num_batched_tokens=512)
    rt = WeightedRouter(weights={0: [1.0], 1: [0.0]})
    cl = Cluster([small, CFG], [DYADIC, DYADIC], router=rt, mode=mode, check_invariants=True)

    def retire(_):
        rt.set_weights({1: [1.0]})
        cl.drain(0)

    cl.kernel.at(0.1, retire, None, PRIO_CONTROL)
    res = cl.run(workload([0.0, 0.0], [16, 16], [40, 40]), classes=[0, 0])
    r = res.requests.sort_values("request_id")
    assert (r.state == "finished").all() and r.instance.tolist() == ["i0", "i1"]
    assert r.preemptions.tolist() == [0, 1] and res.stats["requeued"] == 1
    assert res.stats["drained"]["i0"] == pytest.approx(r.finish_s.iloc[0])


def test_requests_held_are_routed_once_every_instance_of_the_instant_has_joined():
    # i0 retires at 0.5 s; two instances join together at 8 s: the requests held meanwhile are
    # shared by both (round-robin), not all given to the first to join
    w = workload(np.arange(16) * 0.5, [16] * 16, [2] * 16)
    cl = Cluster.uniform(1, CFG, DYADIC, router="round-robin", hold_unroutable=True)
    a = cl.add_instance(CFG, DYADIC, name="a", at=8.0)
    b = cl.add_instance(CFG, DYADIC, name="b", at=8.0)
    cl.drain(0, at=0.5)
    r = cl.run(w).requests
    held = r[(r.arrival_s > 0.5) & (r.arrival_s < 8.0)]
    assert len(held) == 14 and held.instance.value_counts().to_dict() == {"a": 7, "b": 7}
    assert (a, b) == (1, 2) and (r.state == "finished").all()


@pytest.mark.parametrize("mode", MODES)
def test_a_held_instance_is_routed_to_but_serves_only_from_its_hold_end(mode):
    # i1 joins at once but is held (not up): round-robin gives it every other request, which waits
    # in its queue; hold(1, 5.0) then brings it up at 5 s
    cl = Cluster.uniform(1, CFG, DYADIC, router="round-robin", mode=mode, check_invariants=True)
    j = cl.add_instance(CFG, DYADIC, name="new", defer=True)
    cl.join(j)
    cl.hold(j, math.inf)
    cl.kernel.at(2.0, lambda _: cl.hold(j, 5.0), None, PRIO_CONTROL)
    r = cl.run(workload(np.arange(8) * 0.5, [16] * 8, [2] * 8)).requests
    new = r[r.instance == "new"]
    assert len(new) == 4 and new.scheduled_s.min() == 5.0 and (r.state == "finished").all()
    with pytest.raises(IndexError):
        cl.hold(9, 1.0)


@pytest.mark.parametrize("order", ["back", "arrival"])
def test_requeued_requests_keep_their_arrival_order_when_asked(order):
    # i0 (1 seq at a time, every request goes to it until 3 s) builds a queue; at 3 s it drains into
    # i1, which by then holds requests that arrived later: "arrival" queues the older ones first
    one = InstanceConfig(num_blocks=64, block_size=16, max_num_seqs=1, max_num_batched_tokens=512)
    rt = WeightedRouter(weights={0: [1.0], 1: [0.0]})
    cl = Cluster([one, one], [DYADIC, DYADIC], router=rt, requeue_order=order, check_invariants=True)

    def move(_):
        rt.set_weights({1: [1.0]})
        cl.hold(1, math.inf)  # i1 queues the new arrivals until 3.5 s
        cl.kernel.at(3.5, lambda _: cl.hold(1, 0.0), None, PRIO_CONTROL)

    cl.kernel.at(1.5, move, None, PRIO_CONTROL)
    cl.drain(0, at=3.0)
    r = cl.run(workload(np.arange(12) * 0.25, [16] * 12, [8] * 12), classes=[0] * 12).requests
    on1 = r[r.instance == "i1"].sort_values("scheduled_s")
    late = on1.arrival_s.to_numpy()
    if order == "arrival":
        assert (np.diff(late) > 0).all()  # FCFS across the move
    else:
        assert not (np.diff(late) > 0).all()  # the moved (older) ones queue behind
    with pytest.raises(ValueError, match="requeue_order"):
        Cluster([one], [DYADIC], requeue_order="front")
