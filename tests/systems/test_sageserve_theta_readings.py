"""SageServe's theta readings: the paper's (measured saturation, no headroom) by default, the
authors' absolute constant as the code reading, a headroom only as a sensitivity option."""

import pandas as pd
import pytest

from servesim.systems.sageserve import theta as theta_mod
from servesim.systems.sageserve.config import ConfigError, SageServeConfig
from servesim.systems.sageserve.strategies import THETA_TOKENS_PER_MIN


def test_default_is_the_papers_theta():
    c = SageServeConfig()
    assert c.theta_source == "measured" and c.theta_headroom == 1.0
    assert c.theta_reading().startswith("paper")
    assert SageServeConfig.paper() == c


def test_code_preset_uses_the_authors_absolute_theta():
    c = SageServeConfig.code()
    assert c.theta_source == "code" and c.theta_reading().startswith("code")
    assert THETA_TOKENS_PER_MIN["llama-2-70b"] == pytest.approx(30 * 7516.67, rel=1e-6)
    th = theta_mod.theta_for(c, ["llama-2-70b"], pd.DataFrame())
    assert th == {"llama-2-70b": THETA_TOKENS_PER_MIN["llama-2-70b"]}
    with pytest.raises(ValueError, match="no theta"):
        theta_mod.theta_for(c, ["llama-3.2-3b"], pd.DataFrame())


@pytest.mark.parametrize("headroom", [1.0, 0.5, 0.9])
def test_measured_theta_is_headroom_times_saturation(monkeypatch, headroom):
    calls = []

    def fake(model, requests, seed=0, engine_policy="orca", hardware="default"):
        calls.append((model, engine_policy))
        return {"a": 1000.0, "b": 250.0}[model]

    monkeypatch.setattr(theta_mod, "measure_theta", fake)
    c = SageServeConfig(theta_headroom=headroom)
    th = theta_mod.theta_for(c, ["a", "b"], pd.DataFrame())
    assert th == {"a": pytest.approx(1000.0 * headroom), "b": pytest.approx(250.0 * headroom)}
    assert calls == [("a", "orca"), ("b", "orca")]  # the run's engine, once per model
    assert c.theta_reading().startswith("paper" if headroom == 1.0 else "sensitivity")


@pytest.mark.parametrize("bad", [0.0, -0.5, 2.5])
def test_headroom_out_of_range_is_an_error(bad):
    with pytest.raises(ConfigError, match="theta_headroom"):
        SageServeConfig(theta_headroom=bad)


def test_runs_sample_often_enough_for_the_papers_instance_hours():
    from servesim.metrics import MAX_SAMPLE_S
    from servesim.systems.sageserve.strategies import scenario_dict

    wl = pd.DataFrame({"model": ["llama-2-70b"], "region": ["eastus"]})
    sc = scenario_dict("reactive", wl, SageServeConfig(), duration_s=3600.0)
    assert sc["output"]["sample_s"] <= MAX_SAMPLE_S


@pytest.fixture(scope="module")
def window():
    """Llama-2-70B's requests in a tenth-volume hour of the synthetic O365 peak day."""
    from servesim.systems.sageserve.runs import window_workload

    sel, _ = window_workload({"scale": 0.1, "days": 2, "models": ["llama-2-70b"], "regions": ["eastus"],
                              "from_h": 36.0, "to_h": 37.0}, 0)
    return sel


def test_sla_theta_is_the_load_one_instance_keeps_within_the_bound(window):
    """The reading sla: more load meets a looser bound, none beats saturation, and the rate found
    meets the bound where a slightly higher one does not (the bisection's bracket)."""
    sat = theta_mod.measure_theta("llama-2-70b", window, n=400)
    t10 = theta_mod.measure_theta_sla("llama-2-70b", window, ttft_s=10.0, n=400, steps=8)
    t60 = theta_mod.measure_theta_sla("llama-2-70b", window, ttft_s=60.0, n=400, steps=8)
    assert 0 < t10 <= t60 <= sat * (1 + 1e-9)
    assert t10 < 0.9 * sat  # a 10-s P95 TTFT bound costs throughput; a minute costs little
    assert t10 == theta_mod.measure_theta_sla("llama-2-70b", window, ttft_s=10.0, n=400, steps=8)  # deterministic


def test_an_sla_no_load_meets_is_named(window):
    with pytest.raises(ValueError, match=r"no load of llama-2-70b keeps P95 TTFT <= 0.01 s.*alone take"):
        theta_mod.measure_theta_sla("llama-2-70b", window, ttft_s=0.01, n=200, steps=4)


def test_sla_reading_through_theta_for(monkeypatch):
    seen = []

    def fake(model, requests, ttft_s, quantile, seed, engine_policy, hardware):
        seen.append((model, ttft_s, quantile))
        return 500.0

    monkeypatch.setattr(theta_mod, "measure_theta_sla", fake)
    c = SageServeConfig(theta_source="sla")
    assert theta_mod.theta_for(c, ["a"], pd.DataFrame()) == {"a": 500.0}
    assert seen == [("a", 60.0, 0.95)] and c.theta_reading().startswith("sla")
    with pytest.raises(ConfigError, match="theta_sla_quantile"):
        SageServeConfig(theta_source="sla", theta_sla_quantile=1.0)
