"""Replay a request table against an OpenAI-compatible vLLM server at its arrival times.

Each request is a streaming ``/v1/completions`` call whose prompt is a list of token ids of
exactly ``prompt_tokens`` length, with ``max_tokens = min_tokens = output_tokens`` and
``ignore_eos`` so the engine generates exactly the workload's output length. The time of every
streamed token is recorded (``return_token_ids`` tells how many tokens a chunk carries, so a
chunk holding several tokens still counts them all).
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from dataclasses import dataclass

import httpx
import numpy as np
import pandas as pd

from servesim.engine.records import RequestRecord
from servesim.engine.server import SERVED_NAME


@dataclass(frozen=True)
class ReplayOptions:
    """Client-side knobs of a replay."""

    #: seconds a single request may take from its arrival before it is abandoned
    request_timeout_s: float = 120.0
    #: wall-clock bound of the whole replay from its start; the rest is marked partial
    max_duration_s: float = 3600.0
    #: token ids are drawn uniformly from [first_token_id, vocab_size)
    vocab_size: int = 512
    first_token_id: int = 3
    seed: int = 0
    model_name: str = SERVED_NAME
    #: at most this many requests in flight on the client side (a safety bound)
    max_inflight: int = 4096


def prompt_ids(request_id: int, n: int, opts: ReplayOptions) -> list[int]:
    """Deterministic prompt token ids for one request (same seed -> same prompts)."""
    rng = np.random.default_rng([opts.seed, int(request_id)])
    return rng.integers(opts.first_token_id, opts.vocab_size, size=int(n)).tolist()


def _chunk_tokens(payload: dict) -> tuple[int, str | None]:
    """Number of output tokens in one streamed chunk and its finish_reason."""
    choices = payload.get("choices") or []
    if not choices:
        return 0, None
    ch = choices[0]
    ids = ch.get("token_ids")
    if ids is not None:
        n = len(ids)
    else:  # servers without return_token_ids: one token per non-empty chunk
        n = 1 if ch.get("text") else 0
    return n, ch.get("finish_reason")


async def _one_request(client: httpx.AsyncClient, url: str, row, rec: RequestRecord,
                       t0: float, opts: ReplayOptions) -> None:
    now = lambda: time.perf_counter() - t0  # noqa: E731
    delay = rec.arrival_s - now()
    if delay > 0:
        await asyncio.sleep(delay)
    out_n = int(row.output_tokens)
    body = {
        "model": opts.model_name, "prompt": prompt_ids(row.request_id, row.prompt_tokens, opts),
        "max_tokens": max(out_n, 1), "min_tokens": max(out_n, 1), "ignore_eos": True,
        "temperature": 0.0, "stream": True, "return_token_ids": True,
        "stream_options": {"include_usage": True},
    }
    rec.sent_s = now()
    try:
        async with asyncio.timeout(max(rec.arrival_s + opts.request_timeout_s - now(), 0.001)):
            async with client.stream("POST", url + "/v1/completions", json=body) as resp:
                if resp.status_code != 200:
                    text = (await resp.aread()).decode(errors="replace")[:300]
                    rec.state = "rejected" if resp.status_code in (400, 413, 422) else "error"
                    rec.reason = f"HTTP {resp.status_code}: {text}"
                    rec.finish_s = now()
                    return
                async for line in resp.aiter_lines():
                    if not line.startswith("data:"):
                        continue
                    data = line[5:].strip()
                    if data == "[DONE]":
                        break
                    payload = json.loads(data)
                    if "error" in payload:
                        rec.state, rec.reason = "error", str(payload["error"].get("message", payload))[:300]
                        rec.partial = True
                        return
                    n, finish = _chunk_tokens(payload)
                    if n:
                        t = now()
                        rec.token_times.extend([t] * n)
                    if finish is not None:
                        rec.finish_s = now()
        if len(rec.token_times) >= max(out_n, 1):
            rec.state = "finished"
            if np.isnan(rec.finish_s):
                rec.finish_s = rec.token_times[-1]
        else:
            rec.state, rec.partial = "error", True
            rec.reason = f"stream ended after {len(rec.token_times)} of {out_n} tokens"
    except TimeoutError:
        rec.state, rec.partial = "timeout", True
        rec.reason = f"no completion within {opts.request_timeout_s:g} s of arrival"
    except (httpx.HTTPError, OSError) as exc:
        rec.state, rec.partial = "error", True
        rec.reason = f"{type(exc).__name__}: {exc}"[:300]
    except asyncio.CancelledError:
        rec.partial = True
        if rec.state == "unfinished":
            rec.reason = rec.reason or "replay stopped before the request ended"
        raise


async def replay_async(url: str, workload: pd.DataFrame, opts: ReplayOptions = ReplayOptions(),
                       alive: Callable[[], bool] | None = None,
                       records: dict[int, RequestRecord] | None = None) -> dict[int, RequestRecord]:
    """Send every workload request at ``arrival_s`` (seconds from now); return the records.

    ``alive`` (e.g. ``VLLMServer.alive``) is polled: when it turns False, every outstanding
    request is stopped and marked ``error``/partial with the reason. ``records`` may be passed
    in so that a caller interrupted mid-run still holds what was recorded so far.
    """
    records = {} if records is None else records
    limits = httpx.Limits(max_connections=opts.max_inflight, max_keepalive_connections=64)
    timeout = httpx.Timeout(opts.request_timeout_s, connect=10.0)
    t0 = time.perf_counter()
    async with httpx.AsyncClient(limits=limits, timeout=timeout) as client:
        tasks = []
        for row in workload.itertuples(index=False):
            rec = RequestRecord(int(row.request_id), float(row.arrival_s))
            records[rec.request_id] = rec
            tasks.append(asyncio.create_task(_one_request(client, url, row, rec, t0, opts)))
        all_done = asyncio.gather(*tasks, return_exceptions=True)
        stop_reason = None
        try:
            while not all_done.done():
                await asyncio.wait([all_done], timeout=0.25)
                if alive is not None and not alive():
                    stop_reason = "server process exited during the replay"
                    break
                if time.perf_counter() - t0 > opts.max_duration_s:
                    stop_reason = f"replay exceeded max_duration_s={opts.max_duration_s:g}"
                    break
        finally:
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
        if stop_reason:
            for rec in records.values():
                if rec.state == "unfinished":
                    rec.state = "error" if "server" in stop_reason else "unfinished"
                    rec.reason, rec.partial = stop_reason, True
    return records
