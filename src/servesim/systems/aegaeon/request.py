"""One request's state in the pool simulators, its per-token timestamps and its results table.

`to_table` writes the standard per-request table (``servesim.sim.request_log.REQUEST_COLUMNS``,
the columns ``servesim.metrics.summarize`` reads) followed by the Aegaeon columns the figures
read; `tokens_table` gives every token's time in the long form ``summarize(tokens=...)`` takes.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ...sim.request_log import REQUEST_COLUMNS, p99
from ...workload.schema import WorkloadError
from .models import checkpoint, model_index

#: the standard states a pool request ends in (``servesim.sim.request_log.STATES``): finished, or
#: failed as ``timeout`` (ServerlessLLM: no first token within ``sllm_timeout_s`` of arrival) or
#: ``rejected`` (ServerlessLLM: its context outgrew the worker's KV capacity, it can never run)
FAIL_STATES = ("timeout", "rejected")


class Req:
    """A request; ``tokens`` holds the absolute time of every generated token (token 0 = first)."""

    __slots__ = ("rid", "model", "mid", "ckpt", "arrival", "prompt", "output", "tokens", "failed", "node",
                 "on_device", "dev_ready", "in_step", "kv_s", "started", "prefill_start", "prefill_switch_s",
                 "exec_s", "switch_wait_s", "kv_wait_s", "end_state", "reason", "inst", "preemptions")

    def __init__(self, rid: int, model: str, arrival: float, prompt: int, output: int):
        self.rid, self.model, self.arrival = rid, model, arrival
        self.mid = model_index(model)
        self.ckpt = checkpoint(model)  # the default mapping; a simulator relabels with its settings
        self.prompt, self.output = prompt, max(1, output)  # the prefill always yields the first token
        self.tokens: list[float] = []
        self.failed = False
        self.node = 0
        self.on_device = False  # KV resident on the decode GPU (Aegaeon) / KV exists (baselines)
        self.dev_ready = 0.0    # when a swapped-in KV is usable
        self.in_step = False
        self.kv_s = 0.0         # KV transfer time spent for this request (D2H + H2D)
        self.started = False
        # time accounting (Fig 14 / 15 inputs): when its prefill was picked, the model load paid
        # before it, compute time of every step it was in, model loads its decode batch waited on
        self.prefill_start = float("nan")
        self.prefill_switch_s = 0.0
        self.exec_s = 0.0
        self.switch_wait_s = 0.0
        self.kv_wait_s = 0.0    # KV transfer it waited on (blocking part of kv_s: Fig 14/15 "data overhead")
        self.end_state = ""     # a failed request's standard state (FAIL_STATES) and why
        self.reason = ""
        self.inst = ""          # the instance (worker) that holds it last
        self.preemptions = 0    # times it lost its KV and had to recompute it (ServerlessLLM swaps)

    def fail(self, state: str, reason: str) -> None:
        """End the request unfinished: ``state`` is one of FAIL_STATES."""
        if state not in FAIL_STATES:
            raise ValueError(f"Req.fail: state={state!r}; expected one of {FAIL_STATES}")
        self.failed, self.end_state, self.reason = True, state, reason

    @property
    def ctx(self) -> int:
        """Context length now: prompt + tokens generated so far."""
        return self.prompt + len(self.tokens)

    @property
    def done(self) -> bool:
        return self.failed or len(self.tokens) >= self.output

    def __repr__(self):
        return f"Req({self.rid}, {self.model}, t={self.arrival:.3f}, {self.prompt}/{self.output}, got={len(self.tokens)})"


def from_workload(df: pd.DataFrame, source: str = "<workload>") -> list[Req]:
    """Requests from a workload table (columns request_id, arrival_s, model, prompt_tokens,
    output_tokens), in arrival order (ties by request id)."""
    need = ("request_id", "arrival_s", "model", "prompt_tokens", "output_tokens")
    miss = [c for c in need if c not in df.columns]
    if miss:
        raise WorkloadError(f"{source}: missing column(s) {miss}")
    d = df.sort_values(["arrival_s", "request_id"], kind="stable")
    out = []
    for i, (rid, t, m, p, o) in enumerate(zip(d.request_id, d.arrival_s, d.model.astype(str), d.prompt_tokens,
                                               d.output_tokens)):
        if not (np.isfinite(t) and t >= 0) or p < 1 or o < 0:
            raise WorkloadError(f"{source}: row {i} (request {rid}): need arrival >= 0, prompt >= 1, output >= 0")
        try:
            out.append(Req(int(rid), m, float(t), int(p), int(o)))
        except ValueError as e:
            raise WorkloadError(f"{source}: row {i} (request {rid}): {e}") from None
    return out


def _state(r: Req) -> str:
    if r.failed:
        return r.end_state or "error"
    return "finished" if len(r.tokens) >= r.output else "unfinished"


def _tbt(r: Req, state: str) -> tuple[float, float, float]:
    """TBT mean, max and p99 of a finished request, as ``servesim.sim.request_log`` defines them."""
    if state != "finished" or r.output < 2:
        return np.nan, np.nan, np.nan
    ts = np.asarray(r.tokens, float)
    g = np.diff(ts)
    if len(g) != r.output - 1:
        raise AssertionError(f"request {r.rid}: {len(g)} token gaps for {r.output} tokens")
    return (ts[-1] - ts[0]) / (r.output - 1), float(g.max()), p99(g, inplace=True)


def to_table(reqs: list[Req], control_step_s: float = 0.0) -> pd.DataFrame:
    """One row per request (by request id): the standard columns (``REQUEST_COLUMNS``, same names,
    dtypes and meanings), then the Aegaeon ones. ``control_s`` (Fig 14's control overhead) is
    ``control_step_s`` per decode step the request was in: every such step gave it one token after
    its prefill's, so it is counted here, not on the decode loop's hot path. ``output_tokens`` is the tokens the request asked
    for (at least 1: the prefill always yields the first); ``tokens_out`` the tokens it got;
    ``failed``: it ended without finishing (state ``timeout`` or ``rejected``); ``first_token_s`` is set for a failed request that had a
    token, ``finish_s`` / ``e2e_s`` only for a finished one; ``scheduled_s`` (= ``prefill_start_s``)
    is when its (first) prefill was picked; ``token_times`` lists every token's absolute time (s)."""
    reqs = sorted(reqs, key=lambda r: r.rid)
    state = [_state(r) for r in reqs]
    done = np.array([s == "finished" for s in state], bool)
    first = np.array([r.tokens[0] if r.tokens else np.nan for r in reqs], float)
    last = np.array([r.tokens[-1] if d else np.nan for r, d in zip(reqs, done)], float)
    arrival = np.array([r.arrival for r in reqs], float)
    start = np.array([r.prefill_start for r in reqs], float)
    tbt = np.array([_tbt(r, st) for r, st in zip(reqs, state)], float).reshape(len(reqs), 3)
    std = pd.DataFrame({
        "request_id": np.array([r.rid for r in reqs], np.int64),
        "model": [r.model for r in reqs],
        "region": "",
        "tier": "",
        "instance": [r.inst for r in reqs],
        "arrival_s": arrival,
        "prompt_tokens": np.array([r.prompt for r in reqs], np.int64),
        "output_tokens": np.array([r.output for r in reqs], np.int64),
        "state": state,
        "reason": [r.reason for r in reqs],
        "scheduled_s": start,
        "first_token_s": first,
        "finish_s": last,
        "ttft_s": first - arrival,
        "e2e_s": last - arrival,
        "tbt_mean_s": tbt[:, 0],
        "tbt_max_s": tbt[:, 1],
        "tbt_p99_s": tbt[:, 2],
        "preemptions": np.array([r.preemptions for r in reqs], np.int64),
        "partial": False,
    }, columns=list(REQUEST_COLUMNS)).astype(REQUEST_COLUMNS)
    return std.assign(**{
        "checkpoint": [r.ckpt for r in reqs],
        "node": np.array([r.node for r in reqs], np.int64),
        "tokens_out": np.array([len(r.tokens) for r in reqs], np.int64),
        "failed": np.array([r.failed for r in reqs], bool),
        "kv_transfer_s": np.array([r.kv_s for r in reqs], float),
        "prefill_start_s": start,
        "prefill_switch_s": np.array([r.prefill_switch_s for r in reqs], float),
        "exec_s": np.array([r.exec_s for r in reqs], float),
        "switch_wait_s": np.array([r.switch_wait_s for r in reqs], float),
        "kv_wait_s": np.array([r.kv_wait_s for r in reqs], float),
        "control_s": control_step_s * np.array([max(len(r.tokens) - 1, 0) for r in reqs], float),
        "token_times": [np.asarray(r.tokens, float) for r in reqs],
    })


def tokens_table(requests: pd.DataFrame) -> pd.DataFrame:
    """Every token's time from a `to_table` table's ``token_times``, in the engine replay's long form
    (``request_id``, ``token_index``, ``time_s``; token order within a request), which
    ``servesim.metrics.summarize(tokens=...)`` reads."""
    n = np.array([len(t) for t in requests.token_times], np.int64)
    times = np.concatenate([np.asarray(t, float) for t in requests.token_times]) if n.sum() else np.zeros(0)
    index = np.arange(n.sum(), dtype=np.int64) - np.repeat(np.cumsum(n) - n, n)
    return pd.DataFrame({"request_id": np.repeat(requests.request_id.to_numpy(np.int64), n), "token_index": index,
                         "time_s": times})
