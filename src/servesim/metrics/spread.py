"""Run-to-run spread: how much each metric moves across repeats of one run (seeds)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np


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


def _number(v) -> bool:
    return isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool) and v == v
