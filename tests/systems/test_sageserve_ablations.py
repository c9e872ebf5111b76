"""SageServe ablation options: IW:NIW re-split and fifth model in the generator, per-GPU instance
models, the reactive scaling interval, LT-UA's observed-demand reading, and the runs CLI flags."""

import json

import numpy as np
import pytest

from servesim.systems.sageserve.config import ConfigError, SageServeConfig
from servesim.systems.sageserve.strategies import run_strategy, scenario_dict
from servesim.workload import sageserve_week
from servesim.workload.gen_sageserve import tier_shares_for_ratio


@pytest.mark.parametrize("ratio", [9.0, 1.0])
def test_iw_niw_ratio_resplits_tiers_total_held(ratio):
    base = sageserve_week(scale=0.05, seed=1, days=2)
    wk = sageserve_week(scale=0.05, seed=1, days=2, iw_niw_ratio=ratio)
    niw = (wk.tier == "NIW").sum()
    assert (len(wk) - niw) / niw == pytest.approx(ratio, rel=0.05)
    assert len(wk) == pytest.approx(len(base), rel=0.02)
    iwf, iwn = (wk.tier == "IW-F").sum(), (wk.tier == "IW-N").sum()
    assert iwf / iwn == pytest.approx(2.0, rel=0.05)
    assert wk.attrs["iw_niw_ratio"] == ratio


def test_tier_shares_for_default_ratio_and_bad_ratio():
    assert tier_shares_for_ratio(3.0) == pytest.approx({"IW-F": 0.5, "IW-N": 0.25, "NIW": 0.25})
    with pytest.raises(ValueError, match="iw_niw_ratio"):
        sageserve_week(scale=0.01, days=1, iw_niw_ratio=0)


def test_fifth_model_adds_a_copy_of_model_a_and_leaves_the_others():
    base = sageserve_week(scale=0.05, seed=2, days=2)
    wk = sageserve_week(scale=0.05, seed=2, days=2, fifth_model="llama-4-scout")
    scout = wk[wk.model == "llama-4-scout"]
    a = base[base.model == "llama-2-70b"]
    assert len(scout) == pytest.approx(len(a), rel=0.05)
    assert scout.prompt_tokens.median() == pytest.approx(a.prompt_tokens.median(), rel=0.1)
    rest = wk[wk.model != "llama-4-scout"]
    for col in ("arrival_s", "prompt_tokens", "output_tokens"):
        np.testing.assert_array_equal(rest[col].to_numpy(), base[col].to_numpy())
    assert (rest.tier.astype(str).to_numpy() == base.tier.astype(str).to_numpy()).all()
    assert wk.arrival_s.is_monotonic_increasing and (wk.request_id.to_numpy() == np.arange(len(wk))).all()
    with pytest.raises(ValueError, match="already"):
        sageserve_week(scale=0.01, days=1, fifth_model="llama-2-70b")
    with pytest.raises(ValueError, match="bursts"):
        sageserve_week(scale=0.01, days=2, fifth_model="llama-4-scout", bursts=True)


def test_config_new_fields_validate():
    with pytest.raises(ConfigError, match="hardware"):
        SageServeConfig(hardware="tpu")
    with pytest.raises(ConfigError, match="reactive_interval_s"):
        SageServeConfig(reactive_interval_s=-1)
    with pytest.raises(ConfigError, match="lt_ua_observed"):
        SageServeConfig(lt_ua_observed="psychic")
    assert SageServeConfig.code().lt_ua_observed == "endpoint"
    assert SageServeConfig.paper().lt_ua_observed == "offered"


@pytest.fixture(scope="module")
def small_workload():
    wk = sageserve_week(scale=0.02, seed=3, days=1)
    wl = wk[(wk.model == "llama-2-70b") & (wk.region == "eastus") & (wk.arrival_s < 14 * 3600)]
    return wl.reset_index(drop=True)


def test_scaling_interval_is_the_reactive_period(small_workload):
    sc = scenario_dict("reactive", small_workload, SageServeConfig(reactive_interval_s=240.0), 3600.0)
    assert sc["autoscaler"]["period_s"] == 240.0


def test_instance_models_per_gpu(mirror):
    from servesim.perf import build
    from servesim.systems.sageserve.instance_models import (instance_model, instance_model_source,
                                                            kv_capacity_tokens)

    def step(model, hw, *shape):
        spec = instance_model(model, hw)
        return build(spec["step_time"], model=model, hardware=spec.get("hardware", hw), tp=8).step_time(*shape)

    for shape in ((4096, 4096 ** 2, 0, 0), (0, 0, 64, 64 * 2000)):
        assert step("llama-2-70b", "a100-80gb", *shape) > step("llama-2-70b", "h100-80gb", *shape) > 0
    # the MoE model reads ~1/4 of Llama-2's weights per decode step and computes ~1/4 the FLOPs
    assert step("llama-4-scout", "default", 8192, 8192 ** 2, 0, 0) < step("llama-2-70b", "h100-80gb", 8192, 8192 ** 2, 0, 0)
    assert instance_model("llama-4-scout")["hardware"] == "h100-80gb"
    assert 470_000 < kv_capacity_tokens("llama-4-scout") < 480_000
    assert instance_model("llama-2-70b") is instance_model("llama-2-70b", "default")
    # Llama-3.x have only the authors' A100 profiles: kept on H100, and said so
    assert instance_model("llama-3.1-8b", "h100-80gb") is instance_model("llama-3.1-8b")
    assert "no h100-80gb profile" in instance_model_source("llama-3.1-8b", "h100-80gb")
    assert "Splitwise" in instance_model_source("llama-2-70b", "a100-80gb")
    with pytest.raises(ValueError, match="no step-time model"):
        instance_model("qwen-7b")


def test_lt_ua_endpoint_reading_triggers_below_threshold(small_workload):
    acts = {}
    for thr in (0.01, 1e9):
        cfg = SageServeConfig.code(lt_ua_up_ratio=thr, start_instances=3)
        _, actor = run_strategy("lt_ua", small_workload, t0_s=13 * 3600, config=cfg, seed=0, max_instances=6)
        acts[thr] = sum(r["kind"] == "lt_ua" for r in actor.log)
    assert acts[0.01] > 0 and acts[1e9] == 0


# the test scale's window without its hours (each test gives its own --window-h)
TINY_WINDOW = ["--preset", "tiny", "--volume-scale", "0.1", "--days", "2", "--models", "llama-2-70b", "--regions", "eastus"]


def test_runs_cli_records_new_options(tmp_path, mirror):
    from servesim.systems.sageserve.runs import main

    out = tmp_path / "run"
    main(["--strategy", "reactive", *TINY_WINDOW, "--hardware", "h100-80gb", "--iw-niw-ratio", "9",
          "--scaling-interval", "60", "--window-h", "36", "36.5", "--volume-scale", "0.05", "-o", str(out)])
    s = json.loads((out / "summary.json").read_text())
    assert s["hardware"] == "h100-80gb" and s["iw_niw_ratio"] == 9.0 and s["reactive_interval_s"] == 60.0
    assert s["preset_from_h"] == 36.0 and s["preset_to_h"] == 36.5 and s["preset_scale"] == 0.05
    assert s["gpu_hours"] == pytest.approx(8 * s["instance_hours"]["billed"])
    assert "Splitwise" in s["instance_models"]["llama-2-70b"]


def test_runs_cli_keeps_a_failed_runs_partial_results(tmp_path, monkeypatch):
    """A strategy whose hourly decision raises (here: the ILP) stops the job with that error,
    and what was simulated until then is in ``<out>/partial`` (the workflow keeps it)."""
    from servesim.systems.sageserve import actors
    from servesim.systems.sageserve.runs import main

    calls = {"n": 0}
    real = actors.LongTermScaler._plan

    def second_hour_fails(self, view):
        calls["n"] += 1
        if calls["n"] > 1:
            raise RuntimeError("solver crashed")
        return real(self, view)

    monkeypatch.setattr(actors.LongTermScaler, "_plan", second_hour_fails)
    out = tmp_path / "run"
    with pytest.raises(RuntimeError, match="solver crashed"):
        main(["--strategy", "lt_i", *TINY_WINDOW, "--window-h", "36", "38", "--volume-scale", "0.02",
              "-o", str(out)])
    s = json.loads((out / "partial" / "summary.json").read_text())
    assert s["partial"] and s["stopped_by"] == "RuntimeError: solver crashed"
    assert 0 < s["end_s"] < 2 * 3600
    assert not (out / "summary.json").exists()
