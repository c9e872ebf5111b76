"""Where a request's time goes: the six-way latency breakdown of Aegaeon Fig 14 and the
switch-latency / per-request overhead distributions of Fig 15.

`request_breakdown` splits each completed request's time in the system (arrival -> last token)
into the paper's categories (§7.3): prefill waiting (in a job queue) and execution, decoding
waiting (in a work list) and execution, control overhead and data overhead (explicit waits for KV
transfers). It reads a per-request table with the columns

    arrival_s, prefill_start_s, prefill_switch_s, first_token_s, finish_s, exec_s,
    switch_wait_s, kv_wait_s, failed

(``exec_s``: compute time of every step the request was in, its prefill included;
``prefill_switch_s`` / ``switch_wait_s``: model loads its prefill / decode turns waited on;
``kv_wait_s``: the KV transfers it waited on). Model loads are waiting, as in the paper, whose
control overhead is cache-index and event bookkeeping; they are also given apart
(``autoscaling_wait``). A table without a control-plane latency (``control_s`` column) has control
overhead 0. Decoding waiting is the remainder, so the six parts sum to the request's time.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

CATEGORIES = ("prefill_waiting", "prefill_execution", "decoding_waiting", "decoding_execution",
              "control_overhead", "data_overhead")
LABELS = {"prefill_waiting": "Prefill Waiting", "prefill_execution": "Prefill Execution",
          "decoding_waiting": "Decoding Waiting", "decoding_execution": "Decoding Execution",
          "control_overhead": "Control Overhead", "data_overhead": "Data Overhead"}
NEED = ("arrival_s", "prefill_start_s", "prefill_switch_s", "first_token_s", "finish_s", "exec_s", "switch_wait_s",
        "kv_wait_s", "failed")


def request_breakdown(table: pd.DataFrame) -> pd.DataFrame:
    """Seconds per category for every completed request (failed or unfinished ones dropped), with
    ``total`` and ``autoscaling_wait`` (model loads inside the two waiting categories)."""
    miss = [c for c in NEED if c not in table.columns]
    if miss:
        raise ValueError(f"request_breakdown: missing column(s) {miss}")
    t = table[~table.failed.to_numpy(bool) & np.isfinite(table.finish_s.to_numpy(float))]
    total = t.finish_s - t.arrival_s
    p_exec = t.first_token_s - t.prefill_start_s - t.prefill_switch_s
    control = t["control_s"] if "control_s" in t.columns else pd.Series(0.0, index=t.index)
    out = pd.DataFrame({
        "prefill_waiting": t.prefill_start_s - t.arrival_s + t.prefill_switch_s,
        "prefill_execution": p_exec,
        "decoding_execution": t.exec_s - p_exec,
        "control_overhead": control,
        "data_overhead": t.kv_wait_s,
    })
    out["decoding_waiting"] = total - out.sum(axis=1)
    out["total"] = total
    out["autoscaling_wait"] = t.prefill_switch_s + t.switch_wait_s
    bad = (out[list(CATEGORIES)] < -1e-9).any(axis=1)
    if bad.any():
        raise ValueError(f"request_breakdown: negative time in {int(bad.sum())} request(s), e.g. row "
                         f"{out.index[bad.to_numpy()][0]}: the table's accounting is inconsistent")
    return out[[*CATEGORIES, "total", "autoscaling_wait"]]


def shares_pct(breakdown: pd.DataFrame) -> dict[str, float]:
    """Each category's share (%) of the total time summed over all requests (Fig 14's bars)."""
    tot = float(breakdown.total.sum())
    cols = [*CATEGORIES, "autoscaling_wait"]
    return {c: (100.0 * float(breakdown[c].sum()) / tot if tot > 0 else float("nan")) for c in cols}


def ecdf(values) -> tuple[np.ndarray, np.ndarray]:
    """Sorted values and their cumulative fractions (i/n), for a CDF plot."""
    v = np.sort(np.asarray(values, float))
    return v, np.arange(1, v.size + 1) / v.size if v.size else np.array([])


def near_instant_fraction(latency_s, threshold_s: float) -> float:
    """Fraction of switches whose latency is at most ``threshold_s`` (NaN for no switch)."""
    v = np.asarray(latency_s, float)
    return float((v <= threshold_s).mean()) if v.size else float("nan")
