"""Held fleets, the nulls of SageServe's instance-hour claims (servesim.systems.sageserve.nulls)."""

import pandas as pd
import pytest

from servesim.metrics import billed_binned_max_hours
from servesim.systems.sageserve.nulls import held_fleet, savings_pct


def _timeline() -> pd.DataFrame:
    """Two endpoints sampled every 300 s over 1 h: A scales 2 -> 5 -> 3 (one instance loading at
    first), B holds 4 then 1."""
    t = [0, 300, 600, 900, 1200, 1500, 1800, 2100, 2400, 2700, 3000, 3300]
    a = [2, 2, 5, 5, 5, 3, 3, 3, 3, 3, 3, 3]
    b = [4, 4, 4, 4, 4, 4, 1, 1, 1, 1, 1, 1]
    rows = [{"time_s": float(ti), "model": "m", "region": "r1", "n_ready": ai - (ti == 0), "n_loading": int(ti == 0)}
            for ti, ai in zip(t, a)]
    rows += [{"time_s": float(ti), "model": "m", "region": "r2", "n_ready": bi, "n_loading": 0} for ti, bi in zip(t, b)]
    return pd.DataFrame(rows)


def test_levels_hold_each_endpoint():
    ts = _timeline()
    peak = held_fleet(ts, "peak")
    assert peak.groupby("region")["n_ready"].unique().map(list).to_dict() == {"r1": [5], "r2": [4]}
    start = held_fleet(ts, "start")  # billed at the first sample: ready + loading
    assert start.groupby("region")["n_ready"].unique().map(list).to_dict() == {"r1": [2], "r2": [4]}
    low = held_fleet(ts, 2)
    assert set(low["n_ready"]) == {2} and len(low) == len(ts)
    assert list(low.columns) == ["time_s", "model", "region", "n_ready"]


def test_held_fleet_goes_through_the_runs_metric():
    ts = _timeline()
    # 4 bins of 15 min; held at the peak every bin's maximum is the peak: (5 + 4) x 1 h
    assert billed_binned_max_hours(held_fleet(ts, "peak"), max_sample_s=None) == pytest.approx(9.0)
    assert billed_binned_max_hours(held_fleet(ts, 2), max_sample_s=None) == pytest.approx(4.0)
    # the run itself is at most its peak fleet
    assert billed_binned_max_hours(ts, max_sample_s=None) <= 9.0
    assert savings_pct(9.0, 6.0) == pytest.approx(-50.0)


def test_pools_of_one_model_are_summed_first():
    ts = _timeline().assign(model="m")
    pools = pd.concat([ts, ts.assign(n_ready=1, n_loading=0)])  # a second pool of the same model
    assert set(held_fleet(pools, "peak").query("region == 'r2'")["n_ready"]) == {5}


def test_bad_level():
    with pytest.raises(ValueError):
        held_fleet(_timeline(), "mean")
    with pytest.raises(ValueError):
        held_fleet(_timeline(), -1)


def test_peak_leaves_out_the_starting_pool():
    """Reactive starts at the pool's 20 instances and sheds them in minutes: the static fleet is
    sized for the load's peak after the first 15-min bin, not for the start."""
    t = [float(x) for x in range(0, 3600, 10)]
    n = [max(20 - k, 2) if x < 900 else (6 if 1800 <= x < 2400 else 3) for k, x in enumerate(t)]
    ts = pd.DataFrame({"time_s": t, "model": "m", "region": "r", "n_ready": n})
    assert set(held_fleet(ts, "peak")["n_ready"]) == {6}
    assert set(held_fleet(ts, "peak", settle_s=0.0)["n_ready"]) == {20}
    assert set(held_fleet(ts, "start")["n_ready"]) == {20}
    short = ts[ts["time_s"] < 600]  # shorter than the settle period: its own maximum
    assert set(held_fleet(short, "peak")["n_ready"]) == {20}
    with pytest.raises(ValueError):
        held_fleet(ts, "peak", settle_s=-1.0)
