"""The API server in front of an engine, as a queue (issue 33 item 3).

A vLLM server's OpenAI front end runs in one process: every request's ingestion (HTTP parsing,
validation, tokenising a text prompt, the hand-off to the engine core) and every streamed output
token (detokenisation, the server-sent-events chunk) takes that process's CPU in turn, while the
engine core steps in a process of its own. So the front end is one first-come-first-served server
per instance, with

    ingestion of a request   request_s + prompt_token_s x its prompt tokens
    each output token        output_token_s

A request reaches the engine when its ingestion has been served, and the client sees a token when
the front end has served it. At low load this adds a few milliseconds; where the engine streams
more tokens per second than 1 / ``output_token_s`` the front end saturates and the client's TTFT
and TPOT grow however fast the engine is (the high-concurrency regime of GPU nodes).

The costs are measured, not assumed: :mod:`servesim.engine.frontend_cost` replays workloads of
different shapes on a real server and fits them to the API-server process's CPU time; a profile
file records the vLLM version and host it was measured on (:meth:`FrontEnd.from_json`).

How it runs (:func:`serve`): the engine does not see the front end's output work, but ingestion
waits behind it, so the engine side and the queue are solved by fixed-point iteration. Pass 0
queues the ingestion jobs alone (on one server: exact for one instance); every later pass
simulates the engine side with the entry times of the pass before, then queues ingestion and
output jobs together on each instance's front end (by the instance that served the request), until
no entry time moves by more than ``tol_s`` (``converged``), the passes come back to entry times
an earlier pass had (``cycle``: its length; a request flipping between two batches leaves no exact
fixed point, and the table is the last pass's), or ``max_passes`` is reached (neither; ``settled``
is converged or cycled). The simulator keeps no per-token times, so a request's output jobs are its first token
(at ``first_token_s``) and the other tokens in at most ``chunks`` jobs spread evenly up to
``finish_s`` (the last one there): exact for the first and last tokens' service where decode steps
are regular, and the same work in total. Same inputs, same outputs (no randomness).
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable

import numpy as np
import pandas as pd

from ..errors import InputError

#: the cost keys of a front-end profile (seconds)
COSTS = ("request_s", "prompt_token_s", "output_token_s")


@dataclass(frozen=True)
class FrontEnd:
    """Per-job service times of one instance's front end, in seconds (see the module docstring)."""

    request_s: float = 0.0
    prompt_token_s: float = 0.0
    output_token_s: float = 0.0
    #: where the numbers come from (e.g. "vllm 0.32.0 (cpu), <host>, <date>")
    source: str = ""

    def __post_init__(self):
        for k in COSTS:
            v = getattr(self, k)
            if not (isinstance(v, (int, float)) and math.isfinite(v) and v >= 0):
                raise ValueError(f"front end: {k}={v!r} must be a finite number >= 0")

    @property
    def is_free(self) -> bool:
        return all(getattr(self, k) == 0 for k in COSTS)

    def as_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_json(cls, path: str | Path) -> "FrontEnd":
        """A profile written by :mod:`servesim.engine.frontend_cost` (its ``fit`` block) or a plain
        ``{request_s, prompt_token_s, output_token_s}``; errors name the file and key."""
        p = Path(path)
        try:
            d = json.loads(p.read_text())
        except FileNotFoundError:
            raise InputError(f"{p}: front-end profile not found") from None
        except (OSError, json.JSONDecodeError) as exc:
            raise InputError(f"{p}: not a readable JSON front-end profile ({exc})") from None
        fit = d.get("fit", d) if isinstance(d, dict) else None
        if not isinstance(fit, dict):
            raise InputError(f"{p}: expected an object with {list(COSTS)} (or a 'fit' block holding them)")
        missing = [k for k in COSTS if k not in fit]
        if missing:
            raise InputError(f"{p}: front-end profile lacks {missing}")
        src = d.get("source") or ", ".join(str(d[k]) for k in ("vllm", "host", "measured_utc") if d.get(k))
        try:
            return cls(**{k: fit[k] for k in COSTS}, source=str(src or p.name))
        except ValueError as exc:
            raise InputError(f"{p}: {exc}") from None


def fifo_completions(t: np.ndarray, s: np.ndarray) -> np.ndarray:
    """Completion times of jobs served first come, first served by one server: job i arrives at
    ``t[i]`` (non-decreasing) and needs ``s[i]``; ``c[i] = max(t[i], c[i-1]) + s[i]``, computed as
    ``S[i] + max_{k<=i}(t[k] - S[k-1])`` with ``S`` the running sum of ``s`` (no Python loop)."""
    t = np.asarray(t, dtype=np.float64)
    s = np.asarray(s, dtype=np.float64)
    if len(t) == 0:
        return np.empty(0)
    S = np.cumsum(s)
    return S + np.maximum.accumulate(t - (S - s))


def _token_jobs(first: np.ndarray, finish: np.ndarray, out: np.ndarray, chunks: int):
    """Output jobs per request: (row, time, tokens) for the first token and up to ``chunks`` jobs
    holding the rest, evenly spaced up to ``finish`` (unfinished requests: the first token only)."""
    rows, times, toks = [], [], []
    has_first = np.isfinite(first) & (out >= 1)
    idx = np.flatnonzero(has_first)
    rows.append(idx)
    times.append(first[idx])
    toks.append(np.ones(len(idx)))
    rest = np.flatnonzero(has_first & np.isfinite(finish) & (out >= 2))
    if len(rest):
        n_rest = out[rest] - 1
        k = np.minimum(n_rest, chunks)
        for j in range(1, int(k.max()) + 1):
            sel = k >= j
            r = rest[sel]
            kj = k[sel]
            # chunk j of k holds tokens (floor((j-1) n / k), floor(j n / k)], its time at its last token
            hi = (j * n_rest[sel]) // kj
            lo = ((j - 1) * n_rest[sel]) // kj
            rows.append(r)
            times.append(first[r] + (finish[r] - first[r]) * hi / n_rest[sel])
            toks.append((hi - lo).astype(np.float64))
    return np.concatenate(rows), np.concatenate(times), np.concatenate(toks)


def queue(fe: FrontEnd, arrival, prompt, output, instance=None, first=None, finish=None, *,
          chunks: int = 8) -> dict[str, np.ndarray]:
    """One pass of the front ends' queues (one per distinct ``instance``; all one without).

    Returns per request: ``entry_s`` (ingestion served: when the engine sees it), and, where token
    times are given, ``first_seen_s`` / ``finish_seen_s`` (the first and last tokens served to the
    client; NaN where the engine gave none) and each front end's ``busy_s``."""
    arrival = np.asarray(arrival, dtype=np.float64)
    n = len(arrival)
    prompt = np.asarray(prompt, dtype=np.float64)
    output = np.asarray(output, dtype=np.int64)
    inst = np.zeros(n, dtype=np.int64) if instance is None else pd.factorize(np.asarray(instance))[0]
    ing_s = fe.request_s + fe.prompt_token_s * prompt
    if first is None:
        jr, jt, jk = np.empty(0, np.int64), np.empty(0), np.empty(0)
    else:
        jr, jt, jk = _token_jobs(np.asarray(first, np.float64), np.asarray(finish, np.float64), output, chunks)
    # all jobs: ingestion (kind 0, before a token job at the same instant) then output (kind 1)
    rows = np.concatenate([np.arange(n), jr])
    t = np.concatenate([arrival, jt])
    s = np.concatenate([ing_s, fe.output_token_s * jk])
    kind = np.concatenate([np.zeros(n, np.int8), np.ones(len(jr), np.int8)])
    server = inst[rows]
    order = np.lexsort((rows, kind, t, server))  # by server, then time, kind, request (deterministic)
    c = np.empty(len(t))
    busy = {}
    srv_sorted = server[order]
    bounds = np.flatnonzero(np.diff(srv_sorted)) + 1
    for seg in np.split(np.arange(len(order)), bounds):
        if not len(seg):
            continue
        o = order[seg]
        c[o] = fifo_completions(t[o], s[o])
        busy[int(server[o[0]])] = float(s[o].sum())
    entry = c[:n]
    res = {"entry_s": entry, "busy_s": busy}
    if first is not None:
        tok = kind == 1
        tr, tc = rows[tok], c[tok]
        # FIFO keeps a request's jobs in time order, and its first token is its earliest job
        first_seen = np.full(n, np.inf)
        np.minimum.at(first_seen, tr, tc)
        first_seen[np.isinf(first_seen)] = np.nan
        last_seen = np.full(n, np.nan)
        np.fmax.at(last_seen, tr, tc)
        done = np.isfinite(np.asarray(finish, np.float64))
        res["first_seen_s"] = first_seen
        res["finish_seen_s"] = np.where(done, last_seen, np.nan)
    return res


def serve(fe: FrontEnd, workload: pd.DataFrame, run: Callable[[pd.DataFrame], pd.DataFrame], *,
          max_passes: int = 8, tol_s: float = 1e-6, chunks: int = 8) -> tuple[pd.DataFrame, dict]:
    """Simulate ``workload`` behind front end ``fe``: ``run(wl)`` simulates the engine side with
    ``wl.arrival_s`` = when each request reaches the engine and returns the REQUEST_COLUMNS table;
    the returned table is reported from the workload's own arrivals (``first_token_s``,
    ``finish_s``, ``ttft_s``, ``e2e_s`` and ``tbt_mean_s`` as the client sees them; ``scheduled_s``,
    ``tbt_max_s`` and ``tbt_p99_s`` stay the engine's). Info: passes, converged, the largest entry
    move of the last pass, a cycle's length, and the busiest front end's utilisation over the run."""
    if max_passes < 1 or chunks < 1:
        raise ValueError("front end: max_passes and chunks must be >= 1")
    wl = workload.sort_values(["arrival_s", "request_id"], kind="stable").reset_index(drop=True)
    arrival = wl["arrival_s"].to_numpy(np.float64)
    prompt = wl["prompt_tokens"].to_numpy()
    output = wl["output_tokens"].to_numpy()
    entry = queue(fe, arrival, prompt, output)["entry_s"]
    moved, passes, q, df, cycle = math.inf, 0, None, None, 0
    seen = {entry.tobytes(): 0}
    while passes < max_passes:
        passes += 1
        side = wl.copy()
        side["arrival_s"] = entry
        got = run(side)
        df = got.set_index("request_id").loc[wl["request_id"].to_numpy()].reset_index()
        q = queue(fe, arrival, prompt, output, df["instance"].to_numpy(), df["first_token_s"].to_numpy(np.float64),
                  df["finish_s"].to_numpy(np.float64), chunks=chunks)
        moved = float(np.max(np.abs(q["entry_s"] - entry))) if len(entry) else 0.0
        if moved <= tol_s:
            break
        key = q["entry_s"].tobytes()
        if key in seen:  # the passes cycle (a request flips between two batches): no exact fixed point
            cycle = passes - seen[key]
            break
        seen[key] = passes
        entry = q["entry_s"]
    out = df.copy()
    out["arrival_s"] = arrival
    out["first_token_s"] = q["first_seen_s"]
    out["finish_s"] = q["finish_seen_s"]
    out["ttft_s"] = out["first_token_s"] - arrival
    out["e2e_s"] = np.where(out["state"].to_numpy() == "finished", out["finish_s"] - arrival, np.nan)
    n_out = output.astype(np.float64)
    out["tbt_mean_s"] = np.where(n_out >= 2, (out["finish_s"] - out["first_token_s"]) / np.maximum(n_out - 1, 1), np.nan)
    span = (np.nanmax(out["finish_s"]) - arrival.min()) if len(arrival) and np.isfinite(out["finish_s"]).any() else 0.0
    util = {str(k): (b / span if span > 0 else float("nan")) for k, b in q["busy_s"].items()}
    info = {"frontend": fe.as_dict(), "passes": passes, "converged": moved <= tol_s,
            "settled": moved <= tol_s or cycle > 0, "cycle": cycle, "last_move_s": moved,
            "utilisation_max": float(max(util.values())) if util else 0.0}
    return out, info
