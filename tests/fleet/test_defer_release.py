"""The fleet's public defer/release API (arrival hook, release, end_deferred) and deadline
enforcement, with fake engines: invariants over random workloads and hand-checked cases."""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from servesim.fleet.core import EndpointConfig
from servesim.workload.schema import make

from ._fleet_fakes import make_fleet
from .test_fleet_core import check_invariants

TERMINAL = {"finished", "rejected", "unfinished", "timeout", "error"}


def counting_fleet(w, eps, **kw):
    """make_fleet whose engines count submits per request (routed exactly once = one submit)."""
    f, k = make_fleet(w, eps, **kw)
    submits = np.zeros(len(w), np.int64)
    orig = f.engine_factory

    def factory(m, r, name, cb):
        eng = orig(m, r, name, cb)
        sub = eng.submit

        def submit(i, handle=None):
            submits[i] += 1
            sub(i, handle)

        eng.submit = submit
        return eng

    f.engine_factory = factory
    for ep in f.eps.values():  # engines of instances ready at time 0 were built already
        for inst in ep.instances.values():
            inst.engine = factory(inst.model, inst.region, inst.id, f._on_end)
    return f, k, submits


@st.composite
def scenarios(draw):
    n = draw(st.integers(1, 40))
    gaps = draw(st.lists(st.floats(0.0, 3.0), min_size=n, max_size=n))
    t = np.cumsum(gaps)
    # per request: 0 routed at arrival, 1 deferred+released to its own endpoint, 2 released
    # through the global router, 3 released to the other model's endpoint, 4 ended by the
    # holder, 5 never released
    fate = draw(st.lists(st.integers(0, 5), min_size=n, max_size=n))
    hold = draw(st.lists(st.floats(0.0, 20.0), min_size=n, max_size=n))
    models = draw(st.lists(st.sampled_from(["a", "b"]), min_size=n, max_size=n))
    return t, np.array(fate), np.array(hold), models


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios())
def test_deferred_requests_end_once_and_released_ones_are_routed_once(sc):
    t, fate, hold, models = sc
    n = len(t)
    w = make(t, 10, 5, model=models, region="r")
    f, k, submits = counting_fleet(w, [EndpointConfig("a", "r", instances=1), EndpointConfig("b", "r", instances=2)],
                                   slots=2, base=1.0)
    released_at = np.full(n, np.nan)

    def hook(i):
        if fate[i] == 0:
            return False

        def later(i=i):
            assert f.is_deferred(i)
            if fate[i] == 4:
                f.end_deferred(i, "timeout", "holder gave up")
            elif fate[i] in (1, 2, 3):
                released_at[i] = k.now
                if fate[i] == 1:
                    f.release(i, models[i], "r")
                elif fate[i] == 2:
                    f.release(i)
                else:
                    f.release(i, "b" if models[i] == "a" else "a")
                assert not f.is_deferred(i)
                with pytest.raises(ValueError, match="not deferred"):
                    f.release(i)

        if fate[i] != 5:
            k.schedule(k.now + float(hold[i]), later)
        return True

    f.set_arrival_hook(hook)
    f.start()
    k.run()
    check_invariants(f, k)
    assert set(f.state) <= TERMINAL
    # routed at arrival or released: exactly one submit, and served after the release
    served = np.isin(fate, [0, 1, 2, 3])
    assert (submits[served] == 1).all() and (submits[~served] == 0).all()
    assert (f.state[served] == "finished").all()
    for i in np.flatnonzero(np.isin(fate, [1, 2, 3])):
        assert f.records[i]["scheduled_s"] >= released_at[i]
    assert (f.state[fate == 4] == "timeout").all()
    assert (f.state[fate == 5] == "unfinished").all()
    assert all("deferred" in r for r in f.reason[fate == 5])
    assert f.deferred == int((fate == 5).sum())
    # a request released to the other endpoint ran there
    for i in np.flatnonzero(fate == 3):
        other = "b" if models[i] == "a" else "a"
        assert f._by_id.get(f.instance_of[i]) is None or f._by_id[f.instance_of[i]].model == other
    # endpoint arrival counters count each routed request once
    assert sum(ep.arrived for ep in f.eps.values()) == int(served.sum())


def test_release_errors_name_the_problem():
    w = make([0.0, 1.0, 2.0], 10, 5, model="a", region="r")
    f, k = make_fleet(w, [EndpointConfig("a", "r", instances=1)])
    f.set_arrival_hook(lambda i: i != 1)
    f.start()
    with pytest.raises(ValueError, match="has not arrived"):
        f.release(2)
    k.run(until=1.5)
    assert f.is_deferred(0) and not f.is_deferred(1) and f.deferred == 1
    with pytest.raises(IndexError, match="no such request"):
        f.release(7)
    with pytest.raises(IndexError, match="no such request"):
        f.release(-1)
    with pytest.raises(ValueError, match="routed at arrival"):
        f.release(1)
    with pytest.raises(KeyError, match="no endpoint for model 'zz'"):
        f.release(0, "zz", "r")
    assert f.is_deferred(0)  # a failed release leaves it deferred
    f.release(0, "a", "r")
    with pytest.raises(ValueError, match="not deferred"):
        f.end_deferred(0)
    with pytest.raises(TypeError, match="callable"):
        f.set_arrival_hook(3)
    k.run()
    f.finalize(k.now)
    assert list(f.state) == ["finished", "finished", "unfinished"]
    assert f.reason[2] == "run ended deferred (not released)"


def test_release_pays_network_latency_to_a_remote_endpoint():
    w = make([0.0], 10, 5, model="a", region="x")
    f, k = make_fleet(w, [EndpointConfig("a", "y", instances=1)], latency_s={"x": {"y": 0.5}})
    f.set_arrival_hook(lambda i: True)
    k.schedule(2.0, lambda: f.release(0, "a", "y"))
    f.start()
    k.run()
    assert f.state[0] == "finished" and f.records[0]["scheduled_s"] == pytest.approx(2.5)


# ---------------------------------------------------------------------------- deadlines
@st.composite
def deadline_scenarios(draw):
    n = draw(st.integers(1, 40))
    t = np.cumsum(draw(st.lists(st.floats(0.0, 1.0), min_size=n, max_size=n)))
    dl = np.array(draw(st.lists(st.floats(0.05, 8.0), min_size=n, max_size=n)))
    tiers = draw(st.lists(st.sampled_from(["IW-F", "NIW"]), min_size=n, max_size=n))
    defer = np.array(draw(st.lists(st.booleans(), min_size=n, max_size=n)))
    hold = np.array(draw(st.lists(st.floats(0.0, 10.0), min_size=n, max_size=n)))
    return t, t + dl, tiers, defer, hold


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(deadline_scenarios())
def test_waiting_past_the_deadline_times_out_once(sc):
    t, dl, tiers, defer, hold = sc
    w = make(t, 10, 5, model="a", region="r", tier=tiers, deadline_s=dl)
    f, k = make_fleet(w, [EndpointConfig("a", "r", instances=1)], slots=1, base=1.5, enforce_deadlines=["NIW"])

    def hook(i):
        if not defer[i]:
            return False
        k.schedule(k.now + float(hold[i]), lambda i=i: f.is_deferred(i) and f.release(i))
        return True

    f.set_arrival_hook(hook)
    f.start()
    k.run()
    check_invariants(f, k)
    niw = np.array(tiers) == "NIW"
    to = f.state == "timeout"
    assert not to[~niw].any()  # only enforced tiers
    assert f.timed_out == int(to.sum())
    for i in np.flatnonzero(to):
        assert "deadline" in f.reason[i] and i not in f.records  # never started
    for i in np.flatnonzero(niw & (f.state == "finished")):
        assert f.records[i]["scheduled_s"] <= dl[i]  # started before its deadline
    assert (f.state[~to] == "finished").all()
    # engine queue counters returned to zero (nothing leaked by withdrawals)
    for ep in f.eps.values():
        assert ep.outstanding == 0 and ep.pending_tokens == 0 and not ep.queue
        for inst in ep.instances.values():
            assert inst.outstanding == 0 and inst.engine.wait == [] and not inst.engine.run_


def test_deadline_cases_by_where_the_request_waits():
    # r0 starts at once; r1 waits in the engine (one slot) past its deadline; r2 is deferred
    # and never released; r3 waits at the endpoint while no instance is ready; r4 (IW) is only reported
    w = make([0.0, 0.1, 0.2, 0.3, 0.4], 10, 5, model=["a", "a", "a", "b", "a"], region="r",
             tier=["NIW", "NIW", "NIW", "NIW", "IW-F"], deadline_s=[0.5, 0.6, 0.7, 0.8, 0.9])
    f, k = make_fleet(w, [EndpointConfig("a", "r", instances=1), EndpointConfig("b", "r", instances=0)],
                      slots=1, base=1.0, enforce_deadlines=["NIW"])
    f.set_arrival_hook(lambda i: i == 2)
    f.start()
    k.run()
    f.finalize(k.now)
    assert list(f.state) == ["finished", "timeout", "timeout", "timeout", "finished"]
    assert "queued in r/i0" in f.reason[1] and "deferred" in f.reason[2] and "endpoint b@r" in f.reason[3]
    assert f.records[4]["scheduled_s"] > 0.9  # past its deadline but not enforced: served
    assert f.timed_out == 3


def test_unknown_enforced_tier_is_an_error():
    w = make([0.0], 10, 5, model="a", region="r")
    with pytest.raises(ValueError, match="unknown tier"):
        make_fleet(w, [EndpointConfig("a", "r")], enforce_deadlines=["gold"])


def test_default_keeps_deadlines_reported_only():
    w = make(np.arange(0, 5, 0.1), 10, 5, model="a", region="r", tier="NIW", deadline_s=np.arange(0, 5, 0.1) + 0.2)
    f, k = make_fleet(w, [EndpointConfig("a", "r", instances=1)], slots=1, base=1.0)
    f.start()
    k.run()
    assert (f.state == "finished").all() and f.timed_out == 0

