"""SageServe's long-term scalers as fleet control actors (journal §6.3-§6.4).

Every hour the actor forecasts each endpoint's IW prompt-token demand per minute for the next
hour (ARIMA on the last 60 minutes by default), adds the NIW buffer beta, solves the allocation
ILP and gets a target instance count per (model, region). Within the hour:

- LT-I: apply the change at once (scale-downs first);
- LT-U: move one instance toward the target per step only while KV utilisation is above the
  scale-out threshold (or below the scale-in threshold); ``lt_scale_down="immediate"`` applies
  the ILP's scale-downs at the hour, ``lt_u_override_out`` adds one instance beyond the target
  when utilisation exceeds it, and ``use_locks`` replaces the cooldown by the code's lock after a
  scale-up (the authors' code);
- LT-UA: LT-U, plus once at the target and in the last ``lt_ua_window_s`` of the hour, observed
  demand >= ``lt_ua_up_ratio`` x the forecast keeps scaling out and <= ``lt_ua_down_ratio`` x keeps
  scaling in.

The forecaster sees the *offered* demand of the endpoint's client region (the load predictor sits
at the global router), only up to the decision time in ``rolling`` mode.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from ...fleet.control import Scale
from ...forecast import Arima, Forecaster, insample_one_step
from ...forecast.cache import DEFAULT_CACHE as FORECAST_CACHE
from ...forecast.cache import fit_predict
from .config import SageServeConfig
from .ilp import AllocationProblem, solve
from .reactive import lock_after_up

LT_MODES = ("lt_i", "lt_u", "lt_ua")


@dataclass
class EndpointPlan:
    target: int
    forecast: np.ndarray  # per-minute forecast for the hour (tokens/min)
    last_action_s: float = -math.inf
    locked_until_s: float = -math.inf  # use_locks: no action before this (the code's lock after a scale-up)


@dataclass
class LongTermScaler:
    """Periodic actor; ``demand``/``niw_demand`` map (model, region) -> tokens per minute from t=0."""

    mode: str
    demand: dict[tuple[str, str], np.ndarray]
    theta: dict[str, float]  # model -> tokens/min one instance serves
    config: SageServeConfig = field(default_factory=SageServeConfig)
    niw_demand: dict[tuple[str, str], np.ndarray] = field(default_factory=dict)
    max_instances: dict[tuple[str, str], int] = field(default_factory=dict)
    period_s: float = 15.0
    alpha: float | None = None  # VM cost per hour (default config.vm_price_per_hour)
    start_hours: float | None = None  # mean start time in hours for sigma (default model_redeploy_s)
    solver: str = "cbc"
    offset_min: int = 0  # minute of ``demand`` that simulation time 0 corresponds to
    forecaster: Callable[[], Forecaster] = Arima  # rolling mode: a fresh forecaster per decision
    forecast_cache: object = FORECAST_CACHE  # servesim.forecast.cache: a folder, or None for no cache
    plans: dict[tuple[str, str], EndpointPlan] = field(default_factory=dict, init=False)
    log: list[dict] = field(default_factory=list, init=False)
    _hour: int = field(default=-1, init=False)
    _insample: dict = field(default_factory=dict, init=False)

    def __post_init__(self) -> None:
        if self.mode not in LT_MODES:
            raise ValueError(f"LongTermScaler.mode must be one of {LT_MODES}, got {self.mode!r}")

    # --- forecasting -------------------------------------------------------------------------
    def _forecast(self, key, minute: int) -> np.ndarray:
        c = self.config
        y = self.demand[key]
        hi = c.forecast_hi_min
        if c.forecast_mode in ("oracle", "insample"):
            if c.forecast_mode == "oracle":  # the demand that will arrive (diagnostic: what a lag-free forecast buys)
                f = y[minute:minute + hi]
            else:
                if key not in self._insample:
                    self._insample[key] = insample_one_step(y)
                f = self._insample[key][minute:minute + hi]
            return np.pad(f, (0, hi - f.size), mode="edge") if f.size else np.zeros(hi)  # past the trace: held
        w = c.forecast_window_min
        hist = y[max(0, minute - w):minute]
        if hist.size < 8 or not np.any(hist > 0):
            return np.full(hi, float(hist.max()) if hist.size else 0.0)
        pred, info = fit_predict(self.forecaster, hist, hi, cache=self.forecast_cache)
        self.log.append({"kind": "forecast", "minute": minute, "model": key[0], "region": key[1], **info})
        return pred

    def _buffer(self, key, minute: int) -> float:
        """beta x the NIW load of the past hour, in tokens per minute."""
        y = self.niw_demand.get(key)
        if y is None or minute <= 0:
            return 0.0
        past = y[max(0, minute - 60):minute]
        return self.config.niw_buffer_beta * float(past.mean()) if past.size else 0.0

    # --- the hourly decision -----------------------------------------------------------------
    def _plan(self, view) -> list:
        c = self.config
        minute = self.offset_min + int(view.now // 60)
        keys = [k for k in view.endpoints() if k in self.demand]
        models = sorted({k[0] for k in keys})
        regions = sorted({k[1] for k in keys})
        n = np.zeros((len(models), len(regions), 1), dtype=int)
        rho = np.zeros((len(models), len(regions)))
        buf = np.zeros_like(rho)
        fc = {}
        for k in keys:
            i, j = models.index(k[0]), regions.index(k[1])
            n[i, j, 0] = view.endpoint(*k).active
            fc[k] = self._forecast(k, minute)
            rho[i, j] = float(fc[k][c.forecast_lo_min:c.forecast_hi_min].max())
            buf[i, j] = self._buffer(k, minute)
        alpha = c.vm_price_per_hour if self.alpha is None else self.alpha
        start_h = (c.model_redeploy_s / 3600.0) if self.start_hours is None else self.start_hours
        prob = AllocationProblem(n=n, rho=rho, buffer=buf, theta=np.array([[self.theta[m]] for m in models]),
                                 alpha=np.array([alpha]), sigma=np.full((len(models), 1), alpha * start_h),
                                 epsilon=c.epsilon, global_constraint=c.ilp_global_constraint,
                                 min_instances=c.min_per_endpoint)
        res = solve(prob, solver=self.solver)
        self.log.append({"kind": "ilp", "minute": minute, "solve_s": res.solve_time_s, "objective": res.objective})
        actions = []
        for k in keys:
            i, j = models.index(k[0]), regions.index(k[1])
            target = int(n[i, j, 0] + res.delta[i, j, 0])
            cap = self.max_instances.get(k)
            target = min(target, cap) if cap is not None else target
            self.plans[k] = EndpointPlan(target=target, forecast=fc[k])
            self.log.append({"kind": "target", "minute": minute, "model": k[0], "region": k[1],
                             "active": int(n[i, j, 0]), "target": target, "rho": rho[i, j], "buffer": buf[i, j]})
            d = target - int(n[i, j, 0])
            if self.mode == "lt_i" or (d < 0 and c.lt_scale_down == "immediate"):
                if d:
                    actions.append(Scale(k[0], k[1], d))
        return sorted(actions, key=lambda a: a.delta)  # scale-downs first

    # --- actor entry point -------------------------------------------------------------------
    def act(self, view) -> list:
        c = self.config
        hour = int(view.now // c.lt_interval_s)
        actions = []
        if hour != self._hour:
            self._hour = hour
            actions += self._plan(view)
            if self.mode == "lt_i":
                return actions
        if self.mode == "lt_i":
            return actions
        minute = self.offset_min + int(view.now // 60)
        in_hour = view.now - hour * c.lt_interval_s
        for k, plan in self.plans.items():
            if view.now - plan.last_action_s < c.cooldown_s or view.now < plan.locked_until_s:
                continue
            st = view.endpoint(*k)
            util = st.kv_util
            active = st.active
            pending = plan.target - active
            step = 0
            if pending > 0 and util > c.lt_u_scale_out:
                step = 1
            elif pending < 0 and util < c.lt_u_scale_in:
                step = -1
            elif pending == 0 and c.lt_u_override_out is not None and util > c.lt_u_override_out:
                # the code's override: one instance beyond the target (pending becomes -1, so it can
                # be scaled in again below lt_u_scale_in, and no second override until it is)
                step = 1
            elif pending == 0 and self.mode == "lt_ua":
                gate = c.lt_ua_window_s is None or in_hour >= c.lt_interval_s - c.lt_ua_window_s
                if gate:
                    idx = min(max(int(in_hour // 60), 0), plan.forecast.size - 1)
                    expected = float(plan.forecast[idx])
                    if c.lt_ua_observed == "endpoint":  # code: tokens that reached the endpoint, last 60 s
                        observed = st.prompt_token_rate * 60.0
                    else:
                        observed = float(self.demand[k][minute - 1]) if minute >= 1 else 0.0
                    ratio = observed / expected if expected > 0 else math.inf
                    if ratio >= c.lt_ua_up_ratio:
                        step = 1
                    elif c.lt_ua_down_ratio is not None and ratio <= c.lt_ua_down_ratio and active > c.min_per_endpoint:
                        step = -1
                    if step:
                        plan.target += step
                        self.log.append({"kind": "lt_ua", "minute": minute, "model": k[0], "region": k[1],
                                         "step": step, "ratio": ratio})
            if step:
                cap = self.max_instances.get(k)
                if step > 0 and cap is not None and active >= cap:
                    continue
                if step > 0 and c.use_locks:
                    plan.locked_until_s = view.now + lock_after_up(view, k[0], k[1], c.lock_reclaim_s,
                                                                   c.lock_conversion_s)
                actions.append(Scale(k[0], k[1], step))
                plan.last_action_s = view.now
        return actions
