"""Subcommands of the real-engine path: make-tiny-model, replay, profile-engine,
engine-workload, compare-engine.

vLLM starts its workers with ``spawn``; everything heavy runs under ``servesim.cli.main``,
which the console script calls from its ``if __name__ == "__main__"`` guard.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

from servesim.cli_errors import add_debug_flag, run_command
from servesim.errors import InputError

#: exit status of a run whose results are written but partly incomplete (requests that timed
#: out or errored, a replay cut at its max duration): marked ``partial`` in summary.json. Not 1,
#: which is what an uncaught exception gives, so a workflow can keep partial results and still
#: fail on a crash.
EXIT_PARTIAL = 3  # servesim.errors.EXIT_PARTIAL


def _engine_args(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("engine configuration (mirrors the simulator's instance)")
    g.add_argument("--max-num-seqs", type=int, default=32)
    g.add_argument("--max-num-batched-tokens", type=int, default=512)
    g.add_argument("--block-size", type=int, default=32, help="KV block size in tokens (CPU: multiple of 32)")
    g.add_argument("--no-chunked-prefill", action="store_true")
    g.add_argument("--kv-blocks", type=int, default=None, help="pin the number of KV blocks")
    g.add_argument("--kv-cache-gib", type=int, default=1, help="CPU KV cache GiB (whole number; VLLM_CPU_KVCACHE_SPACE)")
    g.add_argument("--max-model-len", type=int, default=2048)
    g.add_argument("--dtype", default="float32", help="float32 on CPU; auto/bfloat16 on a GPU")
    g.add_argument("--gpu-memory-utilization", type=float, default=None)
    g.add_argument("--tensor-parallel-size", type=int, default=1)
    g.add_argument("--enforce-eager", action="store_true", help="no torch.compile: faster start-up")
    g.add_argument("--start-timeout", type=float, default=300.0, help="seconds to wait for /health")
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--model", help="model directory: start `vllm serve` on it as a child process")
    src.add_argument("--url", help="replay against an already running server (e.g. on a GPU node)")


def _config(a):
    from servesim.engine.server import EngineConfig

    return EngineConfig(max_num_seqs=a.max_num_seqs, max_num_batched_tokens=a.max_num_batched_tokens,
                        block_size=a.block_size, chunked_prefill=not a.no_chunked_prefill,
                        kv_blocks=a.kv_blocks, kv_cache_gib=a.kv_cache_gib, max_model_len=a.max_model_len,
                        dtype=a.dtype, gpu_memory_utilization=a.gpu_memory_utilization,
                        tensor_parallel_size=a.tensor_parallel_size, enforce_eager=a.enforce_eager)


def _cmd_tiny(a) -> int:
    from pathlib import Path

    from servesim.engine.tiny_model import make_tiny_model

    if Path(a.dir).exists() and not Path(a.dir).is_dir():
        raise InputError(f"{a.dir}: is a file, not a folder")
    if a.max_model_len < 1:
        raise InputError(f"--max-model-len {a.max_model_len}: must be >= 1")

    info = make_tiny_model(a.dir, size=a.size, seed=a.seed, max_model_len=a.max_model_len)
    print(json.dumps(info.__dict__))
    return 0


def _check_engine_args(a) -> None:
    """Engine options and the model folder, before a server is started (InputError names the option)."""
    import math
    from pathlib import Path

    for opt in ("max_num_seqs", "max_num_batched_tokens", "block_size", "max_model_len", "tensor_parallel_size",
                "kv_blocks", "kv_cache_gib"):
        v = getattr(a, opt, None)
        if v is not None and v < 1:
            raise InputError(f"--{opt.replace('_', '-')} {v}: must be >= 1")
    for opt in ("start_timeout", "request_timeout", "max_duration"):
        v = getattr(a, opt, None)
        if v is not None and not (math.isfinite(v) and v > 0):
            raise InputError(f"--{opt.replace('_', '-')} {v}: must be a finite number of seconds > 0")
    if a.gpu_memory_utilization is not None and not 0 < a.gpu_memory_utilization <= 1:
        raise InputError(f"--gpu-memory-utilization {a.gpu_memory_utilization}: must be in (0, 1]")
    if getattr(a, "model", None) and not Path(a.model).is_dir():
        raise InputError(f"--model {a.model}: not a model folder")
    if getattr(a, "vocab_size", None) is not None and a.vocab_size < 1:
        raise InputError(f"--vocab-size {a.vocab_size}: must be >= 1")
    if getattr(a, "first_token_id", None) is not None and a.first_token_id < 0:
        raise InputError(f"--first-token-id {a.first_token_id}: must be >= 0")
    if getattr(a, "seed", None) is not None and a.seed < 0:
        raise InputError(f"--seed {a.seed}: must be an integer >= 0")


def _check_sweep_args(a) -> None:
    """The profiling sweep's options (profile-engine and engine-calibrate share them)."""
    if a.repeats < 1 or a.capacity_requests < 0:
        raise InputError(f"--repeats {a.repeats} / --capacity-requests {a.capacity_requests}: "
                         "need repeats >= 1 and capacity-requests >= 0")


def _check_url(url: str | None) -> None:
    """A --url server must answer before any work: otherwise every request would end `unfinished`
    and the run would look like a (very slow) engine rather than a typo."""
    if not url:
        return
    import httpx

    if not url.startswith(("http://", "https://")):
        raise InputError(f"--url {url}: not an http(s) URL")
    try:
        httpx.get(url.rstrip("/") + "/health", timeout=10)
    except httpx.HTTPError as exc:
        raise InputError(f"--url {url}: no server answers ({type(exc).__name__}: {exc})") from None


def _check_fits_context(wl, source: str, max_model_len: int) -> None:
    """Every request must fit the engine's context (the server would reject it mid-replay)."""
    total = (wl["prompt_tokens"] + wl["output_tokens"]).to_numpy()
    over = total > max_model_len
    if over.any():
        import numpy as np

        i = int(np.flatnonzero(over)[0])
        raise InputError(f"{source}: row {i}: prompt_tokens + output_tokens = {int(total[i])} exceeds "
                         f"--max-model-len {max_model_len} ({int(over.sum())} row(s) do)")


def _cmd_replay(a) -> int:
    from servesim.engine.client import ReplayOptions
    from servesim.engine.replay import _tiny_model_vocab, read_workload, replay
    from servesim.output_dir import check_output_dir, staged_output_dir

    _check_engine_args(a)
    cpus = _cpus(a.cpus)
    _check_clock(a.clock, cpus, a.in_process, "--in-process")
    check_output_dir(a.out, force=a.force)
    wl = read_workload(a.workload)
    if len(wl) == 0:
        raise InputError(f"{a.workload}: no requests (the table has no rows)")
    _check_fits_context(wl, str(a.workload), a.max_model_len)
    _check_url(a.url)
    vocab = _tiny_model_vocab(a.model) or (a.vocab_size, a.first_token_id)
    opts = ReplayOptions(request_timeout_s=a.request_timeout, max_duration_s=a.max_duration,
                         vocab_size=vocab[0], first_token_id=vocab[1], seed=a.seed)
    if a.in_process and a.url:
        raise InputError("--in-process drives the engine in a child process of its own: give --model, not --url")
    with staged_output_dir(a.out, command="servesim replay", force=a.force) as tmp:
        if a.in_process:
            from servesim.engine.inprocess import replay_in_process

            summary = replay_in_process(wl, tmp, model=a.model, config=_config(a), opts=opts, cpus=cpus, clock=a.clock)
        else:
            summary = replay(wl, tmp, model=a.model, url=a.url, config=_config(a), opts=opts,
                             start_timeout_s=a.start_timeout)
    run = summary["all"]
    print(json.dumps({"requests": run["requests"], "states": run["states"], "partial": summary["partial"],
                      "kv_blocks": summary["kv_blocks"], "request_throughput_per_s": run["request_throughput_per_s"],
                      "output_throughput_tok_per_s": run["output_throughput_tok_per_s"]}))
    return EXIT_PARTIAL if summary["partial"] else 0


def _check_clock(clock: str, cpus, in_process: bool, flag: str) -> None:
    """``--clock`` (`inprocess.check_clock`): ``engine`` only with ``flag`` and on one pinned core."""
    from servesim.engine.inprocess import check_clock

    try:
        check_clock(clock, cpus, in_process, how=flag)
    except ValueError as exc:
        raise InputError(f"--clock {clock}: {exc}") from None


def _cpus(text: str | None) -> list[int] | None:
    """``--cpus 1`` / ``0,1`` / ``last`` (the highest core this process may use): the cores to pin
    the in-process engine to."""
    if not text:
        return None
    have = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else list(range(os.cpu_count() or 1))
    if text == "last":
        return [have[-1]]
    try:
        cpus = sorted({int(c) for c in text.split(",")})
    except ValueError:
        raise InputError(f"--cpus {text!r}: comma-separated core numbers, e.g. 1 or 0,1") from None
    if not set(cpus) <= set(have):
        raise InputError(f"--cpus {text!r}: this process may run on cores {have} only")
    return cpus


def _cmd_profile(a) -> int:
    from servesim.engine.client import ReplayOptions
    from servesim.engine.profile import SweepPlan
    from servesim.engine.replay import _tiny_model_vocab
    from servesim.engine.server import vllm_version
    from pathlib import Path

    from servesim.output_dir import check_output_dir, staged_output_dir

    _check_engine_args(a)
    _check_sweep_args(a)
    check_output_dir(a.out, force=a.force)
    _check_url(a.url)
    vocab = _tiny_model_vocab(a.model) or (a.vocab_size, a.first_token_id)
    opts = ReplayOptions(vocab_size=vocab[0], first_token_id=vocab[1], seed=a.seed)
    plan = SweepPlan(repeats=a.repeats, capacity_requests=a.capacity_requests, seed=a.seed)
    cfg = _config(a)
    meta = {"model": a.model_name or (Path(a.model).name if a.model else "remote"),
            "hardware": a.hardware, "tp": cfg.tensor_parallel_size, "pp": 1,
            "engine": cfg.to_dict(), "vllm_version": vllm_version()}
    with staged_output_dir(a.out, command="servesim profile-engine", force=a.force) as out:
        res = _profile_into(a, out, plan, opts, cfg, meta)
    held = {r["regime"]: round(r["mape_pct"], 2) for r in res["heldout_error"]}
    print(json.dumps({"rows": res["n_rows"], "heldout_mape_pct": held,
                      "capacity_req_s": res.get("capacity_req_s"), "kv_blocks": res.get("kv_blocks")}))
    return 0


def _profile_into(a, out, plan, opts, cfg, meta) -> dict:
    from servesim.engine.profile import profile_engine
    from servesim.engine.server import VLLMServer

    if a.url:
        res = profile_engine(a.url, out, plan=plan, opts=opts, max_num_seqs=cfg.max_num_seqs,
                             max_num_batched_tokens=cfg.max_num_batched_tokens, meta=meta)
    else:
        with VLLMServer(a.model, cfg, log_path=out / "server.log", start_timeout_s=a.start_timeout) as srv:
            meta.update(kv_blocks=srv.kv_blocks, kv_tokens=srv.kv_tokens)
            res = profile_engine(srv.url, out, plan=plan, opts=opts, max_num_seqs=cfg.max_num_seqs,
                                 max_num_batched_tokens=cfg.max_num_batched_tokens, meta=meta)
    return res


def _cmd_heldout(a) -> int:
    from servesim.engine.calibration import heldout_workload

    from servesim.output_dir import atomic_file, check_output_file

    import math

    from servesim.workload.schema import MAX_REQUESTS

    if not (math.isfinite(a.load) and a.load > 0) or not 1 <= a.n <= MAX_REQUESTS:
        raise InputError(f"--load {a.load} / -n {a.n}: the load must be a finite number > 0 and "
                         f"-n in [1, {MAX_REQUESTS:,}]")
    check_output_file(a.out)
    wl = heldout_workload(a.fit, a.load, a.n, seed=a.seed)
    with atomic_file(a.out) as tmp:
        wl.to_parquet(tmp, index=False)
    print(json.dumps({"requests": len(wl), "duration_s": float(wl.arrival_s.iloc[-1])}))
    return 0


def _cmd_compare(a) -> int:
    from servesim.engine.compare import compare_run

    from servesim.output_dir import atomic_file, check_output_file

    if a.out:
        check_output_file(a.out)
    table, sim = compare_run(a.replay_dir, a.fit, frontend_overhead=not a.no_frontend_overhead,
                             arrivals=a.arrivals, coalesced=a.coalesced, frontend=a.frontend)
    if a.out:
        with atomic_file(a.out) as tmp:
            table.to_csv(tmp, index=False)
    print(table.to_string(index=False))
    return 0


def _cmd_frontend(a) -> int:
    from servesim.engine.frontend_cost import measure, scaled_cases
    from servesim.output_dir import check_output_dir, staged_output_dir

    if a.url:
        raise InputError("engine-frontend reads the API server's CPU time, so it starts the server here: "
                         "give --model (on a GPU node, run it there)")
    if not a.scale >= 0.05:
        raise InputError(f"--scale {a.scale}: must be >= 0.05")
    _check_engine_args(a)
    check_output_dir(a.out, force=a.force)
    with staged_output_dir(a.out, command="servesim engine-frontend", force=a.force) as out:
        prof = measure(a.model, out, _config(a), cases=scaled_cases(a.scale), seed=a.seed,
                       start_timeout_s=a.start_timeout)
    print(json.dumps({"fit": prof["fit"], "fit_max_rel_err": prof["fit_max_rel_err"], "vllm": prof["vllm"]}))
    return 0


def _cmd_calibrate(a) -> int:
    """Writes into ``-o`` in place (not staged): the workflow keeps the engine's model folder inside
    it; each replay's summary.json says whether it is partial (exit status 3)."""
    from pathlib import Path

    _check_engine_args(a)
    if Path(a.out).exists() and not Path(a.out).is_dir():
        raise InputError(f"-o {a.out}: is a file, not a folder")
    if any(x <= 0 for x in a.loads) or a.n < 1:
        raise InputError(f"--loads {a.loads} / -n {a.n}: loads must be > 0 and -n >= 1")
    if a.shape_requests is not None and a.shape_requests < 1:
        raise InputError(f"--shape-requests {a.shape_requests}: must be >= 1")
    if a.replay_repeats < 1 or a.lag_retries < 0:
        raise InputError(f"--replay-repeats {a.replay_repeats} / --lag-retries {a.lag_retries}: "
                         "need at least one replay and no negative retries")
    if a.max_send_lag_p99 is not None and not a.max_send_lag_p99 > 0:
        raise InputError(f"--max-send-lag-p99 {a.max_send_lag_p99}: must be > 0 seconds")
    _check_sweep_args(a)
    _check_clock(a.clock, _cpus(a.cpus), a.replay_mode == "in-process", "--replay-mode in-process")
    _check_url(a.url)
    if a.replay_mode == "in-process" and a.url:
        raise InputError("--replay-mode in-process starts its own engine: give --model, not --url")
    if a.frontend_scale and (not a.frontend_scale >= 0.05 or a.replay_mode != "http" or not a.model):
        raise InputError(f"--frontend-scale {a.frontend_scale}: >= 0.05, with --replay-mode http and --model (the "
                         "front end's CPU time is read from a server started here)")
    if a.live_requests < 0 or (a.live_requests and (a.replay_mode != "in-process" or not a.capacity_requests)):
        raise InputError(f"--live-requests {a.live_requests}: a count >= 0, and the live profile replay needs "
                         "--replay-mode in-process (its steps are read from the engine) and --capacity-requests > 0 "
                         "(its rates are fractions of that capacity)")
    from servesim.engine.calibration import run_calibration
    from servesim.engine.client import ReplayOptions
    from servesim.engine.profile import SweepPlan
    from servesim.engine.replay import _tiny_model_vocab

    vocab = _tiny_model_vocab(a.model) or (a.vocab_size, a.first_token_id)
    opts = ReplayOptions(vocab_size=vocab[0], first_token_id=vocab[1], seed=a.seed)
    if a.probe_requests < 0 or (a.probe_requests and a.replay_mode != "in-process"):
        raise InputError(f"--probe-requests {a.probe_requests}: a count >= 0, and the speed probe runs on the "
                         "in-process engine (--replay-mode in-process)")
    if a.live_slices < 1 or a.live_slices > max(a.live_requests, 1):
        raise InputError(f"--live-slices {a.live_slices}: at least 1 and at most --live-requests ({a.live_requests})")
    if not 0.0 <= a.live_envelope < 1.0 or (a.live_envelope and not a.live_requests):
        raise InputError(f"--live-envelope {a.live_envelope}: a share in [0, 1) of the live profile's requests "
                         "(--live-requests)")
    if a.live_envelope:
        from servesim.engine.profile import envelope_range
        try:  # before an engine runs for minutes
            envelope_range(max_model_len=a.max_model_len)
        except ValueError as e:
            raise InputError(f"--live-envelope {a.live_envelope} with --max-model-len {a.max_model_len}: {e}") from None
    live = dict(live_requests=a.live_requests, fit_on=a.fit_on, step_form=a.step_form, fit_weighting=a.fit_weighting,
                probe_requests=a.probe_requests, live_envelope=a.live_envelope,
                step_clock=a.step_clock, live_slices=a.live_slices, live_placement=a.live_placement,
                live_slicing=a.live_slicing)
    plan = SweepPlan(repeats=a.repeats, capacity_requests=a.capacity_requests, seed=a.seed, **live)
    if a.tiny:  # the pipeline tests: a few shapes only
        plan = SweepPlan(decode_batches=(1, 4, 16, 32), decode_contexts=(32, 128, 512), decode_tokens=16,
                         prefill_lengths=(32, 128, 256, 384), mixed_batches=(4, 16), repeats=2,
                         capacity_requests=a.capacity_requests, seed=a.seed, **live)
    from servesim.engine.core_claim import claim

    cpus = _cpus(a.cpus)
    with claim(cpus if a.replay_mode == "in-process" else None, a.claim_from):
        res = run_calibration(a.model, a.out, _config(a), url=a.url, plan=plan, loads=a.loads, n_requests=a.n,
                              seed=a.seed, opts=opts, meta={"hardware": a.hardware},
                              start_timeout_s=a.start_timeout, request_timeout_s=a.request_timeout,
                              max_duration_s=a.max_duration, replay_repeats=a.replay_repeats,
                              max_send_lag_p99_s=a.max_send_lag_p99, lag_retries=a.lag_retries, shapes=a.shapes,
                              replay_mode=a.replay_mode, cpus=cpus, clock=a.clock, shape_requests=a.shape_requests,
                              frontend_scale=a.frontend_scale, shape_load_basis=a.shape_load_basis)
    reps = [s for runs in res["replays"].values() for s in runs]
    print(json.dumps({"capacity_req_s": res["fit"]["capacity_req_s"], "kv_blocks": res["fit"].get("kv_blocks"),
                      "partial": {str(x): [s["partial"] for s in runs] for x, runs in res["replays"].items()},
                      "lag_clean": {str(x): [s["lag_clean"] for s in runs] for x, runs in res["replays"].items()}}))
    return EXIT_PARTIAL if any(s["partial"] for s in reps) else 0


def add_parser(subparsers) -> None:
    """Register the engine subcommands on ``servesim``'s subparsers."""
    from servesim.engine.calibration import LOAD_BASES, SHAPES

    p = subparsers.add_parser("make-tiny-model", help="build a random-weight Llama model + tokenizer locally")
    p.add_argument("dir")
    p.add_argument("--size", default="tiny", choices=["tiny", "small", "base"])
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--max-model-len", type=int, default=4096)
    p.set_defaults(func=_cmd_tiny)

    p = subparsers.add_parser("engine-calibrate",
                              help="one server: profile, then replay held-out workloads at several loads")
    _engine_args(p)
    p.add_argument("-o", "--out", required=True)
    p.add_argument("--loads", type=float, nargs="+", default=[0.3, 0.6, 0.9, 1.2])
    p.add_argument("-n", type=int, default=150, help="requests per load (and per held-out shape, unless --shape-requests)")
    p.add_argument("--shape-requests", type=int, default=None, metavar="N",
                   help="requests per held-out shape (default: -n); the long shapes run at a fraction of the "
                        "loads' request rate, so a replay of -n of them lasts several times a load's")
    p.add_argument("--shapes", nargs="*", default=[], metavar="SHAPE", choices=sorted(SHAPES),
                   help="held-out shapes replayed after the loads: " + "; ".join(f"{k}: {v}" for k, v in SHAPES.items()))
    p.add_argument("--shape-load-basis", default="capacity", choices=LOAD_BASES,
                   help="what the long shapes' load is a fraction of: capacity (default), each one's own "
                        "saturation throughput, measured after the mix's by a burst of its lengths; tokens, the "
                        "mix capacity's prompt + output token rate (the reading until 7 Dec: long-output ran at "
                        "about its own capacity)")
    p.add_argument("--repeats", type=int, default=2)
    p.add_argument("--capacity-requests", type=int, default=96)
    p.add_argument("--tiny", action="store_true", help="a minimal sweep (pipeline tests)")
    p.add_argument("--hardware", default="cpu")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--vocab-size", type=int, default=32000)
    p.add_argument("--first-token-id", type=int, default=1000)
    p.add_argument("--request-timeout", type=float, default=300.0)
    p.add_argument("--max-duration", type=float, default=1800.0)
    p.add_argument("--replay-repeats", type=int, default=3,
                   help="replays of each load's workload (the engine's own run-to-run spread)")
    p.add_argument("--max-send-lag-p99", type=float, default=None,
                   help="p99 client send lag (s) above which a replay is rejected and run again "
                        "(default: max(10 ms, 5%% of the median lone-request TTFT))")
    p.add_argument("--replay-mode", choices=["http", "in-process"], default="http",
                   help="http: profile and replay on a vLLM server over HTTP; in-process: no server, vLLM's "
                        "engine in a process of its own is profiled step by step and replays every workload "
                        "(no client or API server; steps.parquet per replay)")
    p.add_argument("--frontend-scale", type=float, default=0.0,
                   help="with --replay-mode http and --model: after the replays, measure the server's front end "
                        "(engine-frontend's cases, requests x this) into profile/frontend/frontend.json (0: not)")
    p.add_argument("--live-requests", type=int, default=0,
                   help="with --replay-mode in-process: a live profile replay of this many requests (the mix, "
                        "Poisson arrivals ramping from 0.3 to 1.2 x capacity, seeds apart from the held-out "
                        "workloads'), every engine step recorded in profile/live/ (0: none)")
    p.add_argument("--fit-on", choices=["live", "sweep"], default="live",
                   help="the steps the simulator's step model is fitted on: the live profile replay's (where "
                        "there is one) or the controlled sweep's; fit.json keeps both fits")
    p.add_argument("--probe-requests", type=int, default=0,
                   help="with --replay-mode in-process: a speed probe of this many requests (a fixed burst of the mix) "
                        "before and after the live profile and every held-out replay; the sim_vs_vllm notebook's "
                        "reading probe-matched simulates each replay at the host speed it measured (0: none)")
    p.add_argument("--live-slices", type=int, default=1,
                   help="with --live-requests: the live profile replay in this many slices of consecutive requests, "
                        "each run to completion with a speed probe after it, so the reading probe-matched's "
                        "baseline follows the host's speed through the profile (1: one run)")
    from servesim.engine.profile import LIVE_PLACEMENTS, LIVE_SLICINGS

    p.add_argument("--live-placement", choices=list(LIVE_PLACEMENTS), default="first",
                   help="with --live-slices > 1: first runs every slice before the held-out replays; spread runs the "
                        "first before them and the others evenly among and after them, so the step model is fitted "
                        "on steps taken over the same minutes as the replays it is compared with")
    p.add_argument("--live-slicing", choices=list(LIVE_SLICINGS), default="ramps",
                   help="with --live-slices > 1: ramps makes each slice a ramp of its own over the live loads, so "
                        "every slice samples every batch size; consecutive cuts one ramp into stretches, so each "
                        "slice holds a band of loads and the host's speed in its minutes falls on those batches")
    p.add_argument("--live-envelope", type=float, default=0.0,
                   help="with --live-requests: this share of them drawn over the engine's context envelope beyond "
                        "the mix (a prompt plus output from the mix's longest to --max-model-len), the ramp thinned "
                        "to keep its token load, so the step model's cost per context token is measured on contexts "
                        "the mix never reaches (0: the mix only)")
    from servesim.perf.fitted import FORMS, WEIGHTINGS

    p.add_argument("--fit-weighting", choices=list(WEIGHTINGS), default="relative-to-fit",
                   help="how the step model weighs the steps it is fitted on (servesim.perf.fitted.WEIGHTINGS): "
                        "relative-to-fit, each step's error over the fit's prediction (the batch's mean step time, "
                        "which a request's latency sums); relative, over the step's measured time (below that mean "
                        "where slow steps scatter further than fast ones); absolute, in seconds")
    p.add_argument("--step-form", choices=list(FORMS), default="quadratic-seqs",
                   help="the step model's form (servesim.perf.fitted): quadratic-seqs adds a term in the square of "
                        "the decoding sequences (the engine's per-sequence work grows with the batch); quadratic-ctx one in "
                        "the square of their context sum as well (attention slowing as the batch's KV grows); linear "
                        "leaves both out")
    from servesim.engine.records import STEP_CLOCKS

    p.add_argument("--step-clock", choices=list(STEP_CLOCKS), default="cycle",
                   help="what a live profile step's time is: cycle (the step and the gap before it while the engine "
                        "had work, which a waiting request also waits) or step (the step's own wall time)")
    p.add_argument("--cpus", default=None, help="with --replay-mode in-process: pin the engine to these cores "
                                                 "(e.g. 1, 0,1, or last)")
    p.add_argument("--claim-from", type=int, default=None, metavar="PID",
                   help="with --cpus: while calibrating, move this scheduler process (an ancestor, e.g. "
                        "Snakemake's: the workflow passes its shell's $PPID) and its other jobs off those cores "
                        "(servesim.engine.core_claim), so jobs run beside the engine but never on its core")
    p.add_argument("--lag-retries", type=int, default=1,
                   help="re-runs of a lagged replay; one still lagged is kept, marked lag_clean=false")
    _clock_arg(p, "--replay-mode in-process")
    p.set_defaults(func=_cmd_calibrate)

    p = subparsers.add_parser("engine-workload", help="held-out workload at a fraction of measured capacity")
    p.add_argument("--fit", required=True, help="fit.json of profile-engine")
    p.add_argument("--load", type=float, required=True)
    p.add_argument("-n", type=int, default=200)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("-o", "--out", required=True, help="workload .parquet")
    p.set_defaults(func=_cmd_heldout)

    p = subparsers.add_parser("compare-engine", help="simulate a replay's workload; engine vs sim percentiles")
    p.add_argument("replay_dir")
    p.add_argument("--fit", required=True, help="fit.json of profile-engine")
    p.add_argument("--no-frontend-overhead", action="store_true")
    p.add_argument("--arrivals", choices=["scheduled", "sent"], default="sent",
                   help="feed the simulator the scheduled arrivals or the client's real send times (in "
                        "process: the driver's, less the engine's own wait for a step's end; compare.sent_entry)")
    p.add_argument("--coalesced", choices=["keep", "drop"], default="keep",
                   help="drop: leave out requests whose stream reached the client in one read (their "
                        "first-token time is the client's, not the engine's); the table says how many")
    p.add_argument("--frontend", default=None, metavar="FRONTEND_JSON",
                   help="an HTTP replay's front end as a queue (servesim.sim.frontend) with the costs of this "
                        "profile (engine-frontend's frontend.json), in place of the constant overhead")
    p.add_argument("-o", "--out", default=None, help="comparison CSV")
    p.set_defaults(func=_cmd_compare)

    p = subparsers.add_parser("engine-frontend",
                              help="measure the API server's CPU cost per request, prompt token and output token "
                                   "on a local vLLM server (frontend.json for the simulator's front end)")
    _engine_args(p)
    p.add_argument("-o", "--out", required=True, help="output directory (frontend.json, cases.csv, server.log)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--scale", type=float, default=1.0, help="requests per case x this (>= 0.05)")
    p.add_argument("--force", action="store_true",
                   help="replace a non-empty output folder that holds no servesim results marker")
    p.set_defaults(func=_cmd_frontend)

    for name, func, helptext in (
            ("replay", _cmd_replay, "replay a workload against a real vLLM server, record every token"),
            ("profile-engine", _cmd_profile, "measure step times of a real vLLM server and fit servesim.perf")):
        p = subparsers.add_parser(name, help=helptext)
        _engine_args(p)
        p.add_argument("-o", "--out", required=True, help="output directory")
        p.add_argument("--seed", type=int, default=0)
        p.add_argument("--vocab-size", type=int, default=32000, help="token-id range of prompts (non-tiny models)")
        p.add_argument("--first-token-id", type=int, default=1000)
        p.add_argument("--force", action="store_true",
                       help="replace a non-empty output folder that holds no servesim results marker")
        if name == "replay":
            p.add_argument("--workload", required=True, help="request table (.parquet or .csv)")
            p.add_argument("--request-timeout", type=float, default=120.0)
            p.add_argument("--max-duration", type=float, default=3600.0)
            p.add_argument("--in-process", action="store_true",
                           help="drive vLLM's engine in a process of its own (no HTTP server or client; "
                                "records every step's batch in steps.parquet)")
            p.add_argument("--cpus", default=None, help="with --in-process: pin the engine to these cores (e.g. 1, 0,1, or last)")
            _clock_arg(p, "--in-process")
        else:
            p.add_argument("--repeats", type=int, default=2)
            p.add_argument("--capacity-requests", type=int, default=96)
            p.add_argument("--hardware", default="cpu")
            p.add_argument("--model-name", default=None, help="model key recorded in the table")
        p.set_defaults(func=func)


def _clock_arg(p, flag: str) -> None:
    p.add_argument("--clock", choices=["wall", "engine"], default="wall",
                   help=f"with {flag}: the time requests join and latencies are measured on: wall (real time), "
                        "or engine (the engine process's own CPU time with idle gaps skipped; needs --cpus of one "
                        "core): another process on the engine's core then slows its steps less than it stretches "
                        "the wall clock")


def main(argv=None) -> int:  # pragma: no cover - convenience for `python -m servesim.engine.cli`
    parser = argparse.ArgumentParser(prog="servesim-engine")
    add_parser(parser.add_subparsers(dest="command", required=True))
    add_debug_flag(parser)
    a = parser.parse_args(argv)
    return run_command(a.func, a, f"servesim {a.command}")


if __name__ == "__main__":
    sys.exit(main())
