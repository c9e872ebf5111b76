"""The authors' in-sample one-step ARIMA error and the synthetic week's fitted per-minute noise."""

import json

import numpy as np
import pytest

from servesim.forecast import onestep_error as oe
from servesim.forecast.series import per_minute_demand
from servesim.workload.gen_sageserve import MINUTE_NOISE_READINGS, minute_noise_sigmas, sageserve_week


def test_error_is_mean_abs_residual_over_mean_actual(monkeypatch):
    monkeypatch.setattr(oe, "insample_one_step", lambda y, order: np.array([1.0, 1.0, 2.0, 3.0]))
    # |e| = 0, 1, 1, 1 -> mean 0.75; mean(y) = 2.5 -> 30 %
    assert oe.onestep_error_pct([1.0, 2.0, 3.0, 4.0]) == pytest.approx(30.0)


def test_error_needs_a_positive_mean():
    with pytest.raises(ValueError, match="positive mean"):
        oe.onestep_error_pct(np.zeros(20))


def test_authors_mean_is_the_fitted_target():
    assert np.mean(oe.AUTHORS_WEEK_ERROR_PCT) == pytest.approx(19.958, abs=1e-3)


def test_minute_noise_readings():
    assert minute_noise_sigmas() == MINUTE_NOISE_READINGS["arima_fit"]
    assert minute_noise_sigmas("smooth_v1") == {"IW-F": 0.15, "IW-N": 0.2, "NIW": 1.2}
    with pytest.raises(ValueError, match="not one of"):
        minute_noise_sigmas("rough")
    with pytest.raises(ValueError, match="missing"):
        minute_noise_sigmas({"IW-F": 0.1, "IW-N": 0.1})


def test_reading_changes_the_week_and_is_recorded():
    a = sageserve_week(scale=0.01, seed=1, days=1)
    b = sageserve_week(scale=0.01, seed=1, days=1, minute_noise="smooth_v1")
    assert a.attrs["minute_noise"] == "arima_fit" and b.attrs["minute_noise"] == "smooth_v1"
    assert len(a) != len(b) or not np.array_equal(a["arrival_s"].to_numpy(), b["arrival_s"].to_numpy())
    again = sageserve_week(scale=0.01, seed=1, days=1)
    assert np.array_equal(a["arrival_s"].to_numpy(), again["arrival_s"].to_numpy())


def test_error_grows_with_the_minute_noise():
    def err(sig):
        wl = sageserve_week(scale=0.3, seed=0, days=1, minute_noise={"IW-F": sig, "IW-N": sig, "NIW": 1.2})
        return oe.onestep_error_pct(per_minute_demand(wl, "llama-2-70b", "eastus", t_end=86_400.0))

    assert err(0.6) > err(0.0) + 5.0


def test_cli_at_test_scale(tmp_path):
    out = tmp_path / "o"
    assert oe.main(["--scale", "0.05", "--days", "1", "-o", str(out)]) == 0
    s = json.loads((out / "summary.json").read_text())
    assert s["n_series"] == 12 and s["minute_noise"] == "arima_fit"
    assert s["error_pct_min"] <= s["error_pct_mean"] <= s["error_pct_max"]
    assert (out / "onestep_error.csv").read_text().startswith("model,region,error_pct")
    assert oe.main(["--minute-noise", "rough", "-o", str(tmp_path / "bad")]) == 2
