import json

import numpy as np
import pandas as pd
import pytest

from servesim.systems.sageserve.sensitivity import (READINGS, collect, headroom_at_saving, run_one,
                                                    savings_table)


# the test scale's window: one hour of Llama-2 in East US at 1/10 volume (workflow/runs/sageserve.yaml `tiny`)
TINY = {"scale": 0.1, "days": 2, "models": ["llama-2-70b"], "regions": ["eastus"], "from_h": 36.0, "to_h": 37.0}


def test_readings_configs():
    # the code starts Reactive at 20 and LT runs at 8 (spec 1.7); theta is its constant
    code = READINGS["code"]
    assert code.config("reactive").start_instances == 20
    assert code.config("lt_ua").start_instances == 8
    assert code.fixed_theta and code.config("lt_ua").reactive_scale_out == 0.5
    assert not READINGS["code_measured"].fixed_theta
    p = READINGS["paper"].config("lt_i", 0.7)
    assert p.theta_headroom == 0.7 and p.start_instances == 20 and p.forecast_mode == "rolling"
    assert READINGS["paper_start8"].config("reactive").start_instances == 20
    assert READINGS["paper_start8"].config("lt_u").start_instances == 8
    assert READINGS["paper_5030"].config("reactive").reactive_scale_out == 0.5
    assert READINGS["paper_nodelay"].config("lt_i").delays_in_sim is False


def _runs():
    rows = [("paper", "reactive", np.nan, np.nan, 100.0, 10.0)]
    for h, ih, tt in ((0.5, 105.0, 5.0), (0.6, 90.0, 6.0), (0.7, 78.0, 8.0), (0.8, 70.0, 20.0)):
        rows.append(("paper", "lt_ua", h, h, ih, tt))
    rows += [("code", "reactive", np.nan, np.nan, 50.0, 4.0), ("code", "lt_ua", np.nan, 0.9, 40.0, 5.0)]
    return pd.DataFrame(rows, columns=["reading", "strategy", "headroom", "theta_equiv_headroom",
                                       "instance_hours", "ttft_p95"])


def test_savings_table_and_headroom_at_saving():
    sav = savings_table(_runs())
    p = sav[sav["reading"] == "paper"]
    np.testing.assert_allclose(p["savings_pct"], [-5.0, 10.0, 22.0, 30.0])
    np.testing.assert_allclose(p["ttft_p95_ratio"], [0.5, 0.6, 0.8, 2.0])
    # 18 % lies between 0.6 (10 %) and 0.7 (22 %): linear interpolation
    assert headroom_at_saving(p, 18.0) == pytest.approx(0.6 + 8 / 12 * 0.1)
    assert np.isnan(headroom_at_saving(p, 40.0))
    c = sav[sav["reading"] == "code"]
    assert c["x_headroom"].iloc[0] == 0.9 and c["savings_pct"].iloc[0] == pytest.approx(20.0)


def test_savings_table_needs_reactive():
    r = _runs()
    with pytest.raises(KeyError, match="code"):
        savings_table(r[~((r["reading"] == "code") & (r["strategy"] == "reactive"))])


def test_run_one_and_collect(tmp_path):
    s = run_one("paper", "lt_ua", TINY, tmp_path / "lt", headroom=0.7)
    assert s["headroom"] == 0.7 and s["instance_hours"]["billed"] > 0
    sat = s["saturation_tokens_per_min"]["llama-2-70b"]
    assert s["theta_tokens_per_min"]["llama-2-70b"] == pytest.approx(0.7 * sat)
    hourly = pd.read_csv(tmp_path / "lt" / "hourly.csv")
    assert {"instances", "ilp_target", "rho", "ttft_p95"} <= set(hourly.columns)
    assert hourly["ilp_target"].notna().any()
    run_one("paper", "reactive", TINY, tmp_path / "rx")
    runs, hr = collect([tmp_path / "lt" / "summary.json", tmp_path / "rx" / "summary.json"])
    assert list(runs["strategy"]) == ["lt_ua", "reactive"] and set(hr["strategy"]) == {"lt_ua", "reactive"}
    # the authors' instance-hours from the transition log, the other readings beside it (one region:
    # the summed region maxima read the same bins, at 10-s samples instead of 2-s ticks)
    assert (tmp_path / "lt" / "lifecycle.parquet").exists()
    assert (runs["instance_hours"] > 0).all() and (runs["instance_hours_exact"] <= runs["instance_hours"] + 1e-9).all()
    assert (runs["instance_hours"] >= runs["instance_hours_sum_of_region_maxima"] - 1e-9).all()
    assert {"savings_pct", "savings_pct_sum_of_region_maxima", "savings_pct_exact"} <= set(savings_table(runs).columns)
    assert json.loads((tmp_path / "rx" / "summary.json").read_text())["headroom"] is None


def test_bad_inputs(tmp_path):
    with pytest.raises(ValueError, match="reading"):
        run_one("nope", "lt_ua", TINY, tmp_path)
    with pytest.raises(ValueError, match="headroom"):
        run_one("paper", "lt_ua", TINY, tmp_path, headroom=0.0)
    with pytest.raises(FileNotFoundError, match="missing.json"):
        collect([tmp_path / "missing.json"])


def test_reactive_period_reaches_the_scenario():
    from servesim.systems.sageserve.config import ConfigError, SageServeConfig
    from servesim.systems.sageserve.strategies import scenario_dict
    from servesim.workload import sageserve_week

    wk = sageserve_week(scale=0.002, seed=1, days=1)
    wl = wk[wk["model"] == "llama-2-70b"]
    sc = scenario_dict("reactive", wl, SageServeConfig(reactive_interval_s=1.0), 60.0)
    assert sc["autoscaler"]["period_s"] == 1.0
    assert scenario_dict("reactive", wl, SageServeConfig(), 60.0)["autoscaler"]["period_s"] == 5.0
    with pytest.raises(ConfigError, match="reactive_interval_s"):
        SageServeConfig(reactive_interval_s=0.0)
