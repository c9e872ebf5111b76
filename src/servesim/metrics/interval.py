"""Sampling intervals of a percentile's relative error between two paired request tables.

A comparison of a simulator with an engine on the same requests reads one percentile of each
side's per-request latencies and reports ``sim / engine - 1``. With a hundred requests that
number moves with which requests happened to fall in the tail: a P90 taken at a cliff in the
distribution (ten requests queued behind a long prompt, the eleventh not) flips by tens of
percent when one request crosses it (issue 33: the quick engine's TTFT P90 at load 0.9 sat
between 58 and 76 ms, and the simulator's one extra slow request read +29 %). The interval says
how far the error is pinned down by the sample.

``paired_interval`` resamples the requests, the same draw on both sides (the pairing is the
point: both sides saw these arrivals), in blocks of consecutive arrivals (a queue carries one
request's wait into the next ones', so single requests are not independent; the block length
grows as n^(1/3), the usual rate for a moving-block bootstrap of a variance), and reads the
percentile of every draw exactly as ``numpy.percentile`` (linear) reads it of the sample.
Several repeats of one workload (rows aligned: the same requests in the same order) are drawn
with the same indices and combined as the comparison combines them: the median over the repeats
of each side, then the ratio.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

#: the two-sided coverage of `paired_interval`
LEVEL = 0.90
#: bootstrap draws (a 90 % interval's ends are the 5th and 95th of them)
DRAWS = 1000


def block_length(n: int) -> int:
    """Consecutive requests per bootstrap block for ``n`` requests: round(n^(1/3)), at least 1."""
    return max(1, min(int(n), int(round(n ** (1 / 3))))) if n > 0 else 1


def block_indices(n: int, draws: int, rng: np.random.Generator, block: int | None = None) -> np.ndarray:
    """``draws`` x ``n`` row indices of a moving-block bootstrap: blocks of ``block`` consecutive
    rows starting anywhere they fit, concatenated and cut to ``n``."""
    if n < 1:
        raise ValueError("block_indices: no rows to draw from")
    b = block_length(n) if block is None else int(block)
    if not 1 <= b <= n:
        raise ValueError(f"block_indices: block {b} must be in 1..{n}")
    k = -(-n // b)  # blocks per draw
    starts = rng.integers(0, n - b + 1, size=(draws, k))
    return (starts[:, :, None] + np.arange(b)).reshape(draws, k * b)[:, :n]


def row_percentiles(x: np.ndarray, qs: Sequence[float]) -> np.ndarray:
    """Percentiles ``qs`` of each row of ``x`` over its non-NaN values, as ``numpy.percentile``
    (method linear) takes them: shape (len(qs), rows); NaN for a row without values."""
    x = np.asarray(x, dtype=np.float64)
    s = np.sort(x, axis=1)  # NaNs sort last
    k = (~np.isnan(x)).sum(axis=1)
    rows = np.arange(len(x))
    out = np.full((len(qs), len(x)), np.nan)
    ok = k > 0
    for i, q in enumerate(qs):
        pos = (np.maximum(k, 1) - 1) * (q / 100.0)
        lo = np.floor(pos).astype(np.int64)
        hi = np.minimum(lo + 1, np.maximum(k, 1) - 1)
        v = s[rows, lo] + (s[rows, hi] - s[rows, lo]) * (pos - lo)
        out[i] = np.where(ok, v, np.nan)
    return out


def paired_interval(engine: Sequence[np.ndarray], sim: Sequence[np.ndarray], qs: Sequence[float], *,
                    level: float = LEVEL, draws: int = DRAWS, seed: int = 0,
                    block: int | None = None) -> np.ndarray:
    """The ``level`` interval of ``median_r P_q(sim_r) / median_r P_q(engine_r) - 1`` for each
    percentile ``q`` under a paired moving-block bootstrap of the requests.

    ``engine`` / ``sim``: one array per repeat, every array the same requests in arrival order
    (NaN: a request left out of that side's statistic, e.g. one that did not finish). Returns an
    array (len(qs), 2): the interval's low and high ends; NaN where a draw has no ratio (an engine
    percentile of 0 or none at all) in more than half the draws.
    """
    if len(engine) != len(sim) or not len(engine):
        raise ValueError(f"paired_interval: {len(engine)} engine and {len(sim)} sim repeats (one or more each)")
    n = {len(a) for a in (*engine, *sim)}
    if len(n) != 1:
        raise ValueError(f"paired_interval: the repeats have different request counts {sorted(n)}")
    if not 0 < level < 1:
        raise ValueError(f"paired_interval: level {level!r} must be in (0, 1)")
    (n,) = n
    idx = block_indices(n, draws, np.random.default_rng(seed), block)
    side = [np.median(np.stack([row_percentiles(np.asarray(a, np.float64)[idx], qs) for a in arrays]), axis=0)
            for arrays in (engine, sim)]
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(side[0] > 0, side[1] / side[0] - 1.0, np.nan)
    tail = (1.0 - level) / 2.0
    out = np.full((len(qs), 2), np.nan)
    for i, r in enumerate(ratio):
        r = r[np.isfinite(r)]
        if len(r) * 2 > draws:
            out[i] = np.quantile(r, [tail, 1.0 - tail])
    return out
