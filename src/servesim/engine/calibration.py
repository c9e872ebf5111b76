"""The engine's calibration: profile vLLM, then replay held-out workloads on the same engine.

One server (``replay_mode="http"``) or one in-process engine (``"in-process"``) is profiled
(:mod:`.profile` / :mod:`.inprocess`) and then replays the held-out loads and shapes
(:mod:`.heldout`, generated from the profile's fit.json), each ``replay_repeats`` times, for the
simulator-vs-engine comparison (:mod:`.compare`).
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pandas as pd

# the held-out workloads live in .heldout (the in-process child builds them too); named here as before
from servesim.engine.heldout import (  # noqa: F401
    BURSTY_CV, BURSTY_LOAD, HELDOUT_SEED, LOAD_BASES, LONG_LOAD, LONG_SHAPES, RAMP_LOADS, SHAPES, check_load_basis,
    check_shape, heldout_shape, heldout_workload, replay_name, replay_runs, shape_load_fields, write_cases,
)

#: how the held-out workloads are replayed: over HTTP on the profiled server, or in process (issue 33)
REPLAY_MODES = ("http", "in-process")
def run_calibration(model: str | Path | None, out_dir: str | Path, config, *, url: str | None = None, plan=None, loads=(0.3, 0.6, 0.9, 1.2),
                    n_requests: int = 150, seed: int = 0, opts=None, meta: dict | None = None,
                    start_timeout_s: float = 300.0, request_timeout_s: float = 300.0,
                    max_duration_s: float = 1800.0, replay_repeats: int = 1,
                    max_send_lag_p99_s: float | None = None, lag_retries: int = 1, shapes=(),
                    replay_mode: str = "http", cpus: list[int] | None = None, clock: str = "wall",
                    shape_requests: int | None = None, frontend_scale: float = 0.0,
                    shape_load_basis: str = "capacity") -> dict:
    """Profile, then replay held-out workloads at each load (``n_requests`` each) and each held-out
    shape (`SHAPES`; ``shape_requests`` each, default ``n_requests``), on ONE server start.
    ``shape_load_basis`` (`LOAD_BASES`): what the long shapes' load is a fraction of; on
    ``capacity`` each long shape's own capacity is measured after the mix's, by a burst of the same
    size of its lengths (fit.json's ``shape_capacity``).

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
    timed and its batch read from the scheduler, frontend overhead 0) and the same engine then
    replays every case, drawn from the fit it has just written (``heldout`` of
    `inprocess.profile_in_process`): no client, no API server, each step's batch in
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
        check_shape(name)
    check_load_basis(shape_load_basis)
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

        shutil.rmtree(out / "replay", ignore_errors=True)
        heldout = {"root": str(out), "loads": list(loads), "shapes": list(shapes), "n_requests": n_requests, "seed": seed,
                   "shape_requests": shape_requests, "repeats": replay_repeats,
                   "shape_load_basis": shape_load_basis}
        n_runs = len(replay_runs(out, loads, shapes, replay_repeats))
        log = out / "engine_profile.log"
        # one engine: the profile, then every held-out replay (their workloads drawn from its fit)
        fit = profile_in_process(model, out / "profile", plan=plan, config=config, opts=opts, cpus=cpus, meta=meta,
                                 log=log, timeout_s=(1 + n_runs) * max_duration_s + 600, clock=clock, heldout=heldout)
        return {"fit": fit, "replays": _collect_in_process(out, loads, shapes, replay_repeats, model, config, fit, log)}
    return _calibrate_http(out, model, url, config, plan, opts, meta, loads=loads, shapes=shapes, n_requests=n_requests,
                           shape_requests=shape_requests, seed=seed, replay_repeats=replay_repeats, max_send_lag_p99_s=max_send_lag_p99_s,
                           lag_retries=lag_retries, start_timeout_s=start_timeout_s, frontend_scale=frontend_scale,
                           shape_load_basis=shape_load_basis)


def _calibrate_http(out: Path, model, url, config, plan, opts, meta: dict, *, loads, shapes, n_requests: int,
                    shape_requests: int | None, seed: int, replay_repeats: int, max_send_lag_p99_s, lag_retries: int,
                    start_timeout_s: float, frontend_scale: float = 0.0, shape_load_basis: str = "capacity") -> dict:
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
        if shapes and plan.capacity_requests:  # the held-out shapes' own capacities (`LOAD_BASES`)
            fit.update(shape_load_fields(
                shapes, shape_load_basis, fit, config.max_model_len,
                lambda p, o: measure_capacity(url, plan.capacity_requests, opts, plan.seed + 1, p, o)))
            (out / "profile" / "fit.json").write_text(json.dumps(fit, indent=1, default=str) + "\n")
        # replays of an earlier run in this folder (more repeats, other shapes) would be read as this
        # run's: every replay below is run anew, so the old ones go
        shutil.rmtree(out / "replay", ignore_errors=True)
        bound = send_lag_bound(out / "profile", max_send_lag_p99_s)
        cases = write_cases(out, loads, shapes, n_requests, seed, shape_requests)
        for rep in range(replay_repeats):  # in rounds, as `replay_runs` orders the in-process replays
            for label, key, wl in cases:
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


def _collect_in_process(out: Path, loads, shapes, replay_repeats: int, model, config, fit: dict, log: Path) -> dict:
    """Every held-out replay the in-process engine ran after its profile, its summary completed."""
    from servesim.engine.inprocess import EngineStepError

    runs = replay_runs(out, loads, shapes, replay_repeats)
    missing = [str(d) for *_, d in runs if not (d / "summary.json").exists()]
    if missing:
        raise EngineStepError(f"the in-process engine wrote no summary for {len(missing)} of {len(runs)} replays "
                              f"({', '.join(missing[:3])}; log {log})")
    results: dict = {}
    for label, key, rep, d in runs:
        (d / "workload.parquet").unlink(missing_ok=True)  # the case's workload is in workloads/<label>.parquet
        s = json.loads((d / "summary.json").read_text())
        s.update(kv_tokens=(s.get("kv_blocks") or 0) * config.block_size or None, model=str(model), repeat=rep,
                 capacity_req_s=fit["capacity_req_s"], send_lag_bound_s=None, lag_clean=True, attempts=1,
                 **({"shape": key} if isinstance(key, str) else {"load": key}))
        (d / "summary.json").write_text(json.dumps(s, indent=1, default=str) + "\n")
        results.setdefault(key, []).append(s)
    return results


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
