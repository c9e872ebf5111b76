"""The authors' code reading of the scalers: locks after scale-ups, the LT-U 0.9 override."""

from dataclasses import dataclass

import numpy as np
import pytest

from servesim.fleet.control import Scale
from servesim.forecast import MovingAverage
from servesim.systems.sageserve.actors import LongTermScaler
from servesim.systems.sageserve.config import SageServeConfig
from servesim.systems.sageserve.reactive import LockedReactive

KEY = ("m", "east")


@dataclass
class _Stats:
    active: int
    kv_util: float
    ready: int = 1
    queued: int = 0
    outstanding: int = 0


class View:
    def __init__(self, active, util, pooled=0):
        self.now, self.active, self.util, self.pool = 0.0, active, util, pooled

    def endpoints(self):
        return [KEY]

    def endpoint(self, model, region):
        return _Stats(self.active, self.util, ready=self.active)

    def pooled(self, region):
        return {"m": self.pool} if self.pool else {}

    def apply(self, actions):
        for a in actions:
            self.active += a.delta


def _at(scaler, view, t):
    view.now = t
    acts = scaler.act(view)
    view.apply(acts)
    return acts


def test_locked_reactive_locks_after_ups_only():
    r = LockedReactive(up=0.5, down=0.25, cooldown_s=0.0)
    v = View(active=4, util=0.8, pooled=1)  # a same-model instance in the pool: a reclaim, 65 s
    assert _at(r, v, 0.0) == [Scale("m", "east", 1)]
    assert _at(r, v, 5.0) == [] and _at(r, v, 60.0) == []
    assert _at(r, v, 65.0) == [Scale("m", "east", 1)]
    v.pool = 0  # nothing of this model pooled: a conversion / new VM, 155 s
    assert _at(r, v, 129.0) == []  # the 65-s lock of the second up
    assert _at(r, v, 130.0) == [Scale("m", "east", 1)]
    assert _at(r, v, 284.0) == []
    assert _at(r, v, 285.0) == [Scale("m", "east", 1)]
    v.util = 0.1  # scale-ins lock nothing: one per period
    assert _at(r, v, 440.0) == [Scale("m", "east", -1)]
    assert _at(r, v, 445.0) == [Scale("m", "east", -1)]


def _lt_u(**cfg):
    return LongTermScaler(mode="lt_u", demand={KEY: np.full(180, 730.0)}, theta={"m": 100.0},
                          config=SageServeConfig.code(**cfg), forecaster=MovingAverage, offset_min=60,
                          max_instances={KEY: 20})


def test_lt_u_code_override_is_one_instance_beyond_the_target():
    a = _lt_u(forecast_mode="rolling")
    v = View(active=8, util=0.5, pooled=3)  # the ILP wants ceil(730/100) = 8: at the target
    assert _at(a, v, 0.0) == []
    v.util = 0.95  # above the 0.9 override: one extra instance, the target stays 8
    assert _at(a, v, 15.0) == [Scale("m", "east", 1)] and a.plans[KEY].target == 8
    # pending is now -1: no second override however hot, even after the lock
    assert _at(a, v, 15.0 + 65.0) == [] and _at(a, v, 300.0) == []
    v.util = 0.1  # back below 0.25: the extra instance goes
    assert _at(a, v, 315.0) == [Scale("m", "east", -1)] and v.active == 8


def test_lt_u_code_lock_after_a_scale_up():
    a = _lt_u(forecast_mode="rolling", lt_scale_down="deferred")
    v = View(active=5, util=0.8, pooled=0)  # below the target 8, hot: scale up one at a time
    assert _at(a, v, 0.0) == [Scale("m", "east", 1)]
    assert _at(a, v, 15.0) == [] and _at(a, v, 150.0) == []  # 155-s conversion lock
    assert _at(a, v, 165.0) == [Scale("m", "east", 1)]
    # the paper reading (no locks, 15-s cooldown) steps every 15 s
    p = LongTermScaler(mode="lt_u", demand={KEY: np.full(180, 730.0)}, theta={"m": 100.0},
                       config=SageServeConfig.paper(), forecaster=MovingAverage, offset_min=60, max_instances={KEY: 20})
    w = View(active=5, util=0.8)
    assert _at(p, w, 0.0) == [Scale("m", "east", 1)] and _at(p, w, 15.0) == [Scale("m", "east", 1)]


def test_oracle_forecast_reads_the_coming_hours_true_demand():
    """forecast_mode="oracle" (a diagnostic reading): the plan's forecast is the demand that will
    arrive in the next hour, so the ILP sizes for the hour's real peak; a rolling forecaster (a
    moving average here) sees only the past and misses a ramp."""
    demand = np.concatenate([np.full(120, 300.0), np.linspace(300.0, 1200.0, 60), np.full(60, 1200.0)])

    def plan(mode):
        a = LongTermScaler(mode="lt_i", demand={KEY: demand}, theta={"m": 100.0},
                           config=SageServeConfig.code(forecast_mode=mode, forecast_lo_min=0), forecaster=MovingAverage,
                           offset_min=120, max_instances={KEY: 20})
        _at(a, View(active=3, util=0.5), 0.0)
        return a.plans[KEY]

    oracle, rolling = plan("oracle"), plan("rolling")
    np.testing.assert_array_equal(oracle.forecast, demand[120:180])
    assert oracle.target == 12 and rolling.target == 3   # the ramp's peak, 1,200 tokens/min, vs the past's 300
    # past the trace's end the last minute is held (as the in-sample reading pads)
    a = LongTermScaler(mode="lt_i", demand={KEY: demand}, theta={"m": 100.0},
                       config=SageServeConfig.code(forecast_mode="oracle"), offset_min=0)
    assert np.array_equal(a._forecast(KEY, 220), np.concatenate([demand[220:], np.full(40, 1200.0)]))
    # the code's in-sample reading takes the same hour of ARIMA's one-step predictions, held past the end too
    from servesim.forecast import insample_one_step

    a = LongTermScaler(mode="lt_i", demand={KEY: demand}, theta={"m": 100.0},
                       config=SageServeConfig.code(forecast_mode="insample"), offset_min=0)
    one = insample_one_step(demand)
    np.testing.assert_array_equal(a._forecast(KEY, 100), one[100:160])
    np.testing.assert_array_equal(a._forecast(KEY, 220), np.concatenate([one[220:], np.full(40, one[-1])]))
    with pytest.raises(Exception, match="forecast_mode"):
        SageServeConfig.code(forecast_mode="psychic")
