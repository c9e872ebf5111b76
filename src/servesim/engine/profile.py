"""`servesim profile-engine`: measure a real vLLM server's step times on controlled batch shapes.

Step times come from the engine's own clock, not from token arrival times at the client (on
a loaded machine the frontend delivers several steps' tokens in one burst): vLLM's
``/metrics`` histograms ``vllm:request_prefill_time_seconds`` (first token - scheduled, engine
core timestamps) and ``vllm:request_decode_time_seconds`` (last token - first token) are read
before and after each controlled run, and their ``_sum``/``_count`` deltas give:

- prefill-heavy: a lone request of prompt L <= max_num_batched_tokens and one output token is
  prefilled in exactly one step: that step's time is its prefill time.
- decode-heavy: B requests of prompt C generate N tokens together; total decode time / total
  decode tokens is the mean step of a B-sequence decode batch whose context grows linearly
  (``decode_ctx = B*(C + N/2)``). Shapes with B*C > 4*max_num_batched_tokens are skipped (their
  staggered chunked prefills would make too many of the steps mixed).
- mixed: while B background requests decode, a probe of prompt L (one output token) is sent;
  its prefill time is the one mixed step (``prefill_tokens=L, decode_seqs=B``).

The per-request frontend overhead (HTTP, tokenisation, hand-off to the engine core, streaming
back) is the median over lone requests of client-side TTFT - engine-side (queue + prefill).
The output is the step-time measurement table `servesim.perf.measurements` reads.
"""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import httpx
import numpy as np
import pandas as pd

from servesim.engine.client import ReplayOptions, replay_async
from servesim.engine.records import request_table
from servesim.metrics import summarize
from servesim.workload import schema


@dataclass(frozen=True)
class SweepPlan:
    """The batch shapes of a profiling sweep (defaults: about a minute on a CPU tiny model)."""

    decode_batches: tuple[int, ...] = (1, 2, 4, 8, 16, 32)
    decode_contexts: tuple[int, ...] = (32, 128, 512, 1024)
    decode_tokens: int = 32
    prefill_lengths: tuple[int, ...] = (16, 64, 128, 256, 384, 512)
    mixed_batches: tuple[int, ...] = (2, 8, 24)
    mixed_context: int = 16
    repeats: int = 2
    #: requests of the saturation-throughput burst (0 to skip)
    capacity_requests: int = 96
    seed: int = 0
    #: in-process harness only: requests of the live profile replay (0 to skip): the mix at Poisson
    #: arrivals ramping from 0.3 to 1.2 x the burst's capacity (other seeds than any held-out
    #: workload), every engine step recorded (`servesim.engine.inprocess`)
    live_requests: int = 0
    #: which steps the simulator's fit is made on: "live" (the live replay's, where there is one)
    #: or "sweep" (the controlled batch shapes); both fits are in fit.json
    fit_on: str = "live"
    #: the step model's form (`servesim.perf.fitted.FORMS`), both fits: ``quadratic-seqs`` (default;
    #: the engine's per-sequence work grows with the batch), ``quadratic-ctx`` (and the context sum's
    #: square: attention slowing as the batch's KV grows) or ``linear``
    step_form: str = "quadratic-seqs"
    #: how the step model weighs the steps it is fitted on (`servesim.perf.fitted.WEIGHTINGS`, every
    #: fit of fit.json): ``relative-to-fit`` (default since 7 Dec: the batch's mean step time, the
    #: time a request's latency sums; ``coefficients_by_weighting`` keeps the others) or
    #: ``relative`` (each step's error over its measured time, the weighting until then)
    fit_weighting: str = "relative-to-fit"
    #: in-process harness only: requests of the speed probe (0: none), a fixed burst of the mix run
    #: before and after the live profile replay and each held-out replay (`inprocess.SpeedProbe`;
    #: fit.json and each summary.json keep its busy times; the notebook's reading ``probe-matched``)
    probe_requests: int = 0
    #: in-process harness only: the live profile replay in this many slices of consecutive requests,
    #: each run to completion with a speed probe after it (`live_slices`), so the probes bracket every
    #: part of the replay the fit is made on: the reading probe-matched's baseline weighs each slice's
    #: two probes by its busy time (issue 33: on 7 Dec the host ran the engine 23 % faster after a
    #: paper-scale live profile than before it, and the two-probe mean missed where the change fell)
    live_slices: int = 1
    #: in-process harness only: where the live profile's slices run (`LIVE_PLACEMENTS`, `slice_positions`):
    #: ``first`` (every slice before the held-out replays) or ``spread`` (the first before them, the
    #: others evenly among and after them, so the fit samples the host over the replays' minutes:
    #: on 7 Dec the paper-scale replays ran a mean 6 % slower than the live profile before them,
    #: their probes 4 %, and at load 0.9 a 5 % slower engine moved TBT P50 by ~20 %)
    live_placement: str = "first"
    #: in-process harness only: what each of the live profile's slices holds (`LIVE_SLICINGS`,
    #: `live_workload`): ``ramps`` (default since 7 Dec) a ramp of its own over LIVE_LOADS, so every
    #: slice samples every batch size at the host's speed of its minutes; ``consecutive`` (until
    #: then) a stretch of one ramp, so each slice holds a band of loads and, spread among the
    #: replays, the host's drift between slices became the step model's dependence on the batch
    #: (issue 33: on the quick engine of 7 Dec, run alone, the fit's own live steps ran 1.04 x it in
    #: the two low-load slices and 0.94 x in the two high-load ones; its steps of 28-32 sequences
    #: 0.87 x, and the replays' 0.86-0.94 x)
    live_slicing: str = "ramps"
    #: in-process harness only: the share of the live profile's requests drawn from the engine's
    #: context envelope beyond the mix (`envelope_lengths`: a prompt plus output from the mix's
    #: longest to the engine's max_model_len), arrivals thinned to keep the ramp's token load
    #: (`live_workload`). Why: a mix of prompts <= 512 and outputs <= 128 leaves the cost per
    #: context token under-identified, and the step model extrapolates it to every longer context
    #: (issue 33: on the paper-scale engine of 7 Dec the live fit's 0.72 us per decode context token
    #: became 1.0 us fitted with the long-prompt replays' steps, and it under-predicted the
    #: long-prompt and long-output replays' steps by 5.2 and 5.6 % where the loads' were 1.0 %).
    #: Not yet the workflow's: with a quarter (paper scale, 7 Dec at 1c74e1a) long-prompt came within
    #: 4.1 % (P50/P90 TTFT and E2E; 10.2 % without) but the form, stretched over both ranges, ran 5 %
    #: under the loads' small batches and 9 % over the full ones of load 1.2 and long-output
    live_envelope: float = 0.0
    #: what a live step's time is (`servesim.engine.records.STEP_CLOCKS`): ``cycle`` (default; the
    #: step and the gap before it while the engine had work, as a request waits for them) or
    #: ``step`` (the step's own wall time; the sweep's isolated steps are always timed so)
    step_clock: str = "cycle"

    def __post_init__(self):  # before an engine runs for minutes
        from servesim.engine.records import STEP_CLOCKS
        from servesim.perf.fitted import FORMS, WEIGHTINGS

        if self.step_clock not in STEP_CLOCKS:
            raise ValueError(f"step_clock={self.step_clock!r}: one of {STEP_CLOCKS}")
        if self.fit_on not in FIT_ON:
            raise ValueError(f"fit_on={self.fit_on!r}: one of {FIT_ON}")
        if self.step_form not in FORMS:
            raise ValueError(f"step_form={self.step_form!r}: one of {FORMS}")
        if self.fit_weighting not in WEIGHTINGS:
            raise ValueError(f"fit_weighting={self.fit_weighting!r}: one of {WEIGHTINGS}")
        if self.probe_requests < 0:
            raise ValueError(f"probe_requests={self.probe_requests}: a count >= 0")
        if self.live_placement not in LIVE_PLACEMENTS:
            raise ValueError(f"live_placement={self.live_placement!r}: one of {LIVE_PLACEMENTS}")
        if self.live_slicing not in LIVE_SLICINGS:
            raise ValueError(f"live_slicing={self.live_slicing!r}: one of {tuple(LIVE_SLICINGS)}")
        if not 0.0 <= self.live_envelope < 1.0:
            raise ValueError(f"live_envelope={self.live_envelope}: a share in [0, 1)")
        if self.live_slices < 1 or (self.live_requests and self.live_slices > self.live_requests):
            raise ValueError(f"live_slices={self.live_slices}: at least 1 and at most live_requests "
                             f"({self.live_requests})")

    @property
    def live_ramps(self) -> int:
        """How many ramps the live profile's requests arrive in (`live_workload`'s ``ramps``)."""
        return self.live_slices if self.live_slicing == "ramps" else 1


FIT_ON = ("live", "sweep")
LIVE_PLACEMENTS = ("first", "spread")
#: what each slice of the live profile holds (`SweepPlan.live_slicing`), in the words the report uses
LIVE_SLICINGS = {"ramps": "a ramp of its own", "consecutive": "a band of one ramp's loads"}

_HISTS = ("vllm:request_prefill_time_seconds", "vllm:request_decode_time_seconds",
          "vllm:request_queue_time_seconds")


def histogram_totals(metrics_text: str, names=_HISTS) -> dict[str, tuple[float, float]]:
    """(sum, count) of each named Prometheus histogram, summed over label sets."""
    out = {n: [0.0, 0.0] for n in names}
    for line in metrics_text.splitlines():
        if line.startswith("#"):
            continue
        for n in names:
            for suffix, i in (("_sum", 0), ("_count", 1)):
                if line.startswith(n + suffix):
                    rest = line[len(n + suffix):]
                    if rest[:1] in ("{", " "):
                        out[n][i] += float(line.rsplit(" ", 1)[1])
    return {n: (v[0], v[1]) for n, v in out.items()}


class _Meter:
    """Deltas of the engine-side histograms between two /metrics reads."""

    def __init__(self, client, url):
        self.client, self.url = client, url

    async def read(self) -> dict[str, tuple[float, float]]:
        return histogram_totals((await self.client.get(self.url + "/metrics")).text)

    async def quiet(self, timeout_s: float = 5.0) -> dict[str, tuple[float, float]]:
        """Wait until the histograms stop moving (stats of just-finished requests are
        recorded a moment after the client sees their end), then return them."""
        t_end = time.perf_counter() + timeout_s
        last = await self.read()
        while True:
            await asyncio.sleep(0.05)
            now = await self.read()
            if now == last or time.perf_counter() > t_end:
                return now
            last = now

    async def delta(self, before, expect_count: int, timeout_s: float = 5.0):
        t_end = time.perf_counter() + timeout_s
        while True:
            now = await self.read()
            d = {n: (now[n][0] - before[n][0], now[n][1] - before[n][1]) for n in now}
            if d["vllm:request_prefill_time_seconds"][1] >= expect_count or time.perf_counter() > t_end:
                return d
            await asyncio.sleep(0.02)


class _EngineFailed(RuntimeError):
    """The server answered, but with a server-side failure (HTTP 5xx, or an error event in the
    stream such as "EngineCore encountered an issue"): its engine is gone even if the API process
    still answers, which is the same loss as a refused connection."""


def _failure(code, text: str) -> RuntimeError:
    """A failed profiling request: the server's side (a 5xx code) is `_EngineFailed`."""
    server_side = isinstance(code, int) and code >= 500
    return (_EngineFailed if server_side else RuntimeError)(f"profiling request failed: {text[:300]}")


def _check_stream_line(line: str) -> None:
    """Raise on an error event in the stream (OpenAI's ``{"error": {..., "code": N}}``)."""
    if line.startswith("data:") and '"error"' in line:
        try:
            err = json.loads(line[len("data:"):])["error"]
        except (ValueError, KeyError, TypeError):
            err = None
        raise _failure(err.get("code") if isinstance(err, dict) else None, line)


async def _complete(client, url, ids, n_out, opts, t0) -> float:
    """Send one streaming request, wait for its end; return the client-side TTFT."""
    body = {"model": opts.model_name, "prompt": ids, "max_tokens": n_out, "min_tokens": n_out,
            "ignore_eos": True, "temperature": 0.0, "stream": True}
    first = float("nan")
    async with client.stream("POST", url + "/v1/completions", json=body) as resp:
        if resp.status_code != 200:
            raise _failure(resp.status_code, f"HTTP {resp.status_code}: {(await resp.aread()).decode(errors='replace')}")
        async for line in resp.aiter_lines():
            _check_stream_line(line)
            if first != first and line.startswith("data:") and '"text"' in line:
                first = time.perf_counter() - t0
    return first


def _ids(rng, n, opts):
    return rng.integers(opts.first_token_id, opts.vocab_size, size=int(n)).tolist()


async def _prefill_point(client, meter, url, L, opts, rng) -> tuple[dict, dict]:
    before = await meter.quiet()
    t0 = time.perf_counter()
    ttft = await _complete(client, url, _ids(rng, L, opts), 1, opts, t0)
    d = await meter.delta(before, 1)
    pre = d["vllm:request_prefill_time_seconds"][0]
    queue = d["vllm:request_queue_time_seconds"][0]
    row = {"prefill_tokens": L, "prefill_ctx": L * L, "decode_seqs": 0, "decode_ctx": 0,
           "step_s": pre, "regime": "prefill-heavy"}
    return row, {"prompt_tokens": L, "ttft_s": ttft, "engine_queue_s": queue, "engine_prefill_s": pre}


async def _decode_point(client, meter, url, B, C, N, opts, rng) -> dict | None:
    before = await meter.quiet()
    t0 = time.perf_counter()
    await asyncio.gather(*(_complete(client, url, _ids(rng, C, opts), N, opts, t0) for _ in range(B)))
    d = await meter.delta(before, B)
    dec_sum, dec_n = d["vllm:request_decode_time_seconds"]
    if dec_n < B or dec_sum <= 0:
        return None
    return {"prefill_tokens": 0, "prefill_ctx": 0, "decode_seqs": B,
            "decode_ctx": B * (C + N / 2.0), "step_s": dec_sum / (B * (N - 1)),
            "regime": "decode-heavy"}


async def _mixed_point(client, meter, url, B, C, L, opts, rng) -> dict | None:
    N = 128
    await meter.quiet()
    t0 = time.perf_counter()
    bg = [asyncio.create_task(_complete(client, url, _ids(rng, C, opts), N, opts, t0)) for _ in range(B)]
    # let the background batch prefill and start decoding (engine-side: first tokens out)
    await asyncio.sleep(0.1)
    before = await meter.read()
    await _complete(client, url, _ids(rng, L, opts), 1, opts, time.perf_counter())
    d = await meter.delta(before, 1)
    done_early = any(t.done() for t in bg)
    await asyncio.gather(*bg)
    pre_sum, pre_n = d["vllm:request_prefill_time_seconds"]
    if pre_n != 1 or done_early:
        return None  # background requests finished inside the window: not a clean mixed step
    # the background sequences are a few tokens in; their context is close to C
    return {"prefill_tokens": L, "prefill_ctx": L * L, "decode_seqs": B, "decode_ctx": B * (C + 4),
            "step_s": pre_sum, "regime": "mixed"}


async def sweep_async(url: str, plan: SweepPlan, opts: ReplayOptions, max_num_seqs: int,
                      max_num_batched_tokens: int) -> tuple[pd.DataFrame, pd.DataFrame, float]:
    """Run the sweep; return (step-time table, lone-request table, frontend overhead s)."""
    rng = np.random.default_rng(plan.seed)
    rows, lone = [], []
    timeout = httpx.Timeout(120.0, connect=10.0)
    async with httpx.AsyncClient(timeout=timeout, limits=httpx.Limits(max_connections=512)) as client:
        meter = _Meter(client, url)
        for _ in range(3):  # warm-up (first requests pay one-off costs)
            await _prefill_point(client, meter, url, 16, opts, rng)
        for _rep in range(plan.repeats):
            for L in plan.prefill_lengths:
                if L <= max_num_batched_tokens:
                    row, lo = await _prefill_point(client, meter, url, L, opts, rng)
                    rows.append(row)
                    lone.append(lo)
            for C in plan.decode_contexts:
                for B in plan.decode_batches:
                    if B <= max_num_seqs and B * C <= 4 * max_num_batched_tokens:
                        r = await _decode_point(client, meter, url, B, C, plan.decode_tokens, opts, rng)
                        if r is not None:
                            rows.append(r)
            for B in plan.mixed_batches:
                for L in plan.prefill_lengths:
                    if B < max_num_seqs and L + B <= max_num_batched_tokens \
                            and B * plan.mixed_context <= max_num_batched_tokens:
                        r = await _mixed_point(client, meter, url, B, plan.mixed_context, L, opts, rng)
                        if r is not None:
                            rows.append(r)
    steps, lone = pd.DataFrame(rows), pd.DataFrame(lone)
    if steps.empty:
        raise RuntimeError("profiling produced no usable measurement (all runs failed)")
    overhead = float(np.median(lone["ttft_s"] - lone["engine_queue_s"] - lone["engine_prefill_s"]))
    return steps, lone, max(overhead, 0.0)


def request_mix(n: int, seed: int, prompt_range=(16, 512), output_range=(8, 128),
                arrival_s=None) -> pd.DataFrame:
    """Requests with uniform prompt/output lengths (the calibration workloads' mix)."""
    rng = np.random.default_rng(seed)
    arr = np.zeros(n) if arrival_s is None else arrival_s
    return schema.make(arr, rng.integers(prompt_range[0], prompt_range[1] + 1, n),
                       rng.integers(output_range[0], output_range[1] + 1, n))


def ramp_arrivals(n: int, r0: float, r1: float, rng) -> np.ndarray:
    """``n`` Poisson arrival times whose rate rises linearly from ``r0`` to ``r1`` (per second): a
    time-rescaled Poisson process, unit-rate arrivals E_i mapped through the inverse of
    Lambda(t) = r0 t + (r1 - r0) t^2 / (2T), with T so that Lambda(T) = n."""
    T = 2.0 * n / (r0 + r1)
    e = np.cumsum(rng.exponential(1.0, n))
    a = (r1 - r0) / (2.0 * T)
    return (-r0 + np.sqrt(r0 * r0 + 4.0 * a * e)) / (2.0 * a) if a > 0 else e / r0


#: the live profile replay's seed stream, apart from every held-out workload's
#: (`servesim.engine.calibration.HELDOUT_SEED`), and its ramp in x capacity
LIVE_SEED, LIVE_LOADS = 0x11FE, (0.3, 1.2)


def envelope_range(prompt_range=(16, 512), output_range=(8, 128), max_model_len: int = 2048) -> tuple[int, int]:
    """The total lengths (prompt + output) `envelope_lengths` draws from: the mix's longest to
    max_model_len - 1 (a clear error where that leaves none)."""
    lo, hi = prompt_range[1] + output_range[1], int(max_model_len) - 1
    if hi < lo:
        raise ValueError(f"envelope_lengths: max_model_len {max_model_len} leaves no room beyond the mix's "
                         f"longest request ({lo} tokens)")
    return lo, hi


def envelope_lengths(n: int, rng, prompt_range=(16, 512), output_range=(8, 128),
                     max_model_len: int = 2048) -> tuple[np.ndarray, np.ndarray]:
    """(prompts, outputs) of ``n`` requests over the engine's context envelope beyond the mix: a
    total length uniform from the mix's longest (prompt_range[1] + output_range[1]) to
    max_model_len - 1, split at a uniform share between prompt and output (each at least its
    range's shortest), so the contexts past the mix are profiled in prefill and in decode alike."""
    lo, hi = envelope_range(prompt_range, output_range, max_model_len)
    total = rng.integers(lo, hi + 1, n)
    prompt = np.clip(np.rint(rng.random(n) * total).astype(np.int64), prompt_range[0], total - output_range[0])
    return prompt, total - prompt


def live_workload(n_requests: int, capacity_req_s: float, seed: int = 0, prompt_range=(16, 512),
                  output_range=(8, 128), envelope: float = 0.0, max_model_len: int = 2048,
                  ramps: int = 1) -> pd.DataFrame:
    """The live profile replay's requests (`SweepPlan.live_requests`): the mix, Poisson arrivals
    ramping over LIVE_LOADS x capacity, seeds apart from the held-out workloads'. ``ramps``: that
    many ramps one after the other, of as equal counts as they divide (`live_slices` of as many
    slices cuts them apart: `SweepPlan.live_slicing` ``ramps``); the lengths are the same for
    any count, and one ramp is the profile as it always was. ``envelope``
    (`SweepPlan.live_envelope`): that share of the requests (at random places in the ramp) drawn
    from `envelope_lengths` instead, and the ramp's request rates scaled by the mix's mean tokens
    per request over the whole's (expected), so its token load is the mix's at the same fractions
    of capacity (as the held-out long shapes keep theirs)."""
    ss = np.random.SeedSequence([LIVE_SEED, seed])
    arr_rng, len_rng, env_rng = (np.random.default_rng(x) for x in ss.spawn(3))  # the first two as without it
    n = int(n_requests)
    k = int(round(float(envelope) * n))
    scale = 1.0
    if k:
        mix = (sum(prompt_range) + sum(output_range)) / 2.0
        env = sum(envelope_range(prompt_range, output_range, max_model_len)) / 2.0
        scale = mix / ((1.0 - k / n) * mix + k / n * env)
    if not 1 <= int(ramps) <= max(n, 1):
        raise ValueError(f"live_workload: {ramps} ramps of {n} requests")
    rates = tuple(x * capacity_req_s * scale for x in LIVE_LOADS)
    t = np.empty(0)
    for part in np.array_split(np.arange(n), int(ramps)):  # each ramp starts a mean gap after the last arrival
        start = t[-1] + 1.0 / rates[0] if len(t) else 0.0
        t = np.concatenate([t, start + ramp_arrivals(len(part), *rates, arr_rng)])
    wl = request_mix(n, int(len_rng.integers(2**31)), prompt_range, output_range, arrival_s=t - t[0])
    if k:
        at = np.sort(env_rng.choice(n, k, replace=False))
        prompt, output = envelope_lengths(k, env_rng, prompt_range, output_range, max_model_len)
        wl.loc[at, "prompt_tokens"] = prompt
        wl.loc[at, "output_tokens"] = output
    return wl


def live_slices(workload: pd.DataFrame, k: int) -> list[pd.DataFrame]:
    """The live profile replay's requests (arrival order) in ``k`` slices of consecutive requests,
    as equal in count as they divide, each with its arrivals shifted to start at 0 (the engine
    drains between slices: a slice starts on an idle engine, as the replay did)."""
    wl = workload.sort_values(["arrival_s", "request_id"], kind="stable").reset_index(drop=True)
    if not 1 <= k <= max(len(wl), 1):
        raise ValueError(f"live_slices: {k} slices of {len(wl)} requests")
    out = []
    for idx in np.array_split(np.arange(len(wl)), k):
        part = wl.iloc[idx].reset_index(drop=True)
        part["arrival_s"] = part["arrival_s"] - (part["arrival_s"].iloc[0] if len(part) else 0.0)
        out.append(part)
    return out


def slice_positions(k: int, n_jobs: int, placement: str = "first") -> list[int]:
    """Before which of ``n_jobs`` replays each of the live profile's ``k`` slices runs (``n_jobs``:
    after the last): under ``first`` all before the first; under ``spread`` evenly from before the
    first to after the last (4 slices among 24 replays in 3 rounds: 0, 8, 16, 24, one between
    rounds), nondecreasing."""
    if placement not in LIVE_PLACEMENTS:
        raise ValueError(f"live placement {placement!r}: one of {LIVE_PLACEMENTS}")
    if k < 1 or n_jobs < 0:
        raise ValueError(f"slice_positions: {k} slices among {n_jobs} replays")
    if placement == "first" or k == 1:
        return [0] * k
    return [int(np.floor(i * n_jobs / (k - 1) + 0.5)) for i in range(k)]


def measure_capacity(url: str, n: int, opts: ReplayOptions, seed: int,
                     prompt_range=(16, 512), output_range=(8, 128)) -> dict:
    """Saturation throughput: ``n`` requests of the mix all at t=0; finished / makespan."""
    wl = request_mix(n, seed, prompt_range, output_range)
    return capacity_of(wl, asyncio.run(replay_async(url, wl, opts)), prompt_range, output_range)


def capacity_of(burst: pd.DataFrame, records, prompt_range=(16, 512), output_range=(8, 128)) -> dict:
    """The capacity fields of fit.json from a replayed burst (every arrival at 0)."""
    run = summarize(request_table(burst, records))["all"]  # every arrival at 0: duration = makespan
    return {"capacity_req_s": run["request_throughput_per_s"], "capacity_out_tok_s": run["output_throughput_tok_per_s"],
            "capacity_requests": len(burst), "capacity_finished": run["completed"], "capacity_span_s": run["duration_s"],
            "prompt_range": list(prompt_range), "output_range": list(output_range)}


def fit_and_evaluate(table: pd.DataFrame, seed: int = 0, form: str = "linear", weighting: str = "relative"):
    """Fit the perf fitted model (of ``form``, weighing rows by ``weighting``) on 80% of rows, report
    its error on the held-out 20%, then refit on all rows. Returns (model, held-out error table,
    in-sample error table)."""
    from servesim.perf import fitted, measurements

    train, test = measurements.split(table, 0.2, seed)
    held = measurements.evaluate(fitted.fit(train, form=form, weighting=weighting), test)
    model = fitted.fit(table, form=form, weighting=weighting)
    return model, held, measurements.evaluate(model, table)


def profile_engine(url: str, out_dir: str | Path, *, plan: SweepPlan = SweepPlan(),
                   opts: ReplayOptions = ReplayOptions(), max_num_seqs: int = 32,
                   max_num_batched_tokens: int = 512, meta: dict | None = None) -> dict:
    """Profile the server at ``url``; write steps.csv (median per shape; steps_raw.csv every
    run), lone_ttft.csv and fit.json (coefficients, errors, frontend overhead, capacity)."""
    t0 = time.perf_counter()
    try:
        steps, lone, overhead = asyncio.run(sweep_async(url, plan, opts, max_num_seqs, max_num_batched_tokens))
    except (httpx.HTTPError, _EngineFailed) as exc:
        # a group-wide SIGTERM may reach the engine core before the API process: then the stream
        # carries the engine's error instead of the connection dropping (seen in CI)
        from servesim.engine.server import ServerLostError

        raise ServerLostError(f"profiling lost the server at {url} ({type(exc).__name__}: {exc}); "
                              f"did it exit? (see its log)") from exc
    capacity = measure_capacity(url, plan.capacity_requests, opts, plan.seed + 1) if plan.capacity_requests else {}
    return write_profile(out_dir, steps, lone, overhead, plan, meta, capacity,
                         harness="http", wall_s=time.perf_counter() - t0)


def write_profile(out_dir: str | Path, steps: pd.DataFrame, lone: pd.DataFrame, overhead: float, plan: SweepPlan,
                  meta: dict | None, capacity: dict, *, harness: str, wall_s: float,
                  live_dir: str | Path | None = None) -> dict:
    """The profile's files from a sweep's step rows (one per run; `sweep_async`, or the in-process
    sweep of `servesim.engine.inprocess`): steps_raw.csv, steps.csv (median per shape),
    lone_ttft.csv and fit.json (coefficients, errors, frontend overhead, capacity, the harness).

    ``live_dir``: a live profile replay's folder (its ``steps.parquet``): the step model is then
    also fitted on those engine steps (timed by ``plan.step_clock``), and ``plan.fit_on`` says which
    fit the simulator runs (``coefficients``); both are kept (``coefficients_sweep``,
    ``coefficients_live``), each with its error on a held-out 20 % of its own rows, and the live
    steps' fit under each clock (``coefficients_by_clock``)."""
    from servesim.perf import measurements

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    steps = steps.copy()
    for k, v in (meta or {}).items():
        if k in ("model", "hardware", "tp", "pp"):
            steps[k] = v
    steps["source"] = "servesim profile-engine" if harness == "http" else "servesim profile-engine (in-process)"
    steps.to_csv(out / "steps_raw.csv", index=False)
    # one row per batch shape: the median over repeats damps scheduling noise of a shared host
    keys = [c for c in ("prefill_tokens", "prefill_ctx", "decode_seqs", "decode_ctx", "regime",
                        "model", "hardware", "tp", "pp", "source") if c in steps.columns]
    steps = steps.groupby(keys, as_index=False, sort=False).agg(step_s=("step_s", "median"),
                                                                 repeats=("step_s", "size"))
    measurements.write(steps, out / "steps.csv")
    lone.to_csv(out / "lone_ttft.csv", index=False)
    from servesim.perf import fitted

    tables = {"sweep": measurements.read(out / "steps.csv")}
    if live_dir is not None:
        from servesim.engine.records import step_table

        tables["live"] = step_table(live_dir, clock=plan.step_clock)
    weighting = plan.fit_weighting
    fits = {k: fit_and_evaluate(t, plan.seed, plan.step_form, weighting) for k, t in tables.items()}
    source = plan.fit_on if plan.fit_on in fits else "sweep"
    model, held, insample = fits[source]
    # the simulator's fit in every form and weighting on the same steps, and the live steps' under
    # every clock: the sim_vs_vllm notebook reads the others as readings of their own (``linear``,
    # ``no-gaps``, ``observed-weights``)
    forms = {f: model if f == plan.step_form else fitted.fit(tables[source], form=f, weighting=weighting)
             for f in fitted.FORMS}
    weightings = {w: model if w == weighting else fitted.fit(tables[source], form=plan.step_form, weighting=w)
                  for w in fitted.WEIGHTINGS}
    clocks = {}
    if live_dir is not None:
        from servesim.engine.records import STEP_CLOCKS

        clocks = {c: (fits["live"][0] if c == plan.step_clock
                      else fitted.fit(step_table(live_dir, clock=c), form=plan.step_form, weighting=weighting)
                      ).coefficients() for c in STEP_CLOCKS}
    result = {
        "coefficients": model.coefficients(),
        "fit_source": source,
        "step_form": plan.step_form,
        "step_clock": plan.step_clock if source == "live" else "step",
        "step_weighting": weighting,
        "coefficients_by_form": {f: m.coefficients() for f, m in forms.items()},
        "coefficients_by_clock": clocks,
        "coefficients_by_weighting": {w: m.coefficients() for w, m in weightings.items()},
        **{f"coefficients_{k}": f[0].coefficients() for k, f in fits.items()},
        **{f"heldout_error_{k}": f[1].to_dict(orient="records") for k, f in fits.items()},
        "frontend_overhead_s": overhead,
        "harness": harness,
        "heldout_error": held.to_dict(orient="records"),
        "insample_error": insample.to_dict(orient="records"),
        "n_rows": int(len(steps)),
        "plan": asdict(plan),
        **(meta or {}),
        **capacity,
        "sweep_wall_s": wall_s,
    }
    (out / "fit.json").write_text(json.dumps(result, indent=1, default=str) + "\n")
    return result


def read_fit(fit_json: str | Path, *keys: str) -> dict:
    """A profile's fit.json as a dict holding ``keys``; InputError naming the file and the key
    when it is missing, not JSON, not an object or lacks one."""
    from servesim.errors import InputError

    p = Path(fit_json)
    try:
        d = json.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError(f"{p}: no such fit.json (written by servesim profile-engine)") from None
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise InputError(f"{p}: not a readable JSON fit: {' '.join(str(exc).split())}") from None
    if not isinstance(d, dict):
        raise InputError(f"{p}: a fit.json is a JSON object, got {type(d).__name__}")
    missing = [k for k in keys if k not in d]
    if missing:
        raise InputError(f"{p}: no {', '.join(missing)} (a fit.json of servesim profile-engine has them)")
    return d


def load_fitted(fit_json: str | Path):
    """The FittedStepTime and frontend overhead stored in a profile's fit.json."""
    import math

    from servesim.errors import InputError
    from servesim.perf.fitted import FittedStepTime

    d = read_fit(fit_json, "coefficients", "frontend_overhead_s")
    try:
        fe = float(d["frontend_overhead_s"])
        model = FittedStepTime(**d["coefficients"], name="vllm-profile")
    except (TypeError, ValueError) as exc:
        raise InputError(f"{fit_json}: coefficients / frontend_overhead_s: {' '.join(str(exc).split())}") from None
    if not (math.isfinite(fe) and fe >= 0):
        raise InputError(f"{fit_json}: frontend_overhead_s={fe!r} must be a finite number >= 0")
    return model, fe
