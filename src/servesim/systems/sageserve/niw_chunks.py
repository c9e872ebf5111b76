"""NIW chunking (journal §6.2): long NIW requests served as fixed-size jobs.

J §6.2: "NIW requests with higher token counts can interfere with IW request execution, which is
handled by chunking requests into fixed-size jobs. Therefore, we assume NIW request token counts
are comparable to other workload tiers." The paper gives no size; ``SageServeConfig.
niw_chunk_tokens`` names it (None: whole prompts, as the authors' simulator serves them).

How a request is chunked (`chunk_niw`): an NIW request of P > size prompt tokens becomes
k = ceil(P / size) independent jobs of near-equal prompt (each <= size, summing to P), all
arriving when the request does, with the request's deadline; its O output tokens are shared in
proportion to the chunks' prompts (largest remainder), each chunk at least 1 (so O < k gives k).
Each job is a request of its own to the queue manager, routers and instances.

How it is accounted (`collapse_chunks`): the results table gets one row per original request
again. The request finishes when its last chunk does (finish_s = the chunks' maximum, NaN if any
chunk did not finish; e2e_s = finish_s - arrival_s); its first token is the earliest chunk's
(first_token_s, ttft_s, scheduled_s, niw_release_s: minima); tokens and preemptions are summed.
State, reason and instance are those of the first chunk (in chunk order) that did not finish,
else of the chunk that finished last. ``niw_chunks`` records k (1 for requests served whole).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

#: results columns summed / minimised / maximised over a request's chunks (others: see module doc)
SUM_COLS = ("prompt_tokens", "output_tokens", "preemptions")
MIN_COLS = ("arrival_s", "scheduled_s", "first_token_s", "niw_release_s")
MAX_COLS = ("tbt_max_s", "tbt_p99_s", "deadline_s")


def split_counts(total: np.ndarray, weights: list[np.ndarray]) -> list[np.ndarray]:
    """Share integer ``total[i]`` over parts in proportion to ``weights[i]`` (largest remainder),
    each part at least 1."""
    out = []
    for t, w in zip(total, weights):
        exact = t * w / w.sum()
        part = np.floor(exact).astype(np.int64)
        short = int(t - part.sum())
        if short > 0:
            part[np.argsort(-(exact - part), kind="stable")[:short]] += 1
        out.append(np.maximum(part, 1))
    return out


def chunk_niw(wl: pd.DataFrame, size: int | None) -> tuple[pd.DataFrame, np.ndarray | None]:
    """``wl`` with each NIW request of more than ``size`` prompt tokens replaced by its chunks
    (adjacent rows, in the request's place) and the original row index of every row; (``wl``,
    None) when nothing is split."""
    if size is None:
        return wl, None
    prompt = wl["prompt_tokens"].to_numpy(np.int64)
    big = (wl["tier"] == "NIW").to_numpy(bool) & (prompt > size)
    if not big.any():
        return wl, None
    k = np.where(big, -(-prompt // size), 1)
    parent = np.repeat(np.arange(len(wl)), k)
    out = wl.iloc[parent].reset_index(drop=True)
    idx = np.flatnonzero(big)
    # near-equal prompt parts (each <= size): the first P mod k parts one token longer
    p_parts = [np.full(k[i], prompt[i] // k[i]) + (np.arange(k[i]) < prompt[i] % k[i]) for i in idx]
    o_parts = split_counts(wl["output_tokens"].to_numpy(np.int64)[idx], p_parts)
    start = np.concatenate([[0], np.cumsum(k)[:-1]])[idx]
    rows = np.concatenate([s + np.arange(len(p)) for s, p in zip(start, p_parts)])
    pcol = out["prompt_tokens"].to_numpy(np.int64, copy=True)
    ocol = out["output_tokens"].to_numpy(np.int64, copy=True)
    pcol[rows] = np.concatenate(p_parts)
    ocol[rows] = np.concatenate(o_parts)
    out["prompt_tokens"] = pcol
    out["output_tokens"] = ocol
    return out, parent


def collapse_chunks(req: pd.DataFrame, parent: np.ndarray) -> pd.DataFrame:
    """One results row per original request (``parent``: each row's original index, as from
    `chunk_niw`), accounted as the module doc says; ``request_id`` = the original index."""
    if len(req) != len(parent):
        raise ValueError(f"collapse_chunks: {len(req)} result rows for {len(parent)} chunk parents")
    n = int(parent.max()) + 1 if len(parent) else 0
    k = np.bincount(parent, minlength=n)
    first = np.concatenate([[0], np.cumsum(k)[:-1]])  # each request's first row (chunks are adjacent)
    multi = k > 1
    # the row whose state, reason and instance the request takes
    unfinished = (req["state"] != "finished").to_numpy(bool)
    finish = req["finish_s"].to_numpy(np.float64)
    pos = np.arange(len(req))
    key_unf = np.where(unfinished, pos, np.iinfo(np.int64).max)
    first_unf = np.minimum.reduceat(key_unf, first) if n else key_unf[:0]
    # the latest-finishing row of each request: rows sorted by (request, finish), the last of each
    order = np.lexsort((np.where(np.isnan(finish), -np.inf, finish), parent))
    last_fin = order[first + k - 1]
    pick = np.where(first_unf < np.iinfo(np.int64).max, first_unf, last_fin)
    out = req.iloc[pick].reset_index(drop=True)
    if multi.any():
        def reduce(col, how):
            v = req[col].to_numpy(np.float64 if how != "sum" else np.int64)
            r = {"sum": np.add, "min": np.fmin, "max": np.fmax}[how].reduceat(v, first)
            out[col] = r.astype(out[col].dtype)
        for c in SUM_COLS:
            if c in req:
                reduce(c, "sum")
        for c in MIN_COLS + MAX_COLS:
            if c in req:
                reduce(c, "min" if c in MIN_COLS else "max")
        any_unf = np.logical_or.reduceat(unfinished, first)
        fin = np.where(any_unf, np.nan, np.fmax.reduceat(finish, first))
        arr = out["arrival_s"].to_numpy(np.float64)
        out["finish_s"] = fin
        out["e2e_s"] = fin - arr
        if "first_token_s" in out:
            out["ttft_s"] = out["first_token_s"].to_numpy(np.float64) - arr
        if "tbt_mean_s" in req:
            s = np.add.reduceat(np.nan_to_num(req["tbt_mean_s"].to_numpy(np.float64)), first)
            c = np.add.reduceat(req["tbt_mean_s"].notna().to_numpy(np.int64), first)
            with np.errstate(invalid="ignore", divide="ignore"):
                out["tbt_mean_s"] = np.where(c > 0, s / np.maximum(c, 1), np.nan)
        if "partial" in req:
            out["partial"] = np.logical_or.reduceat(req["partial"].to_numpy(bool), first)
    out["request_id"] = np.arange(n, dtype=np.int64)
    out["niw_chunks"] = k.astype(np.int64)
    return out
