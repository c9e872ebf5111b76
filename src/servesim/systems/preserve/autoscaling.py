"""PreServe Fig 8 (RQ2): auto-scaling up to 8 LLaMA-2-7B instances on A40s over 48 h of the
synthetic Azure-2024-like code and chat weeks (spec §2.2, §2.4, §3 Fig 8).

Two commands, one job each in ``workflow/runs/preserve.yaml``:

    python -m servesim.systems.preserve.autoscaling plan --service code --scale quick -o out/plan/
    python -m servesim.systems.preserve.autoscaling replay out/plan/summary.json --policy preserve -o out/run/

``plan`` (per service, shared by the policies) fixes the workload and PreServe's Tier-1 plan:

1. Trace: 4 days of the synthetic week (``azure_week``, prompts clipped to 4096 - output; the
   weekday level ramps across each midnight, ``day_weights`` = ``interpolated``, or holds each
   calendar day, ``step``, the reading before issue 31), generated
   at ``base_scale`` of the real volume and thinned uniformly (a seeded uniform draw per request,
   kept when below f / base_scale, so a smaller f keeps a subset of a larger f's requests).
2. Thinning factor f, by a stated rule (spec §2.2 [A]: static-8 with zero SLO violations): the
   largest f (bisection) at which static-8 serves each of days 3-4's ``f_windows`` busiest
   10-minute windows (by prompt + response tokens) with every 5-minute mean normalised latency
   within the 0.2 s SLO, each window replayed on 8 ready instances after ``warmup_s`` of the
   preceding traffic; then (``f_check`` = ``span``, the default) static-8's own replay of the whole
   span must meet the SLO in every bin too: a window replayed alone starts with a fuller-than-empty
   fleet only ``warmup_s`` back, so the rule alone can pass an f at which the continuous replay
   has a bin over the SLO (the full-scale code week did: one bin at 0.208 s). While it does, f
   steps down by ``f_span_step`` (relative), then ``f_span_iters`` bisection steps between the
   last f that missed and the first that met. ``windows`` is the window rule alone (the reading
   before).
3. Capacities mu_p, mu_d, mu_t (Alg. 1 l.8-10 in the spec's "profile directly" reading): the
   training days' busiest window at f, thinned further by g, replayed on ONE instance; the largest
   g meeting the SLO gives the window's prompt / response / total tokens per instance.
4. Tier-1 forecast: the Krause mLSTM (``servesim.forecast`` ``mlstm``) trained on days 1-2's
   10-minute totals, run online over days 3-4 by Alg. 2 (two-step forecasts, truth replacing each
   forecast when its window ends); N_w = ceil(max(P^/mu_p, D^/mu_d, (P^+D^)/mu_t)) in [1, 8].

``replay`` simulates one policy over the replay span (days 3-4, or the scale's slice of it) on the
fleet simulator: ``static`` (8 instances), ``reactive`` (the Reactive baseline: ``reactive_signal``
``kv``, the paper's KV usage > 95 % with the spec's thresholds, or ``rate``, prompt-token arrival
rate over the profiled capacity > 80 %; see :mod:`.scaler`), ``proactive`` / ``hybrid`` (the plan
plus the same Reactive baseline) / ``preserve`` (:mod:`.scaler`). All policies
use ground-truth output lengths (RQ2) and the same router; new instances pay ``cold_start_s``.
It writes ``timeline.csv`` (5-minute bins: mean normalised latency by arrival, mean billed
instances), ``decisions.csv`` and ``summary.json`` (instance-seconds, peak bin, bins over the SLO).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import numpy as np
import pandas as pd

from ...errors import InputError
from ...metrics import step_integral_hours
from ...metrics.instance_hours import billed_count
from ...metrics.latency import per_request
from ...metrics.timeline import binned_mean
from ...workload.gen_azure_week import DAY_WEIGHT_READINGS
from .workload_predictor import WINDOW_S, WINDOWS_PER_DAY, online_forecast, window_totals

SERVICES = {"code": ("code", 0), "chat": ("conv", 1)}  # as table1: azure_week kind, seed offset
POLICIES = ("static", "reactive", "proactive", "hybrid", "preserve")
#: how the thinning factor is checked (module docstring, step 2); the first is the default
F_CHECKS = ("span", "windows")
DAY_S = 86_400.0
MODEL = "default"  # the workload's model / region names
MAX_CONTEXT = 4096  # LLaMA-2


@dataclass(frozen=True)
class Fig8Settings:
    base_scale: float            # generated volume (fraction of the real week's rows); f <= base_scale
    epochs: int                  # mLSTM training epochs
    replay_hours: float | None = None  # None: all of days 3-4; else this many hours of the steepest rise
    f_windows: int = 3           # busiest replay windows the thinning rule tests
    f_iters: int = 7             # bisection steps for f
    mu_iters: int = 7            # bisection steps for the one-instance capacity
    f_lo: float = 0.005
    f_check: str = "span"        # F_CHECKS: static-8's replay of the span checked after the window rule
    f_span_step: float = 0.05    # relative step down of f while static-8's replay misses the SLO
    f_span_iters: int = 3        # bisection steps between the last f that missed and the first that met
    mu_hi: float = 0.5           # one instance takes at most this share of the window (of 8)
    warmup_s: float = 120.0      # traffic replayed before a tested window
    days: int = 4
    train_days: int = 2          # §5.3: the first 2 days train the predictor
    k: int = 36                  # [A] mLSTM history (6 h), as Table 1
    hidden: int = 64
    lr: float = 1e-3
    batch_size: int = 64
    max_instances: int = 8       # §5.3
    slo_s: float = 0.2           # §5.1 normalised latency
    bin_s: float = 300.0         # Fig 8: 5-minute intervals
    cold_start_s: float = 60.0   # [A] "dozens of seconds"; 30 / 120 as sensitivity
    drain_s: float = 600.0       # simulated after the span so its last requests finish
    sample_s: float = 5.0
    router: str = "jsq-tokens"   # [A] RQ2's router is not stated (spec §6.9); least pending tokens
    day_weights: str = "interpolated"  # the synthetic week's weekday level across midnight ("step": before issue 31)
    reactive_signal: str = "kv"  # Reactive / Hybrid observe KV usage (§5.3); "rate": arrival rate / capacity
    gpu: str = "a40"
    model: str = "llama-2-7b"
    seed: int = 0


SCALES = {
    # full: all 48 h of the replay, the spec's 200 epochs, 3 busiest windows for the thinning rule
    "full": Fig8Settings(base_scale=0.3, epochs=200),
    # quick: the 1.5 h of the replay's steepest rise; coarser bisections, fewer epochs
    "quick": Fig8Settings(base_scale=0.3, epochs=30, replay_hours=1.5, f_windows=1, f_iters=4, mu_iters=4,
                          f_span_iters=2, batch_size=128),
    # test: tiny volume, 1 h, a few epochs
    "test": Fig8Settings(base_scale=0.05, epochs=3, replay_hours=1.0, f_windows=1, f_iters=3, mu_iters=3, k=12,
                         hidden=8, batch_size=256, f_lo=0.002, f_span_iters=2),
}


# --------------------------------------------------------------------------- the replica
def kv_capacity_tokens(model: str, gpu: str, utilisation: float = 0.9, reserve_gib: float = 1.5) -> int:
    """KV tokens of one replica: ``utilisation`` x GPU memory - weights - an activation reserve
    (vLLM's gpu_memory_utilization; spec §2.1 [A]), over the model's fp16 KV bytes per token."""
    from .serving import kv_tokens

    return kv_tokens(model, gpu, utilisation=utilisation, reserve_bytes=reserve_gib * 2**30)


def model_config(s: Fig8Settings) -> dict:
    """The scenario's replica: vLLM 0.6.6 (V0) limits, the Vidur A40 profile of LLaMA-2-7B
    (attention and overheads by roofline, ``servesim.perf.vidur``), a cold start of
    ``cold_start_s`` for every new instance."""
    return {
        "engine": {"policy": "vllm-v0", "kv_capacity_tokens": kv_capacity_tokens(s.model, s.gpu), "block_size": 16,
                   "max_num_seqs": 256, "max_num_batched_tokens": 4096, "max_model_len": MAX_CONTEXT},
        "step_time": {"backend": "vidur"},
        "catalog": s.model, "hardware": s.gpu, "tp": 1,
        "lead": {"request_s": 0, "provision_s": 0, "load_s": s.cold_start_s, "reclaim_s": s.cold_start_s},
    }


def scenario(s: Fig8Settings, instances: int, autoscaler: dict | None, duration_s: float, name: str):
    from ...fleet.scenario import parse_scenario

    data = {
        "name": name, "seed": s.seed, "duration_s": duration_s,
        "regions": [{"name": MODEL}],
        "models": {MODEL: model_config(s)},
        "endpoints": [{"model": MODEL, "region": MODEL, "instances": instances, "min_instances": 1,
                       "max_instances": s.max_instances}],
        "router": {"name": s.router},
        "output": {"sample_s": s.sample_s},
    }
    if autoscaler is not None:
        data["autoscaler"] = autoscaler
    return parse_scenario(data, source=name)


def simulate(s: Fig8Settings, wl: pd.DataFrame, instances: int, duration_s: float,
             autoscaler: dict | None = None, name: str = "preserve-fig08"):
    """Run ``wl`` (arrivals from 0) on the fleet; returns the fleet `Result`."""
    from ...fleet import run_scenario

    sc = scenario(s, instances, autoscaler, duration_s, name)
    return run_scenario(sc, workload=wl.reset_index(drop=True), seed=s.seed)


def norm_latency(req: pd.DataFrame) -> np.ndarray:
    """E2E / output tokens per request (NaN where unfinished): ``servesim.metrics.latency``."""
    cols = {c: req[c].to_numpy() for c in ("ttft_s", "tbt_mean_s", "e2e_s", "output_tokens", "arrival_s")}
    return per_request(cols)["e2el_per_token"]


def peak_bin(req: pd.DataFrame, t0: float, t1: float, bin_s: float) -> float:
    """The largest 5-minute mean normalised latency over requests arriving in [t0, t1)."""
    b = binned_mean(req["arrival_s"], norm_latency(req), bin_s, t0, t1)
    # a request that never finished counts as a violation: its bin is flagged with +inf
    unfinished = req["arrival_s"].between(t0, t1, inclusive="left") & ~(req["state"] == "finished")
    if unfinished.any():
        return float("inf")
    return float(np.nanmax(b["mean"])) if b["n"].sum() else float("nan")


# --------------------------------------------------------------------------- the trace
def service_trace(service: str, s: Fig8Settings) -> pd.DataFrame:
    """The service's 4 days at ``base_scale`` with a per-request uniform draw ``u`` (thinning)."""
    from ...workload import azure_week

    if service not in SERVICES:
        raise InputError(f"--service {service!r}: known {sorted(SERVICES)}")
    kind, off = SERVICES[service]
    df = azure_week(kind, s.base_scale, s.seed + off, days=s.days, max_context=MAX_CONTEXT, day_weights=s.day_weights)
    u = np.random.default_rng(np.random.SeedSequence([s.seed, off, 8])).random(len(df))
    return df.assign(u=u)


def thin(df: pd.DataFrame, f: float, base_scale: float) -> pd.DataFrame:
    """Keep the requests with ``u < f / base_scale`` (nested in f)."""
    return df[df["u"].to_numpy() < f / base_scale]


def _slice(df: pd.DataFrame, t0: float, t1: float) -> pd.DataFrame:
    """Requests arriving in [t0, t1), times shifted to start at 0, request ids renumbered."""
    t = df["arrival_s"].to_numpy()
    out = df[(t >= t0) & (t < t1)].copy()
    out["arrival_s"] -= t0
    out["request_id"] = np.arange(len(out), dtype=np.int64)
    return out.drop(columns=["u"], errors="ignore").reset_index(drop=True)


def window_meets_slo(s: Fig8Settings, df: pd.DataFrame, w0: float, instances: int) -> tuple[bool, float]:
    """Replay [w0 - warmup, w0 + 10 min) on ``instances`` ready instances; does every 5-minute
    mean normalised latency of the window's requests meet the SLO? (and the peak bin)"""
    t0 = max(0.0, w0 - s.warmup_s)
    wl = _slice(df, t0, w0 + WINDOW_S)
    if wl.empty:
        return True, 0.0
    res = simulate(s, wl, instances, duration_s=(w0 + WINDOW_S - t0) + s.drain_s, name="preserve-fig08-probe")
    peak = peak_bin(res.requests, w0 - t0, w0 - t0 + WINDOW_S, s.bin_s)
    return bool(peak <= s.slo_s), peak


def _bisect(test, lo: float, hi: float, iters: int, log: list) -> float:
    """``iters`` bisection steps between ``lo`` (test True) and ``hi`` (False); the last True."""
    for _ in range(iters):
        mid = 0.5 * (lo + hi)
        ok, peak = test(mid)
        log.append((mid, ok, peak))
        lo, hi = (mid, hi) if ok else (lo, mid)
    return lo


def bisect_largest(test, lo: float, hi: float, iters: int) -> tuple[float, list]:
    """Largest x in [lo, hi] with ``test(x)`` True, by bisection (``hi`` first; assumes
    monotone). Returns (x, log of (x, ok, peak))."""
    log = []
    ok, peak = test(hi)
    log.append((hi, ok, peak))
    if ok:
        return hi, log
    ok, peak = test(lo)
    log.append((lo, ok, peak))
    if not ok:
        return lo, log
    return _bisect(test, lo, hi, iters, log), log


def step_down_largest(test, x0: float, lo: float, step: float, iters: int) -> tuple[float, list]:
    """Largest x <= ``x0`` with ``test(x)`` True: ``x0`` first; while False, x *= 1 - ``step``
    (not below ``lo``), then ``iters`` bisection steps between the last False and the first True.
    ``lo`` when even it fails. Returns (x, log of (x, ok, peak))."""
    log = []
    ok, peak = test(x0)
    log.append((x0, ok, peak))
    hi = x = x0
    while not ok and x > lo:
        hi, x = x, max(lo, x * (1.0 - step))
        ok, peak = test(x)
        log.append((x, ok, peak))
    if not ok or x == x0:
        return x, log
    return _bisect(test, x, hi, iters, log), log


def replay_span(s: Fig8Settings, totals: pd.DataFrame) -> tuple[float, float]:
    """[t0, t1) of the replay in trace seconds: days 3-4, or the ``replay_hours`` (whole windows)
    of days 3-4 over which the load rises most (last window's prompt + response tokens minus the
    first's): the part of the trace where scalers differ."""
    r0, r1 = s.train_days * DAY_S, s.days * DAY_S
    if s.replay_hours is None:
        return r0, r1
    w = totals[(totals.t_s >= r0) & (totals.t_s < r1)]
    load = (w.prompt + w.response).to_numpy()
    n = int(round(s.replay_hours * 3600.0 / WINDOW_S))
    rise = load[n - 1:] - load[: load.size - n + 1]  # last window's load - first window's
    i = int(np.argmax(rise))
    t0 = float(w.t_s.iloc[i])
    return t0, t0 + n * WINDOW_S


def make_plan(service: str, s: Fig8Settings) -> dict:
    """Steps 1-4 of the module docstring; a JSON-ready dict."""
    from ...forecast import make

    if s.f_check not in F_CHECKS:
        raise InputError(f"thinning check {s.f_check!r}: known {list(F_CHECKS)}")
    t_start = time.perf_counter()
    full = service_trace(service, s)
    tot_base = window_totals(full, t_end=s.days * DAY_S)
    r0, r1 = replay_span(s, tot_base)
    # 2. thinning factor: the busiest windows of the replay span, at base volume (their rank
    #    does not depend on f in expectation)
    span = tot_base[(tot_base.t_s >= s.train_days * DAY_S) & (tot_base.t_s < s.days * DAY_S)]  # all of days 3-4
    load = (span.prompt + span.response).to_numpy()
    top = span.t_s.to_numpy()[np.argsort(-load, kind="stable")[: s.f_windows]]

    def static8_ok(f: float):
        sub = thin(full, f, s.base_scale)
        peaks = [window_meets_slo(s, sub, float(w0), s.max_instances)[1] for w0 in top]
        return bool(max(peaks) <= s.slo_s), max(peaks)

    f, f_log = bisect_largest(static8_ok, s.f_lo, s.base_scale, s.f_iters)
    f_windows, span_log = f, []
    if s.f_check == "span":
        def static8_span_ok(x: float):  # static-8's replay of the span, as its replay job runs it
            res, span = _run_span(s, thin(full, x, s.base_scale), r0, r1, s.max_instances, None, "static")
            peak = peak_bin(res.requests, 0.0, span, s.bin_s)
            return bool(peak <= s.slo_s), peak

        f, span_log = step_down_largest(static8_span_ok, f, s.f_lo, s.f_span_step, s.f_span_iters)
    trace = thin(full, f, s.base_scale)
    totals = window_totals(trace, t_end=s.days * DAY_S)
    # 3. one-instance capacity on the training days' busiest window at f
    n_train = s.train_days * WINDOWS_PER_DAY
    tr = totals.iloc[:n_train]
    wi = int(np.argmax((tr.prompt + tr.response).to_numpy()))
    w_mu = float(tr.t_s.iloc[wi])
    sub_u = trace.assign(u=np.random.default_rng(np.random.SeedSequence([s.seed, 9])).random(len(trace)))

    def one_ok(g: float):
        return window_meets_slo(s, thin(sub_u, g, 1.0), w_mu, 1)

    g, mu_log = bisect_largest(one_ok, 0.01, s.mu_hi, s.mu_iters)
    in_w = thin(sub_u, g, 1.0)
    in_w = in_w[(in_w.arrival_s >= w_mu) & (in_w.arrival_s < w_mu + WINDOW_S)]
    mu_p, mu_d = float(in_w.prompt_tokens.sum()), float(in_w.output_tokens.sum())
    mu_t = mu_p + mu_d
    # 4. Tier-1: mLSTM on days 1-2, Alg. 2 online over days 3-4
    fc = {}
    for col in ("prompt", "response"):
        mk = lambda: make("mlstm", k=s.k, hidden=s.hidden, epochs=s.epochs, lr=s.lr, batch_size=s.batch_size,  # noqa: E731
                          seed=s.seed)
        fc[col] = online_forecast(totals[col].to_numpy(), mk, n_train)
    from .scaler import instance_count

    p_hat, d_hat = fc["prompt"]["pred_2step"].to_numpy(), fc["response"]["pred_2step"].to_numpy()
    n_w = [instance_count(p, d, mu_p, mu_d, mu_t, 1, s.max_instances) for p, d in zip(p_hat, d_hat)]
    w0 = int(round((r0 - n_train * WINDOW_S) / WINDOW_S))
    nwin = int(round((r1 - r0) / WINDOW_S))
    return {
        "service": service, "settings": {k: (list(v) if isinstance(v, tuple) else v) for k, v in asdict(s).items()},
        "thinning_f": f, "thinning_rule": (f"largest f (bisection, {s.f_iters} steps in [{s.f_lo}, {s.base_scale}]) at which "
                                            f"static-{s.max_instances} serves the {s.f_windows} busiest 10-min windows of days 3-4 "
                                            f"with every 5-min mean normalised latency <= {s.slo_s} s"
                                            + (f"; then lowered (steps of {s.f_span_step:.0%}, {s.f_span_iters} bisection "
                                               f"steps) until static-{s.max_instances}'s replay of the span has no 5-min bin "
                                               f"over it" if s.f_check == "span" else "")),
        "thinning_check": s.f_check, "thinning_f_windows": f_windows,
        "thinning_log": [{"f": x, "ok": ok, "peak_s": p} for x, ok, p in f_log],
        "thinning_span_log": [{"f": x, "ok": ok, "peak_s": p} for x, ok, p in span_log],
        "mu_window_start_s": w_mu, "mu_g": g, "mu_log": [{"g": x, "ok": ok, "peak_s": p} for x, ok, p in mu_log],
        "mu_prompt_tokens": mu_p, "mu_response_tokens": mu_d, "mu_total_tokens": mu_t,
        "replay_t0_s": r0, "replay_t1_s": r1, "replay_days": (r1 - r0) / DAY_S, "train_days": s.train_days,
        "targets": [int(x) for x in n_w[w0: w0 + nwin + 1]],
        "forecast": {"prompt_actual": fc["prompt"]["actual"].tolist()[w0: w0 + nwin],
                     "prompt_pred": p_hat.tolist()[w0: w0 + nwin],
                     "response_actual": fc["response"]["actual"].tolist()[w0: w0 + nwin],
                     "response_pred": d_hat.tolist()[w0: w0 + nwin]},
        "replay_requests": int(((trace.arrival_s >= r0) & (trace.arrival_s < r1)).sum()),
        "kv_capacity_tokens": kv_capacity_tokens(s.model, s.gpu),
        "step_time": "vidur: LLaMA-2-7B operator profiles on A40 (attention, LM head, overheads by roofline)",
        "wall_s": time.perf_counter() - t_start,
    }


# --------------------------------------------------------------------------- one policy
def _run_span(s: Fig8Settings, trace: pd.DataFrame, r0: float, r1: float, start_n: int,
              autoscaler: dict | None, policy: str):
    """``trace``'s requests of [r0, r1) on the fleet from ``start_n`` instances: (fleet `Result`,
    span seconds). The one simulation of a replay (and of the plan's static-8 check)."""
    span = r1 - r0
    res = simulate(s, _slice(trace, r0, r1), start_n, duration_s=span + s.drain_s, autoscaler=autoscaler,
                   name=f"preserve-fig08-{policy}")
    return res, span


def reactive_options(signal: str, plan: dict) -> dict:
    """The Reactive baseline's options (alone and inside Hybrid) for ``signal`` (:mod:`.scaler`):
    ``kv``: §5.3's KV usage, +1 above 95 % (§3.2.1's example), -1 after 5 min below 30 %;
    ``rate``: prompt-token arrival rate over the active instances' profiled capacity (the plan's
    mu_p per second), +1 above 80 % (§1's "CPU utilization exceeding 80%"), -1 after 5 min below
    30 %. Both: every 10 s, 60 s cooldown (spec §2.4 [A])."""
    from .scaler import REACTIVE_SIGNALS

    common = {"period_s": 10.0, "down": 0.3, "cooldown_s": 60.0, "down_for_s": 300.0}
    if signal == "kv":
        return {**common, "up": 0.95, "metric": "kv"}
    if signal == "rate":
        return {**common, "up": 0.8, "metric": "rate", "mu_prompt_tokens_s": plan["mu_prompt_tokens"] / WINDOW_S}
    raise InputError(f"reactive signal {signal!r}: known {list(REACTIVE_SIGNALS)}")


def autoscaler_for(policy: str, plan: dict, s: Fig8Settings, scaler_options: dict | None = None) -> dict | None:
    """The scenario's ``autoscaler`` entry of a policy (None: static); ``scaler_options`` are
    extra options of the PreServe scaler (e.g. ``scaledown_floor: none``, ``count_queued: false``:
    the literal readings, see :mod:`.scaler`)."""
    from . import scaler  # noqa: F401 - registers the PreServe controllers

    reactive = reactive_options(s.reactive_signal, plan)
    plan_opts = {"targets": plan["targets"], "window_s": WINDOW_S, "max_instances": s.max_instances}
    return {"static": None,
            "reactive": {"name": "reactive" if s.reactive_signal == "kv" else "preserve-reactive-rate", **reactive},
            "proactive": {"name": "preserve-proactive", **plan_opts},
            "hybrid": {"name": "preserve-hybrid", **plan_opts, "reactive": reactive},
            "preserve": {"name": "preserve", **plan_opts, **(scaler_options or {})}}[policy]


def replay(plan: dict, policy: str, s: Fig8Settings,
           scaler_options: dict | None = None) -> tuple[pd.DataFrame, pd.DataFrame, dict]:
    """Simulate ``policy`` over the plan's replay span: (timeline, decisions, summary)."""
    if policy not in POLICIES:
        raise InputError(f"--policy {policy!r}: known {list(POLICIES)}")
    t_start = time.perf_counter()
    full = service_trace(plan["service"], s)
    trace = thin(full, plan["thinning_f"], s.base_scale)
    r0, r1 = plan["replay_t0_s"], plan["replay_t1_s"]
    targets = plan["targets"]
    start_n = s.max_instances if policy == "static" else max(targets[0], targets[min(1, len(targets) - 1)])
    a = autoscaler_for(policy, plan, s, scaler_options)
    res, span = _run_span(s, trace, r0, r1, start_n, a, policy)
    req = res.requests
    b = binned_mean(req["arrival_s"], norm_latency(req), s.bin_s, 0.0, span)
    ts = res.timeseries
    count = billed_count(ts).to_numpy()
    times = ts["time_s"].to_numpy()

    def inst_seconds(end: float) -> float:  # billed instances integrated over [0, end)
        keep = times < end
        return 3600.0 * step_integral_hours(times[keep], count[keep], end) if keep.any() else 0.0

    inst_s = inst_seconds(span)
    edges = np.append(b["bin_start_s"].to_numpy(), span)
    cum = [inst_seconds(e) if e > 0 else 0.0 for e in edges]
    mean_inst = np.diff(cum) / np.diff(edges)
    timeline = b.rename(columns={"mean": "norm_latency_mean_s", "n": "requests"}).assign(
        hour=lambda d: d.bin_start_s / 3600.0, instances_mean=mean_inst)
    in_span = req["arrival_s"].to_numpy() < span
    unfinished = int((in_span & (req["state"].to_numpy() != "finished")).sum())
    lat = timeline["norm_latency_mean_s"].to_numpy()
    peak_i = int(np.nanargmax(lat)) if np.isfinite(lat).any() else -1
    life = res.lifecycle
    summary = {
        "service": plan["service"], "policy": policy, "thinning_f": plan["thinning_f"], "replay_s": span,
        "replay_days": span / DAY_S, "train_days": plan["train_days"], "requests": int(in_span.sum()),
        "unfinished": unfinished, "instance_seconds": inst_s, "start_instances": start_n,
        "max_billed_instances": int(count.max()) if count.size else 0,
        "peak_norm_latency_s": float(lat[peak_i]) if peak_i >= 0 else float("nan"),
        "peak_hour": float(timeline.hour.iloc[peak_i]) if peak_i >= 0 else float("nan"),
        "bins_over_slo": int(np.nansum(lat > s.slo_s)), "bins": int(len(lat)),
        "slo_s": s.slo_s, "bin_s": s.bin_s, "cold_start_s": s.cold_start_s, "router": s.router,
        "day_weights": s.day_weights, "reactive_signal": s.reactive_signal,
        "uses_true_lengths": True, "max_instances": s.max_instances, "scaler_options": scaler_options or {},
        "scale_denied": int(res.summary.get("scale_denied", 0)),
        "instances_started": int((life["to_state"] == "loading").sum()),
        "wall_s": time.perf_counter() - t_start,
    }
    return timeline, life, summary


# --------------------------------------------------------------------------- Fig 8's numbers
BASELINES = ("reactive", "proactive", "hybrid")


def fig08_metrics(runs: dict[tuple[str, str], dict]) -> dict:
    """The claim metrics of Fig 8 from the replays' summaries, ``runs[(service, policy)]``.
    Every key is written; a missing run makes the keys that need it NaN.

    - ``peak_norm_latency_<policy>_s``: mean over the two services of the run's largest 5-minute
      mean normalised latency (spec §6.14 "average peak"); per service ``..._<service>_s``;
    - ``resource_saving_pct_mean``: mean over services of 1 - instance-seconds(PreServe) /
      instance-seconds(static 8) (starting and draining instances billed), in percent;
    - ``peak_norm_latency_reduction_vs_hybrid_pct``: 1 - PreServe's average peak / Hybrid's;
    - ``preserve_meets_slo_both``: no 5-minute bin of PreServe above the SLO on either service;
    - ``all_baselines_violate_slo``: Reactive, Proactive and Hybrid each have a bin above it;
    - ``preserve_best_all_metrics``: on both services PreServe's peak is below every baseline's
      and it has no more bins above the SLO than any of them;
    - ``proactive_spike_hour_code``: the hour of Proactive's peak bin on code.
    """
    from ...metrics.timeline import reduction_pct, saving_pct

    nan = float("nan")
    svcs = tuple(SERVICES)
    get = lambda svc, pol, k: (runs.get((svc, pol)) or {}).get(k, nan)  # noqa: E731
    m: dict = {}
    for pol in POLICIES:
        peaks = [get(svc, pol, "peak_norm_latency_s") for svc in svcs]
        for svc, pk in zip(svcs, peaks):
            m[f"peak_norm_latency_{pol}_{svc}_s"] = pk
            m[f"bins_over_slo_{pol}_{svc}"] = get(svc, pol, "bins_over_slo")
            m[f"instance_hours_{pol}_{svc}"] = get(svc, pol, "instance_seconds") / 3600.0
        m[f"peak_norm_latency_{pol}_s"] = float(np.mean(peaks))
    savings = []
    for svc in svcs:
        ref = get(svc, "static", "instance_seconds")
        for pol in POLICIES[1:]:
            x = get(svc, pol, "instance_seconds")
            v = saving_pct(x, ref) if ref == ref and x == x else nan
            m[f"resource_saving_pct_{pol}_{svc}"] = v
        savings.append(m[f"resource_saving_pct_preserve_{svc}"])
    m["resource_saving_pct_mean"] = float(np.mean(savings))
    hy, ps = m["peak_norm_latency_hybrid_s"], m["peak_norm_latency_preserve_s"]
    m["peak_norm_latency_reduction_vs_hybrid_pct"] = reduction_pct(ps, hy) if hy == hy and ps == ps and hy > 0 else nan
    have = all((svc, pol) in runs for svc in svcs for pol in POLICIES)
    over = lambda svc, pol: get(svc, pol, "bins_over_slo")  # noqa: E731
    m["preserve_meets_slo_both"] = bool(all(over(svc, "preserve") == 0 for svc in svcs)) if have else nan
    m["all_baselines_violate_slo"] = bool(all(any(over(svc, b) > 0 for svc in svcs) for b in BASELINES)) if have else nan
    m["preserve_best_all_metrics"] = bool(all(
        get(svc, "preserve", "peak_norm_latency_s") < get(svc, b, "peak_norm_latency_s") and over(svc, "preserve") <= over(svc, b)
        for svc in svcs for b in BASELINES)) if have else nan
    m["proactive_spike_hour_code"] = get("code", "proactive", "peak_hour")
    any_run = next(iter(runs.values()), {})
    m["train_days"] = any_run.get("train_days", nan)
    m["replay_days"] = any_run.get("replay_days", nan)
    m["max_instances"] = any_run.get("max_instances", nan)
    m["uses_true_lengths"] = bool(all(r.get("uses_true_lengths") is True for r in runs.values())) if runs else nan
    m["cold_start_s"] = any_run.get("cold_start_s", nan)
    m["thinning_f_code"] = get("code", "static", "thinning_f")
    m["thinning_f_chat"] = get("chat", "static", "thinning_f")
    return m


# --------------------------------------------------------------------------- CLI
def _settings(a: argparse.Namespace) -> Fig8Settings:
    over = {"seed": a.seed}
    if getattr(a, "cold_start_s", None) is not None:
        if not a.cold_start_s >= 0:
            raise InputError(f"--cold-start-s: need a number >= 0, got {a.cold_start_s}")
        over["cold_start_s"] = a.cold_start_s
    if getattr(a, "router", None):
        over["router"] = a.router
    if getattr(a, "day_weights", None):
        over["day_weights"] = a.day_weights
    if getattr(a, "reactive_signal", None):
        over["reactive_signal"] = a.reactive_signal
    if getattr(a, "thinning_check", None):
        over["f_check"] = a.thinning_check
    return replace(SCALES[a.scale], **over)


def _run_plan(a: argparse.Namespace) -> int:
    from ...output_dir import check_output_dir, staged_output_dir

    s = _settings(a)
    check_output_dir(a.out, force=a.force)
    with staged_output_dir(a.out, command=f"preserve fig08 plan --service {a.service}", force=a.force) as tmp:
        plan = make_plan(a.service, s)
        plan["scale"] = a.scale
        (tmp / "summary.json").write_text(json.dumps(plan, indent=1) + "\n")
    print(f"{a.service}: f={plan['thinning_f']:.4f}, mu (p, d, t) = ({plan['mu_prompt_tokens']:.0f}, "
          f"{plan['mu_response_tokens']:.0f}, {plan['mu_total_tokens']:.0f}) tokens/window, "
          f"N in [{min(plan['targets'])}, {max(plan['targets'])}], {plan['wall_s']:.1f} s -> {a.out}")
    return 0


def _scaler_options(items: list[str]) -> dict:
    """``--scaler-option count_queued=false`` -> {"count_queued": False} (YAML scalars)."""
    import yaml

    out = {}
    for it in items:
        k, sep, v = it.partition("=")
        if not sep or k not in ("count_queued", "scaledown_floor", "period_s", "lookahead_l", "scaledown_threshold",
                                "overload_kv_threshold", "overload_iteration_fraction", "max_scaledowns_per_window"):
            raise InputError(f"--scaler-option {it!r}: expected KEY=VALUE with KEY a PreServe scaler option")
        out[k] = yaml.safe_load(v)
    return out


def _read_plan(path: str) -> dict:
    p = Path(path)
    try:
        plan = json.loads(p.read_text())
    except json.JSONDecodeError as exc:
        raise InputError(f"{p}: not valid JSON: {exc}") from None
    for key in ("service", "thinning_f", "targets", "replay_t0_s", "replay_t1_s", "scale", "train_days"):
        if key not in plan:
            raise InputError(f"{p}: not a fig08 plan (no key {key!r})")
    return plan


def _run_replay(a: argparse.Namespace) -> int:
    from ...output_dir import check_output_dir, staged_output_dir

    plan = _read_plan(a.plan)
    if a.scale is None:
        a.scale = plan["scale"]
    # the trace is the plan's: a plan written before the reading existed used the step rule
    a.day_weights = plan["settings"].get("day_weights", "step")
    s = _settings(a)
    if s.seed != plan["settings"]["seed"] or s.base_scale != plan["settings"]["base_scale"]:
        raise InputError(f"{a.plan}: planned with seed {plan['settings']['seed']} / base_scale "
                         f"{plan['settings']['base_scale']}; this replay has {s.seed} / {s.base_scale}")
    check_output_dir(a.out, force=a.force)
    with staged_output_dir(a.out, command=f"preserve fig08 replay --policy {a.policy}", force=a.force) as tmp:
        timeline, life, summ = replay(plan, a.policy, s, _scaler_options(a.scaler_option))
        timeline.to_csv(tmp / "timeline.csv", index=False, float_format="%.6g")
        life.to_csv(tmp / "lifecycle.csv", index=False, float_format="%.6g")
        (tmp / "summary.json").write_text(json.dumps(summ, indent=1, default=float) + "\n")
    print(f"{summ['service']}/{a.policy}: peak 5-min normalised latency {summ['peak_norm_latency_s']:.3f} s at "
          f"{summ['peak_hour']:.2f} h, {summ['bins_over_slo']}/{summ['bins']} bins over {s.slo_s} s, "
          f"{summ['instance_seconds'] / 3600:.1f} instance-hours, {summ['wall_s']:.1f} s -> {a.out}")
    return 0


def main(argv=None) -> int:
    from ...cli_errors import add_output_args, run_command

    ap = argparse.ArgumentParser(prog="python -m servesim.systems.preserve.autoscaling", description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="command", required=True)
    p = sub.add_parser("plan", help="thinning factor, capacities and the Tier-1 plan of one service")
    p.add_argument("--service", required=True, choices=sorted(SERVICES))
    p.add_argument("--scale", default="quick", choices=sorted(SCALES))
    p.add_argument("--day-weights", default=None, choices=DAY_WEIGHT_READINGS,
                   help="the synthetic week's weekday level across midnight (default interpolated; step: the old rule)")
    p.add_argument("--thinning-check", default=None, choices=F_CHECKS,
                   help="after the busiest-window rule, static-8's replay of the span must meet the SLO (span, "
                        "default) or not (windows: the rule alone, the reading before)")
    r = sub.add_parser("replay", help="simulate one policy on a plan")
    r.add_argument("plan", help="the plan's summary.json")
    r.add_argument("--policy", required=True, choices=POLICIES)
    r.add_argument("--scale", default=None, choices=sorted(SCALES), help="default: the plan's")
    r.add_argument("--cold-start-s", type=float, default=None, help="seconds a new instance takes (default 60)")
    r.add_argument("--reactive-signal", default=None, choices=("kv", "rate"),
                   help="what Reactive and Hybrid observe: kv (default; §5.3's KV usage > 95 %%) or rate (arrival "
                        "rate over the profiled capacity > 80 %%)")
    r.add_argument("--scaler-option", action="append", default=[], metavar="KEY=VALUE",
                   help="a PreServe scaler option (policy preserve), e.g. scaledown_floor=none count_queued=false")
    for q in (p, r):
        q.add_argument("--router", default=None, help="endpoint router by name (default jsq-tokens)")
        add_output_args(q)
    a = ap.parse_args(argv)
    func = _run_plan if a.command == "plan" else _run_replay
    return run_command(func, a, f"preserve fig08 {a.command}")


if __name__ == "__main__":
    sys.exit(main())
