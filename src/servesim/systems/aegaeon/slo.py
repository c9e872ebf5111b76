"""Aegaeon's SLO attainment and goodput (spec aegaeon §1.2).

- `attain_ae`: the artifact's ``compute_slo`` rule, the one that produced every SLO figure. Per
  request, with tau_k the time of token k since arrival: a running target starts at TTFT and grows
  by TBT per token; a token on time (tau_k - start <= target) sets ``accum = target``; a late one
  adds ``accum`` to the on-time total, re-bases ``start = tau_k`` and zeroes ``accum`` (``target``
  keeps growing from the original TTFT: the artifact's quirk). At the end the total gets
  ``min(target, tau_last - start)``; attainment = total / tau_last.
- `attain_token`: the fraction of tokens that meet buffered deadlines (token k due at
  anchor + (k - k0) * TBT, anchor = arrival + TTFT for k0 = 0), re-based at each missed token.
- Overall attainment is the unweighted mean over requests; a failed request or one with no
  output counts 0 (``skip_failed=True`` drops them instead, as the artifact did for its real
  Aegaeon runs).
- goodput over a sweep: ``servesim.metrics.slo.goodput_x`` (the one definition, with its readings).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

#: §7.2: "the maximum goodput while meeting the 90% overall SLO requirement"
GOODPUT_LINE = 0.9


def attain_ae(arrival: float, token_times, ttft: float, tbt: float) -> float:
    """The artifact's per-request attainment in [0, 1] (0 for a request with no token)."""
    ts = np.asarray(token_times, float)
    if ts.size == 0:
        return 0.0
    tau = ts - arrival
    total = float(tau[-1])
    if total <= 0:
        return 1.0
    qos = start = accum = 0.0
    target = ttft
    for t in tau.tolist():
        if t - start <= target:
            accum = target
        else:
            qos += accum
            start = t
            accum = 0.0
        target += tbt
    qos += min(target, total - start)
    return qos / total


def attain_token(arrival: float, token_times, ttft: float, tbt: float) -> float:
    """Fraction of tokens meeting their buffered deadline, re-based after each miss."""
    ts = np.asarray(token_times, float)
    if ts.size == 0:
        return 0.0
    anchor, k0, met = arrival + ttft, 0, 0
    for k, t in enumerate(ts.tolist()):
        if t <= anchor + (k - k0) * tbt:
            met += 1
        else:
            anchor, k0 = t, k
    return met / ts.size


def per_request(table: pd.DataFrame, ttft: float, tbt: float) -> pd.DataFrame:
    """``attain_ae`` and ``attain_token`` per request of a results table (failed -> 0)."""
    ae, tok = [], []
    for a, ts, f in zip(table.arrival_s, table.token_times, table.failed):
        if f:
            ae.append(0.0)
            tok.append(0.0)
        else:
            ae.append(attain_ae(a, ts, ttft, tbt))
            tok.append(attain_token(a, ts, ttft, tbt))
    return pd.DataFrame({"request_id": table.request_id.to_numpy(), "attain_ae": ae, "attain_token": tok})


def attainment(table: pd.DataFrame, ttft: float, tbt: float, metric: str = "attain_ae",
               skip_failed: bool = False) -> float:
    """Overall attainment in [0, 1]: unweighted mean over requests."""
    if metric not in ("attain_ae", "attain_token"):
        raise ValueError(f"attainment: metric={metric!r}; expected attain_ae|attain_token")
    if len(table) == 0:
        return float("nan")
    pr = per_request(table, ttft, tbt)
    keep = ~(table.failed.to_numpy() | (table.tokens_out.to_numpy() == 0)) if skip_failed else np.ones(len(pr), bool)
    return float(pr[metric].to_numpy()[keep].mean()) if keep.any() else float("nan")
