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


def _fleet_series(counts, sample_s=10.0, model="m", region="r"):
    """A hand-made fleet timeseries: ``counts[i]`` billed instances (ready + provisioning) at i x sample_s."""
    n = np.asarray(counts)
    return pd.DataFrame({"time_s": np.arange(len(n)) * sample_s, "model": model, "region": region,
                         "n_ready": n - (n > 1), "n_provisioning": (n > 1).astype(int), "n_pooled": 7})


def test_paper_instance_hours_on_a_hand_made_series():
    from servesim.metrics import billed_binned_max_hours

    # one hour at 10-s samples: 2 instances, a 30-s spike to 5 in the second quarter, 3 in the last quarter
    c = [2] * 360
    c[100:103] = [5, 5, 5]
    c[270:] = [3] * 90
    ts = _fleet_series(c)
    # bins: max 2, 5, 2, 3 (pooled not billed) -> (2 + 5 + 2 + 3) / 4
    assert billed_binned_max_hours(ts) == 12 / 4
    # the exact integral of the same series is far lower: the spike lasts 30 s
    exact = sum(c) * 10 / 3600
    assert exact < 12 / 4
    # two endpoints: each endpoint's bin maximum, summed
    ts2 = pd.concat([ts, _fleet_series([1] * 360, region="q")])
    assert billed_binned_max_hours(ts2) == 12 / 4 + 1.0
    # grouping by model only sums the regions per sample first (Chiron's pools, the figure's model)
    assert billed_binned_max_hours(ts2, by="model") == (3 + 6 + 3 + 4) / 4


def test_paper_instance_hours_refuses_sparse_samples():
    from servesim.metrics import billed_binned_max_hours, instance_hours_readings

    ts = _fleet_series([2, 5, 2, 3], sample_s=60.0)
    with pytest.raises(ValueError, match="apart"):
        billed_binned_max_hours(ts)
    assert billed_binned_max_hours(ts, max_sample_s=None) == 5 / 4
    ledger = pd.DataFrame({"model": "m", "region": "r", "state": ["ready", "pooled"], "hours": [1.5, 9.0]})
    both = instance_hours_readings(ledger, _fleet_series([2] * 90 + [4] * 10))
    assert both == {"exact": 1.5, "binned_max": (2 + 4) / 4}
