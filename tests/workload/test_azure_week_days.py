"""The synthetic Azure week's weekday level across midnight (issue 31 item 3): the default
``interpolated`` reading has no cliff at any 00:00, the ``step`` reading (the old rule) keeps its
one-minute jump, calendar-day totals stay near their weekday weights, and the draw is seeded."""

import numpy as np
import pandas as pd
import pytest

from servesim.workload import WorkloadError, azure_week
from servesim.workload.gen_azure_week import (DAY_WEIGHTS, PEAK_HOUR, RAMP_HALF_H, START, TARGETS, _profile, _ratios,
                                              day_level, solve_shape)
from servesim.workload.gen_sageserve import diurnal

#: the largest minute-to-minute change of the noise-free rate the default may have anywhere
#: (the diurnal curve's own flank changes it by up to ~0.6 %/min; the step reading's Monday
#: 00:00 is a 4.5x jump)
MAX_MINUTE_CHANGE = 0.01
#: a calendar day's total may move this far from its weekday weight x one diurnal day
DAY_TOTAL_TOL = 0.05


def _shape(kind):
    if kind == "code":
        return solve_shape("code", TARGETS["code_peak_over_avg"], TARGETS["code_peak_over_min"])
    return solve_shape("conv", 2.0)  # any chat shape: the ramp does not depend on it


@pytest.mark.parametrize("kind", ["code", "conv"])
def test_default_has_no_cliff_at_any_midnight(kind):
    sh = _shape(kind)
    p = _profile(kind, sh["floor"], sh["width_h"])
    change = np.abs(np.diff(p)) / p[:-1]
    assert change.max() < MAX_MINUTE_CHANGE
    mid = np.arange(1, 7) * 1440
    assert np.all(np.abs(p[mid] / p[mid - 1] - 1) < MAX_MINUTE_CHANGE)


def test_step_reading_keeps_the_monday_jump():
    sh = _shape("code")
    p = _profile("code", sh["floor"], sh["width_h"], day_weights="step")
    monday = 3 * 1440  # code starts on a Friday
    assert p[monday] / p[monday - 1] == pytest.approx(DAY_WEIGHTS["code"][0] / DAY_WEIGHTS["code"][6], rel=0.05)
    assert p[monday] / p[monday - 1] > 4


@pytest.mark.parametrize("kind", ["code", "conv"])
def test_day_totals_follow_the_weekday_weights(kind):
    sh = _shape(kind)
    one_day = diurnal(np.arange(1440) / 60.0, sh["floor"], PEAK_HOUR, sh["width_h"]).sum()
    w = np.asarray(DAY_WEIGHTS[kind])[(START[kind][1] + np.arange(7)) % 7]
    for reading, tol in (("interpolated", DAY_TOTAL_TOL), ("step", 1e-12)):
        days = _profile(kind, sh["floor"], sh["width_h"], day_weights=reading).reshape(7, 1440).sum(1)
        assert np.all(np.abs(days / (w * one_day) - 1) <= tol), reading


def test_ramp_shape_and_calibrated_ratios_unchanged():
    m = np.arange(7 * 1440)
    lv = day_level("code", m)
    w = np.asarray(DAY_WEIGHTS["code"])
    # outside +-RAMP_HALF_H of a midnight the level is the day's own weight; at 00:00 the mean of two days
    noon = np.arange(7) * 1440 + 720
    assert np.allclose(lv[noon], w[(4 + np.arange(7)) % 7])
    h = int(RAMP_HALF_H * 60)
    assert lv[3 * 1440] == pytest.approx(0.5 * (w[6] + w[0]))
    assert lv[3 * 1440 - h] == pytest.approx(w[6]) and lv[3 * 1440 + h] == pytest.approx(w[0])
    # the week's total, peak and minimum are the step reading's: the 30-min ratios are met by both
    sh = _shape("code")
    a, b = (_profile("code", sh["floor"], sh["width_h"], day_weights=r) for r in ("interpolated", "step"))
    assert a.sum() == pytest.approx(b.sum())
    assert _ratios(a) == pytest.approx((TARGETS["code_peak_over_avg"], TARGETS["code_peak_over_min"]), rel=1e-3)


def _pool():
    rng = np.random.default_rng(0)
    return pd.DataFrame({"prompt_tokens": rng.integers(100, 4000, 500), "output_tokens": rng.integers(1, 60, 500)})


def test_generated_arrivals_same_seed_same_output_and_no_jump():
    kw = dict(days=4, lengths=_pool())
    a, b = azure_week("code", 0.01, seed=3, **kw), azure_week("code", 0.01, seed=3, **kw)
    pd.testing.assert_frame_equal(a, b)
    assert a.attrs["day_weights"] == "interpolated"
    step = azure_week("code", 0.01, seed=3, day_weights="step", **kw)
    assert step.attrs["day_weights"] == "step"

    def around_monday(df):  # arrivals in the 30 min after Monday 00:00 over the 30 min before
        t = df["arrival_s"].to_numpy()
        m = 3 * 86_400
        return ((t >= m) & (t < m + 1800)).sum() / ((t >= m - 1800) & (t < m)).sum()

    assert around_monday(a) < 1.5
    assert around_monday(step) > 3


def test_unknown_reading_is_an_error():
    with pytest.raises(WorkloadError, match="day_weights"):
        azure_week("code", 0.001, days=1, lengths=_pool(), day_weights="linear")
    with pytest.raises(WorkloadError, match="day_weights"):
        day_level("code", np.arange(3), "cosine")


def test_noise_free_daily_peaks_meet_the_weekday_peak_target_under_both_readings():
    sh = _shape("code")
    weekday = (START["code"][1] + np.arange(7)) % 7 < 5
    for reading in ("interpolated", "step"):
        p = _profile("code", sh["floor"], sh["width_h"], day_weights=reading)
        peaks = p.reshape(-1, 30).sum(1).reshape(7, 48).max(1)
        assert peaks.max() / peaks[weekday].min() == pytest.approx(TARGETS["code_peak_over_lowest_weekday_peak"],
                                                                   rel=0.005)
