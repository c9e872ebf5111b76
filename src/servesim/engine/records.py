"""Per-request and per-token tables of a replay, in the simulator's result schema.

The replay client records, for each request, when it was sent and when each output token
arrived (seconds from the workload's start). This module turns those observations into the
per-request table the simulator also produces (``servesim.sim.request_log.REQUEST_COLUMNS``), so
the two compare column for column.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from servesim.sim.request_log import REQUEST_COLUMNS, STATES  # the contract shared with the simulator

#: ``preemptions`` is engine-internal and invisible to an HTTP client: a replay writes -1
#: ("not observed") per request and the run's total (from /metrics) in summary.json.
#: ``scheduled_s`` is likewise NaN in a replay.
NOT_OBSERVED = -1

TOKEN_COLUMNS: dict[str, str] = {"request_id": "int64", "token_index": "int64", "time_s": "float64"}


@dataclass
class RequestRecord:
    """What the client saw of one request (times in seconds from the workload's start)."""

    request_id: int
    arrival_s: float
    sent_s: float = float("nan")
    #: arrival time of each output token (a chunk of k tokens gives k equal times)
    token_times: list[float] = field(default_factory=list)
    state: str = "unfinished"
    reason: str = ""
    finish_s: float = float("nan")
    #: the run stopped before this request ended (timeout, server crash, interrupt)
    partial: bool = False


def _tbt_stats(times: np.ndarray) -> tuple[float, float, float]:
    if times.size < 2:
        return (np.nan, np.nan, np.nan)
    gaps = np.diff(times)
    return float(gaps.mean()), float(gaps.max()), float(np.percentile(gaps, 99))


def request_table(workload: pd.DataFrame, records: dict[int, RequestRecord],
                  instance: str = "vllm-0") -> pd.DataFrame:
    """The per-request result table for ``workload`` (one row per workload request, in order).

    A request with no record (never sent, e.g. the run was interrupted first) is
    ``unfinished`` and ``partial``.
    """
    rows = []
    for req in workload.itertuples(index=False):
        rid = int(req.request_id)
        rec = records.get(rid) or RequestRecord(rid, float(req.arrival_s), partial=True,
                                                reason="never sent")
        t = np.asarray(rec.token_times, dtype=float)
        first = float(t[0]) if t.size else np.nan
        mean, mx, p99 = _tbt_stats(t)
        finish = rec.finish_s if rec.state == "finished" else np.nan
        rows.append({
            "request_id": rid, "model": req.model, "region": req.region, "tier": req.tier,
            "instance": instance, "arrival_s": float(req.arrival_s),
            "prompt_tokens": int(req.prompt_tokens), "output_tokens": int(req.output_tokens),
            "state": rec.state, "reason": rec.reason, "scheduled_s": np.nan,
            "first_token_s": first, "finish_s": finish,
            "ttft_s": first - float(req.arrival_s), "e2e_s": finish - float(req.arrival_s),
            "tbt_mean_s": mean, "tbt_max_s": mx, "tbt_p99_s": p99,
            "preemptions": NOT_OBSERVED, "partial": bool(rec.partial),
        })
    df = pd.DataFrame(rows, columns=list(REQUEST_COLUMNS))
    return df.astype(REQUEST_COLUMNS)


def token_table(records: dict[int, RequestRecord]) -> pd.DataFrame:
    """Long table of every streamed token: request_id, token_index, time_s."""
    ids, idx, times = [], [], []
    for rid in sorted(records):
        t = records[rid].token_times
        ids.extend([rid] * len(t))
        idx.extend(range(len(t)))
        times.extend(t)
    return pd.DataFrame({"request_id": ids, "token_index": idx, "time_s": times}).astype(TOKEN_COLUMNS)


def check_request_table(df: pd.DataFrame, workload: pd.DataFrame | None = None) -> None:
    """Raise ValueError if ``df`` breaks the result schema or a basic invariant."""
    missing = [c for c in REQUEST_COLUMNS if c not in df.columns]
    if missing:
        raise ValueError(f"request table: missing column(s) {missing}")
    bad = ~df["state"].isin(STATES)
    if bad.any():
        raise ValueError(f"request table: row {int(np.flatnonzero(bad)[0])}: unknown state")
    if workload is not None:
        if sorted(df["request_id"]) != sorted(workload["request_id"]):
            raise ValueError("request table: request ids differ from the workload's")
    fin = df[df["state"] == "finished"]
    if (fin["first_token_s"] < fin["arrival_s"]).any() or (fin["finish_s"] < fin["first_token_s"]).any():
        raise ValueError("request table: a finished request has times out of order")


#: what a recorded step's time is (`step_table`): ``step``, its own wall time (``engine.step()``);
#: ``cycle``, from the end of the step before to its own end while the engine had work (the gap
#: between steps, where the loop hands out the last step's tokens and takes in new requests, is
#: time the engine's requests wait and the simulator's back-to-back steps do not have)
STEP_CLOCKS = ("step", "cycle")


def join_steps(parts: list[pd.DataFrame]) -> pd.DataFrame:
    """Step tables of consecutive drives of one engine as one table: each part's times moved to
    begin where the part before ended, its ``step`` numbers after the part before's. A part begins
    on an idle engine (its first step takes in requests with nothing decoding), so under the clock
    ``cycle`` that step keeps its own time and no time between the parts is counted."""
    out, t, n = [], 0.0, 0
    for p in parts:
        if not len(p):
            continue
        p = p.copy()
        p[["start_s", "end_s"]] = p[["start_s", "end_s"]] + t
        if "step" in p:
            p["step"] = p["step"] - p["step"].iloc[0] + n
        out.append(p)
        t, n = float(p["end_s"].iloc[-1]), n + len(p)
    return pd.concat(out, ignore_index=True) if out else (parts[0].copy() if parts else pd.DataFrame())


def step_table(replay_dir: str | Path, clock: str = "step") -> pd.DataFrame:
    """An in-process replay's engine steps (``steps.parquet``) as a step-time measurement table
    (`servesim.perf.measurements`: the batch aggregates and ``step_s``, timed by ``clock``,
    `STEP_CLOCKS`). Under ``cycle`` a step after an idle spell keeps its own time: one whose batch
    has no decoding sequence and takes in new requests may follow an empty engine (the loop sleeps
    there until the next arrival), and the steps record no more than that."""
    from servesim.perf import measurements as M

    if clock not in STEP_CLOCKS:
        raise ValueError(f"clock={clock!r}: one of {STEP_CLOCKS}")
    path = Path(replay_dir) / "steps.parquet"
    st = pd.read_parquet(path)
    start, end = st.start_s.to_numpy(float), st.end_s.to_numpy(float)
    took = end - start
    if clock == "cycle" and len(st):
        prev_end = np.r_[start[0], end[:-1]]  # the first step has none before it: its own time
        busy = (st.decode_seqs.to_numpy() > 0) | (st.new_requests.to_numpy() == 0)
        took = np.where(busy, end - prev_end, took)
    keep = ((st.scheduled_tokens > 0) & (st.prefill_tokens >= 0)).to_numpy()
    st = st[keep]
    df = pd.DataFrame({c: st[c].to_numpy(np.int64) for c in M.AGGREGATES})
    df["step_s"] = took[keep]
    return M.validate(df, str(path))
