"""Bounds checked before a simulation starts, so a typo cannot allocate without bound.

The time-series sampler keeps one row per ``output.sample_s`` of simulated time up to the run's
horizon (``duration_s``, or the last arrival plus ``output.drain_limit_s``); more than
:data:`MAX_SAMPLES` rows (a week at a 0.3 s step) is refused up front.
"""

from __future__ import annotations

import math

#: most time-series rows a run may sample (each holds a few counters per endpoint)
MAX_SAMPLES = 2_000_000


def check_sampling(sample_s: float, horizon_s: float, source: str = "scenario") -> None:
    """Raise ScenarioError if sampling every ``sample_s`` up to ``horizon_s`` is unbounded or too large."""
    from .scenario import ScenarioError

    if not (math.isfinite(sample_s) and sample_s > 0):
        raise ScenarioError(f"{source}: output.sample_s={sample_s!r} must be a finite number > 0")
    if not math.isfinite(horizon_s):
        raise ScenarioError(f"{source}: the run's horizon is not finite (duration_s, or the last arrival "
                            f"plus output.drain_limit_s); set a finite duration_s or drain_limit_s")
    n = horizon_s / sample_s
    if n > MAX_SAMPLES:
        raise ScenarioError(f"{source}: output.sample_s={sample_s:g} over a horizon of {horizon_s:g} s is "
                            f"{n:.3g} time-series rows (at most {MAX_SAMPLES:,}); raise output.sample_s "
                            f"or shorten duration_s / output.drain_limit_s")
