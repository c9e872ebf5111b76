"""Aegaeon's weighted round-robin quotas (Eq. 2-3) and the deadline replay."""

import numpy as np
import pytest

from servesim.systems.aegaeon import AegaeonConfig, paper_inputs, play_rounds, quotas


def test_paper_worked_example():
    ex = paper_inputs()["wrr_worked_example"]
    q = quotas([ex["step_s"]] * ex["n_batches"], ex["tbt_s"], ex["c_s"], ex["q_max_s"])
    assert q.n == pytest.approx([4, 4, 4]) and q.alpha == pytest.approx(1.0)
    assert q.quota_s == pytest.approx([3, 3, 3]) and q.tokens_per_turn == pytest.approx([120] * 3)
    assert q.round_s == pytest.approx(12.0)
    assert play_rounds(q, 4, tbt_s=ex["tbt_s"]).all_met()


def test_identities_and_floor():
    t = np.array([0.02, 0.03, 0.05])
    q = quotas(t, 0.1, 2.0, 4.0)
    s = np.sum(t / 0.1)
    assert q.alpha >= 0.5
    assert q.quota_s * q.n == pytest.approx(np.full(3, 2.0 / (q.alpha - s)))   # q_i n_i equal for all i
    assert q.round_s == pytest.approx(2.0 * q.alpha / (q.alpha - s))
    # the 0.5 floor binds for a light list: quotas are c / (n (0.5 - S))
    light = quotas([0.01], 0.1, 0.1, 4.0)
    assert light.alpha == 0.5 and light.quota_s[0] == pytest.approx(0.1 / (10 * 0.4))


def test_overloaded_round_misses_deadlines():
    q = quotas([0.025] * 3, 0.1, 6.0, 3.0)   # twice the switching cost: alpha = 1.25
    assert q.est_attainment == pytest.approx(0.8)
    r = play_rounds(q, 3, tbt_s=0.1)
    assert not r.all_met() and r.min_slack_s < -0.5


def test_bad_inputs():
    with pytest.raises(ValueError):
        quotas([0.0], 0.1, 1.0, 4.0)
    with pytest.raises(ValueError, match="alpha"):
        quotas([0.1, 0.1, 0.1, 0.1, 0.1], 0.1, 0.0, 4.0)   # sum 1/n = 5 > floor, c = 0: undefined


def test_config_defaults_and_overrides():
    c = AegaeonConfig.paper()
    assert (c.max_gpsize, c.q_max_s, c.alpha_floor, c.switch_beta) == (8, 4.0, 0.5, 0.625)
    assert c.slo(0.2) == pytest.approx((2.0, 0.02))
    assert AegaeonConfig.paper(q_max_s=3.0).q_max_s == 3.0
    with pytest.raises(ValueError, match="unknown"):
        AegaeonConfig.paper(qmax=3)
