"""Per-request results: the REQUEST_COLUMNS table (shared with the real-engine replay).

A :class:`RequestLog` holds one row per workload request in NumPy arrays (filled as requests
reach a terminal state, or closed as ``partial`` when a run stops early) and turns into the
DataFrame with :func:`request_frame`. TBT = gaps between consecutive output tokens (the first
token excluded); ``tbt_mean = (last_token_s - first_token_s) / (output_tokens - 1)``; ``tbt_p99``
is ``numpy.percentile(gaps, 99)`` (linear interpolation); NaN with fewer than two tokens.
"""

from __future__ import annotations


import numpy as np
import pandas as pd

from .request import DROPPED, FINISHED, REJECTED, Req  # noqa: F401

#: column -> dtype of the per-request result table (contract shared with servesim.engine)
REQUEST_COLUMNS: dict[str, str] = {
    "request_id": "int64",
    "model": "string",
    "region": "string",
    "tier": "string",
    "instance": "string",
    "arrival_s": "float64",
    "prompt_tokens": "int64",
    "output_tokens": "int64",
    "state": "string",
    "reason": "string",
    "scheduled_s": "float64",
    "first_token_s": "float64",
    "finish_s": "float64",
    "ttft_s": "float64",
    "e2e_s": "float64",
    "tbt_mean_s": "float64",
    "tbt_max_s": "float64",
    "tbt_p99_s": "float64",
    "preemptions": "int64",
    "partial": "bool",
}

STATES = ("unfinished", "finished", "rejected", "timeout", "error")
_CODE = {FINISHED: 1, REJECTED: 2, DROPPED: 4}


def p99(g: np.ndarray, inplace: bool = False) -> float:
    """``numpy.percentile(g, 99)`` (default linear method), bit for bit, in O(n) without sorting.

    ``inplace=True`` lets it reorder ``g``.

    NumPy computes the virtual index ``(n - 1) * 0.99``, takes the order statistics around it
    and interpolates with ``a + (b - a) * t`` (``b - (b - a) * (1 - t)`` when ``t >= 0.5``);
    the same float64 operations are done here on the two order statistics from a partition.
    """
    n = len(g)
    v = (n - 1) * 0.99
    if v >= n - 1:
        return float(g.max())
    lo = int(v)
    t = v - lo
    part = g if inplace else g.copy()
    part.partition((lo, lo + 1))
    a = part[lo]
    b = part[lo + 1]
    d = b - a
    return float(b - d * (1 - t)) if t >= 0.5 else float(a + d * t)


class RequestLog:
    """Result arrays indexed by workload row."""

    __slots__ = ("n", "state", "instance", "sched", "first", "finish", "tbt_mean", "tbt_max",
                 "tbt_p99", "preemptions", "partial", "reasons", "tbt_p99_on")

    def __init__(self, n: int, tbt_p99: bool = True) -> None:
        self.n = n
        self.state = np.zeros(n, dtype=np.int8)
        self.instance = np.full(n, -1, dtype=np.int32)
        nan = np.full(n, np.nan)
        self.sched = nan.copy()
        self.first = nan.copy()
        self.finish = nan.copy()
        self.tbt_mean = nan.copy()
        self.tbt_max = nan.copy()
        self.tbt_p99 = nan
        self.preemptions = np.zeros(n, dtype=np.int64)
        self.partial = np.zeros(n, dtype=bool)
        self.reasons: dict[int, str] = {}
        self.tbt_p99_on = tbt_p99

    def record(self, r: Req, partial: bool = False) -> None:
        """Copy ``r``'s results into row ``r.idx`` (terminal, or partial when a run stops)."""
        i = r.idx
        self.state[i] = 0 if partial else _CODE[r.state]
        self.instance[i] = r.inst
        self.sched[i] = r.sched_t
        self.first[i] = r.first_t
        self.finish[i] = r.finish_t
        self.preemptions[i] = r.preemptions
        self.partial[i] = partial
        if r.reason:
            self.reasons[i] = r.reason
        if r.state == FINISHED and r.output >= 2 and not partial:
            self.tbt_mean[i] = (r.last_t - r.first_t) / (r.output - 1)
            parts = r.stints
            if r.gaps:
                parts = (parts or []) + [np.asarray(r.gaps, dtype=np.float64)]
            g = parts[0] if len(parts) == 1 else np.concatenate(parts)
            if len(g) != r.output - 1:
                raise AssertionError(f"request {r.rid}: {len(g)} token gaps for {r.output} tokens")
            self.tbt_max[i] = g.max()
            if self.tbt_p99_on:
                self.tbt_p99[i] = p99(g, inplace=True)  # g is not used again


def request_frame(log: RequestLog, workload: pd.DataFrame, instance_names: list[str]) -> pd.DataFrame:
    """The REQUEST_COLUMNS DataFrame for ``workload`` (row order kept)."""
    n = log.n
    names = np.asarray(list(instance_names) + [""], dtype=object)
    inst = names[log.instance]  # -1 -> ""
    reason = np.full(n, "", dtype=object)
    for i, s in log.reasons.items():
        reason[i] = s
    arrival = workload["arrival_s"].to_numpy(dtype=np.float64)
    df = pd.DataFrame({
        "request_id": workload["request_id"].to_numpy(dtype=np.int64),
        "model": workload["model"].to_numpy(),
        "region": workload["region"].to_numpy() if "region" in workload else "",
        "tier": workload["tier"].to_numpy() if "tier" in workload else "",
        "instance": inst,
        "arrival_s": arrival,
        "prompt_tokens": workload["prompt_tokens"].to_numpy(dtype=np.int64),
        "output_tokens": workload["output_tokens"].to_numpy(dtype=np.int64),
        "state": np.asarray(STATES, dtype=object)[log.state],
        "reason": reason,
        **timing_columns(log, arrival),
        "partial": log.partial,
    })
    return df.astype(REQUEST_COLUMNS)


def timing_columns(log: RequestLog, arrival: np.ndarray) -> dict[str, np.ndarray]:
    """The timing columns of REQUEST_COLUMNS (``scheduled_s`` ... ``tbt_p99_s``) and
    ``preemptions`` from ``log`` and the requests' ``arrival`` times (float64)."""
    return {
        "scheduled_s": log.sched,
        "first_token_s": log.first,
        "finish_s": log.finish,
        "ttft_s": log.first - arrival,
        "e2e_s": np.where(log.state == 1, log.finish - arrival, np.nan),
        "tbt_mean_s": log.tbt_mean,
        "tbt_max_s": log.tbt_max,
        "tbt_p99_s": log.tbt_p99,
        "preemptions": log.preemptions,
    }


def empty_request_frame() -> pd.DataFrame:
    """A zero-row table with the REQUEST_COLUMNS dtypes."""
    return pd.DataFrame({c: pd.Series(dtype=t) for c, t in REQUEST_COLUMNS.items()})
