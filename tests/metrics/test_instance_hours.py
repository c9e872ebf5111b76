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
    assert both == {"authors": (2 + 4) / 4, "sum_of_region_maxima": (2 + 4) / 4, "exact": 1.5}


# ---- the authors' rule (issue 30): the total over regions per tick, then each 15-min bin's maximum ----

def _authors_transcription(log: pd.DataFrame, bin_s: float = 900.0) -> float:
    """The rule of kjain1810/SageServe plotting_scripts/Figures9-10.py written out directly on a
    per-instance log (one row per live instance per tick): distinct instances per tick over all
    regions, each bin's maximum of that count, summed / 4."""
    per_tick = log.groupby("time")["instance"].nunique()
    return float(per_tick.groupby(per_tick.index // bin_s).max().sum() / (3600.0 / bin_s))


def _two_regions(tick_s: float = 2.0, span_s: float = 3600.0):
    """Hand-made: in the first 15-min bin region a peaks (8 instances) in 00:02-00:05 and region b
    (6) in 00:08-00:12, both at 2 otherwise; at 00:40-00:42 both add one instance (3 + 3 at once)."""
    rows = []
    for t in np.arange(0.0, span_s + tick_s / 2, tick_s):
        for r, (lo, hi, peak) in (("a", (120, 300, 6)), ("b", (480, 720, 4))):
            live = [f"{r}{i}" for i in range(2)]
            live += [f"{r}_peak{i}" for i in range(peak)] if lo <= t < hi else []
            live += [f"{r}_blip"] if 2400 <= t < 2520 else []
            rows += [{"time": t, "region": r, "instance": i} for i in live]
    return pd.DataFrame(rows)


def _as_fleet_series(log: pd.DataFrame, sample_s: float) -> pd.DataFrame:
    n = log[np.isclose(log["time"] % sample_s, 0) | np.isclose(log["time"] % sample_s, sample_s)]
    n = n.groupby(["time", "region"]).size().rename("n_ready").reset_index()
    return n.rename(columns={"time": "time_s"}).assign(model="m", n_pooled=1)[["time_s", "model", "region", "n_ready", "n_pooled"]]


def test_authors_rule_against_a_direct_transcription_when_regions_peak_apart():
    from servesim.metrics import authors_binned_max, billed_authors_hours, billed_instance_hours

    log = _two_regions()
    want = _authors_transcription(log)
    # bins: [0,900) max(8+2, 2+6), [900,1800) 2+2, [1800,2700) 3+3, [2700,3600) 2+2, [3600] 2+2 (the closing tick)
    assert want == (10 + 4 + 6 + 4 + 4) / 4
    ticks = log.groupby(["time", "region"]).size().rename("n").reset_index()
    assert authors_binned_max(ticks, "n", 900.0, time="time").sum() / 4 == want
    ts = _as_fleet_series(log, 10.0)
    assert billed_authors_hours(ts) == want                           # the 10-s samples: the same here
    # the per-region figure: the same rule on one region
    for r in ("a", "b"):
        assert billed_authors_hours(ts[ts["region"] == r]) == _authors_transcription(log[log["region"] == r])
    # the named readings: each region's maximum summed reads higher where they peak apart (bin 0:
    # 8 + 6 instead of 10) and the same where they peak together (the blip); for one region they agree
    srm = billed_instance_hours(None, ts, "sum_of_region_maxima")
    assert srm == (14 + 4 + 6 + 4 + 4) / 4 > want
    assert billed_instance_hours(None, ts[ts["region"] == "a"], "sum_of_region_maxima") == \
        billed_instance_hours(None, ts[ts["region"] == "a"], "authors")
    with pytest.raises(ValueError, match="ih_reading"):
        billed_instance_hours(None, ts, "binned_max")


def _lifecycle_of(log: pd.DataFrame) -> pd.DataFrame:
    """A transition log that reproduces a per-tick instance log: each instance ready from its first
    tick, pooled after its last (instances here are live over one contiguous stretch)."""
    rows = []
    for iid, g in log.groupby("instance"):
        r = g["region"].iloc[0]
        rows.append((g["time"].min(), iid, "m", r, "", "ready"))
        if g["time"].max() < log["time"].max():
            rows.append((g["time"].max() + 1.0, iid, "m", r, "ready", "draining"))  # ends between ticks
            rows.append((g["time"].max() + 1.5, iid, "m", r, "draining", "pooled"))
    return pd.DataFrame(rows, columns=["time_s", "instance", "model", "region", "from_state", "to_state"])


def test_authors_ticks_from_the_transition_log():
    from servesim.metrics import authors_ticks, billed_authors_hours, billed_events, count_at, instance_hours_readings

    log = _two_regions()
    life = _lifecycle_of(log)
    ev = billed_events(life)
    ts = _as_fleet_series(log, 10.0)
    tk = authors_ticks(ts, ev)
    assert tk["time_s"].iloc[0] == 0.0 and tk["time_s"].iloc[-1] == 3600.0 and np.allclose(np.diff(tk["time_s"]), 2.0)
    assert (tk["billed"].to_numpy() == log.groupby("time").size().to_numpy()).all()
    assert billed_authors_hours(ts, ev) == _authors_transcription(log)
    # per region: select the events as the timeseries
    assert count_at(ev[ev["region"] == "b"], [480.0, 719.0, 720.0]).tolist() == [6, 6, 2]  # draining is billed
    ledger = pd.DataFrame({"model": "m", "region": ["a", "b"], "state": "ready", "hours": [2.5, 2.4]})
    both = instance_hours_readings(ledger, ts, ev)
    assert both["authors"] < both["sum_of_region_maxima"] and both["exact"] == pytest.approx(4.9)
    # a log selected differently from the timeseries is refused
    with pytest.raises(ValueError, match="disagree"):
        authors_ticks(ts[ts["region"] == "a"], ev)


def test_authors_rule_at_10s_samples_equals_2s_ticks_when_the_count_rises_only_at_samples():
    """The rule on the fleet's 10-s samples equals it at the authors' 2-s ticks when the billed
    count rises only at sample times (a fall between two samples never raises a bin's maximum: the
    count at any tick is at most the one at the sample before it, in the same bin as 900 is a
    multiple of 10); a rise between samples that falls before the next sample is missed."""
    from servesim.metrics import billed_authors_hours, billed_events, count_at

    rng = np.random.default_rng(30)
    for _ in range(20):
        rows, n_live, k = [], {}, 0
        for t in np.arange(0.0, 7200.0, 10.0):           # scale-ups at sample times, scale-ins anywhere
            for _ in range(rng.integers(0, 3)):
                r = str(rng.choice(["a", "b", "c"]))
                rows.append((t, f"i{k}", "m", r, "", "ready"))
                n_live[f"i{k}"] = r
                k += 1
            for iid in list(n_live)[: rng.integers(0, 3)]:
                if rng.random() < 0.5:
                    te = t + float(rng.uniform(0.1, 9.9))
                    rows.append((te, iid, "m", n_live.pop(iid), "ready", "pooled"))
        life = pd.DataFrame(rows, columns=["time_s", "instance", "model", "region", "from_state", "to_state"])
        ev = billed_events(life)
        times = np.arange(0.0, 7200.0, 10.0)
        ts = pd.concat([pd.DataFrame({"time_s": times, "model": "m", "region": r,
                                      "n_ready": count_at(ev[ev["region"] == r], times)}) for r in "abc"])
        assert billed_authors_hours(ts) == billed_authors_hours(ts, ev)   # 10-s samples == 2-s ticks
    # a rise between samples that is gone by the next sample: only the ticks see it
    life = pd.DataFrame([(0.0, "i0", "m", "a", "", "ready"), (903.0, "i1", "m", "a", "", "ready"),
                         (907.0, "i1", "m", "a", "ready", "pooled")],
                        columns=["time_s", "instance", "model", "region", "from_state", "to_state"])
    ts = pd.DataFrame({"time_s": np.arange(0.0, 1800.0, 10.0), "model": "m", "region": "a", "n_ready": 1})
    assert billed_authors_hours(ts) == 2 * 0.25
    assert billed_authors_hours(ts, billed_events(life)) == (2 + 1) * 0.25


def test_billed_events_follow_a_relabelled_instance():
    from servesim.metrics import billed_events, count_at

    life = pd.DataFrame([(0.0, "i0", "m", "a", "", "ready"), (50.0, "i0", "k", "a", "ready", "converting"),
                         (60.0, "i0", "k", "a", "converting", "ready"), (90.0, "i0", "k", "a", "ready", "pooled")],
                        columns=["time_s", "instance", "model", "region", "from_state", "to_state"])
    ev = billed_events(life)
    assert count_at(ev[ev["model"] == "m"], [49.0, 50.0]).tolist() == [1, 0]
    assert count_at(ev[ev["model"] == "k"], [49.0, 50.0, 89.0, 90.0]).tolist() == [0, 1, 1, 0]
