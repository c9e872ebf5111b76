"""OServe's online loop served as ONE cluster (``systems.oserve.serving``; issue 28 item 1): a retired
replica starts nothing after its switch and its queued requests finish elsewhere, no two live
replicas hold one GPU at any time, every request ends exactly once, and a plan that never switches
gives what the per-replica serving gave before (the regression anchor: same routing draws, each
replica an independent instance)."""

import numpy as np
import pandas as pd
import pytest

from servesim.sim import Cluster
from servesim.systems.oserve import switching as SW
from servesim.systems.oserve.online import Plan
from servesim.systems.oserve.replica import GPU, Shape, instance_config, step_model
from servesim.systems.oserve.serving import PlanServer, layouts
from servesim.workload import schema

MODEL = "opt-30b"
TYPES = ("SILO", "LILO", "SISO", "LISO")  # 0, 1 long output (their KV moves); 2, 3 short (drain)
SPAN = 20.0


def trace(n_spans=3, rate=14.0, seed=0):
    rng = np.random.default_rng(seed)
    n = int(rate * SPAN * n_spans)
    arrival = np.sort(rng.uniform(0.0, SPAN * n_spans, n))
    typ = rng.integers(0, 4, n)
    prompt = np.where(typ % 2 == 0, rng.integers(50, 400, n), rng.integers(800, 2000, n))
    output = np.where(typ < 2, rng.integers(150, 400, n), rng.integers(4, 24, n))
    return schema.make(arrival, prompt, output, model=MODEL), typ.astype(np.int64)


def shares(k, by_type=None):
    """k replicas' routing shares (K x 4): equal, or ``by_type[j]`` = the replicas type j goes to."""
    F = np.ones((k, 4))
    if by_type is not None:
        F = np.zeros((k, 4))
        for j, rows in by_type.items():
            F[rows, j] = 1.0
    return F / F.sum(0, keepdims=True)


# the 4 GPUs go TP2 + TP2 -> TP2 + TP1 + TP1 (one TP2 kept, one split) -> TP4 (everything changes);
# types 0, 1 go to the first TP2, types 2, 3 to the other replicas
PLANS = [Plan((Shape(2), Shape(2)), shares(2, {0: [0], 1: [0], 2: [1], 3: [1]}), 1.0),
         Plan((Shape(2), Shape(1), Shape(1)), shares(3, {0: [0], 1: [0], 2: [1, 2], 3: [1, 2]}), 1.0),
         Plan((Shape(4),), shares(1), 1.0)]


def serve(plans, router="weighted", switch="adhoc", seed=0, route_new="at-switch", **kw):
    wl, typ = trace(len(plans), **kw)
    srv = PlanServer(MODEL, 4, plans, switch=switch, router=router, span_s=SPAN, seed=seed, type_names=TYPES,
                     check_invariants=True, route_new=route_new)
    ends = {}
    srv.cl.on_request_done = lambda r: ends.__setitem__(r.rid, ends.get(r.rid, 0) + 1)
    df, sw = srv.run(wl, typ)
    return srv, df, sw, wl, ends


@pytest.fixture(scope="module", params=["at-switch", "when-up"])
def switched(request):
    return serve(PLANS, route_new=request.param)


def test_a_retired_replica_starts_nothing_after_its_switch_and_its_queue_finishes_elsewhere(switched):
    srv, df, sw, wl, _ = switched
    retired = [j for j, t in enumerate(srv.retire_s) if np.isfinite(t)]
    assert len(retired) == 4 and [r["span"] for r in sw] == [1, 2]  # a TP2 at 20 s; TP2 + 2 x TP1 at 40 s
    for j in retired:
        on = df[df.lifetime == j]
        assert (on.scheduled_s <= srv.retire_s[j]).all()  # no service starts on it after retirement
        assert srv.stop_s[j] >= srv.retire_s[j] and (on.finish_s <= srv.stop_s[j] + 1e-9).all()
        q = df.set_index("request_id").loc[srv.queued_at_retire[j]]
        assert (q.lifetime != j).all() and (q.state == "finished").all()
    assert sum(len(srv.queued_at_retire[j]) for j in retired) > 0  # the case is exercised
    moved = df[df.migrated]
    assert len(moved) > 0 and set(moved.type) <= {0, 1}  # long-output KV moved, short output drained
    assert (~moved.lifetime.isin(retired)).all()


def test_no_two_live_replicas_hold_one_gpu_and_new_ones_serve_only_once_up(switched):
    srv, df, sw, _, _ = switched
    iv = srv.gpu_intervals()
    assert set(iv.gpu) == {0, 1, 2, 3}
    for _, g in iv.groupby("gpu"):
        g = g.sort_values("start_s")
        assert (g.start_s.to_numpy()[1:] >= g.stop_s.to_numpy()[:-1]).all()
    # a new replica is up its switch time after its GPUs were free; nothing routed to it started
    # before it was up
    for row in sw:
        assert row["ready_s"] >= row["switch_s"] and row["drain_s"] >= 0.0
    for j in range(len(srv.placed)):  # (a request first admitted elsewhere came with its KV or was preempted)
        on = df[(df.lifetime == j) & ~df.migrated & (df.preemptions == 0)]
        assert (on.scheduled_s >= srv.up_s[j]).all()
    assert sw[1]["replicas_kept"] == 0 and sw[0]["replicas_kept"] == 1


def test_every_request_ends_exactly_once(switched):
    srv, df, _, wl, ends = switched
    assert len(df) == len(wl) and df.request_id.is_unique
    assert (df.state == "finished").all() and set(ends) == set(wl.request_id) and set(ends.values()) == {1}
    assert srv.cl.held == 0 and srv.result.stats["held_at_end"] == 0


@pytest.mark.parametrize("route_new", ["at-switch", "when-up"])
def test_reload_round_robin_waits_while_nothing_is_up(route_new):
    # vLLM reload's round-robin over a layout that changes whole: TP2 x 2 -> TP4; requests arriving
    # during the switch wait (in TP4's queue, or held by the cluster) and start once TP4 is up; a
    # naive reload takes longer than ad hoc
    plans = [Plan((Shape(2), Shape(2)), shares(2), 1.0), Plan((Shape(4),), shares(1), 1.0)]
    srv, df, sw, wl, ends = serve(plans, router="round-robin", route_new=route_new)
    assert (df.state == "finished").all() and set(ends.values()) == {1}
    t0, ready = SPAN, SPAN + sw[0]["ready_s"]
    during = df[(df.arrival_s > t0 + sw[0]["drain_s"]) & (df.arrival_s < ready)]
    assert len(during) > 0 and (during.scheduled_s >= ready).all()
    _, _, sw2, _, _ = serve(plans, router="round-robin", switch="reload")
    assert sw2[0]["switch_s"] > sw[0]["switch_s"] and sw2[0]["ready_s"] > sw[0]["ready_s"]


def old_serving(plans, wl, types, seed):
    """The loop's serving before it was one cluster, for a plan that never switches: every request
    routed up front by a cumulative draw per span, each replica its own single-instance cluster."""
    rng = np.random.default_rng(seed)
    span = np.minimum((wl.arrival_s.to_numpy() // SPAN).astype(int), len(plans) - 1)
    lay, order = layouts(plans, 4)
    dest = np.full(len(wl), -1)
    for s, p in enumerate(plans):
        sel = np.flatnonzero(span == s)
        u = rng.random(sel.size)
        cum = np.cumsum(p.fractions, axis=0)
        for j in range(4):
            m = types[sel] == j
            k = np.minimum(np.searchsorted(cum[:, j] / cum[-1, j], u[m], side="right"), len(p.shapes) - 1)
            dest[sel[m]] = [lay[s][order[s][x]].gpus[0] for x in k]
    parts = []
    for g in sorted(set(dest)):
        q = next(q for q in lay[0] if q.gpus[0] == g)
        sub = wl[dest == g].reset_index(drop=True)
        res = Cluster.uniform(1, instance_config(MODEL, q.shape, GPU), step_model(MODEL, q.shape, GPU)).run(sub)
        parts.append(res.requests.assign(gpu=g))
    return pd.concat(parts).sort_values("request_id").reset_index(drop=True)


@pytest.mark.parametrize("plan", [Plan((Shape(2), Shape(1), Shape(1)), shares(3), 1.0),  # static's equal shares
                                  PLANS[1]])                                              # OServe's by type
def test_a_plan_that_never_switches_serves_as_before(plan):
    plans = [plan] * 3
    wl, typ = trace(3, rate=6.0, seed=2)
    srv = PlanServer(MODEL, 4, plans, switch="adhoc", span_s=SPAN, seed=5, type_names=TYPES, weighted_mode="random")
    new, sw = srv.run(wl, typ)
    old = old_serving(plans, wl, typ, seed=5)
    assert sw == [] and not new.migrated.any()
    gpu0 = np.array([srv.placed[j].gpus[0] for j in new.lifetime])
    assert (gpu0 == old.gpu.to_numpy()).all()
    for c in ("scheduled_s", "first_token_s", "finish_s", "ttft_s", "e2e_s", "tbt_mean_s", "preemptions"):
        np.testing.assert_array_equal(new[c].to_numpy(), old[c].to_numpy(), err_msg=c)


def test_layouts_match_plan_rows_to_replicas():
    lay, order = layouts(PLANS, 4)
    assert [len(x) for x in lay] == [2, 3, 1] and SW.Placed(Shape(2), (0, 1)) in lay[1]
    assert [lay[1][i].shape.tp for i in order[1]] == [2, 1, 1]
