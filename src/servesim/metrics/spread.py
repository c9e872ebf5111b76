"""Run-to-run spread: how much each metric moves across repeats of one run (seeds)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from .bounds import BOUND_SUFFIX, combine


def flatten(summary: Mapping, prefix: str = "") -> dict:
    """Nested summary -> ``{"all.p95_ttft_s": 1.2, ...}`` (dotted paths to every leaf)."""
    out: dict = {}
    for k, v in summary.items():
        key = f"{prefix}{k}"
        if isinstance(v, Mapping):
            out.update(flatten(v, key + "."))
        else:
            out[key] = v
    return out


def spread(runs: Sequence[Mapping], keys: Sequence[str] | None = None) -> dict[str, dict]:
    """Per numeric metric (dotted path; ``keys`` or every path numeric in all runs) across
    ``runs`` (summaries of repeats): ``n``, ``mean``, ``std`` (sample, ddof = 1; None for one
    run), ``min``, ``max`` and ``rel_spread = (max - min) / |mean|`` (None when the mean is 0).
    A run where the metric is None or missing is left out of that metric's numbers."""
    if not runs:
        raise ValueError("spread: no runs given")
    flat = [flatten(r) for r in runs]
    if keys is None:
        keys = [k for k in flat[0] if all(_number(f.get(k)) for f in flat)]
    out = {}
    for k in keys:
        x = np.array([f[k] for f in flat if _number(f.get(k))], dtype=np.float64)
        if not x.size:
            out[k] = {"n": 0, "mean": None, "std": None, "min": None, "max": None, "rel_spread": None}
            continue
        mean = float(x.mean())
        out[k] = {"n": int(x.size), "mean": mean, "std": float(x.std(ddof=1)) if x.size > 1 else None,
                  "min": float(x.min()), "max": float(x.max()),
                  "rel_spread": float((x.max() - x.min()) / abs(mean)) if mean else None}
    return out


def _numeric(v) -> bool:
    """A number, not a bool (NaN included)."""
    return isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool)


def _number(v) -> bool:
    return _numeric(v) and v == v


SEED_STATS = ("min", "max", "mean")


def seed_band(per_seed: Sequence[Mapping]) -> dict:
    """Metrics computed on each seed alone (flat dicts, one per seed), summarised over the seeds as
    ``<key>__seed_min`` / ``__seed_max`` / ``__seed_mean`` for every key numeric (not bool) in all
    of them; NaN for the three when a seed's value is not finite (no band without every seed). A
    key with a bound (``<key>__bound``, :mod:`.bounds`) in some seed passes it on to its summaries
    (min, max and mean keep a bound's direction). ``seeds``: how many. An ordering judged on the
    band compares one side's ``__seed_max`` with the other's ``__seed_min``: it holds only if every
    seed agrees."""
    out: dict = {}
    for key in (per_seed[0] if per_seed else {}):
        if key.endswith(BOUND_SUFFIX):
            continue
        vals = [p.get(key) for p in per_seed]
        if not all(map(_numeric, vals)):
            continue
        v = np.asarray(vals, float)
        finite = v[np.isfinite(v)]
        band = ((float(finite.min()), float(finite.max()), float(finite.mean())) if finite.size == v.size
                else (float("nan"),) * 3)
        out.update({f"{key}__seed_{s}": x for s, x in zip(SEED_STATS, band)})
        b = combine(p.get(f"{key}{BOUND_SUFFIX}") for p in per_seed)
        if b and finite.size == v.size:
            out.update({f"{key}__seed_{s}{BOUND_SUFFIX}": b for s in SEED_STATS})
    out["seeds"] = len(per_seed)
    return out
