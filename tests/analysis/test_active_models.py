import math

import numpy as np
import pytest

from servesim.analysis.active_models import (active_count_bruteforce, draw_arrivals, expected_active,
                                             simulate_active_count)


def test_expected_active_formula():
    assert expected_active(100, 0.037, 16.79) == pytest.approx(100 * (1 - math.exp(-0.037 * 16.79)), rel=1e-14)
    assert expected_active(100, 0.037, 16.79) == pytest.approx(46.2717, abs=1e-4)
    # lam*T = ln 2: every model is active with probability 1/2.
    assert expected_active(10, math.log(2), 1.0) == pytest.approx(5.0)
    assert expected_active(7, 0.0, 3.0) == 0.0
    with pytest.raises(ValueError):
        expected_active(-1, 0.1, 1.0)


def test_step_function_matches_the_definition():
    M, lam, T, H, seed = 30, 0.05, 12.0, 2000.0, 3
    ac = simulate_active_count(M, lam, T, H, seed=seed)
    arrivals = draw_arrivals(M, lam, -T, H, seed)  # the same streams the simulation drew
    t = np.random.default_rng(1).uniform(0, H, 5000)
    np.testing.assert_array_equal(ac.at(t), active_count_bruteforce(arrivals, T, t))
    assert ac.n_arrivals == sum(len(a) for a in arrivals)
    assert ac.counts.min() >= 0 and ac.counts.max() <= M
    assert np.all(np.diff(ac.times) >= 0)


def test_time_mean_is_the_exact_integral():
    ac = simulate_active_count(5, 0.2, 3.0, 400.0, seed=0)
    grid = np.linspace(0, 400.0, 400_001)[:-1] + 0.0005  # midpoint rule, step 0.001 s
    assert ac.time_mean() == pytest.approx(ac.at(grid).mean(), abs=2e-3)
    assert ac.batch_means(4).mean() == pytest.approx(ac.time_mean(), rel=1e-12)
    with pytest.raises(ValueError):
        ac.time_mean(10.0, 5.0)


def test_simulation_agrees_with_theorem():
    M, lam, T = 100, 0.037, 16.79
    ac = simulate_active_count(M, lam, T, 50_000.0, seed=0)
    bm = ac.batch_means(25)
    se = bm.std(ddof=1) / np.sqrt(len(bm))
    assert abs(ac.time_mean() - expected_active(M, lam, T)) < 5 * se


def test_seeded_and_deterministic():
    a = simulate_active_count(20, 0.1, 5.0, 500.0, seed=7)
    b = simulate_active_count(20, 0.1, 5.0, 500.0, seed=7)
    c = simulate_active_count(20, 0.1, 5.0, 500.0, seed=8)
    np.testing.assert_array_equal(a.times, b.times)
    np.testing.assert_array_equal(a.counts, b.counts)
    assert not np.array_equal(a.times, c.times)
