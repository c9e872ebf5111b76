"""Latency statistics of a per-request result table, named as ``vllm bench serve`` names them.

Metrics (per completed request unless said otherwise; seconds):

- ``ttft``: time to first token, arrival -> first token (``ttft_s``).
- ``tpot``: time per output token after the first, ``(last token - first token) / (output - 1)``
  (the table's ``tbt_mean_s``); requests with fewer than two tokens have none.
- ``itl``: inter-token latency, every gap between consecutive tokens of every request pooled.
  Its mean is exact from the per-request table (``sum(tpot * (output - 1)) / sum(output - 1)``);
  its spread needs the token times (a ``tokens`` table: ``request_id``, ``time_s``), else None.
- ``e2el``: end-to-end latency, arrival -> last token (``e2e_s``).
- ``e2el_per_token``: normalised latency, ``e2el / output tokens`` (seconds per token).
- ``queue``: arrival -> first scheduled (``scheduled_s``; None where the engine does not record it).

Each metric gives ``mean_<m>_s``, ``median_<m>_s``, ``std_<m>_s`` (population, as vLLM) and
``p<q>_<m>_s`` per requested percentile (``numpy.percentile``, linear interpolation; a
fractional q is written as vLLM does: ``p99.9_ttft_s``). The median is the 50th percentile by
the same rule. An empty selection gives None.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

#: percentiles every summary reports
PERCENTILES: tuple[float, ...] = (50, 75, 90, 95, 99)
#: metric names, in the order a summary lists them
LATENCY_METRICS: tuple[str, ...] = ("ttft", "tpot", "itl", "e2el", "e2el_per_token", "queue")


def p_word(q: float) -> str:
    """vLLM's spelling of a percentile in a key: 99 -> "99", 99.9 -> "99.9"."""
    return str(int(q)) if int(q) == q else str(q)


def stat_keys(metric: str, percentiles: Sequence[float] = PERCENTILES) -> list[str]:
    """The keys :func:`stats` writes for ``metric``."""
    return ([f"mean_{metric}_s", f"median_{metric}_s", f"std_{metric}_s"]
            + [f"p{p_word(q)}_{metric}_s" for q in percentiles])


def stats(x: np.ndarray, metric: str, percentiles: Sequence[float] = PERCENTILES) -> dict[str, float | None]:
    """Mean, median, std and percentiles of ``x`` (NaNs dropped) under ``metric``'s keys."""
    x = np.asarray(x, dtype=np.float64)
    x = x[~np.isnan(x)]
    if not x.size:
        return dict.fromkeys(stat_keys(metric, percentiles))
    pct = np.percentile(x, [50, *percentiles])  # one partition for all (the median is the 50th)
    out = {f"mean_{metric}_s": float(x.mean()), f"median_{metric}_s": float(pct[0]),
           f"std_{metric}_s": float(x.std())}
    out.update({f"p{p_word(q)}_{metric}_s": float(v) for q, v in zip(percentiles, pct[1:])})
    return out


def percentile(x, q: float) -> float | None:
    """``numpy.percentile(x, q)`` of the non-NaN values, or None when there are none."""
    x = np.asarray(x, dtype=np.float64)
    x = x[~np.isnan(x)]
    return float(np.percentile(x, q)) if x.size else None


def per_request(columns: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Per-request values of every metric but ``itl`` (float64 arrays, NaN where none), from
    the result table's columns (``ttft_s``, ``tbt_mean_s``, ``e2e_s``, ``output_tokens``, and
    ``scheduled_s``/``arrival_s`` when present)."""
    out_tok = columns["output_tokens"].astype(np.float64)
    e2e = columns["e2e_s"]
    with np.errstate(divide="ignore", invalid="ignore"):
        norm = np.where(out_tok > 0, e2e / out_tok, np.nan)
    n = len(e2e)
    queue = (columns["scheduled_s"] - columns["arrival_s"]) if "scheduled_s" in columns else np.full(n, np.nan)
    return {"ttft": columns["ttft_s"], "tpot": columns["tbt_mean_s"], "e2el": e2e,
            "e2el_per_token": norm, "queue": queue}


def mean_itl(tpot: np.ndarray, output_tokens: np.ndarray) -> float | None:
    """Mean of all inter-token gaps pooled over requests, from each request's TPOT and length."""
    ok = ~np.isnan(tpot) & (output_tokens >= 2)
    gaps = (output_tokens[ok] - 1).astype(np.float64)
    return float((tpot[ok] * gaps).sum() / gaps.sum()) if gaps.sum() > 0 else None


def token_gaps(tokens: pd.DataFrame, request_ids) -> np.ndarray:
    """Every gap between consecutive token times of the given requests (a long ``tokens``
    table: ``request_id``, ``time_s``, in token order within a request)."""
    t = tokens[tokens["request_id"].isin(np.asarray(request_ids))]
    rid = t["request_id"].to_numpy()
    times = t["time_s"].to_numpy(np.float64)
    same = rid[1:] == rid[:-1]
    return np.diff(times)[same]
