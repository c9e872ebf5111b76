"""One request's state in the pool simulators, its per-token timestamps and its results table."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ...workload.schema import WorkloadError
from .models import checkpoint, model_index


class Req:
    """A request; ``tokens`` holds the absolute time of every generated token (token 0 = first)."""

    __slots__ = ("rid", "model", "mid", "ckpt", "arrival", "prompt", "output", "tokens", "failed", "node",
                 "on_device", "dev_ready", "in_step", "kv_s", "started", "prefill_start", "prefill_switch_s",
                 "exec_s", "switch_wait_s", "kv_wait_s")

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


def to_table(reqs: list[Req]) -> pd.DataFrame:
    """One row per request; ``token_times`` lists every token's absolute time (s)."""
    reqs = sorted(reqs, key=lambda r: r.rid)
    first = [r.tokens[0] if r.tokens else np.nan for r in reqs]
    last = [r.tokens[-1] if r.tokens and not r.failed and len(r.tokens) >= r.output else np.nan for r in reqs]
    return pd.DataFrame({
        "request_id": np.array([r.rid for r in reqs], np.int64),
        "model": [r.model for r in reqs],
        "checkpoint": [r.ckpt for r in reqs],
        "node": np.array([r.node for r in reqs], np.int64),
        "arrival_s": np.array([r.arrival for r in reqs], float),
        "prompt_tokens": np.array([r.prompt for r in reqs], np.int64),
        "output_tokens": np.array([r.output for r in reqs], np.int64),
        "tokens_out": np.array([len(r.tokens) for r in reqs], np.int64),
        "failed": np.array([r.failed for r in reqs], bool),
        "first_token_s": np.array(first, float),
        "finish_s": np.array(last, float),
        "kv_transfer_s": np.array([r.kv_s for r in reqs], float),
        "prefill_start_s": np.array([r.prefill_start for r in reqs], float),
        "prefill_switch_s": np.array([r.prefill_switch_s for r in reqs], float),
        "exec_s": np.array([r.exec_s for r in reqs], float),
        "switch_wait_s": np.array([r.switch_wait_s for r in reqs], float),
        "kv_wait_s": np.array([r.kv_wait_s for r in reqs], float),
        "token_times": [np.asarray(r.tokens, float) for r in reqs],
    })
