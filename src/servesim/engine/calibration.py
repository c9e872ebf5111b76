"""Held-out workloads for simulator-vs-engine comparison, at fractions of measured capacity.

The profiling sweep (:mod:`.profile`) measures the engine's saturation throughput on a request
mix; the comparison workloads use the same length mix with different seeds (so they are not the
sweep's requests) and Poisson arrivals at ``load x capacity`` requests per second.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd

from servesim.engine.profile import request_mix

#: seed offset of held-out workloads: far from the sweep's seeds (plan.seed, plan.seed + 1)
HELDOUT_SEED = 1000


def heldout_workload(fit_json: str | Path, load: float, n_requests: int, seed: int = 0) -> pd.DataFrame:
    """``n_requests`` of the profile's mix arriving as a Poisson process at ``load`` x capacity."""
    import math

    from servesim.engine.profile import read_fit
    from servesim.errors import InputError

    fit = read_fit(fit_json, "prompt_range", "output_range")
    if "capacity_req_s" not in fit:
        raise InputError(f"{fit_json}: no capacity_req_s (profile with --capacity-requests > 0)")
    try:
        cap = float(fit["capacity_req_s"])
        ranges = [tuple(int(x) for x in fit[k]) for k in ("prompt_range", "output_range")]
    except (TypeError, ValueError):
        raise InputError(f"{fit_json}: capacity_req_s must be a number and prompt_range / output_range "
                         "lists of two integers") from None
    if not (math.isfinite(cap) and cap > 0) or any(len(r) != 2 or not 0 <= r[0] <= r[1] for r in ranges):
        raise InputError(f"{fit_json}: capacity_req_s={cap!r} must be a finite number > 0 and prompt_range / "
                         f"output_range [lo, hi] with 0 <= lo <= hi")
    rate = float(load) * cap
    ss = np.random.SeedSequence([HELDOUT_SEED + seed, int(round(load * 1000))])
    arr_rng = np.random.default_rng(ss.spawn(1)[0])
    arrivals = np.cumsum(arr_rng.exponential(1.0 / rate, n_requests))
    arrivals -= arrivals[0]
    return request_mix(n_requests, int(ss.generate_state(1)[0]), ranges[0], ranges[1], arrival_s=arrivals)


def run_calibration(model: str | Path | None, out_dir: str | Path, config, *, url: str | None = None, plan=None, loads=(0.3, 0.6, 0.9, 1.2),
                    n_requests: int = 150, seed: int = 0, opts=None, meta: dict | None = None,
                    start_timeout_s: float = 300.0, request_timeout_s: float = 300.0,
                    max_duration_s: float = 1800.0, replay_repeats: int = 1,
                    max_send_lag_p99_s: float | None = None, lag_retries: int = 1) -> dict:
    """Profile, then replay held-out workloads at each load, on ONE server start.

    Writes ``profile/`` (steps.csv, fit.json, ...), ``workloads/load{x}.parquet`` and
    ``replay/load{x}/`` (requests.parquet, tokens.parquet, summary.json) under ``out_dir``.
    The server is configured like the simulated instance and is always stopped at the end;
    with ``url`` (and ``model=None``) an already running server is used instead.

    Each load's workload is replayed ``replay_repeats`` times (``replay/load{x}``, then
    ``replay/load{x}.rep{k}``) so the engine's own run-to-run spread is measured beside the
    simulator's error. A replay whose client sent requests late (p99 send lag above the bound of
    :func:`send_lag_bound`) is moved to ``replay/rejected/`` and run again, up to ``lag_retries``
    times; one still lagged is kept and marked ``lag_clean: false``, never silently compared.
    """
    import contextlib
    from dataclasses import replace

    from servesim.engine.client import ReplayOptions
    from servesim.engine.profile import SweepPlan, measure_capacity, profile_engine
    from servesim.engine.replay import _tiny_model_vocab, replay
    from servesim.engine.server import VLLMServer, vllm_version

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    plan = plan or SweepPlan(seed=seed)
    if opts is None:
        vocab = _tiny_model_vocab(model)
        opts = ReplayOptions(seed=seed) if vocab is None else ReplayOptions(vocab_size=vocab[0], first_token_id=vocab[1], seed=seed)
    opts = replace(opts, request_timeout_s=request_timeout_s, max_duration_s=max_duration_s)
    meta = {"model": Path(str(model)).name if model else "remote", "hardware": "cpu", "tp": config.tensor_parallel_size, "pp": 1,
            **(meta or {}), "engine": config.to_dict(), "vllm_version": vllm_version()}
    results = {}
    if (model is None) == (url is None):
        raise ValueError("give exactly one of model (start a server) or url (use a running one)")
    ctx = VLLMServer(model, config, log_path=out / "server.log", start_timeout_s=start_timeout_s) \
        if model is not None else contextlib.nullcontext(None)
    with ctx as srv:
        if srv is not None:
            url = srv.url
            meta.update(kv_blocks=srv.kv_blocks, kv_tokens=srv.kv_tokens, startup_s=srv.startup_s)
        else:
            from servesim.engine.replay import _remote_kv_blocks
            meta.update(kv_blocks=_remote_kv_blocks(url))
        fit = profile_engine(url, out / "profile", plan=plan, opts=opts, max_num_seqs=config.max_num_seqs,
                             max_num_batched_tokens=config.max_num_batched_tokens, meta=meta)
        (out / "workloads").mkdir(exist_ok=True)
        bound = send_lag_bound(out / "profile", max_send_lag_p99_s)
        for x in loads:
            wl = heldout_workload(out / "profile" / "fit.json", x, n_requests, seed=seed)
            wl.to_parquet(out / "workloads" / f"load{x}.parquet", index=False)
            for rep in range(replay_repeats):
                d = out / "replay" / replay_name(x, rep)
                for attempt in range(lag_retries + 1):
                    s = replay(wl, d, url=url, config=config, opts=opts, warmup=2)
                    lag = s.get("client_send_lag_p99_s", float("nan"))
                    clean = bool(lag <= bound)  # NaN (nothing sent) is not clean
                    if clean or attempt == lag_retries:
                        break
                    rejected = out / "replay" / "rejected" / f"{d.name}.try{attempt}"
                    rejected.parent.mkdir(parents=True, exist_ok=True)
                    shutil.rmtree(rejected, ignore_errors=True)
                    d.rename(rejected)
                # record the server's real KV capacity (read at start-up)
                s.update(kv_blocks=meta.get("kv_blocks"), kv_tokens=meta.get("kv_tokens"), model=str(model or url),
                         load=x, repeat=rep, capacity_req_s=fit["capacity_req_s"], send_lag_bound_s=bound,
                         lag_clean=clean, attempts=attempt + 1)
                if plan.capacity_requests:
                    # the same capacity burst again: how far the engine's speed drifted since the
                    # profile (on a shared host other work changes it; the simulator cannot know)
                    s["capacity_after_req_s"] = measure_capacity(url, plan.capacity_requests, opts,
                                                                 plan.seed + 1)["capacity_req_s"]
                (d / "summary.json").write_text(json.dumps(s, indent=1, default=str) + "\n")
                results.setdefault(x, []).append(s)
    return {"fit": fit, "replays": results}


def replay_name(load: float, repeat: int) -> str:
    """The folder of one replay under ``replay/``: ``load{x}`` for the first, ``load{x}.rep{k}`` after."""
    return f"load{load}" if repeat == 0 else f"load{load}.rep{repeat}"


def send_lag_bound(profile_dir: str | Path, explicit_s: float | None = None) -> float:
    """The p99 client send lag above which a replay is not a clean measurement (seconds).

    ``explicit_s`` if given; else the larger of 10 ms and 5 % of the median lone-request TTFT
    the profile measured (``lone_ttft.csv``): lateness below both is far inside any latency the
    comparison reads."""
    if explicit_s is not None:
        if not explicit_s > 0:
            raise ValueError(f"max_send_lag_p99_s={explicit_s}: must be > 0")
        return float(explicit_s)
    lone = Path(profile_dir) / "lone_ttft.csv"
    med = float(pd.read_csv(lone)["ttft_s"].median()) if lone.exists() else 0.0
    return max(0.010, 0.05 * med)
