import pytest

from servesim.fleet.lifecycle import ALLOWED, InstanceLedger, LifecycleError, State


def test_happy_path_books_hours_per_state():
    L = InstanceLedger()
    L.start(0.0, "a", "m", "r", State.REQUESTED)
    for t, s in [(10, State.PROVISIONING), (70, State.LOADING), (190, State.READY),
                 (3790, State.DRAINING), (3800, State.RELEASED)]:
        L.transition(float(t), "a", s)
    L.close(5000.0)
    sec = {s: v for (_, _, s), v in L.seconds.items()}
    assert sec[State.REQUESTED] == 10 and sec[State.PROVISIONING] == 60
    assert sec[State.LOADING] == 120 and sec[State.READY] == 3600 and sec[State.DRAINING] == 10
    assert sec.get(State.RELEASED, 0) == 0  # a released instance accrues nothing
    h = L.hours_table()
    assert h["hours"].sum() == pytest.approx(3800 / 3600)


def test_disallowed_edges_and_time_going_back():
    L = InstanceLedger()
    L.start(0.0, "a", "m", "r", State.READY)
    with pytest.raises(LifecycleError, match="ready -> released"):
        L.transition(1.0, "a", State.RELEASED)
    L.transition(5.0, "a", State.DRAINING)
    with pytest.raises(LifecycleError, match="before"):
        L.transition(4.0, "a", State.READY)
    assert State.READY not in ALLOWED[State.RELEASED] and not ALLOWED[State.RELEASED]


def test_model_relabel_on_move():
    L = InstanceLedger()
    L.start(0.0, "a", "m1", "r", State.READY)
    L.transition(10.0, "a", State.DRAINING)
    L.transition(20.0, "a", State.LOADING, model="m2")
    L.transition(30.0, "a", State.READY)
    L.close(40.0)
    assert L.seconds[("m1", "r", State.READY)] == 10 and L.seconds[("m2", "r", State.LOADING)] == 10
    assert L.seconds[("m2", "r", State.READY)] == 10
