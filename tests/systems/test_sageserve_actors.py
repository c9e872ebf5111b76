from dataclasses import dataclass

import numpy as np
import pytest

from servesim.fleet.control import Scale
from servesim.forecast import MovingAverage
from servesim.systems.sageserve.actors import LongTermScaler
from servesim.systems.sageserve.config import SageServeConfig

KEY = ("m", "east")


@dataclass
class _Stats:
    active: int
    kv_util: float


class FakeView:
    """A one-endpoint FleetView: the test sets now, active count and KV utilisation."""

    def __init__(self, active, util=0.5):
        self.now, self.active, self.util = 0.0, active, util

    def endpoints(self):
        return [KEY]

    def endpoint(self, model, region):
        return _Stats(self.active, self.util)

    def apply(self, actions):
        for a in actions:
            self.active += a.delta


def _scaler(mode, demand, **cfg):
    return LongTermScaler(mode=mode, demand={KEY: np.asarray(demand, float)}, theta={"m": 100.0},
                          config=SageServeConfig(**cfg), forecaster=MovingAverage, offset_min=60,
                          max_instances={KEY: 20})


def test_lt_i_applies_ilp_target_at_the_hour():
    # last hour before t=0 averaged 730 tokens/min -> ceil(730/100) = 8 instances
    demand = np.r_[np.full(60, 730.0), np.full(120, 730.0)]
    a = _scaler("lt_i", demand)
    v = FakeView(active=20)
    acts = a.act(v)
    assert acts == [Scale("m", "east", -12)]
    v.apply(acts)
    v.now = 15.0
    assert a.act(v) == []  # nothing until the next hour


@pytest.mark.parametrize("util,expect", [(0.5, []), (0.2, [Scale("m", "east", -1)])])
def test_lt_u_defers_scale_in_until_utilisation_is_low(util, expect):
    a = _scaler("lt_u", np.full(180, 730.0))
    v = FakeView(active=20, util=util)
    assert a.act(v) == expect  # paper reading: deferred scale-down, one step per cooldown
    v.now = 5.0
    assert a.act(v) == []  # cooldown 15 s


def test_lt_u_code_reading_scales_down_immediately():
    a = _scaler("lt_u", np.full(180, 730.0), lt_scale_down="immediate")
    assert a.act(FakeView(active=20, util=0.5)) == [Scale("m", "east", -12)]


def test_lt_ua_follows_traffic_in_the_last_20_minutes():
    demand = np.r_[np.full(60, 730.0), np.full(40, 730.0), np.full(80, 5000.0)]  # 6.8x surge at minute 40
    a = _scaler("lt_ua", demand)
    v = FakeView(active=8, util=0.5)  # already at the target
    assert a.act(v) == []
    v.now = 30 * 60.0  # surge not yet in the gate window
    assert a.act(v) == []
    v.now = 45 * 60.0  # inside the last 20 minutes, observed 5000 vs forecast 730
    assert a.act(v) == [Scale("m", "east", 1)]
    a2 = _scaler("lt_ua", demand, lt_ua_window_s=None)
    v2 = FakeView(active=8, util=0.5)
    a2.act(v2)
    v2.now = 41 * 60.0
    assert a2.act(v2) == [Scale("m", "east", 1)]  # code reading: no 20-min gate


def test_bad_mode():
    with pytest.raises(ValueError, match="mode"):
        LongTermScaler(mode="lt_x", demand={}, theta={})
