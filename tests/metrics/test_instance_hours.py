import numpy as np
import pandas as pd
import pytest

from servesim.metrics import (BILLED_STATES, billed_count, billed_hours, binned_max, binned_max_by, binned_max_hours,
                              instance_hours, step_integral_hours)

# a hand-made step function: 2 instances from 0, 5 from 10 min, 1 from 20 min, until 30 min
T, N, END = [0.0, 600.0, 1200.0], [2, 5, 1], 1800.0


def test_exact_integral_by_hand():
    assert step_integral_hours(T, N, END) == pytest.approx((2 * 600 + 5 * 600 + 1 * 600) / 3600)  # 4/3 h


def test_binned_maxima_by_hand():
    # 15-min bins: [0, 900) sees 2 and 5; [900, 1800) starts at 5 (carried in) and drops to 1
    b = binned_max(T, N, 900.0)
    assert b.to_dict() == {0: 5, 1: 5} and b.dtype == np.int64
    assert binned_max_hours(T, N, 900.0) == 2.5                       # (5 + 5) x 0.25 h
    assert binned_max_hours(T, N, 600.0) == pytest.approx((2 + 5 + 1) / 6)  # bins = steps: the exact area
    # a bin without a sample holds the value carried in
    assert binned_max([0.0, 2000.0], [3, 1], 900.0).to_dict() == {0: 3, 1: 3, 2: 3}
    # a closing sample at the end adds no bin when end_s is given
    assert binned_max([0.0, 900.0], [4, 4], 900.0, end_s=900.0).to_dict() == {0: 4}


def test_binned_is_never_below_exact():
    rng = np.random.default_rng(0)
    t = np.sort(rng.choice(np.arange(0, 7200, 30.0), 40, replace=False))
    n = rng.integers(0, 9, 40)
    ex = step_integral_hours(t, n, float(np.ceil((t[-1] + 1) / 900) * 900))
    assert binned_max_hours(t, n, 900.0) >= ex - 1e-12


def test_bad_input_is_named():
    with pytest.raises(ValueError, match="bin_s"):
        binned_max(T, N, 0.0)
    with pytest.raises(ValueError, match="repeat"):
        binned_max([0.0, 0.0], [1, 2])
    with pytest.raises(ValueError, match="end_s"):
        step_integral_hours(T, N, 100.0)


def test_billed_states_and_ledger_table():
    assert BILLED_STATES == ("requested", "provisioning", "loading", "converting", "ready", "draining")
    h = pd.DataFrame({"model": ["m", "m", "m", "k"], "region": ["a", "a", "a", "b"],
                      "state": ["ready", "pooled", "draining", "loading"], "hours": [2.0, 5.0, 0.5, 0.25]})
    assert billed_hours(h) == 2.75
    ts = pd.DataFrame({"time_s": [0.0, 600.0, 1200.0, 0.0], "model": ["m", "m", "m", "k"],
                       "region": ["a", "a", "a", "b"], "n_ready": [2, 4, 1, 1], "n_loading": [0, 1, 0, 0],
                       "n_pooled": [9, 9, 9, 9]})
    assert billed_count(ts).tolist() == [2, 5, 1, 1]                 # pooled is not billed
    assert binned_max_by(ts, "n_ready", ["model", "region"], 900.0).to_dict() == {0: 5, 1: 4}
    ih = instance_hours(h, ts, 900.0)
    assert ih["billed"] == 2.75 and ih["by_state"]["pooled"] == 5.0
    assert ih["by_endpoint"] == {"k@b": 0.25, "m@a": 2.5}
    assert ih["binned_max"] == {"bin_s": 900.0, "billed": 2.75}       # m@a 5 + 5, k@b 1: 11 x 0.25 h


def test_fleet_lifecycle_bills_the_same_states():
    from servesim.fleet.lifecycle import BILLED

    assert sorted(s.value for s in BILLED) == sorted(BILLED_STATES)
