import math

import pytest

from servesim.sim import PRIO_CONTROL, PRIO_INSTANCE, PRIO_SAMPLE, Kernel, SimulationError


def test_events_in_time_then_priority_then_insertion_order():
    k = Kernel()
    out = []
    k.at(1.0, out.append, "inst", PRIO_INSTANCE)
    k.at(1.0, out.append, "sample", PRIO_SAMPLE)
    k.at(1.0, out.append, "ctl", PRIO_CONTROL)
    k.at(0.5, out.append, "early", PRIO_SAMPLE)
    k.at(1.0, out.append, "ctl2", PRIO_CONTROL)
    k.add_stream([1.0], lambda i: out.append("arrival"))
    k.run()
    assert out == ["early", "arrival", "ctl", "ctl2", "inst", "sample"]
    assert k.now == 1.0


def test_stream_merges_with_heap_and_clock_never_goes_back():
    k = Kernel()
    seen = []
    k.add_stream([0.0, 0.2, 0.2, 3.0], lambda i: seen.append((k.now, f"a{i}")))
    for t in (0.1, 0.2, 2.0):
        k.at(t, lambda a: seen.append((k.now, a)), f"e{t}", PRIO_INSTANCE)
    k.run()
    times = [t for t, _ in seen]
    assert times == sorted(times)
    assert [x for _, x in seen] == ["a0", "e0.1", "a1", "a2", "e0.2", "e2.0", "a3"]


def test_cancel_and_until():
    k = Kernel()
    out = []
    h = k.at(1.0, out.append, 1)
    k.at(2.0, out.append, 2)
    k.at(5.0, out.append, 5)
    k.cancel(h)
    k.run(until=3.0)
    assert out == [2] and k.now == 3.0
    assert k.pending()
    k.run()
    assert out == [2, 5] and not k.pending()


def test_past_events_and_unsorted_streams_are_errors():
    k = Kernel(start=1.0)
    with pytest.raises(SimulationError, match="past"):
        k.at(0.5, print)
    with pytest.raises(SimulationError, match="not sorted"):
        k.add_stream([2.0, 1.5], print)
    with pytest.raises(SimulationError, match="negative"):
        k.after(-1.0, print)
    with pytest.raises(SimulationError):
        k.after(math.nan, print)
