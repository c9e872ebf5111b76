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
