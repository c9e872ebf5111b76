"""Vectorised arrival processes and shared helpers for the generators.

Inhomogeneous Poisson arrivals are drawn as per-bin Poisson counts plus uniform offsets inside
each bin (exact for a piecewise-constant rate); a Cox (doubly stochastic) process multiplies each
bin's rate by log-normal noise of mean 1. No Python loop runs per request.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .schema import make


def seeds(seed: int, n: int) -> list[np.random.Generator]:
    """``n`` independent generators split from one seed (one per component)."""
    return [np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(n)]


def lognormal_noise(rng: np.random.Generator, shape, sigma: float) -> np.ndarray:
    """Multiplicative noise with mean 1 (``exp(sigma z - sigma^2/2)``); ones when ``sigma == 0``."""
    if sigma <= 0:
        return np.ones(shape)
    return np.exp(sigma * rng.standard_normal(shape) - 0.5 * sigma * sigma)


def bin_arrivals(rng: np.random.Generator, rates: np.ndarray, bin_s: float, t0: float = 0.0):
    """Poisson arrivals for rates (expected requests per bin) of shape ``(streams, bins)``.

    Returns ``(arrival_s, stream)`` sorted by time (stable, so ties keep stream order).
    """
    rates = np.atleast_2d(np.asarray(rates, dtype=np.float64))
    counts = rng.poisson(rates).ravel()
    n_streams, n_bins = rates.shape
    flat = np.repeat(np.arange(counts.size, dtype=np.int64), counts)
    t = t0 + (flat % n_bins) * bin_s + rng.random(flat.size) * bin_s
    stream = (flat // n_bins).astype(np.int32)
    order = np.argsort(t, kind="stable")
    return t[order], stream[order]


def lognormal_lengths(rng: np.random.Generator, median: np.ndarray, sigma: np.ndarray,
                      lo: int = 1, hi: np.ndarray | int = 1 << 20) -> np.ndarray:
    """Integer lengths ``round(median * exp(sigma z))`` clipped to ``[lo, hi]`` (arrays broadcast)."""
    z = rng.standard_normal(np.shape(median))
    return np.clip(np.rint(median * np.exp(sigma * z)), lo, hi).astype(np.int64)


def categorical(codes: np.ndarray, names) -> pd.Categorical:
    return pd.Categorical.from_codes(np.asarray(codes), categories=list(names))


def lengths_to_poisson(lengths: pd.DataFrame, rate_rps: float, duration_s: float, seed: int = 0, *,
                       model: str = "default", app: str = "default", tier: str = "IW-F",
                       with_rows: bool = False) -> pd.DataFrame | tuple[pd.DataFrame, np.ndarray]:
    """A homogeneous Poisson workload at ``rate_rps`` for ``duration_s`` whose (prompt, output) pairs
    are drawn with replacement from ``lengths`` (columns prompt_tokens, output_tokens), e.g.
    ShareGPT pairs for PreServe's RQ3 / Aegaeon. ``with_rows``: also the drawn rows' positions in
    ``lengths``, for what a caller keeps beside the pairs (PreServe: each pair's predicted length)."""
    r_t, r_l = seeds(seed, 2)
    n = r_t.poisson(rate_rps * duration_s)
    t = np.sort(r_t.random(n) * duration_s)
    idx = r_l.integers(0, len(lengths), n)
    wl = make(t, lengths["prompt_tokens"].to_numpy()[idx], lengths["output_tokens"].to_numpy()[idx],
              model=model, app=app, tier=tier, source="<lengths_to_poisson>")
    return (wl, idx) if with_rows else wl
