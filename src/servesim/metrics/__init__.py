"""Serving metrics and the one run-summary schema (``servesim.metrics``).

A low layer: it reads per-request result tables, fleet ledgers and timeseries as plain pandas
frames and imports nothing from servesim but the workload schema, so ``sim``, ``fleet``,
``engine``, the paper packages and the notebooks can all use it.

    from servesim.metrics import summarize, SLO
    s = summarize(res.requests, slo=SLO(ttft_s=1.0, tpot_s=0.1), groups={"iw": ("IW-F", "IW-N")})
    s["all"]["p99_ttft_s"], s["by_tier"]["IW-F"]["deadline_attainment"], s["groups"]["iw"]["completed"]

Modules: ``latency`` (TTFT / TPOT / ITL / E2EL / normalised latency statistics), ``slo``
(per-request and per-token attainment, deadlines, goodput), ``instance_hours`` (billed states,
the instance-hours readings: the authors', the summed maxima, the exact integral), ``spread``
(run-to-run spread across repeats), ``interval`` (the sampling interval of a percentile's
relative error between paired request tables), ``summary`` (``summarize`` and the versioned layout),
``bounds`` (a censored value marked as a bound, ``<key>__bound``, and how a check reads it).
"""

from .instance_hours import (
    AUTHORS_TICK_S,
    BILLED_STATES,
    BIN_S,
    IH_READING_LABELS,
    IH_READINGS,
    MAX_SAMPLE_S,
    authors_binned_max,
    authors_ticks,
    billed_authors_bins,
    billed_authors_hours,
    billed_binned_max_hours,
    billed_count,
    billed_events,
    billed_hours,
    billed_instance_hours,
    binned_max,
    binned_max_by,
    binned_max_hours,
    count_at,
    instance_hours,
    instance_hours_readings,
    step_integral_hours,
)
from .latency import LATENCY_METRICS, PERCENTILES, percentile, stats
from .slo import COMPLETION_DEADLINE_TIERS, SLO
from .spread import flatten, seed_band, spread
from .interval import paired_interval
from .summary import SCHEMA_VERSION, block_keys, request_values, summarize

__all__ = [
    "AUTHORS_TICK_S", "BILLED_STATES", "BIN_S", "COMPLETION_DEADLINE_TIERS", "IH_READINGS", "IH_READING_LABELS",
    "LATENCY_METRICS", "MAX_SAMPLE_S", "PERCENTILES", "SCHEMA_VERSION", "SLO", "authors_binned_max", "authors_ticks",
    "billed_authors_bins", "billed_authors_hours", "billed_binned_max_hours", "billed_count", "billed_events",
    "billed_hours", "billed_instance_hours", "binned_max", "binned_max_by", "binned_max_hours", "block_keys", "count_at",
    "flatten", "instance_hours", "instance_hours_readings", "paired_interval", "percentile", "request_values", "seed_band",
    "spread", "stats", "step_integral_hours", "summarize",
]
