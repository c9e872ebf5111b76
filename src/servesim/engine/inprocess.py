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
process; ``cpus`` pins that child, every thread of it (`pin_process`), to the given cores.
``clock`` (`CLOCKS`) is the time requests join on and latencies are read from: the wall clock, or
the engine's own CPU time (`EngineClock`). Measured on the 2-core host with the quick
engine (3 repeats of 4 loads): pinned to one core, as the HTTP server's engine runs, the repeats'
(max - min) / median spread of P50 TTFT / TPOT / E2E was 1-10 %; unpinned the engine ran faster
but spread 3-32 %. An HTTP replay on the same host spread 48-115 % (issue 33). With a busy loop
on the engine's core (3 repeats of the 0.6 load, quick engine) the wall clock's P50 E2E went 5x up
and the engine clock's 1.5x; with the core to itself neither clock's repeats agreed within 5 %,
because the host's own speed moves by more (`benchmarks/host_speed.py`).
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


#: the clock an in-process run keeps (issue 33): ``wall`` (real time: requests join when the wall
#: clock reaches their arrival, idle gaps are slept through) or ``engine`` (`EngineClock`)
CLOCKS = ("wall", "engine")


class EngineClock:
    """The engine's own time: the CPU time of its process (every thread), plus the idle gaps it skips.

    Why: pinned to one core, a process's CPU time advances with its wall time while it computes,
    and stops while another process holds the core. The wall clock also counts the other work's
    time slices, which stretch the engine's steps and move the same arrivals to other steps. Under
    this clock a request joins when the engine's own elapsed work reaches its arrival, and an idle
    engine jumps to the next arrival (no real sleep), so another process on the engine's core
    disturbs a replay far less. It does not take out the host's own speed (a VM's neighbours slow
    the core's work itself: `benchmarks/host_speed.py`). Needs a one-core pin (several cores' CPU
    time would run ahead of the engine's time)."""

    def __init__(self) -> None:
        self._offset = -time.process_time()

    def __call__(self) -> float:
        return self._offset + time.process_time()

    def sleep(self, dt: float) -> None:
        self._offset += max(float(dt), 0.0)


def check_clock(name: str, cpus=None, in_process: bool = True, how: str = "in process") -> None:
    """A clock ``name`` (`CLOCKS`) that an engine pinned to ``cpus`` can keep, or a clear error
    (an HTTP replay, ``in_process`` false, runs on the wall clock only; ``how`` says what makes a
    run in-process, e.g. a command-line flag)."""
    if name not in CLOCKS:
        raise ValueError(f"clock {name!r}: one of {', '.join(CLOCKS)}")
    if name != "wall" and not in_process:
        raise ValueError(f"clock {name!r}: only with {how} (an HTTP replay runs on the wall clock)")
    if name == "engine" and (cpus is None or len(cpus) != 1):
        raise ValueError(f"clock 'engine' needs the engine pinned to one core (cpus={cpus!r}, e.g. --cpus last): "
                         "the CPU time of several cores runs ahead of the engine's own time")


def make_clock(name: str, cpus=None):
    """(clock, sleep) of ``name`` (`CLOCKS`); ``cpus``: the cores the process is pinned to."""
    check_clock(name, cpus)
    if name == "wall":
        return time.perf_counter, time.sleep
    c = EngineClock()
    return c, c.sleep


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
        """Wrap ``scheduler.schedule`` until `detach` (one replay: an engine replays many workloads,
        and wrappers left in place would stack, each step paying for every earlier recorder)."""
        orig = scheduler.schedule
        own = "schedule" in vars(scheduler)

        def schedule(*args, **kwargs):
            out = orig(*args, **kwargs)
            self.last = self.aggregate(out)
            return out

        scheduler.schedule = schedule
        self._restore = (lambda: setattr(scheduler, "schedule", orig)) if own else \
            (lambda: delattr(scheduler, "schedule"))

    def detach(self) -> None:
        """Give the scheduler its own ``schedule`` back (a no-op when not attached)."""
        restore, self._restore = getattr(self, "_restore", None), None
        if restore is not None:
            restore()

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
    try:
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
    finally:
        rec.detach()  # the next replay on this engine attaches its own
    for r in records.values():
        if r.state != "finished":
            r.partial, r.reason = True, "replay stopped (max duration)"
    df = pd.DataFrame(steps, columns=list(STEP_COLUMNS)).astype(STEP_COLUMNS)
    rec.ext = ext
    return records, df, rec


class Stepper:
    """An in-process engine driven one step at a time, for the profiling sweep: requests added now,
    each step's wall time and batch (`BatchRecorder`'s aggregates) returned as a row."""

    def __init__(self, engine, opts: ReplayOptions, sampling, clock=time.perf_counter) -> None:
        self.engine, self.opts, self.sampling, self.clock = engine, opts, sampling, clock
        self.rec = BatchRecorder({})
        sched = _scheduler(engine)
        if sched is None:
            raise EngineStepError("this vLLM build hides the engine core's scheduler: the in-process profile "
                                  "reads each step's batch from it (use the HTTP profile, --replay-mode http)")
        self.rec.attach(sched)
        self.n = 0

    def add(self, prompt_tokens: int, output_tokens: int) -> str:
        """Queue one request of random prompt tokens; returns its (external) id."""
        self.n += 1
        rid = f"profile-{self.n}"
        ids = prompt_ids(2**40 + self.n, prompt_tokens, self.opts)  # ids apart from any workload's
        eid = self.engine.add_request(rid, {"prompt_token_ids": ids}, self.sampling(output_tokens))
        self.rec.prompt_len[eid if isinstance(eid, str) else rid] = int(prompt_tokens)
        return rid

    def step(self) -> dict:
        self.rec.last = None
        t = self.clock()
        self.engine.step()
        dt = self.clock() - t
        self.rec.step += 1
        return {**(self.rec.last or {}), "step_s": dt}

    def run_out(self) -> list[dict]:
        out = []
        while self.engine.has_unfinished_requests():
            out.append(self.step())
        return out

    def abort(self, ids) -> None:
        self.engine.abort_request(list(ids))
        self.run_out()

    def close(self) -> None:
        """Detach the recorder: the engine's later replays record their own steps."""
        self.rec.detach()


def _shape_row(step: dict, regime: str) -> dict:
    return {k: step[k] for k in ("prefill_tokens", "prefill_ctx", "decode_seqs", "decode_ctx")} | \
        {"step_s": step["step_s"], "regime": regime}


def sweep_in_process(st: Stepper, plan, max_num_seqs: int, max_num_batched_tokens: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The profiling sweep of `servesim.engine.profile.SweepPlan` on an in-process engine: the same
    batch shapes as the HTTP sweep (`profile.sweep_async`), each step timed and its batch read from
    the scheduler, so a row is a measured step, not an estimate from request histograms:

    - prefill-heavy: a lone prompt of L with one output token is one step;
    - decode-heavy: B prompts of C generating N tokens; the row is the mean of the steps that decode
      all B and prefill nothing (their mean context, as the HTTP sweep's ``B*(C + N/2)``);
    - mixed: B requests of ``mixed_context`` decoding, then a probe of L: the step that prefills the
      probe beside the B decodes (kept only when it did exactly that); the background is then aborted.

    Returns (step rows, lone-request rows: prompt_tokens, ttft_s with the engine's own TTFT = the
    prefill step, engine_queue_s 0, engine_prefill_s)."""
    rows, lone = [], []
    for _ in range(3):  # warm-up, as the HTTP sweep
        st.add(16, 1)
        st.run_out()
    for _rep in range(plan.repeats):
        for L in plan.prefill_lengths:
            if L <= max_num_batched_tokens:
                st.add(L, 1)
                steps = [x for x in st.run_out() if x.get("prefill_tokens", 0) > 0]
                if len(steps) == 1 and steps[0]["prefill_tokens"] == L and steps[0]["decode_seqs"] == 0:
                    rows.append(_shape_row(steps[0], "prefill-heavy"))
                    lone.append({"prompt_tokens": L, "ttft_s": steps[0]["step_s"], "engine_queue_s": 0.0,
                                 "engine_prefill_s": steps[0]["step_s"]})
        for C in plan.decode_contexts:
            for B in plan.decode_batches:
                if B <= max_num_seqs and B * C <= 4 * max_num_batched_tokens:
                    for _ in range(B):
                        st.add(C, plan.decode_tokens)
                    pure = pd.DataFrame([x for x in st.run_out()
                                         if x.get("prefill_tokens", -1) == 0 and x.get("decode_seqs") == B])
                    if len(pure):
                        rows.append({"prefill_tokens": 0, "prefill_ctx": 0, "decode_seqs": B,
                                     "decode_ctx": float(pure["decode_ctx"].mean()), "step_s": float(pure["step_s"].mean()),
                                     "regime": "decode-heavy"})
        for B in plan.mixed_batches:
            for L in plan.prefill_lengths:
                if B < max_num_seqs and L + B <= max_num_batched_tokens \
                        and B * plan.mixed_context <= max_num_batched_tokens:
                    bg = [st.add(plan.mixed_context, 128) for _ in range(B)]
                    for _ in range(64):  # until every background request decodes
                        x = st.step()
                        if x.get("prefill_tokens") == 0 and x.get("decode_seqs") == B:
                            break
                    st.add(L, 1)
                    x = st.step()
                    if x.get("prefill_tokens") == L and x.get("decode_seqs") == B:
                        rows.append(_shape_row(x, "mixed"))
                    st.abort(bg)
    return pd.DataFrame(rows), pd.DataFrame(lone, columns=["prompt_tokens", "ttft_s", "engine_queue_s", "engine_prefill_s"])


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


#: the speed probe's request ids: apart from every workload's, the warm-up's and the profile's
PROBE_ID_BASE = 2 * 10**12
#: the probe burst's length mix seed (`profile.request_mix`), apart from the capacity burst's
PROBE_SEED = 0x5EED


class SpeedProbe:
    """The same burst of ``n`` requests of the mix (every arrival at 0: the same batches each time)
    run to completion on the engine whenever called; each run's busy time (the sum of its step
    times) against the others' is how fast the host ran the engine then, measured apart from any
    replay (issue 33: on the paper-scale engine a replay's own speed moved by up to 11 % from one
    replay to the next, and the last and first 5 s of the replays beside it tracked it within 1.4 %
    on average). Each run gets new request ids; their lengths are the same."""

    def __init__(self, engine, n: int, opts: ReplayOptions, *, sampling, clock=time.perf_counter,
                 sleep=time.sleep) -> None:
        from servesim.engine.profile import request_mix

        self.engine, self.opts, self.sampling, self.clock, self.sleep = engine, opts, sampling, clock, sleep
        self.burst = request_mix(int(n), PROBE_SEED)
        self.runs = 0

    def __call__(self) -> dict:
        wl = self.burst.copy()
        wl["request_id"] = PROBE_ID_BASE + self.runs * 10**6 + np.arange(len(wl))
        self.runs += 1
        _, steps, _ = drive(self.engine, wl, self.opts, sampling=self.sampling, clock=self.clock, sleep=self.sleep)
        return {"requests": int(len(wl)), "steps": int(len(steps)), "busy_s": float((steps.end_s - steps.start_s).sum())}


class LiveProfile:
    """The live profile replay (`SweepPlan.live_requests`) in its slices (`live_slices`), each run
    to completion between two speed probes, and the profile files written from them
    (`write_profile`). Under ``live_placement`` ``first`` every slice runs at once, before the
    held-out replays; under ``spread`` the first slice runs before them and the others among and
    after them (`slice_positions`), so the steps the simulator's model is fitted on sample the
    host over the same minutes as the replays it is compared with. Until the last slice has run,
    fit.json is made on the slices run so far and says so (``live_profile.partial``): the fit is
    rewritten after every slice, between its probe after and the next replay."""

    def __init__(self, engine, plan, out: Path, write, *, capacity_req_s: float, opts, sampling, clock, sleep,
                 probe: SpeedProbe | None, max_model_len: int = 2048) -> None:
        from servesim.engine.profile import live_slices, live_workload

        self.engine, self.plan, self.write = engine, plan, write
        self.opts, self.sampling, self.clock, self.sleep, self.probe = opts, sampling, clock, sleep, probe
        wl = live_workload(plan.live_requests, capacity_req_s, plan.seed, envelope=plan.live_envelope,
                           max_model_len=max_model_len, ramps=plan.live_ramps)
        self.dir = out / "live"
        self.dir.mkdir(parents=True, exist_ok=True)
        wl.to_parquet(self.dir / "workload.parquet", index=False)
        self.slices = live_slices(wl, plan.live_slices)
        self.parts: list = []  # each slice's steps
        self.around: list[dict] = []  # each slice's probes and busy time
        self.positions: list[int] = []  # before which replay each slice still to run runs
        self.wall_s = 0.0

    @property
    def pending(self) -> int:
        return len(self.slices) - len(self.parts)

    def run_slice(self, before: dict | None) -> dict | None:
        """Run the next slice; ``before``: the probe just before it. Returns the probe after it."""
        t0 = time.perf_counter()
        part = drive(self.engine, self.slices[len(self.parts)], self.opts, sampling=self.sampling, clock=self.clock,
                     sleep=self.sleep)[1]
        after = self.probe() if self.probe else None
        self.wall_s += time.perf_counter() - t0
        self.parts.append(part)
        self.around.append({"before": before, "after": after, "steps": int(len(part)),
                            "busy_s": float((part.end_s - part.start_s).sum())})
        return after

    def schedule(self, n_jobs: int) -> None:
        """Place the slices still to run among ``n_jobs`` replays (`slice_positions`)."""
        from servesim.engine.profile import slice_positions

        self.positions = slice_positions(len(self.slices), n_jobs, self.plan.live_placement)[len(self.parts):]

    def run_due(self, job: int, before: dict | None) -> dict | None:
        """Run every slice placed before replay ``job`` (``n_jobs``: after the last); returns the
        last probe (``before`` where none ran). The profile is rewritten after each slice, so a job
        stopped among the replays keeps every slice it ran (marked partial)."""
        while self.positions and self.positions[0] <= job:
            self.positions.pop(0)
            before = self.run_slice(before)
            self.finish()
        return before

    def finish(self) -> None:
        """Write the profile files from the slices run so far."""
        from servesim.engine.records import join_steps

        join_steps(self.parts).to_parquet(self.dir / "steps.parquet", index=False)
        speed = None
        if self.probe:
            speed = {"placement": self.plan.live_placement, "slices": self.around,
                     "before": self.around[0]["before"], "after": self.around[-1]["after"]}
        self.write(self.dir, speed, {"placement": self.plan.live_placement, "slicing": self.plan.live_slicing,
                                     "slices": len(self.slices),
                                     "slices_run": len(self.parts), "partial": bool(self.pending)}, self.wall_s)


def _profile(engine, config: EngineConfig, opts: ReplayOptions, spec: dict, params, sampling,
             clock=time.perf_counter, sleep=time.sleep, probe: SpeedProbe | None = None) -> LiveProfile | None:
    """The child's profiling work (`profile_in_process`): the sweep, the capacity burst, the live
    profile's slices due before any replay (`LiveProfile`), the files. Returns the live profile
    where slices of it are still to run (`SweepPlan.live_placement` ``spread``)."""
    from servesim.engine.profile import SweepPlan, capacity_of, request_mix, write_profile

    plan = SweepPlan(**{k: tuple(v) if isinstance(v, list) else v for k, v in spec["plan"].items()})
    cache = getattr(getattr(engine, "vllm_config", None), "cache_config", None)
    blocks = getattr(cache, "num_gpu_blocks", None) or config.kv_blocks
    meta = {**(spec.get("meta") or {}), "kv_blocks": int(blocks) if blocks else None,
            "kv_tokens": int(blocks) * config.block_size if blocks else None}
    t0 = time.perf_counter()
    stepper = Stepper(engine, opts, params, clock=clock)
    try:
        steps, lone = sweep_in_process(stepper, plan, config.max_num_seqs, config.max_num_batched_tokens)
    finally:
        stepper.close()
    if steps.empty:
        raise EngineStepError("the in-process profile measured no clean step (every shape was skipped)")
    capacity = {}
    if plan.capacity_requests:
        burst = request_mix(plan.capacity_requests, plan.seed + 1)
        capacity = capacity_of(burst, drive(engine, burst, opts, sampling=sampling, clock=clock, sleep=sleep)[0])
        held = spec.get("heldout")
        if held:  # the held-out shapes' own capacities, where their load is a fraction of them
            from servesim.engine.heldout import shape_load_fields

            def measure(prompt_range, output_range):
                b = request_mix(plan.capacity_requests, plan.seed + 1, prompt_range, output_range)
                return capacity_of(b, drive(engine, b, opts, sampling=sampling, clock=clock, sleep=sleep)[0],
                                   prompt_range, output_range)

            capacity.update(shape_load_fields(held["shapes"], held.get("shape_load_basis", "capacity"), capacity,
                                              config.max_model_len, measure))
    wall = time.perf_counter() - t0

    def write(live_dir, speed, placement, live_wall_s) -> None:
        # no API server in front of this engine: its frontend overhead is none by construction
        m = {**meta, **({"speed_probe": speed} if speed else {}), **({"live_profile": placement} if placement else {})}
        write_profile(spec["out"], steps, lone, 0.0, plan, m, capacity, harness="in-process",
                      wall_s=wall + live_wall_s, live_dir=live_dir)

    if not (plan.live_requests and capacity):
        write(None, None, None, 0.0)
        return None
    # the live profile replay: the engine's steps under a real mix
    live = LiveProfile(engine, plan, Path(spec["out"]), write, capacity_req_s=capacity["capacity_req_s"], opts=opts,
                       sampling=sampling, clock=clock, sleep=sleep, probe=probe, max_model_len=config.max_model_len)
    before = probe() if probe else None  # the host's speed around every slice of the steps the fit is made on
    for _ in range(len(live.slices) if plan.live_placement == "first" else 1):
        before = live.run_slice(before)
    live.finish()  # the held-out workloads are drawn from fit.json's capacity
    return live if live.pending else None


def run_child(jobs: list[tuple[str, str]], model: str, config: EngineConfig, opts: ReplayOptions,
              warmup: int = 2, profile: dict | None = None, clock: str = "wall", cpus=None) -> None:
    """The child's work: build the engine once; with ``profile`` run the profiling sweep first;
    then warm up and replay each (workload file, output folder) in turn, writing its outputs.
    Every step and request time is on ``clock`` (`CLOCKS`)."""
    from vllm import EngineArgs, LLMEngine, SamplingParams
    from vllm.sampling_params import RequestOutputKind

    from servesim.engine.replay import read_workload, write_outputs
    from servesim.engine.server import vllm_version
    from servesim.workload import schema

    tick, sleep = make_clock(clock, cpus)  # before the engine's start: a bad clock fails at once
    t_start = time.perf_counter()
    engine = LLMEngine.from_engine_args(EngineArgs(**engine_kwargs(config, model)))
    startup = time.perf_counter() - t_start

    def params(n_out: int):
        n = max(int(n_out), 1)
        return SamplingParams(max_tokens=n, min_tokens=n, ignore_eos=True, temperature=0.0,
                              output_kind=RequestOutputKind.DELTA)

    def sampling(row):
        return params(row.output_tokens)

    n_probe = int((profile or {}).get("plan", {}).get("probe_requests", 0) or 0)
    probe = SpeedProbe(engine, n_probe, opts, sampling=sampling, clock=tick, sleep=sleep) if n_probe else None
    if profile is not None:
        profile["meta"] = {**(profile.get("meta") or {}), "startup_s": startup, "clock": clock}
        live = _profile(engine, config, opts, profile, params, sampling, clock=tick, sleep=sleep, probe=probe)
        if profile.get("heldout"):  # the calibration's held-out replays, on this engine (no second start)
            jobs = list(jobs) + _heldout_jobs(profile["heldout"])
    else:
        live = None
    if live:
        live.schedule(len(jobs))
    if warmup and jobs:  # a fresh engine's first steps pay one-off costs
        warm = schema.make(np.zeros(warmup), np.full(warmup, 16), np.full(warmup, 4))
        warm["request_id"] = 10**12 + np.arange(warmup)  # apart from any workload id
        drive(engine, warm, opts, sampling=sampling, clock=tick, sleep=sleep)
    last_probe = probe() if probe and jobs else None  # each replay's probes: the one before it and the one after
    cache = getattr(getattr(engine, "vllm_config", None), "cache_config", None)
    blocks = getattr(cache, "num_gpu_blocks", None)
    for k, (wl_path, out_dir) in enumerate(jobs):
        if live:  # the live profile's slices placed before this replay
            last_probe = live.run_due(k, last_probe)
        wl, out = read_workload(wl_path), Path(out_dir)
        meta = {"model": model, "url": None, "engine": config.to_dict(), "options": asdict(opts),
                "vllm_version": vllm_version(), "replay": "in-process", "clock": clock, "startup_s": startup,
                "engine_replay_index": k,
                "kv_blocks": int(blocks) if blocks else config.kv_blocks,
                "cpus": sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
                "started_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
        t0 = time.perf_counter()
        records, steps, rec = drive(engine, wl, opts, sampling=sampling, clock=tick, sleep=sleep)
        wall = time.perf_counter() - t0
        if probe:
            after = probe()
            meta["speed_probe"], last_probe = {"before": last_probe, "after": after}, after
        steps.to_parquet(out / "steps.parquet", index=False)
        meta.update(steps=int(len(steps)), steps_observed=bool(len(steps) and (steps.scheduled_tokens >= 0).all()),
                    preemptions_total=int(sum(rec.preemptions.values())) if rec else None)
        write_outputs(out, wl, records, meta, wall, extras=_request_extras(rec, steps))
    if live:  # the slices placed after the last replay (or every one left, with no replay: the probe
        # before the next is the one after the last slice run)
        live.run_due(len(jobs), last_probe if jobs else live.around[-1]["after"])


def _stage(cases) -> list[tuple[str, str]]:
    """The child's (workload file, folder) jobs of (workload, output folder) pairs: each workload
    written into its folder, whose earlier summary goes (the parent reads a summary as done)."""
    jobs = []
    for wl, out_dir in cases:
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        (out / "summary.json").unlink(missing_ok=True)
        wl.to_parquet(out / "workload.parquet", index=False)
        jobs.append((str(out / "workload.parquet"), str(out)))
    return jobs


def _heldout_jobs(spec: dict) -> list[tuple[str, str]]:
    """The jobs of every held-out replay (`servesim.engine.heldout`) of the profile just written
    under ``spec["root"]``: the workloads are drawn from its fit.json here."""
    from servesim.engine.heldout import replay_runs, write_cases

    root = Path(spec["root"])
    loads, shapes = spec["loads"], spec["shapes"]
    wls = {label: wl for label, _, wl in write_cases(root, loads, shapes, int(spec["n_requests"]), int(spec["seed"]),
                                                     spec.get("shape_requests"))}
    return _stage([(wls[label], d) for label, _, _, d in replay_runs(root, loads, shapes, int(spec["repeats"]))])


def _run_engine_child(model: str | Path, config: EngineConfig, opts: ReplayOptions, spec: dict, log: Path,
                      limit_s: float, cpus: list[int] | None) -> subprocess.CompletedProcess:
    """Run ``python -m servesim.engine.inprocess`` with the server's environment, in-process engine
    core, pinned to ``cpus``; ``spec`` holds its work (jobs, profile)."""
    check_clock(spec.get("clock", "wall"), cpus)  # here, before an engine starts for minutes
    env = VLLMServer(model, config).environment()
    env["VLLM_ENABLE_V1_MULTIPROCESSING"] = "0"
    spec = {**spec, "config": config.to_dict(), "opts": asdict(opts), "cpus": list(cpus) if cpus else None}
    cmd = [sys.executable, "-m", "servesim.engine.inprocess", str(model), json.dumps(spec)]
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "wb") as f:
        return subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env,
                              timeout=limit_s)


def _log_tail(log: Path, n: int = 15) -> str:
    return "\n".join(log.read_text(errors="replace").splitlines()[-n:])


def _default_opts(model) -> ReplayOptions:
    from servesim.engine.replay import model_options

    return model_options(model)


def profile_in_process(model: str | Path, out_dir: str | Path, *, plan, config: EngineConfig = EngineConfig(),
                       opts: ReplayOptions | None = None, cpus: list[int] | None = None, meta: dict | None = None,
                       log: str | Path | None = None, timeout_s: float = 1800.0, clock: str = "wall",
                       heldout: dict | None = None, warmup: int = 2) -> dict:
    """Profile vLLM's engine in process (`sweep_in_process`, the capacity burst through `drive`):
    the same files as the HTTP profile (`servesim.engine.profile.write_profile`) with
    ``harness: "in-process"``, a frontend overhead of 0 (there is no API server) and its ``clock``
    (`CLOCKS`). Returns fit.json.

    ``heldout`` (the calibration's cases: ``root``, ``loads``, ``shapes``, ``n_requests``, ``seed``,
    ``shape_requests``, ``repeats``): the same engine then replays them, after ``warmup`` requests,
    as `replay_many_in_process` would, each into its folder of ``replay_runs`` (one engine start
    where two cost 20 s more on the 2-core host); the workloads are drawn from the new fit.json."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / "fit.json").unlink(missing_ok=True)
    log = Path(log) if log else out / "engine.log"
    profile = {"out": str(out), "plan": asdict(plan), "meta": meta or {}}
    if heldout:
        profile["heldout"] = heldout
    spec = {"jobs": [], "warmup": warmup if heldout else 0, "clock": clock, "profile": profile}
    p = _run_engine_child(model, config, opts or _default_opts(model), spec, log, timeout_s, cpus)
    if p.returncode != 0 or not (out / "fit.json").exists():
        raise EngineStepError(f"in-process profile{' and replays' if heldout else ''} exited with {p.returncode} "
                              f"(log {log}):\n{_log_tail(log)}")
    return json.loads((out / "fit.json").read_text())


def replay_many_in_process(cases: list[tuple[pd.DataFrame, str | Path]], *, model: str | Path,
                           config: EngineConfig = EngineConfig(), opts: ReplayOptions | None = None,
                           warmup: int = 2, cpus: list[int] | None = None, log: str | Path | None = None,
                           clock: str = "wall") -> list[dict]:
    """Replay each (workload, output folder) on ONE in-process engine (started once, in a child
    process of its own, warmed up once); returns each folder's summary.json content. ``cpus``:
    cores the child is pinned to (default: all); ``clock``: `CLOCKS` (``engine`` needs one core)."""
    opts = opts or _default_opts(model)
    jobs = _stage(cases)
    log = Path(log) if log else Path(jobs[0][1]) / "engine.log"
    limit = sum(opts.max_duration_s for _ in jobs) + 600
    p = _run_engine_child(model, config, opts, {"jobs": jobs, "warmup": warmup, "clock": clock}, log, limit, cpus)
    done = [Path(o) / "summary.json" for _, o in jobs]
    if p.returncode != 0 or not all(d.exists() for d in done):
        raise EngineStepError(f"in-process replay exited with {p.returncode} after {sum(d.exists() for d in done)} of "
                              f"{len(jobs)} replays (log {log}):\n{_log_tail(log)}")
    for w, _ in jobs:
        Path(w).unlink()
    return [json.loads(d.read_text()) for d in done]


def replay_in_process(workload: pd.DataFrame | str | Path, out_dir: str | Path, *, model: str | Path,
                      config: EngineConfig = EngineConfig(), opts: ReplayOptions | None = None,
                      warmup: int = 2, cpus: list[int] | None = None, clock: str = "wall") -> dict:
    """Replay one workload in process (`replay_many_in_process`); returns its summary."""
    from servesim.engine.replay import read_workload

    wl = workload if isinstance(workload, pd.DataFrame) else read_workload(workload)
    return replay_many_in_process([(wl, out_dir)], model=model, config=config, opts=opts, warmup=warmup, cpus=cpus,
                                  clock=clock)[0]


def pin_process(cpus) -> None:
    """Pin every thread of this process to ``cpus``. ``sched_setaffinity(0)`` pins the calling
    thread only, and the thread pools that numpy's BLAS starts at import would stay free to spin on
    the other cores (on Linux each thread is a task of /proc/self/task)."""
    tasks = Path("/proc/self/task")
    tids = [int(t) for t in os.listdir(tasks)] if tasks.is_dir() else [0]
    for tid in tids:
        try:
            os.sched_setaffinity(tid, cpus)
        except ProcessLookupError:  # a thread that ended meanwhile
            pass


def _main(argv=None) -> int:
    ap = argparse.ArgumentParser(description="in-process vLLM replay (child of replay_many_in_process)")
    ap.add_argument("model")
    ap.add_argument("spec", help="JSON: jobs [[workload, out]], config, opts, warmup")
    a = ap.parse_args(argv)
    spec = json.loads(a.spec)
    if spec.get("cpus") and hasattr(os, "sched_setaffinity"):  # before vLLM starts its threads: they inherit it
        pin_process(spec["cpus"])
    cfg = dict(spec["config"])
    cfg["extra_args"] = tuple(cfg.get("extra_args", ()))
    run_child([tuple(j) for j in spec["jobs"]], a.model, EngineConfig(**cfg), ReplayOptions(**spec["opts"]),
              warmup=int(spec["warmup"]), profile=spec.get("profile"), clock=spec.get("clock", "wall"),
              cpus=spec.get("cpus"))
    return 0


if __name__ == "__main__":
    raise SystemExit(_main())
