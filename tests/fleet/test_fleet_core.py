import numpy as np
import pandas as pd
import pytest

from servesim.fleet.control import Drain, Move, Scale
from servesim.fleet.core import EndpointConfig, LeadTimes
from servesim.fleet.lifecycle import ALLOWED, State
from servesim.policies import ReactiveAutoscaler
from servesim.workload.schema import make

from ._fleet_fakes import make_fleet


def poisson(rate, dur, seed=0, **kw):
    rng = np.random.default_rng(seed)
    t = np.cumsum(rng.exponential(1 / rate, int(rate * dur * 1.5)))
    t = t[t < dur]
    n = len(t)
    return make(t, rng.integers(10, 200, n), rng.integers(1, 100, n), **kw)


def check_invariants(f, k):
    f.finalize(k.now)
    # conservation: every request in exactly one terminal state
    assert (f.state != "").all()
    assert set(f.state) <= {"finished", "rejected", "unfinished", "timeout", "error"}
    # lifecycle: only allowed edges, per instance in time order
    log = f.ledger.log_table()
    for iid, g in log.groupby("instance", sort=False):
        assert g["time_s"].is_monotonic_increasing
        for a, b in zip(g["from_state"].iloc[1:], g["to_state"].iloc[1:]):
            assert State(b) in ALLOWED[State(a)], (iid, a, b)
        prev = list(g["to_state"].iloc[:-1])
        assert prev == list(g["from_state"].iloc[1:])
    # hours: per-state sums equal each instance's lifetime from its first event to the end
    first = log.groupby("instance")["time_s"].min()
    gone = log[log.to_state == "released"].groupby("instance")["time_s"].max()
    last = pd.Series(k.now, index=first.index)
    last[gone.index] = gone
    total = (last - first).sum() / 3600
    assert f.ledger.hours_table()["hours"].sum() == pytest.approx(total, rel=1e-12, abs=1e-12)
    # clock never goes back
    assert all(b >= a for a, b in zip(k.times, k.times[1:]))


def test_single_endpoint_conserves_and_balances():
    w = poisson(5, 100, model="m", region="r")
    f, k = make_fleet(w, [EndpointConfig("m", "r", instances=3)])
    f.start()
    k.run()
    check_invariants(f, k)
    assert (f.state == "finished").all()
    counts = pd.Series(f.instance_of).value_counts()
    assert len(counts) == 3 and counts.min() > 0.2 * len(w)


def test_missing_endpoint_rejects_and_remote_route_pays_latency():
    w = make([0.0, 1.0], [10, 10], [5, 5], model=["m", "x"], region="a")

    class ToB:
        def route(self, i, fleet):
            return ("m", "b") if fleet.req_model[i] == "m" else None

    f, k = make_fleet(w, [EndpointConfig("m", "b", instances=1)], global_router=ToB(),
                      latency_s={"a": {"b": 0.25}})
    f.start()
    k.run()
    check_invariants(f, k)
    assert list(f.state) == ["finished", "rejected"]
    assert "no endpoint" in f.reason[1]
    assert f.records[0]["scheduled_s"] == pytest.approx(0.25)


def test_missing_latency_pair_is_an_error():
    w = make([0.0], [10], [5], model="m", region="a")

    class ToB:
        def route(self, i, fleet):
            return ("m", "b")

    f, k = make_fleet(w, [EndpointConfig("m", "b", instances=1)], global_router=ToB())
    f.start()
    with pytest.raises(KeyError, match="latency"):
        k.run()


def test_scale_up_goes_through_lead_times_and_queue_waits():
    w = make(np.linspace(1, 2, 20), 10, 5, model="m", region="r")
    lead = LeadTimes(request_s=1, provision_s=10, load_s=20)
    f, k = make_fleet(w, [EndpointConfig("m", "r", instances=0, lead=lead)])
    f.apply(Scale("m", "r", 2))
    f.start()
    k.run()
    check_invariants(f, k)
    assert (f.state == "finished").all()
    starts = [f.records[i]["scheduled_s"] for i in range(20)]
    assert min(starts) == pytest.approx(31.0)  # ready at 1 + 10 + 20
    log = f.ledger.log_table()
    ready = log[log.to_state == "ready"]
    assert len(ready) == 2 and (ready.time_s == 31).all()


def test_drain_finishes_running_and_takes_no_new_requests():
    w = make(np.arange(0, 40, 0.5), 10, 5, model="m", region="r")
    f, k = make_fleet(w, [EndpointConfig("m", "r", instances=2)], router="round-robin")
    victim = "r/i0"
    k.schedule(10.0, lambda: f.apply(Drain(victim)))
    f.start()
    k.run()
    check_invariants(f, k)
    arr = f.arrival
    on_victim = np.array([x == victim for x in f.instance_of])
    assert on_victim.any() and (arr[on_victim] <= 10).all()
    assert (f.state == "finished").all()
    log = f.ledger.log_table()
    assert list(log[log.instance == victim].to_state) == ["ready", "draining", "released"]


def test_move_and_pool_reclaim():
    w = make(np.arange(0, 30, 1.0), 10, 5, model=["a", "b"] * 15, region="r")
    lead = LeadTimes(load_s=7, reclaim_s=2)
    eps = [EndpointConfig("a", "r", instances=2, lead=lead), EndpointConfig("b", "r", instances=1, lead=lead)]
    f, k = make_fleet(w, eps, pool={"r": {"a": 1}}, region_capacity={"r": 4})
    k.schedule(5.0, lambda: f.apply(Move("r/i0", "b")))
    k.schedule(6.0, lambda: f.apply(Scale("b", "r", 1)))  # takes the pooled 'a' instance: full load
    k.schedule(7.0, lambda: f.apply(Scale("b", "r", 1)))  # region full -> denied
    f.start()
    k.run()
    check_invariants(f, k)
    log = f.ledger.log_table()
    i0 = log[log.instance == "r/i0"]
    # a conversion: drain, then switch model in place (convert_s defaults to load_s)
    assert list(i0.to_state) == ["ready", "draining", "converting", "ready"]
    assert i0.model.iloc[-1] == "b"
    assert i0.time_s.iloc[-1] - i0.time_s.iloc[2] == pytest.approx(7)
    i3 = log[log.instance == "r/i3"]
    assert list(i3.to_state) == ["pooled", "converting", "ready"] and i3.time_s.iloc[-1] == pytest.approx(13)
    assert f.conversions == 2
    assert f.scale_denied == 1
    assert (f.state == "finished").all()


def test_horizon_marks_unfinished():
    w = make(np.arange(0, 100, 0.1), 10, 5, model="m", region="r")
    f, k = make_fleet(w, [EndpointConfig("m", "r", instances=1)], slots=1, base=1.0)
    f.start()
    k.run(until=50.0)
    check_invariants(f, k)
    st = pd.Series(f.state).value_counts()
    assert st["finished"] > 0 and st["unfinished"] > 0 and st.sum() == len(w)


def test_reactive_autoscaler_step_load():
    # low load 0-100 s, high 100-300 s, low again after
    lo1 = np.arange(0, 100, 2.0)
    hi = np.arange(100, 300, 0.1)
    lo2 = np.arange(300, 700, 2.0)
    t = np.concatenate([lo1, hi, lo2])
    w = make(t, 10, 5, model="m", region="r")
    lead = LeadTimes(request_s=0, provision_s=20, load_s=30)
    f, k = make_fleet(w, [EndpointConfig("m", "r", instances=1, min_instances=1, max_instances=10, lead=lead)],
                      slots=4, base=1.0)
    sc = ReactiveAutoscaler(period_s=5, up=0.7, down=0.3, cooldown_s=15, metric="kv")
    f.add_actor(sc)
    samples = []
    f.add_actor(type("S", (), {"period_s": 5.0, "act": lambda self, v: samples.append(f.sample()[0]) or []})())
    f.start()
    k.run()
    check_invariants(f, k)
    ts = pd.DataFrame(samples)
    log = f.ledger.log_table()
    req = log[log.to_state == "requested"]
    first_up = req.time_s.min()
    assert 100 <= first_up <= 120  # reacts within a period or two of the step
    rdy = log[log.to_state == "ready"]
    assert rdy[rdy.time_s > 0].time_s.min() == pytest.approx(first_up + 50)  # after the lead time
    assert ts[ts.time_s.between(250, 300)].n_ready.max() >= 3
    drains = log[log.to_state == "draining"]
    assert len(drains) and drains.time_s.min() >= 295  # scale-in only once the load drops
    # down-steps are spaced by at least the cooldown
    assert (np.diff(np.sort(drains.time_s.to_numpy())) >= 15 - 1e-9).all()
    assert ts.n_ready.iloc[-1] == 1  # back to the floor


@pytest.mark.parametrize("deadlines", [False, True])
@pytest.mark.parametrize("seed", range(6))
def test_random_control_actions_keep_invariants(seed, deadlines):
    rng = np.random.default_rng(seed)
    w = poisson(8, 200, seed=seed, model=rng.choice(["a", "b"], 10_000)[:1].item(), region="r")
    w["model"] = pd.array(rng.choice(["a", "b"], len(w)), dtype="string")
    kw = {}
    if deadlines:  # half NIW with short deadlines, timed out while waiting, amid drains and moves
        w["tier"] = pd.array(rng.choice(["NIW", "IW-F"], len(w)), dtype="string")
        w["deadline_s"] = w["arrival_s"] + rng.exponential(3.0, len(w))
        kw["enforce_deadlines"] = ["NIW"]
    lead = LeadTimes(request_s=1, provision_s=5, load_s=8, reclaim_s=2)
    eps = [EndpointConfig("a", "r", instances=2, max_instances=6, lead=lead),
           EndpointConfig("b", "r", instances=1, max_instances=6, lead=lead)]
    f, k = make_fleet(w, eps, router=["round-robin", "jsq-tokens", "power-of-two"][seed % 3],
                      pool={"r": {"a": 1}}, region_capacity={"r": 9}, scale_in_to=["pool", "release"][seed % 2],
                      requeue_on_drain=seed % 3 != 1, **kw)

    def chaos():
        live = [i for i in f._by_id.values()]
        op = rng.integers(4)
        if op == 0:
            f.apply(Scale(str(rng.choice(["a", "b"])), "r", int(rng.integers(-3, 4))))
        elif op == 1:
            cands = [i for i in live if i.state in (State.READY, State.DRAINING)]
            if cands:
                f.apply(Drain(cands[int(rng.integers(len(cands)))].id, to_pool=bool(rng.integers(2))))
        elif op == 2:
            cands = [i for i in live if i.state in (State.READY, State.DRAINING, State.POOLED)]
            if cands:
                f.apply(Move(cands[int(rng.integers(len(cands)))].id, str(rng.choice(["a", "b"]))))
        if not f.done:
            k.schedule(k.now + float(rng.exponential(4.0)), chaos)

    k.schedule(1.0, chaos)
    f.start()
    k.run(until=400.0)
    check_invariants(f, k)
    held = sum(1 for i in f._by_id.values())
    assert held <= 9 and held == f._held["r"]
    # load counters match what the engines still hold (withdrawals and drains leak nothing)
    for ep in f.eps.values():
        assert ep.outstanding == sum(i.outstanding for i in ep.instances.values())
    if deadlines:
        to = f.state == "timeout"
        assert to.sum() == f.timed_out > 0 and (w["tier"].to_numpy()[to] == "NIW").all()
        for i in np.flatnonzero(to):
            assert i not in f.records  # never started


@pytest.mark.parametrize("requeue", [True, False])
def test_drain_requeues_waiting_requests(requeue):
    # one slot per engine so requests queue inside the engines; drain i0 at t=5
    w = make(np.arange(0, 6, 0.25), 10, 5, model="m", region="r")
    f, k = make_fleet(w, [EndpointConfig("m", "r", instances=2)], router="round-robin", slots=1, base=1.0,
                      requeue_on_drain=requeue)
    k.schedule(5.0, lambda: f.apply(Drain("r/i0")))
    f.start()
    k.run()
    check_invariants(f, k)
    assert (f.state == "finished").all()
    starts = {i: f.records[i]["scheduled_s"] for i in range(len(w))}
    on0 = [i for i in range(len(w)) if f.instance_of[i] == "r/i0"]
    log = f.ledger.log_table()
    released = log[(log.instance == "r/i0") & (log.to_state == "released")].time_s.iloc[0]
    if requeue:
        # i0 keeps only what it had started by t=5; everything else moved to i1
        assert all(starts[i] <= 5.0 for i in on0) and released <= 6.0
        assert f.requeued > 0
    else:
        assert any(starts[i] > 5.0 for i in on0) and released > 6.0
        assert f.requeued == 0


def test_actors_get_a_read_only_view():
    w = make(np.arange(0, 20, 1.0), 10, 5, model="m", region="r")
    f, k = make_fleet(w, [EndpointConfig("m", "r", instances=1)])
    seen = []

    class Peek:
        period_s = 5.0

        def act(self, view):
            st = view.endpoint("m", "r")
            seen.append((view.now, st.ready, st.arrivals_rate, view.endpoints()))
            assert not hasattr(view, "apply") and not hasattr(view, "eps")
            with pytest.raises(AttributeError):
                view.x = 1
            return []

    f.add_actor(Peek())
    f.start()
    k.run()
    assert [s[0] for s in seen[:3]] == [5.0, 10.0, 15.0]
    # at t=10 the window is [0, 10] (shorter than window_s at start): 11 arrivals, 1 per second + 1
    assert seen[1][1] == 1 and seen[1][2] == pytest.approx(11 / 10.0) and seen[0][3] == [("m", "r")]


@pytest.mark.parametrize("convert", [True, False])
def test_pool_conversions_option(convert):
    w = make(np.arange(0, 20, 1.0), 10, 5, model="b", region="r")
    lead = LeadTimes(provision_s=3, load_s=7, reclaim_s=2, convert_s=5)
    eps = [EndpointConfig("a", "r", instances=0, lead=lead), EndpointConfig("b", "r", instances=1, lead=lead)]
    f, k = make_fleet(w, eps, pool={"r": {"a": 1}}, pool_conversions=convert)
    k.schedule(1.0, lambda: f.apply(Scale("b", "r", 1)))
    f.start()
    k.run()
    check_invariants(f, k)
    log = f.ledger.log_table()
    if convert:  # the pooled 'a' VM converts: ready convert_s later, under model b
        g = log[log.instance == "r/i1"]
        assert list(g.to_state) == ["pooled", "converting", "ready"] and g.time_s.iloc[-1] == pytest.approx(6.0)
        assert f.conversions == 1 and f.pooled("r") == {}
    else:  # a new VM instead: provision + load
        g = log[log.instance == "r/i2"]
        assert list(g.to_state) == ["requested", "provisioning", "loading", "ready"]
        assert g.time_s.iloc[-1] == pytest.approx(11.0) and f.pooled("r") == {"a": 1}
    h = f.ledger.hours_table()
    assert (h[h.state == "converting"].hours.sum() > 0) == convert
