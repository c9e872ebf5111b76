"""Bounds checked before a simulation starts, so a typo cannot allocate without bound.

The time-series sampler keeps one row per ``output.sample_s`` of simulated time up to the run's
horizon (``duration_s``, or the last arrival plus ``output.drain_limit_s``); more than
:data:`MAX_SAMPLES` rows (a week at a 0.3 s step) is refused up front. A periodic control actor
(an autoscaler) acts every ``period_s`` up to the same horizon; more than :data:`MAX_CONTROL_TICKS`
calls (a week at a 0.06 s period) is refused the same way.
"""

from __future__ import annotations

import math

#: most time-series rows a run may sample (each holds a few counters per endpoint)
MAX_SAMPLES = 2_000_000
#: most calls of one periodic control actor a run may make
MAX_CONTROL_TICKS = 10_000_000


def check_sampling(sample_s: float, horizon_s: float, source: str = "scenario", horizon: str = "") -> None:
    """Raise ScenarioError if sampling every ``sample_s`` up to ``horizon_s`` is unbounded or too large."""
    from .scenario import ScenarioError

    if not (math.isfinite(sample_s) and sample_s > 0):
        raise ScenarioError(f"{source}: output.sample_s={sample_s!r} must be a finite number > 0")
    if not math.isfinite(horizon_s):
        raise ScenarioError(f"{source}: the run's horizon is not finite (duration_s, or the last arrival "
                            f"plus output.drain_limit_s); set a finite duration_s or drain_limit_s")
    n = horizon_s / sample_s
    if n > MAX_SAMPLES:
        raise ScenarioError(f"{source}: output.sample_s={sample_s:g} over a horizon of {horizon_s:g} s{horizon} is "
                            f"{n:.3g} time-series rows (at most {MAX_SAMPLES:,}); raise output.sample_s "
                            f"or shorten duration_s / output.drain_limit_s")


def check_period(period_s: float, horizon_s: float, key: str, source: str = "scenario", horizon: str = "") -> None:
    """Raise ScenarioError if an actor acting every ``period_s`` (the key ``key``) up to ``horizon_s``
    would make more than MAX_CONTROL_TICKS calls (or its period is not a finite number > 0)."""
    from .scenario import ScenarioError

    if not (math.isfinite(period_s) and period_s > 0):
        raise ScenarioError(f"{source}: {key}={period_s!r} must be a finite number of seconds > 0")
    if not math.isfinite(horizon_s):
        return  # check_sampling names a horizon that is not finite
    n = horizon_s / period_s
    if n > MAX_CONTROL_TICKS:
        raise ScenarioError(f"{source}: {key}={period_s:g} over a horizon of {horizon_s:g} s{horizon} is {n:.3g} "
                            f"calls (at most {MAX_CONTROL_TICKS:,}); raise {key} or shorten the run")
