"""Censored metrics: a value that is a bound, not a measurement.

A goodput read off a load sweep is censored when the system still meets the line at the sweep's
last load: the sweep ends before the system fails, so its goodput is *at least* that load. A
metric computed from such a goodput (a ratio, a drop, a per-GPU count) is then a bound too. The
notebook says so next to the value, in the same metrics.json:

    "goodput_ratio_sllm_rps0p5": 3.0, "goodput_ratio_sllm_rps0p5__bound": "lower"

``lower``: the true value is at least this one; ``upper``: at most; ``unknown``: censored inputs
move it both ways (it could be anything). ``servesim.analysis.claims`` decides a check on a
bound only where every value the bound allows gives the same verdict, and reports the claim
NOT-CHECKED otherwise, so a PASS never rests on where a grid happened to end.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable

#: the suffix of a metric's bound key in metrics.json (``<key>__bound``)
BOUND_SUFFIX = "__bound"
BOUND_KINDS = ("lower", "upper", "unknown")


def interval(value: float, bound: str | None) -> tuple[float, float]:
    """The values a metric may truly take: ``[value, value]`` when measured (``bound`` None),
    ``[value, inf)`` for a lower bound, ``(-inf, value]`` for an upper one, everything for
    ``unknown``."""
    v = float(value)
    if bound is None:
        return v, v
    if bound not in BOUND_KINDS:
        raise ValueError(f"bound {bound!r}; expected one of {BOUND_KINDS} or None")
    return {"lower": (v, math.inf), "upper": (-math.inf, v), "unknown": (-math.inf, math.inf)}[bound]


def _direction(before, after) -> str | None:
    """Which way a censored input's rise moved a numeric value: lower (up), upper (down), None."""
    if isinstance(before, bool) or isinstance(after, bool):
        return None if before == after else "unknown"
    if not all(isinstance(v, (int, float)) for v in (before, after)):
        return None
    b, a = float(before), float(after)
    if math.isnan(b) and math.isnan(a) or b == a:
        return None
    if math.isnan(b) or math.isnan(a):
        return "unknown"
    return "lower" if a > b else "upper"


def censored_bounds(base: dict, raised: Iterable[dict]) -> dict[str, str]:
    """``{key: bound}`` for the keys of ``base`` that a censored input moves. ``raised`` holds the
    same metrics recomputed with one censored input raised at a time (its true value is higher):
    a key that only rises is a lower bound, one that only falls an upper bound, one that moves
    both ways (or between a number and NaN, or a flag that flips) ``unknown``."""
    seen: dict[str, set[str]] = {}
    for other in raised:
        for k, v in base.items():
            d = _direction(v, other.get(k))
            if d:
                seen.setdefault(k, set()).add(d)
    return {k: ds.pop() if len(ds) == 1 else "unknown" for k, ds in seen.items()}


def with_censoring(compute: Callable[[list[int]], dict], censored: list[int]) -> dict:
    """``compute([])`` (the metrics as measured) plus ``<key>__bound`` for every key that the
    censored inputs move; ``compute([i])`` recomputes with censored input ``i`` raised."""
    base = compute([])
    bounds = censored_bounds(base, (compute([i]) for i in censored))
    return {**base, **{f"{k}{BOUND_SUFFIX}": b for k, b in bounds.items()}}


def combine(bounds: Iterable[str | None]) -> str | None:
    """The bound of a monotone summary (min, max, mean) of values with these bounds: None if all
    are measured, the one direction if they share it, ``unknown`` if they disagree."""
    ds = {b for b in bounds if b}
    if not ds:
        return None
    return ds.pop() if len(ds) == 1 else "unknown"
