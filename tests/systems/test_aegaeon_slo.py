"""Aegaeon SLO attainment (the artifact's compute_slo rule and the per-token variant) and goodput."""

import numpy as np
import pandas as pd
import pytest

from servesim.systems.aegaeon import slo


def test_compute_slo_worked_example():
    # artifact code comment: arrival 0, tokens at (3, 6, 7, 8), SLO (3, 2) -> 5/8
    assert slo.attain_ae(0.0, [3, 6, 7, 8], 3.0, 2.0) == pytest.approx(5 / 8)
    assert slo.attain_ae(10.0, [13, 16, 17, 18], 3.0, 2.0) == pytest.approx(5 / 8)


def test_all_on_time_and_no_output():
    assert slo.attain_ae(0.0, [1.0, 1.1, 1.2], 10.0, 0.1) == 1.0
    assert slo.attain_ae(0.0, [], 10.0, 0.1) == 0.0
    assert slo.attain_token(0.0, [], 10.0, 0.1) == 0.0


def test_attain_token_rebases_after_a_miss():
    # token 0 late (11 > 10); re-based there: 11.1, 11.2 on time; 12.0 late; 12.1 on time
    assert slo.attain_token(0.0, [11.0, 11.1, 11.2, 12.0, 12.1], 10.0, 0.1) == pytest.approx(3 / 5)
    # buffered: early tokens absorb a later stall
    assert slo.attain_token(0.0, [1.0, 1.1, 10.2], 10.0, 0.1) == 1.0


def test_attainment_counts_failed_as_zero_or_skips_them():
    t = pd.DataFrame({"request_id": [0, 1], "arrival_s": [0.0, 0.0], "failed": [False, True],
                      "tokens_out": [2, 0], "token_times": [np.array([1.0, 1.1]), np.array([])]})
    assert slo.attainment(t, 10, 0.1) == pytest.approx(0.5)
    assert slo.attainment(t, 10, 0.1, skip_failed=True) == 1.0
    assert slo.attainment(t, 10, 0.1, metric="attain_token") == pytest.approx(0.5)
    with pytest.raises(ValueError, match="metric"):
        slo.attainment(t, 10, 0.1, metric="nope")


def test_goodput_readings_over_a_sweep():
    from servesim.metrics.slo import goodput_x

    assert goodput_x([16, 20, 24, 28], [1.0, 0.95, 0.9, 0.5]) == 24
    assert np.isnan(goodput_x([16, 20], [0.5, 0.4]))
    # unsorted input; a dip at 20 that recovers at 24: the readings differ
    xs, a = [24, 16, 20, 28], [0.95, 1.0, 0.85, 0.5]
    assert goodput_x(xs, a, reading="largest_meeting") == 24
    assert goodput_x(xs, a, reading="before_first_miss") == 16
    assert np.isnan(goodput_x([16], [float("nan")]))  # NaN attainment is a miss
    with pytest.raises(ValueError, match="reading"):
        goodput_x(xs, a, reading="nope")
    with pytest.raises(ValueError, match="2 loads but 1"):
        goodput_x([1, 2], [0.9])
