"""Serving metrics and the one run-summary schema (``servesim.metrics``).

A low layer: it reads per-request result tables, fleet ledgers and timeseries as plain pandas
frames and imports nothing from servesim but the workload schema, so ``sim``, ``fleet``,
``engine``, the paper packages and the notebooks can all use it.

    from servesim.metrics import summarize, SLO
    s = summarize(res.requests, slo=SLO(ttft_s=1.0, tpot_s=0.1), groups={"iw": ("IW-F", "IW-N")})
    s["all"]["p99_ttft_s"], s["by_tier"]["IW-F"]["deadline_attainment"], s["groups"]["iw"]["completed"]

Modules: ``latency`` (TTFT / TPOT / ITL / E2EL / normalised latency statistics), ``slo``
(per-request and per-token attainment, deadlines, goodput), ``instance_hours`` (billed states,
exact and 15-min binned-maxima instance-hours), ``spread`` (run-to-run spread across repeats),
``summary`` (``summarize`` and the versioned layout).
"""

from .instance_hours import (
    BILLED_STATES,
    BIN_S,
    MAX_SAMPLE_S,
    billed_binned_max_hours,
    billed_count,
    billed_hours,
    binned_max,
    binned_max_by,
    binned_max_hours,
    instance_hours,
    instance_hours_readings,
    step_integral_hours,
)
from .latency import LATENCY_METRICS, PERCENTILES, percentile, stats
from .slo import COMPLETION_DEADLINE_TIERS, SLO
from .spread import flatten, spread
from .summary import SCHEMA_VERSION, block_keys, summarize

__all__ = [
    "BILLED_STATES", "BIN_S", "COMPLETION_DEADLINE_TIERS", "LATENCY_METRICS", "MAX_SAMPLE_S", "PERCENTILES",
    "SCHEMA_VERSION", "SLO", "billed_binned_max_hours", "billed_count", "billed_hours", "binned_max", "binned_max_by", "binned_max_hours", "block_keys",
    "flatten", "instance_hours", "instance_hours_readings", "percentile", "spread", "stats", "step_integral_hours", "summarize",
]
