"""In-process engine replay (`servesim replay --in-process`): vLLM's own ``LLMEngine`` stepped from
the replaying process, with no HTTP server, API front end or client on the cores.

Why: on a 2-core host an HTTP replay shares one core between the API server, the engine core and
the client, so the client's send lag and the front end's work land in every latency (issue 33).
Here requests are added when the wall clock reaches their arrival, between engine steps, exactly
as a server's engine core sees them, and nothing else runs.

What is recorded, beyond the HTTP replay's ``requests`` / ``tokens`` / ``summary``:
- ``steps.parquet``: every engine step's start and end (seconds from the workload's start) and its
  batch as the simulator's step-time aggregates (``STEP_COLUMNS``), read from vLLM's scheduler
  output (the version-specific part: the scheduler's ``schedule`` is wrapped; the vLLM version is in
  summary.json). A request whose computed tokens are below its prompt length is in prefill (a chunk of
  n tokens after k computed adds n to ``prefill_tokens`` and n*(k+n) to ``prefill_ctx``, as a whole
  prompt of L adds L*L); otherwise it decodes (``decode_seqs`` += 1, ``decode_ctx`` += k + 1).
- per request: ``scheduled_s`` (start of the first step that scheduled it) and ``preemptions``.

The engine runs in a child process (``python -m servesim.engine.inprocess``) with the server's
environment (thread counts not inherited, the CPU KV space set) and
``VLLM_ENABLE_V1_MULTIPROCESSING=0``, so the engine core, the model and the driver loop share one
process; ``cpus`` pins that child to the given cores. Measured on the 2-core host with the quick
engine (3 repeats of 4 loads): pinned to one core, as the HTTP server's engine runs, the repeats'
(max - min) / median spread of P50 TTFT / TPOT / E2E was 1-10 %; unpinned the engine ran faster
but spread 3-32 %. An HTTP replay on the same host spread 48-115 % (issue 33).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from dataclasses import asdict
from pathlib import Path

import numpy as np
import pandas as pd

from servesim.engine.client import ReplayOptions, prompt_ids
from servesim.engine.records import RequestRecord
from servesim.engine.server import EngineConfig, VLLMServer

STEP_COLUMNS: dict[str, str] = {
    "step": "int64", "start_s": "float64", "end_s": "float64", "prefill_tokens": "int64", "prefill_ctx": "int64",
    "decode_seqs": "int64", "decode_ctx": "int64", "new_requests": "int64", "preempted": "int64",
    "scheduled_tokens": "int64", "waiting_added": "int64",
}


class EngineStepError(RuntimeError):
    """The in-process engine could not be driven (wrong vLLM build, child crashed)."""


def engine_kwargs(config: EngineConfig, model: str | Path) -> dict:
    """``vllm.EngineArgs`` keyword arguments with the same settings as the server's command line
    (`EngineConfig.cli_args`), so the two replays run one engine configuration."""
    kw = dict(model=str(model), max_num_seqs=config.max_num_seqs, max_num_batched_tokens=config.max_num_batched_tokens,
              block_size=config.block_size, max_model_len=config.max_model_len, dtype=config.dtype, seed=config.seed,
              enable_prefix_caching=False, enable_chunked_prefill=config.chunked_prefill,
              enforce_eager=config.enforce_eager, tensor_parallel_size=config.tensor_parallel_size)
    if config.kv_blocks is not None:
        kw["num_gpu_blocks_override"] = config.kv_blocks
    if config.gpu_memory_utilization is not None:
        kw["gpu_memory_utilization"] = config.gpu_memory_utilization
    if config.extra_args:
        raise EngineStepError(f"--in-process takes no extra server arguments ({list(config.extra_args)})")
    return kw


class BatchRecorder:
    """Wraps a vLLM scheduler's ``schedule`` and keeps each step's batch as step-time aggregates."""

    def __init__(self, prompt_len: dict[str, int]) -> None:
        self.prompt_len = prompt_len  # engine request id -> prompt tokens
        self.last: dict | None = None
        self.first_scheduled: dict[str, int] = {}  # engine request id -> step index
        self.preemptions: dict[str, int] = {}
        self.step = 0

    def attach(self, scheduler) -> None:
        orig = scheduler.schedule

        def schedule(*args, **kwargs):
            out = orig(*args, **kwargs)
            self.last = self.aggregate(out)
            return out

        scheduler.schedule = schedule

    def aggregate(self, so) -> dict:
        computed = {r.req_id: int(r.num_computed_tokens) for r in so.scheduled_new_reqs}
        cached = so.scheduled_cached_reqs
        computed.update(zip(cached.req_ids, (int(k) for k in cached.num_computed_tokens)))
        pt = pc = ds = dc = 0
        for rid, n in so.num_scheduled_tokens.items():
            k = computed.get(rid, 0)
            self.first_scheduled.setdefault(rid, self.step)
            if k < self.prompt_len.get(rid, 0):  # prompt tokens left: a prefill chunk
                pt += int(n)
                pc += int(n) * (k + int(n))
            else:
                ds += 1
                dc += k + 1
        for rid in so.preempted_req_ids or ():
            self.preemptions[rid] = self.preemptions.get(rid, 0) + 1
        return {"prefill_tokens": pt, "prefill_ctx": pc, "decode_seqs": ds, "decode_ctx": dc,
                "new_requests": len(so.scheduled_new_reqs), "preempted": len(so.preempted_req_ids or ()),
                "scheduled_tokens": int(so.total_num_scheduled_tokens)}


def _scheduler(engine):
    """The EngineCore's scheduler of an in-process LLMEngine (None when this build hides it)."""
    core = getattr(getattr(engine, "engine_core", None), "engine_core", None)
    return getattr(core, "scheduler", None)


def drive(engine, workload: pd.DataFrame, opts: ReplayOptions, *, sampling, clock=time.perf_counter,
          sleep=time.sleep) -> tuple[dict[int, RequestRecord], pd.DataFrame, BatchRecorder | None]:
    """Step ``engine`` through ``workload`` in real time: before each step, add every request whose
    arrival has passed (idle: sleep until the next arrival). ``sampling(row)`` makes a request's
    SamplingParams (DELTA outputs). Returns the request records, the step table and the recorder."""
    wl = workload.sort_values(["arrival_s", "request_id"], kind="stable").reset_index(drop=True)
    arrivals = wl["arrival_s"].to_numpy(float)
    prompt_len: dict[str, int] = {}
    rec = BatchRecorder(prompt_len)
    sched = _scheduler(engine)
    if sched is not None:
        rec.attach(sched)
    records: dict[int, RequestRecord] = {}
    ext: dict[str, int] = {}  # engine request id -> workload request id
    steps = []
    t0 = clock()
    i, n = 0, len(wl)
    while i < n or engine.has_unfinished_requests():
        now = clock() - t0
        if now > opts.max_duration_s:
            break
        added = 0
        while i < n and arrivals[i] <= now:
            row = wl.iloc[i]
            rid = int(row.request_id)
            r = RequestRecord(rid, float(row.arrival_s), sent_s=clock() - t0)
            records[rid] = r
            eid = engine.add_request(str(rid), {"prompt_token_ids": prompt_ids(rid, int(row.prompt_tokens), opts)},
                                     sampling(row), arrival_time=time.time() - (now - float(row.arrival_s)))
            eid = eid if isinstance(eid, str) else str(rid)
            ext[eid], ext[str(rid)] = rid, rid
            prompt_len[eid] = int(row.prompt_tokens)
            i += 1
            added += 1
        if not engine.has_unfinished_requests():
            if i < n:
                sleep(max(0.0, min(arrivals[i] - (clock() - t0), 1.0)))
            continue
        rec.last = None
        ts = clock() - t0
        outs = engine.step()
        te = clock() - t0
        batch = rec.last or {}
        steps.append({"step": rec.step, "start_s": ts, "end_s": te, "waiting_added": added,
                      **{k: batch.get(k, -1) for k in STEP_COLUMNS if k not in ("step", "start_s", "end_s", "waiting_added")}})
        rec.step += 1
        for ro in outs:
            rid = ext.get(str(ro.request_id))
            if rid is None:
                continue
            r = records[rid]
            k = len(ro.outputs[0].token_ids) if ro.outputs else 0
            r.token_times.extend([te] * k)
            if ro.finished:
                r.state, r.finish_s = "finished", te
    for r in records.values():
        if r.state != "finished":
            r.partial, r.reason = True, "replay stopped (max duration)"
    df = pd.DataFrame(steps, columns=list(STEP_COLUMNS)).astype(STEP_COLUMNS)
    rec.ext = ext
    return records, df, rec


def _request_extras(rec: BatchRecorder | None, steps: pd.DataFrame) -> pd.DataFrame | None:
    """Per workload request: when it was first scheduled (start of that step) and how often preempted."""
    if rec is None or not rec.first_scheduled:
        return None
    start = steps.set_index("step")["start_s"]
    rows = {}
    for eid, k in rec.first_scheduled.items():
        rid = rec.ext.get(eid)
        if rid is not None:
            rows[rid] = (float(start.get(k, np.nan)), int(rec.preemptions.get(eid, 0)))
    return pd.DataFrame([(r, s, p) for r, (s, p) in rows.items()], columns=["request_id", "scheduled_s", "preemptions"])


def run_child(jobs: list[tuple[str, str]], model: str, config: EngineConfig, opts: ReplayOptions,
              warmup: int = 2) -> None:
    """The child's work: build the engine once, warm it up, then replay each (workload file,
    output folder) in turn and write its outputs."""
    from vllm import EngineArgs, LLMEngine, SamplingParams
    from vllm.sampling_params import RequestOutputKind

    from servesim.engine.replay import read_workload, write_outputs
    from servesim.engine.server import vllm_version
    from servesim.workload import schema

    t_start = time.perf_counter()
    engine = LLMEngine.from_engine_args(EngineArgs(**engine_kwargs(config, model)))
    startup = time.perf_counter() - t_start

    def sampling(row):
        n = max(int(row.output_tokens), 1)
        return SamplingParams(max_tokens=n, min_tokens=n, ignore_eos=True, temperature=0.0,
                              output_kind=RequestOutputKind.DELTA)

    if warmup:  # a fresh engine's first steps pay one-off costs
        warm = schema.make(np.zeros(warmup), np.full(warmup, 16), np.full(warmup, 4))
        warm["request_id"] = 10**12 + np.arange(warmup)  # apart from any workload id
        drive(engine, warm, opts, sampling=sampling)
    cache = getattr(getattr(engine, "vllm_config", None), "cache_config", None)
    blocks = getattr(cache, "num_gpu_blocks", None)
    for k, (wl_path, out_dir) in enumerate(jobs):
        wl, out = read_workload(wl_path), Path(out_dir)
        meta = {"model": model, "url": None, "engine": config.to_dict(), "options": asdict(opts),
                "vllm_version": vllm_version(), "replay": "in-process", "startup_s": startup, "engine_replay_index": k,
                "kv_blocks": int(blocks) if blocks else config.kv_blocks,
                "cpus": sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
                "started_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
        t0 = time.perf_counter()
        records, steps, rec = drive(engine, wl, opts, sampling=sampling)
        wall = time.perf_counter() - t0
        steps.to_parquet(out / "steps.parquet", index=False)
        meta.update(steps=int(len(steps)), steps_observed=bool(len(steps) and (steps.scheduled_tokens >= 0).all()),
                    preemptions_total=int(sum(rec.preemptions.values())) if rec else None)
        write_outputs(out, wl, records, meta, wall, extras=_request_extras(rec, steps))


def replay_many_in_process(cases: list[tuple[pd.DataFrame, str | Path]], *, model: str | Path,
                           config: EngineConfig = EngineConfig(), opts: ReplayOptions | None = None,
                           warmup: int = 2, cpus: list[int] | None = None, log: str | Path | None = None) -> list[dict]:
    """Replay each (workload, output folder) on ONE in-process engine (started once, in a child
    process of its own, warmed up once); returns each folder's summary.json content. ``cpus``:
    cores the child is pinned to (default: all)."""
    from servesim.engine.replay import _tiny_model_vocab

    if opts is None:
        vocab = _tiny_model_vocab(model)
        opts = ReplayOptions() if vocab is None else ReplayOptions(vocab_size=vocab[0], first_token_id=vocab[1])
    jobs = []
    for wl, out_dir in cases:
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        (out / "summary.json").unlink(missing_ok=True)
        wl.to_parquet(out / "workload.parquet", index=False)
        jobs.append((str(out / "workload.parquet"), str(out)))
    env = VLLMServer(model, config).environment()
    env["VLLM_ENABLE_V1_MULTIPROCESSING"] = "0"
    spec = json.dumps({"jobs": jobs, "config": config.to_dict(), "opts": asdict(opts), "warmup": warmup,
                       "cpus": list(cpus) if cpus else None})
    cmd = [sys.executable, "-m", "servesim.engine.inprocess", str(model), spec]
    log = Path(log) if log else Path(jobs[0][1]) / "engine.log"
    limit = sum(opts.max_duration_s for _ in jobs) + 600
    with open(log, "wb") as f:
        p = subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env, timeout=limit)
    done = [Path(o) / "summary.json" for _, o in jobs]
    if p.returncode != 0 or not all(d.exists() for d in done):
        tail = "\n".join(log.read_text(errors="replace").splitlines()[-15:])
        raise EngineStepError(f"in-process replay exited with {p.returncode} after {sum(d.exists() for d in done)} of "
                              f"{len(jobs)} replays (log {log}):\n{tail}")
    for w, _ in jobs:
        Path(w).unlink()
    return [json.loads(d.read_text()) for d in done]


def replay_in_process(workload: pd.DataFrame | str | Path, out_dir: str | Path, *, model: str | Path,
                      config: EngineConfig = EngineConfig(), opts: ReplayOptions | None = None,
                      warmup: int = 2, cpus: list[int] | None = None) -> dict:
    """Replay one workload in process (`replay_many_in_process`); returns its summary."""
    from servesim.engine.replay import read_workload

    wl = workload if isinstance(workload, pd.DataFrame) else read_workload(workload)
    return replay_many_in_process([(wl, out_dir)], model=model, config=config, opts=opts, warmup=warmup, cpus=cpus)[0]


def _main(argv=None) -> int:
    ap = argparse.ArgumentParser(description="in-process vLLM replay (child of replay_many_in_process)")
    ap.add_argument("model")
    ap.add_argument("spec", help="JSON: jobs [[workload, out]], config, opts, warmup")
    a = ap.parse_args(argv)
    spec = json.loads(a.spec)
    if spec.get("cpus") and hasattr(os, "sched_setaffinity"):  # before vLLM starts its threads: they inherit it
        os.sched_setaffinity(0, spec["cpus"])
    cfg = dict(spec["config"])
    cfg["extra_args"] = tuple(cfg.get("extra_args", ()))
    run_child([tuple(j) for j in spec["jobs"]], a.model, EngineConfig(**cfg), ReplayOptions(**spec["opts"]),
              warmup=int(spec["warmup"]))
    return 0


if __name__ == "__main__":
    raise SystemExit(_main())
