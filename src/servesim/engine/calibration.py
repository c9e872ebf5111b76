"""Held-out workloads for simulator-vs-engine comparison, at fractions of measured capacity.

The profiling sweep (:mod:`.profile`) measures the engine's saturation throughput on a request
mix; the comparison workloads use the same length mix with different seeds (so they are not the
sweep's requests) and Poisson arrivals at ``load x capacity`` requests per second. Besides these
loads, *held-out shapes* (`SHAPES`: bursty arrivals, long prompts, long outputs, a load ramp
through saturation) are workloads unlike anything the fit or the loads saw.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import numpy as np
import pandas as pd

#: how the held-out workloads are replayed: over HTTP on the profiled server, or in process (issue 33)
REPLAY_MODES = ("http", "in-process")
#: seed offset of held-out workloads: far from the sweep's seeds (plan.seed, plan.seed + 1)
HELDOUT_SEED = 1000


def _read_mix(fit_json: str | Path) -> tuple[float, tuple[int, int], tuple[int, int], int | None]:
    """(capacity req/s, prompt range, output range, the engine's max_model_len or None) of a fit."""
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
    max_len = (fit.get("engine") or {}).get("max_model_len")
    return cap, ranges[0], ranges[1], (int(max_len) if max_len else None)


def heldout_workload(fit_json: str | Path, load: float, n_requests: int, seed: int = 0) -> pd.DataFrame:
    """``n_requests`` of the profile's mix arriving as a Poisson process at ``load`` x capacity."""
    from servesim.engine.profile import request_mix

    cap, prompt, output, _ = _read_mix(fit_json)
    rate = float(load) * cap
    ss = np.random.SeedSequence([HELDOUT_SEED + seed, int(round(load * 1000))])
    arr_rng = np.random.default_rng(ss.spawn(1)[0])
    arrivals = np.cumsum(arr_rng.exponential(1.0 / rate, n_requests))
    arrivals -= arrivals[0]
    return request_mix(n_requests, int(ss.generate_state(1)[0]), prompt, output, arrival_s=arrivals)


#: held-out shapes: name -> what it is (the generator is `heldout_shape`). Rates are set from the
#: profile's measured capacity on its mix; the long shapes keep the offered *token* load (prompt +
#: output tokens per second) at the stated fraction of the mix's at capacity.
SHAPES = {
    "bursty": "the mix, renewal arrivals with Gamma inter-arrival times of CV 2 at 0.6 x capacity",
    "long-prompt": "prompts 1-3 x the mix's longest (capped by max_model_len), the mix's outputs; 0.5 x capacity's token load",
    "long-output": "the mix's prompts, outputs 1-4 x the mix's longest (capped by max_model_len); 0.5 x capacity's token load",
    "ramp": "the mix, Poisson arrivals whose rate rises linearly from 0.3 to 1.2 x capacity (through saturation)",
}
BURSTY_CV, BURSTY_LOAD, LONG_LOAD, RAMP_LOADS = 2.0, 0.6, 0.5, (0.3, 1.2)


def _check_shape(name: str) -> None:
    if name not in SHAPES:
        raise ValueError(f"unknown held-out shape {name!r}; choose from {', '.join(SHAPES)}")


def heldout_shape(fit_json: str | Path, name: str, n_requests: int, seed: int = 0) -> pd.DataFrame:
    """``n_requests`` of the held-out shape ``name`` (`SHAPES`), deterministic in ``seed``."""
    import zlib

    from servesim.engine.profile import request_mix

    _check_shape(name)
    cap, prompt, output, max_len = _read_mix(fit_json)
    ss = np.random.SeedSequence([HELDOUT_SEED + seed, zlib.crc32(name.encode())])
    arr_rng, len_rng = (np.random.default_rng(s) for s in ss.spawn(2))
    n = int(n_requests)
    room = (max_len or 10**9) - 1  # a prompt plus its output must fit the engine's context
    mean = lambda r: 0.5 * (r[0] + r[1])  # noqa: E731
    mix_tokens = mean(prompt) + mean(output)
    if name == "long-prompt":
        hi = max(prompt[1], min(3 * prompt[1], room - output[1]))
        prompt = (prompt[1], hi)
    elif name == "long-output":
        hi = max(output[1], min(4 * output[1], room - prompt[1]))
        output = (output[1], hi)
    lengths = request_mix(n, int(len_rng.integers(2**31)), prompt, output)
    if name == "bursty":
        k = 1.0 / BURSTY_CV**2  # Gamma shape: CV = 1/sqrt(k); mean 1/rate
        gaps = arr_rng.gamma(k, 1.0 / (k * BURSTY_LOAD * cap), n)
    elif name == "ramp":
        from servesim.engine.profile import ramp_arrivals

        t = ramp_arrivals(n, *(x * cap for x in RAMP_LOADS), arr_rng)
        gaps = np.diff(t, prepend=t[0])
    else:  # the long shapes: the token load of LONG_LOAD x capacity on the mix
        rate = LONG_LOAD * cap * mix_tokens / (mean(prompt) + mean(output))
        gaps = arr_rng.exponential(1.0 / rate, n)
    arrivals = np.cumsum(gaps)
    arrivals -= arrivals[0]
    return lengths.assign(arrival_s=arrivals)


def run_calibration(model: str | Path | None, out_dir: str | Path, config, *, url: str | None = None, plan=None, loads=(0.3, 0.6, 0.9, 1.2),
                    n_requests: int = 150, seed: int = 0, opts=None, meta: dict | None = None,
                    start_timeout_s: float = 300.0, request_timeout_s: float = 300.0,
                    max_duration_s: float = 1800.0, replay_repeats: int = 1,
                    max_send_lag_p99_s: float | None = None, lag_retries: int = 1, shapes=(),
                    replay_mode: str = "http", cpus: list[int] | None = None, clock: str = "wall",
                    shape_requests: int | None = None, frontend_scale: float = 0.0) -> dict:
    """Profile, then replay held-out workloads at each load (``n_requests`` each) and each held-out
    shape (`SHAPES`; ``shape_requests`` each, default ``n_requests``), on ONE server start.

    Writes ``profile/`` (steps.csv, fit.json, ...), ``workloads/load{x}.parquet`` (and
    ``workloads/{shape}.parquet``) and ``replay/load{x}/`` (``replay/{shape}/``; each with
    requests.parquet, tokens.parquet, summary.json) under ``out_dir``.
    The server is configured like the simulated instance and is always stopped at the end;
    with ``url`` (and ``model=None``) an already running server is used instead.

    Each load's workload is replayed ``replay_repeats`` times (``replay/load{x}``, then
    ``replay/load{x}.rep{k}``) so the engine's own run-to-run spread is measured beside the
    simulator's error. A replay whose client sent requests late (p99 send lag above the bound of
    :func:`send_lag_bound`) is moved to ``replay/rejected/`` and run again, up to ``lag_retries``
    times; one still lagged is kept and marked ``lag_clean: false``, never silently compared.

    ``replay_mode="in-process"`` (issues 33, 34): no server is started. vLLM's engine, in a process
    of its own pinned to ``cpus``, is profiled (`inprocess.profile_in_process`: every sweep step
    timed and its batch read from the scheduler, frontend overhead 0) and then replays every case
    (`inprocess.replay_many_in_process`): no client, no API server, each step's batch in
    ``steps.parquet``. Profile and replays see one harness, so the simulator is fitted and judged on
    the same engine. Requests join between steps as a server's engine core takes them, so there is
    no client lag to reject (``lag_clean`` is true). ``clock`` (`inprocess.CLOCKS`): the time the
    in-process profile and replays run on (``engine``: the engine's own CPU time, one pinned core).

    ``frontend_scale`` > 0 (HTTP with a server started here): after the replays, the same server's
    front end is measured (`frontend_cost.measure_on`, its cases' requests x this) into
    ``profile/frontend/frontend.json``, which `compare_repeats(frontend=...)` and the sim_vs_vllm
    notebook read to model the front end as a queue.
    """
    from dataclasses import replace

    from servesim.engine.profile import SweepPlan
    from servesim.engine.replay import model_options
    from servesim.engine.server import vllm_version

    if replay_mode not in REPLAY_MODES:
        raise ValueError(f"replay_mode={replay_mode!r}: one of {REPLAY_MODES}")
    if frontend_scale and (replay_mode != "http" or model is None):
        raise ValueError("frontend_scale: the front end is measured on an HTTP server started here (model, "
                         "replay_mode='http'): its API process's CPU time is read locally")
    if replay_mode == "in-process" and model is None:
        raise ValueError("replay_mode='in-process' starts its own engine: give model, not url")
    from servesim.engine.inprocess import check_clock

    check_clock(clock, cpus, replay_mode == "in-process")
    for name in shapes:  # before a server starts
        _check_shape(name)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    plan = plan or SweepPlan(seed=seed)
    if opts is None:
        opts = model_options(model, seed)
    opts = replace(opts, request_timeout_s=request_timeout_s, max_duration_s=max_duration_s)
    meta = {"model": Path(str(model)).name if model else "remote", "hardware": "cpu", "tp": config.tensor_parallel_size, "pp": 1,
            **(meta or {}), "engine": config.to_dict(), "vllm_version": vllm_version()}
    if (model is None) == (url is None):
        raise ValueError("give exactly one of model (start a server) or url (use a running one)")
    if replay_mode == "in-process":  # no server: the engine is profiled and replayed in a process of its own
        from servesim.engine.inprocess import profile_in_process

        fit = profile_in_process(model, out / "profile", plan=plan, config=config, opts=opts, cpus=cpus, meta=meta,
                                 log=out / "engine_profile.log", timeout_s=max_duration_s + 600, clock=clock)
        shutil.rmtree(out / "replay", ignore_errors=True)
        cases = _cases(out, loads, shapes, n_requests, seed, shape_requests)
        return {"fit": fit, "replays": _replay_in_process(out, cases, model, config, opts, cpus, replay_repeats, fit,
                                                          clock)}
    return _calibrate_http(out, model, url, config, plan, opts, meta, loads=loads, shapes=shapes, n_requests=n_requests,
                           shape_requests=shape_requests, seed=seed, replay_repeats=replay_repeats, max_send_lag_p99_s=max_send_lag_p99_s,
                           lag_retries=lag_retries, start_timeout_s=start_timeout_s, frontend_scale=frontend_scale)


def _calibrate_http(out: Path, model, url, config, plan, opts, meta: dict, *, loads, shapes, n_requests: int,
                    shape_requests: int | None, seed: int, replay_repeats: int, max_send_lag_p99_s, lag_retries: int,
                    start_timeout_s: float, frontend_scale: float = 0.0) -> dict:
    """`run_calibration` through HTTP (the GPU nodes' harness): one server start (or the running
    server at ``url``), its profile (the server started once more if it is lost mid-profile), then
    every case replayed by the client, a lagged replay moved to ``replay/rejected/`` and run again."""
    import contextlib

    from servesim.engine.profile import measure_capacity, profile_engine
    from servesim.engine.replay import replay
    from servesim.engine.server import ServerLostError, VLLMServer

    results = {}
    ctx = VLLMServer(model, config, log_path=out / "server.log", start_timeout_s=start_timeout_s) \
        if model is not None else contextlib.nullcontext(None)
    with ctx as srv:
        if srv is not None:
            url = srv.url
            meta.update(kv_blocks=srv.kv_blocks, kv_tokens=srv.kv_tokens, startup_s=srv.startup_s)
        else:
            from servesim.engine.replay import _remote_kv_blocks
            meta.update(kv_blocks=_remote_kv_blocks(url))
        for attempt in range(2):
            try:
                fit = profile_engine(url, out / "profile", plan=plan, opts=opts, max_num_seqs=config.max_num_seqs,
                                     max_num_batched_tokens=config.max_num_batched_tokens, meta=meta)
                break
            except ServerLostError as exc:
                # a server lost mid-profile is started once more and the profile redone (three
                # times on shared hosts a SIGTERM from outside ended a healthy server here; the
                # signal watcher's line in the log names the sender); a second loss fails the run.
                # Both logs are kept; fit.json records the restart and its reason.
                if srv is None or attempt == 1:
                    raise
                reason = srv.loss_reason()
                srv.stop()
                lost = out / f"server.log.lost{attempt + 1}"
                (out / "server.log").replace(lost)
                print(f"servesim: {exc.args[0]} ({reason}); starting it again and profiling anew "
                      f"(its log kept as {lost})", file=sys.stderr)
                srv.start()
                url = srv.url
                meta.update(kv_blocks=srv.kv_blocks, kv_tokens=srv.kv_tokens, startup_s=srv.startup_s,
                            server_restarts=attempt + 1, server_restart_reason=f"lost mid-profile: {reason}")
        # replays of an earlier run in this folder (more repeats, other shapes) would be read as this
        # run's: every replay below is run anew, so the old ones go
        shutil.rmtree(out / "replay", ignore_errors=True)
        bound = send_lag_bound(out / "profile", max_send_lag_p99_s)
        cases = _cases(out, loads, shapes, n_requests, seed, shape_requests)
        for label, key, wl in cases:
            for rep in range(replay_repeats):
                d = out / "replay" / replay_name(label, rep)
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
                         repeat=rep, capacity_req_s=fit["capacity_req_s"], send_lag_bound_s=bound,
                         lag_clean=clean, attempts=attempt + 1,
                         **({"shape": key} if isinstance(key, str) else {"load": key}))
                if plan.capacity_requests:
                    # the same capacity burst again: how far the engine's speed drifted since the
                    # profile (on a shared host other work changes it; the simulator cannot know)
                    s["capacity_after_req_s"] = measure_capacity(url, plan.capacity_requests, opts,
                                                                 plan.seed + 1)["capacity_req_s"]
                (d / "summary.json").write_text(json.dumps(s, indent=1, default=str) + "\n")
                results.setdefault(key, []).append(s)
        if frontend_scale and srv is not None:
            from servesim.engine.frontend_cost import measure_on, scaled_cases

            measure_on(srv, out / "profile" / "frontend", opts, cases=scaled_cases(frontend_scale), seed=seed)
    return {"fit": fit, "replays": results}


def _cases(out: Path, loads, shapes, n_requests: int, seed: int,
           shape_requests: int | None = None) -> list[tuple[str, float | str, pd.DataFrame]]:
    """(label, load or shape name, workload) of every held-out case, each written to workloads/."""
    fit = out / "profile" / "fit.json"
    cases = [(f"load{x}", x, heldout_workload(fit, x, n_requests, seed=seed)) for x in loads]
    n_shape = n_requests if shape_requests is None else shape_requests
    cases += [(name, name, heldout_shape(fit, name, n_shape, seed=seed)) for name in shapes]
    (out / "workloads").mkdir(exist_ok=True)
    for label, _, wl in cases:
        wl.to_parquet(out / "workloads" / f"{label}.parquet", index=False)
    return cases


def _replay_in_process(out: Path, cases, model, config, opts, cpus, replay_repeats: int, fit: dict,
                       clock: str = "wall") -> dict:
    """Every case's replays on one in-process engine (`inprocess.replay_many_in_process`)."""
    from servesim.engine.inprocess import replay_many_in_process

    runs = [(label, key, rep, wl, out / "replay" / replay_name(label, rep))
            for label, key, wl in cases for rep in range(replay_repeats)]
    sums = replay_many_in_process([(wl, d) for *_, wl, d in runs], model=model, config=config, opts=opts,
                                  warmup=2, cpus=cpus, log=out / "engine_inprocess.log", clock=clock)
    results: dict = {}
    for (label, key, rep, wl, d), s in zip(runs, sums):
        s.update(kv_tokens=(s.get("kv_blocks") or 0) * config.block_size or None, model=str(model), repeat=rep,
                 capacity_req_s=fit["capacity_req_s"], send_lag_bound_s=None, lag_clean=True, attempts=1,
                 **({"shape": key} if isinstance(key, str) else {"load": key}))
        (d / "summary.json").write_text(json.dumps(s, indent=1, default=str) + "\n")
        results.setdefault(key, []).append(s)
    return results


def replay_name(case: float | str, repeat: int) -> str:
    """The folder of one replay under ``replay/``: ``load{x}`` (a load given as a number) or the
    case's label (``load0.3``, ``bursty``) for the first, ``<label>.rep{k}`` after."""
    label = f"load{case}" if not isinstance(case, str) else case
    return label if repeat == 0 else f"{label}.rep{repeat}"


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
