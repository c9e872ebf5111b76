import pytest

from servesim.systems.sageserve.config import ConfigError, SageServeConfig
from servesim.systems.sageserve.niw import NIWQueueManager, NIWRequest


def test_paper_defaults_and_code_preset():
    p, c = SageServeConfig(), SageServeConfig.code()
    assert (p.reactive_scale_out, p.reactive_scale_in, p.cooldown_s) == (0.70, 0.30, 15.0)
    assert (c.reactive_scale_out, c.reactive_scale_in, c.use_locks) == (0.5, 0.25, True)
    assert p.niw_deadline_s == 24 * 3600 and p.niw_priority_bump_s == 10 * 3600
    assert c.forecast_mode == "insample" and p.forecast_mode == "rolling"


def test_config_errors_name_the_key():
    with pytest.raises(ConfigError, match="unknown key.*reactive_out"):
        SageServeConfig.from_dict({"reactive_out": 0.7})
    with pytest.raises(ConfigError, match="reactive_scale_in"):
        SageServeConfig(reactive_scale_in=0.8)
    with pytest.raises(ConfigError, match="tier_policy"):
        SageServeConfig(tier_policy="lifo")


def _req(i, t, model="A", region="east", deadline=86400.0):
    return NIWRequest(i, model, region, t, 100, 10, t + deadline)


@pytest.mark.parametrize("util,paper,code", [(0.40, 2, 1), (0.55, 1, 2), (0.65, 0, 0), (0.5, 1, 1)])
def test_release_counts_paper_vs_code(util, paper, code):
    assert NIWQueueManager(SageServeConfig()).release_count(util) == paper
    assert NIWQueueManager(SageServeConfig.code()).release_count(util) == code


def test_queue_fifo_per_endpoint_expiry_and_bump():
    m = NIWQueueManager()
    for i in range(4):
        m.push(_req(i, float(i)))
    m.push(_req(9, 0.0, region="west"))
    out = m.on_signal("A", "east", 0.3, now=10.0)
    assert [r.request_id for r in out] == [0, 1] and m.queued("A", "east") == 2
    assert m.on_signal("A", "east", 0.9, now=11.0) == []
    assert m.priority(_req(5, 0.0), now=36_001.0) == 0 and m.priority(_req(5, 0.0), now=100.0) == 1
    gone = m.expire(now=86_402.5)  # requests 2 (deadline 86402) and west 9 expire; 3 survives
    assert sorted(r.request_id for r in gone) == [2, 9] and len(m) == 1
    assert NIWQueueManager(expire=False).expire(1e9) == []


def test_tier_policies_order():
    from servesim.sim import Req
    from servesim.sim.queue_orders import TIER_RANK, get_order

    now = 100.0
    # (id, tier, arrival, deadline); NIW request 4 arrived within its priority bump
    rows = [(1, "IW-N", 90.0, 150.0), (2, "IW-F", 95.0, 96.0),       # IW-F expired 4 s ago
            (3, "IW-F", 99.5, 100.5), (4, "NIW", 10.0, 80000.0),     # IW-F urgent
            (5, "IW-N", 99.0, 100.8), (6, "IW-F", 20.0, 21.0)]       # IW-N urgent; IW-F severely expired
    w = []
    for i, tier, arrival, deadline in rows:
        r = Req(i, arrival, 10, 10)
        r.tier, r.deadline = TIER_RANK[tier], deadline
        w.append(r)

    def ids(p, **kw):
        q = list(w)
        get_order(p, niw_bump_s=36_000.0, **kw).sort(q, now)
        return [r.idx for r in q]

    assert ids("fcfs") == [6, 1, 2, 5, 3, 4]
    assert ids("edf") == [6, 2, 3, 5, 1, 4]
    assert ids("pf") == [6, 2, 3, 1, 5, 4]
    assert ids("dpa", tau_n_s=10.0, tau_p_s=1.0) == [6, 3, 5, 1, 2, 4]


def test_contended_cap_covers_the_busiest_quarter_hour_of_each_endpoint():
    import pandas as pd

    from servesim.systems.sageserve.theta import contended_instances

    # endpoint A: 100 prompt tokens a minute for 15 min, then 250; B: 180 throughout; theta 100 / min
    rows = [(60.0 * m + 1, 100 if m < 15 else 250, "m", "r1") for m in range(30)]
    rows += [(60.0 * m + 2, 180, "m", "r2") for m in range(30)]
    rows += [(-30.0, 10_000, "m", "r1")]  # before t0: not served in the window, not counted
    df = pd.DataFrame(rows, columns=["arrival_s", "prompt_tokens", "model", "region"])
    assert contended_instances(df, 0.0, {"m": 100.0}) == 3  # A's busiest bin: 250 / 100 -> 3
    assert contended_instances(df[df.region == "r2"], 0.0, {"m": 100.0}) == 2
    assert contended_instances(df, 0.0, {"m": 100.0}, bin_min=30) == 2  # A's 30-min mean is 175


def test_max_instances_takes_auto_or_a_count():
    import argparse

    from servesim.systems.sageserve.runs import _cap

    assert _cap("auto") == "auto" and _cap("6") == 6
    with pytest.raises(argparse.ArgumentTypeError, match="'six': an integer >= 1 or 'auto'"):
        _cap("six")
