"""`servesim replay`: run a workload against a real vLLM server and record what happened.

Outputs in ``out_dir``: ``requests.parquet`` (the simulator's per-request schema),
``tokens.parquet`` (every streamed token's time), ``summary.json`` (engine config, KV blocks the
server allocated, ``servesim.metrics.summarize`` of the requests with the real token times,
``partial``, ``wall_s``) and ``server.log``.
"""

from __future__ import annotations

import asyncio
import json
import platform
import time
from dataclasses import asdict
from pathlib import Path

import numpy as np
import pandas as pd

from servesim.engine.client import ReplayOptions, replay_async
from servesim.engine.records import RequestRecord, request_table, token_table
from servesim.sim.request_log import REQUEST_COLUMNS
from servesim.engine.server import EngineConfig, VLLMServer, vllm_version
from servesim.metrics import summarize
from servesim.tables import read_table
from servesim.workload import schema


def read_workload(path: str | Path) -> pd.DataFrame:
    """A request table from Parquet or CSV, validated against the workload schema."""
    p = Path(path)
    return schema.validate(read_table(p, schema.WorkloadError, "workload"), str(p))


def _tiny_model_vocab(model: str | Path | None) -> tuple[int, int] | None:
    """(vocab_size, first_word_id) of a servesim tiny model, or from its config.json."""
    if model is None:
        return None
    meta = Path(model) / "servesim_tiny_model.json"
    if meta.exists():
        d = json.loads(meta.read_text())
        return int(d["vocab_size"]), int(d["first_word_id"])
    cfg = Path(model) / "config.json"
    if cfg.exists():
        # a real model: stay clear of the low ids, where special tokens usually live
        return int(json.loads(cfg.read_text())["vocab_size"]), 1000
    return None


def model_options(model: str | Path | None, seed: int = 0) -> ReplayOptions:
    """The replay options (prompt token-id range) that suit ``model``, with ``seed``."""
    vocab = _tiny_model_vocab(model)
    return ReplayOptions(seed=seed) if vocab is None else ReplayOptions(vocab_size=vocab[0], first_token_id=vocab[1],
                                                                       seed=seed)


def write_outputs(out_dir: Path, workload: pd.DataFrame, records: dict[int, RequestRecord],
                  meta: dict, wall_s: float, instance: str = "vllm-0", extras: pd.DataFrame | None = None) -> dict:
    """``extras``: per request_id, engine-side ``scheduled_s`` / ``preemptions`` where the replay sees
    them (the in-process replay does; an HTTP client cannot)."""
    df = request_table(workload, records, instance=instance)
    if extras is not None and len(extras):
        pos = pd.Index(df["request_id"]).get_indexer(extras["request_id"])
        ok = pos >= 0
        for col in ("scheduled_s", "preemptions"):
            vals = df[col].to_numpy().copy()
            vals[pos[ok]] = extras[col].to_numpy()[ok]
            df[col] = vals
        df = df.astype(REQUEST_COLUMNS)
    df.to_parquet(out_dir / "requests.parquet", index=False)
    tokens = token_table(records)
    tokens.to_parquet(out_dir / "tokens.parquet", index=False)
    # when the client really sent each request (late on a busy host): the simulator can be fed
    # these instead of the scheduled arrivals (servesim.engine.compare, arrivals="sent")
    sends = pd.DataFrame({"request_id": list(records), "sent_s": [r.sent_s for r in records.values()]})
    sends.astype({"request_id": "int64", "sent_s": "float64"}).to_parquet(out_dir / "sends.parquet", index=False)
    summary = {**meta, **summarize(df, tokens=tokens), "partial": bool(df["partial"].any()), "wall_s": wall_s}
    # how late the client sent requests relative to their arrival times (client-side lag on a
    # busy host shows up in TTFT but is no part of the engine)
    lag = np.array([r.sent_s - r.arrival_s for r in records.values() if r.sent_s == r.sent_s])
    if lag.size:
        summary.update(client_send_lag_mean_s=float(lag.mean()), client_send_lag_p99_s=float(np.percentile(lag, 99)))
    summary["partial"] = bool(summary["partial"] or meta.get("interrupted", False))
    (out_dir / "summary.json").write_text(json.dumps(summary, indent=1, default=str) + "\n")
    return summary


def replay(workload: pd.DataFrame | str | Path, out_dir: str | Path, *,
           model: str | Path | None = None, url: str | None = None,
           config: EngineConfig = EngineConfig(), opts: ReplayOptions | None = None,
           start_timeout_s: float = 300.0, warmup: int = 2) -> dict:
    """Replay ``workload`` on a fresh ``vllm serve`` of ``model`` (or on ``url``); write outputs.

    ``warmup`` short requests are sent (and not recorded) first: a fresh server's first requests
    pay one-off costs. Returns the summary dict. Results recorded before a failure or Ctrl-C are written (marked
    partial) before the exception propagates; the server is always stopped.
    """
    if (model is None) == (url is None):
        raise ValueError("give exactly one of model (start a server) or url (use a running one)")
    wl = workload if isinstance(workload, pd.DataFrame) else read_workload(workload)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    if opts is None:
        opts = model_options(model)
    meta: dict = {"model": str(model) if model else None, "url": url, "engine": config.to_dict(),
                  "options": asdict(opts), "vllm_version": vllm_version(),
                  "host": platform.node(), "started_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    records: dict[int, RequestRecord] = {}
    server = None
    t0 = time.perf_counter()
    try:
        if model is not None:
            server = VLLMServer(model, config, log_path=out / "server.log", start_timeout_s=start_timeout_s)
            server.start()
            meta.update(kv_blocks=server.kv_blocks, kv_tokens=server.kv_tokens, startup_s=server.startup_s)
            url = server.url
        else:
            meta.update(kv_blocks=_remote_kv_blocks(url))
        if warmup:
            _warm_up(url, warmup, opts)
        pre0 = _counter(url, "vllm:num_preemptions_total")
        h0 = _histograms(url)
        t0 = time.perf_counter()
        asyncio.run(replay_async(url, wl, opts, alive=server.alive if server else None, records=records))
        pre1 = _counter(url, "vllm:num_preemptions_total")
        if pre0 is not None and pre1 is not None:
            meta["preemptions_total"] = int(pre1 - pre0)
        meta.update(_engine_side_means(h0, _histograms(url)))
    except BaseException as exc:
        if records:
            meta.update(interrupted=True, error=f"{type(exc).__name__}: {exc}"[:500])
            write_outputs(out, wl, records, meta, time.perf_counter() - t0)
        raise
    finally:
        if server is not None:
            server.stop()
    return write_outputs(out, wl, records, meta, time.perf_counter() - t0)


def _counter(url: str, name: str) -> float | None:
    """A Prometheus counter's value (summed over labels) from the server's /metrics."""
    import httpx

    try:
        text = httpx.get(url.rstrip("/") + "/metrics", timeout=5).text
    except httpx.HTTPError:
        return None
    vals = [float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
            if line.startswith(name) and line[len(name):len(name) + 1] in ("{", " ")]
    return sum(vals) if vals else None


_ENGINE_HISTS = ("vllm:request_queue_time_seconds", "vllm:request_prefill_time_seconds",
                 "vllm:request_decode_time_seconds", "vllm:time_to_first_token_seconds",
                 "vllm:e2e_request_latency_seconds")


def _histograms(url: str) -> dict | None:
    import httpx

    from servesim.engine.profile import histogram_totals
    try:
        return histogram_totals(httpx.get(url.rstrip("/") + "/metrics", timeout=5).text, _ENGINE_HISTS)
    except httpx.HTTPError:
        return None


def _engine_side_means(h0: dict | None, h1: dict | None) -> dict:
    """Per-request means of vLLM's own timers over the replay (engine clock: queue, prefill,
    decode; the frontend's TTFT and E2E), for telling engine time from frontend time."""
    if h0 is None or h1 is None:
        return {}
    out = {}
    for name in _ENGINE_HISTS:
        ds, dn = h1[name][0] - h0[name][0], h1[name][1] - h0[name][1]
        short = name.removeprefix("vllm:").removeprefix("request_").removesuffix("_seconds")
        out[f"engine_mean_{short}_s"] = ds / dn if dn > 0 else float("nan")
    return out


def _warm_up(url: str, n: int, opts: ReplayOptions) -> None:
    wl = schema.make(np.zeros(n), np.full(n, 16), np.full(n, 4))
    asyncio.run(replay_async(url, wl, opts))


def _remote_kv_blocks(url: str) -> int | None:
    import httpx

    from servesim.engine.server import kv_blocks_from_metrics
    try:
        return kv_blocks_from_metrics(httpx.get(url.rstrip("/") + "/metrics", timeout=5).text)
    except httpx.HTTPError:
        return None
