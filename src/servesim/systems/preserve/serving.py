"""PreServe's serving setup (§5.1, §5.4 RQ3, §3.2.2 pilot): 4 LLaMA-2 instances on A40 GPUs,
ShareGPT requests at Poisson QPS, one router; per-request results and the Fig 9 statistics.

Readings (each a field of :class:`ServingSettings`, recorded in every summary):
* step times: LLaMA-2-7B from Vidur's A40 operator profiles (``VidurStepTime``); LLaMA-2-13B at
  TP = 2 by the roofline on the A40 datasheet with its all-reduces over PCIe (the paper's 8 x A40
  are on PCIe; Vidur has no 13B A40 profile);
* engine: vLLM 0.6 V0 scheduling (``vllm-v0``: prefill-priority steps, recompute preemption,
  1 % admission watermark), max_num_seqs 256, 4096 batched tokens (V0 without chunked prefill:
  max(max_model_len, 2048)), max_model_len 4096;
* KV capacity: (GPU memory x 0.9 - weights / TP - 1.5 GB activations) x TP / KV bytes per token,
  with the A40's 48 GB (``gpu_mem_gb=40`` is the paper's "40 GB");
* requests: (prompt, output) pairs drawn with replacement, Poisson arrivals; predicted lengths
  from a cached predictions table (:func:`table2.read_predictions`: the test split, so no
  request was seen in training) or the true lengths (``oracle``), named in the summary;
* dispatch overhead (PreServe only; the baselines predict nothing): the request reaches the
  router ``overhead_s`` after it arrives and its TTFT/E2E count that delay (``paper``: the
  stated 45.6 ms, §5.5; ``measured``: a measured predictor latency; ``none``);
* MU's signals (``mu_kv_source``): ``scraped`` (default), GPU utilisation and KV usage read
  every ``mu_scrape_s`` = 1 s as a router polling vLLM's ``/metrics`` and NVML would, or
  ``oracle``, the engine's exact values at every decision (:class:`.routing.MinUseRouter`).
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ...catalog import get_hardware, get_model, kv_capacity
from ...metrics.slo import SLO
from ...metrics.summary import summarize
from ...perf import CachedStepTime, RooflineStepTime
from ...perf.vidur import VidurStepTime
from ...sim import Cluster, InstanceConfig, Sampler
from ...workload.arrivals import lengths_to_poisson
from . import routing  # noqa: F401  (registers "preserve" and "min-use")
from .routing import MinUseRouter, PreServeRouter

MODELS = {"7b": "llama-2-7b", "13b": "llama-2-13b"}
TP = {"7b": 1, "13b": 2}
#: the routers of Fig 9 by the paper's names -> registered router names
ROUTERS = {"rr": "round-robin", "lr": "least-outstanding", "mu": "min-use", "preserve": "preserve"}
PAPER_OVERHEAD_MS = 35.9 + 9.7  # §5.5: load prediction + other management work
GIB = 1024 ** 3


@dataclass(frozen=True)
class ServingSettings:
    n_instances: int = 4                 # §5.4
    gpu: str = "a40"                     # §5.1
    gpu_mem_gb: float | None = None      # None: the catalog's 48 GB; 40: the paper's figure
    gpu_memory_utilization: float = 0.9  # vLLM default [A]
    activation_reserve_gb: float = 1.5   # per GPU: activations, CUDA graphs [A]
    block_size: int = 16
    max_num_seqs: int = 256              # vLLM 0.6 default
    max_num_batched_tokens: int = 4096   # V0, chunked prefill off: max(max_model_len, 2048)
    max_model_len: int = 4096            # LLaMA-2
    policy: str = "vllm-v0"
    step_overhead_s: float = 3e-3        # per engine step (the roofline prior's default)
    # per running sequence per step (vLLM V0's CPU-side scheduling, sampling, detokenising).
    # CALIBRATED, not measured: the one knob set so that LR's knee on 4 x 7B falls between 9.3 and
    # 10.5 QPS (spec §5 anchor): 10-min LR runs (seed 0) at 9.3 / 10.5 QPS gave SLO attainment
    # 99.9 / 99.9 % at 0.2 ms, 99.6 / 61 % at 0.35 ms, 99.9 / 92 % (5 min) at 0.4 ms.
    seq_overhead_s: float = 3.5e-4
    slo_norm_s: float = 0.2              # §5.1
    t_mem: float = 0.8                   # §4.3.3
    beta: float = 1.0                    # §4.3.3
    lookahead: int = 100                 # §4.3.1
    extension: float = 0.2               # §4.3.1
    mu_kv_source: str = "scraped"        # MU reads scraped signals; "oracle": the engine's exact KV (routing.py)
    mu_scrape_s: float = 1.0             # MU's read interval [A]: the favourable end (production-stack: 30 s)

    def as_dict(self) -> dict:
        return dataclasses.asdict(self)


def kv_tokens(model_key: str, gpu: str, *, tp: int = 1, mem_bytes: float | None = None, utilisation: float = 0.9,
              reserve_bytes: float = 0.0) -> int:
    """KV tokens of one replica (vLLM's rule): per GPU, ``utilisation`` x memory - its weight shard -
    an activation reserve, times ``tp``, over the model's KV bytes per token (`catalog.kv_capacity`,
    reading "total"; 0 when the weights leave nothing). Figs 4/9/10 and Fig 8 both size their A40
    instances with it."""
    m, hw = get_model(model_key), get_hardware(gpu)
    mem = hw.mem_bytes if mem_bytes is None else mem_bytes
    # vLLM's gpu_memory_utilization rule, per GPU (its weight shard), times tp; 0 if nothing is left
    return kv_capacity(mem, m.param_bytes / tp, m.kv_bytes_per_token(), fraction=utilisation, fraction_of="total",
                       reserve_bytes=reserve_bytes, gpus=tp)


def kv_capacity_tokens(model: str, s: ServingSettings) -> int:
    """KV tokens of one instance of ``model`` ("7b"/"13b"), a multiple of the block size."""
    mem = s.gpu_mem_gb * GIB if s.gpu_mem_gb is not None else get_hardware(s.gpu).mem_bytes
    tokens = kv_tokens(MODELS[model], s.gpu, tp=TP[model], mem_bytes=mem, utilisation=s.gpu_memory_utilization,
                       reserve_bytes=s.activation_reserve_gb * 1e9)
    if tokens < s.block_size:
        raise ValueError(f"{model} on {s.gpu} ({mem / GIB:.0f} GiB): no memory left for the KV cache")
    return tokens // s.block_size * s.block_size


def step_model(model: str, s: ServingSettings):
    """The iteration-time model of one instance (see module docstring)."""
    hw = get_hardware(s.gpu)
    pcie = dataclasses.replace(hw, interconnect_bw=hw.pcie_bw)  # 8 x A40 on PCIe (§5.1): no NVLink bridge
    rf = RooflineStepTime(MODELS[model], pcie, tp=TP[model], overhead_s=s.step_overhead_s,
                          seq_overhead_s=s.seq_overhead_s)
    if model == "7b":  # Vidur's operators; attention, LM head and the overheads from the roofline
        return CachedStepTime(VidurStepTime(MODELS[model], s.gpu, tp=1, roofline=rf))
    return CachedStepTime(rf)


def instance_config(model: str, s: ServingSettings) -> InstanceConfig:
    m = get_model(MODELS[model])
    return InstanceConfig(num_blocks=kv_capacity_tokens(model, s) // s.block_size, block_size=s.block_size,
                          max_num_seqs=s.max_num_seqs, max_num_batched_tokens=s.max_num_batched_tokens,
                          max_model_len=s.max_model_len, policy=s.policy, model=MODELS[model], tp=TP[model],
                          hardware=s.gpu, kv_bytes_per_token=float(m.kv_bytes_per_token()))


# ---------------------------------------------------------------------- requests
def request_pool(predictions: pd.DataFrame | None = None, max_conversations: int | None = None,
                 max_model_len: int = 4096) -> tuple[pd.DataFrame, str]:
    """(prompt_tokens, output_tokens, pred) rows to draw requests from, and the predictions' name.

    ``predictions``: a table with ``prompt_tokens``, ``output_tokens``, ``pred_preserve`` (the
    cached test split of :mod:`.table2`); None: ShareGPT first-turn pairs with their true lengths
    as the prediction (``oracle``)."""
    if predictions is not None:
        df = pd.DataFrame({"prompt_tokens": predictions["prompt_tokens"].to_numpy(np.int64),
                           "output_tokens": predictions["output_tokens"].to_numpy(np.int64),
                           "pred": np.rint(predictions["pred_preserve"].to_numpy(np.float64)).astype(np.int64)})
        kind = "cached"
    else:
        from ...workload.sharegpt import load_sharegpt

        sg = load_sharegpt(mode="first", max_conversations=max_conversations)
        df = pd.DataFrame({"prompt_tokens": sg["prompt_tokens"].to_numpy(np.int64),
                           "output_tokens": sg["output_tokens"].to_numpy(np.int64)})
        df["pred"] = df["output_tokens"]
        kind = "oracle"
    ok = (df.prompt_tokens >= 1) & (df.output_tokens >= 1) & (df.prompt_tokens + df.output_tokens <= max_model_len)
    df = df[ok].reset_index(drop=True)
    if df.empty:
        raise ValueError("request pool: no (prompt, output) pair fits max_model_len")
    return df, kind


def poisson_workload(pool: pd.DataFrame, qps: float, duration_s: float, seed: int, model: str
                     ) -> tuple[pd.DataFrame, np.ndarray]:
    """Poisson arrivals at ``qps`` over ``duration_s``, pairs drawn from ``pool``
    (``workload.lengths_to_poisson``); (workload, each request's predicted length)."""
    wl, rows = lengths_to_poisson(pool, qps, duration_s, seed, model=MODELS[model], app="sharegpt", tier="IW-F",
                                  with_rows=True)
    return wl, pool["pred"].to_numpy()[rows]


# ---------------------------------------------------------------------- one run
def instance_sampler(cluster: Cluster, interval: float = 1.0) -> Sampler:
    """Every ``interval`` s, per instance: KV usage, waiting and running requests, and the prompt
    tokens queued for prefill (Fig 4's overload reading)."""
    return Sampler(cluster.kernel, cluster.instances, interval,
                   probes={"queued_prompt_tokens": lambda inst: inst.queued_prefill_tokens})


def sample_frame(sampler: Sampler) -> pd.DataFrame:
    """The samples with instances numbered as the request table's ``i<k>`` names."""
    ts = sampler.frame()
    return ts.assign(instance=ts["instance"].astype(int))


def simulate(model: str, router: str, wl: pd.DataFrame, pred: np.ndarray, s: ServingSettings,
             overhead_s: float = 0.0, sample_s: float | None = None) -> tuple[pd.DataFrame, dict, pd.DataFrame | None]:
    """One run: the request table (TTFT/E2E from the true arrival, dispatch delay included), run
    statistics (router decision times), and the per-instance samples when ``sample_s`` is given."""
    if router not in ROUTERS:
        raise ValueError(f"unknown router {router!r}; known: {sorted(ROUTERS)}")
    cfg, sm = instance_config(model, s), step_model(model, s)
    if router == "preserve":
        rt = PreServeRouter(t_mem=s.t_mem, beta=s.beta, lookahead=s.lookahead, extension=s.extension)
        delay = overhead_s
    elif router == "mu":
        rt, delay = MinUseRouter(kv_source=s.mu_kv_source, scrape_s=s.mu_scrape_s), 0.0
    else:
        rt, delay = ROUTERS[router], 0.0
    cl = Cluster.uniform(s.n_instances, cfg, sm, router=rt)
    sampler = instance_sampler(cl, sample_s) if sample_s else None
    arrival = wl["arrival_s"].to_numpy()
    shifted = wl.assign(arrival_s=arrival + delay) if delay else wl
    t0 = time.perf_counter()
    res = cl.run(shifted, predicted=pred)
    wall = time.perf_counter() - t0
    df = res.requests
    if delay:
        df = df.assign(arrival_s=arrival, ttft_s=df.first_token_s - arrival, e2e_s=df.finish_s - arrival)
    stats = {"wall_s": wall, "iterations": res.stats["iterations"], "overhead_s": delay,
             "router_select_ms": (np.asarray(rt.select_s) * 1e3) if router == "preserve" else None}
    ts = None
    if sampler:
        ts = sample_frame(sampler).merge(norm_latency_series(df, sample_s, s.n_instances), on=["time_s", "instance"], how="left")
    return df, stats, ts


def norm_latency_series(df: pd.DataFrame, interval: float, n_instances: int) -> pd.DataFrame:
    """Mean normalised latency of the requests finishing on each instance in each sampling
    interval, stamped at the interval's start (Fig 4's third row); NaN where none finished."""
    fin = df[df["state"] == "finished"]
    inst = fin["instance"].str.lstrip("i").astype(int).to_numpy()
    t = np.floor(fin["finish_s"].to_numpy() / interval) * interval
    norm = (fin["e2e_s"] / fin["output_tokens"]).to_numpy()
    g = pd.DataFrame({"time_s": t, "instance": inst, "norm_latency_s": norm}).groupby(["time_s", "instance"]).mean()
    return g.reset_index()


def point_stats(df: pd.DataFrame, s: ServingSettings) -> dict:
    """Fig 9's statistics of one run, read from ``metrics.summarize`` (the one summary of every
    simulator): TTFT and normalised latency (E2E / output tokens), mean and P99 over finished
    requests; SLO attainment = finished requests with normalised latency <= ``slo_norm_s`` over all
    requests (a rejected or unfinished one is a violation)."""
    b = summarize(df, slo=SLO(e2el_per_token_s=s.slo_norm_s), percentiles=(99,), by_tier=False)["all"]
    n = b["requests"]
    met = round(b["slo_attainment"] * n) if n else 0
    nan = float("nan")
    return {"n_requests": n, "n_finished": b["completed"],
            "ttft_mean_s": b["mean_ttft_s"] if b["mean_ttft_s"] is not None else nan,
            "ttft_p99_s": b["p99_ttft_s"] if b["p99_ttft_s"] is not None else nan,
            "norm_mean_s": b["mean_e2el_per_token_s"] if b["mean_e2el_per_token_s"] is not None else nan,
            "norm_p99_s": b["p99_e2el_per_token_s"] if b["p99_e2el_per_token_s"] is not None else nan,
            "e2e_mean_s": b["mean_e2el_s"] if b["mean_e2el_s"] is not None else nan,
            "slo_attainment_pct": 100.0 * met / max(n, 1),
            "slo_violations": int(n - met), "preemptions": int(df["preemptions"].sum())}


def isolated_norm_latency(model: str, pool: pd.DataFrame, s: ServingSettings, n: int = 500, seed: int = 0) -> float:
    """Mean normalised latency of requests served alone (one prefill, then batch-1 decodes):
    the calibration anchor of the SLO (§5.1: 0.2 s = 3 x isolated)."""
    sm = step_model(model, s)
    rng = np.random.default_rng(seed)
    rows = pool.iloc[rng.integers(0, len(pool), min(n, len(pool)))]
    out = []
    for P, D in zip(rows.prompt_tokens.to_numpy(), rows.output_tokens.to_numpy()):
        t = float(sm.step_time(int(P), int(P), 0, 0))
        if D > 1:
            ctx = P + np.arange(1, D, dtype=np.int64)
            t += float(np.sum(sm.step_time(np.zeros(D - 1, np.int64), np.zeros(D - 1, np.int64),
                                           np.ones(D - 1, np.int64), ctx)))
        out.append(t / D)
    return float(np.mean(out))
