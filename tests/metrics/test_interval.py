"""The sampling interval of a percentile's relative error between paired request tables."""

import numpy as np
import pytest

from servesim.metrics.interval import block_indices, block_length, paired_interval, row_percentiles


def test_row_percentiles_read_each_row_as_numpy_does_nans_left_out():
    rng = np.random.default_rng(1)
    x = rng.lognormal(size=(50, 37))
    x[rng.random(x.shape) < 0.2] = np.nan
    x[3] = np.nan  # a row without values
    got = row_percentiles(x, (0, 50, 90, 99, 100))
    for i, row in enumerate(x):
        v = row[~np.isnan(row)]
        want = np.percentile(v, [0, 50, 90, 99, 100]) if v.size else np.full(5, np.nan)
        np.testing.assert_allclose(got[:, i], want, rtol=1e-12)


def test_block_indices_are_runs_of_consecutive_rows_cut_to_n():
    assert [block_length(n) for n in (1, 8, 100, 400, 1000)] == [1, 2, 5, 7, 10]
    idx = block_indices(23, 200, np.random.default_rng(0), block=5)
    assert idx.shape == (200, 23) and idx.min() >= 0 and idx.max() <= 22
    runs = idx[:, :20].reshape(200, 4, 5)  # the first four whole blocks of every draw
    assert (np.diff(runs, axis=2) == 1).all()
    with pytest.raises(ValueError, match="block 30 must be in 1..23"):
        block_indices(23, 5, np.random.default_rng(0), block=30)


def test_a_constant_ratio_has_no_interval_and_the_pairing_is_what_makes_it_so():
    rng = np.random.default_rng(2)
    e = rng.lognormal(size=100)
    iv = paired_interval([e], [1.2 * e], (50, 90))
    np.testing.assert_allclose(iv, 0.2, rtol=1e-12)
    # two repeats are combined as the comparison combines them: medians of each side, then the ratio
    iv = paired_interval([e, 1.2 * e], [e, e], (90,))
    np.testing.assert_allclose(iv, 1 / 1.1 - 1, rtol=1e-12)
    # the same values, unpaired (the sim's rows shuffled), move with the draw
    lo, hi = paired_interval([e], [1.2 * rng.permutation(e)], (90,))[0]
    assert lo < 0.2 - 0.05 and hi > 0.2 + 0.05


def test_a_percentile_at_a_cliff_is_not_pinned_down():
    """Ten engine requests queued far above the rest, the simulator with an eleventh: the P90s read
    either side of the cliff (+28 %), and the interval reaches from no error to far up that way."""
    e = np.r_[np.linspace(40, 58, 90), np.linspace(76, 140, 10)]
    s = e.copy()
    s[89] = 80.0
    err = np.percentile(s, 90) / np.percentile(e, 90) - 1
    lo, hi = paired_interval([e], [s], (90,))[0]
    assert err > 0.25 and lo <= 1e-12 and hi > err / 2


def test_intervals_cover_the_true_error_of_independent_samples():
    """Engine and simulator drawn independently from one distribution (true error 0, the pairing of
    no help): the 90 % interval holds 0 in most of 200 trials (a 90 % interval would hold it in 180;
    a bootstrap of n = 100 is somewhat narrow, a broken one far narrower)."""
    rng = np.random.default_rng(3)
    held = 0
    for _ in range(200):
        e, s = rng.lognormal(size=100), rng.lognormal(size=100)
        lo, hi = paired_interval([e], [s], (90,), draws=400, seed=int(rng.integers(1 << 30)))[0]
        held += lo <= 0 <= hi
    assert 160 <= held <= 200


def test_same_seed_same_interval_and_bad_input_is_named():
    rng = np.random.default_rng(4)
    e, s = rng.lognormal(size=60), rng.lognormal(size=60)
    a = paired_interval([e], [s], (50, 90), seed=7)
    np.testing.assert_array_equal(a, paired_interval([e], [s], (50, 90), seed=7))
    assert not np.array_equal(a, paired_interval([e], [s], (50, 90), seed=8))
    with pytest.raises(ValueError, match="different request counts"):
        paired_interval([e], [s[:50]], (90,))
    with pytest.raises(ValueError, match="1 engine and 2 sim repeats"):
        paired_interval([e], [s, s], (90,))
    # a side with no values: no interval
    assert np.isnan(paired_interval([np.full(60, np.nan)], [s], (90,))).all()
