"""Mean-value capacity: the fixed point satisfies Little's law and the bisection finds the binding limit."""

import pytest

from servesim.analysis.capacity import capacity, steady_state


def test_fixed_point_is_consistent():
    s = steady_state(2.0, 0.05, 100, 0.01, 0.001)
    rate = (1 - 2.0 * 0.05) / (0.01 + 0.001 * s.running)        # steps per second
    assert s.running == pytest.approx(2.0 * 100 / rate)           # Little: N = lam O / r
    assert s.gap_s == pytest.approx(1 / rate)


def test_overload_has_no_fixed_point():
    assert steady_state(25.0, 0.05, 100, 0.01, 0.001) is None    # prefill alone exceeds the time
    assert steady_state(9.0, 0.01, 1000, 0.01, 0.001) is None    # decode cannot keep up (k b >= 1)


def test_capacity_binds_on_tbt_or_batch():
    free = capacity(0.02, 300, 0.008, 1.4e-4, 0.1)
    assert free.gap_s == pytest.approx(0.1, rel=1e-6)
    capped = capacity(0.02, 300, 0.008, 1.4e-4, 0.1, max_batch=100)
    assert capped.running == pytest.approx(100, rel=1e-6) and capped.lam < free.lam
    # closed form of the TBT-bound case: gap = 0.1 means N = 0.1 lam O and (a + b N) = 0.1 (1 - lam P)
    lam = (0.1 - 0.008) / (0.1 * 0.02 + 1.4e-4 * 0.1 * 300)
    assert free.lam == pytest.approx(lam, rel=1e-6)
    with pytest.raises(ValueError):
        capacity(0.02, 300, 0.2, 0.0, 0.1)
