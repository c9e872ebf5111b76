"""Simulator throughput: requests simulated per wall-clock second, and peak memory.

Workload: Azure LLM inference trace 2023 (conversation) prompt/output lengths, resampled with a
seed; Poisson arrivals at ``--load`` (default 0.8) of the fleet's capacity, where one instance's
capacity is measured by a saturation run (all of a sample arriving at t=0) with the same
instance configuration. Instances: vLLM V1 scheduling, Llama-2-7B-on-A100-like KV capacity
(7,500 blocks of 16 tokens) and the trivial ``LinearStepTime`` backend.

Prints ONE JSON line: requests, instances, mode, wall_s, requests_per_s, peak_rss_mb, plus
workload facts. Example::

    PYTHONPATH=src python benchmarks/sim_throughput.py --requests 1000000 --instances 100
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import time

import numpy as np
import pandas as pd

from servesim.data import locate
from servesim.perf import LinearStepTime
from servesim.sim import Cluster, InstanceConfig
from servesim.workload import schema

CONV = "azure-llm-2023/AzureLLMInferenceTrace_conv.csv"


def conv_lengths() -> tuple[np.ndarray, np.ndarray]:
    """(prompt, output) token counts of every request of the Azure 2023 conversation trace."""
    path = locate(CONV)
    df = pd.read_csv(path, usecols=["ContextTokens", "GeneratedTokens"])
    return (df["ContextTokens"].to_numpy(dtype=np.int64),
            df["GeneratedTokens"].to_numpy(dtype=np.int64))


def instance_config() -> InstanceConfig:
    return InstanceConfig(num_blocks=7500, block_size=16, max_num_seqs=256,
                          max_num_batched_tokens=8192, policy="vllm-v1")


def capacity_rps(P: np.ndarray, O: np.ndarray, seed: int, n: int = 3000) -> float:
    """Requests/s one instance sustains: a saturation run of ``n`` resampled requests at t=0."""
    rng = np.random.default_rng(seed)
    i = rng.integers(0, len(P), n)
    w = schema.make(np.zeros(n), P[i], O[i])
    res = Cluster.uniform(1, instance_config(), LinearStepTime()).run(w)
    # rate over the middle half of completions, away from start-up and drain effects
    f = np.sort(res.requests["finish_s"].to_numpy())
    a, b = n // 4, 3 * n // 4
    return (b - a) / (f[b] - f[a])


def build_workload(n: int, instances: int, load: float, seed: int) -> tuple[pd.DataFrame, float]:
    P, O = conv_lengths()
    s_cap, s_len, s_arr = np.random.SeedSequence(seed).spawn(3)
    cap = capacity_rps(P, O, int(s_cap.generate_state(1)[0]))
    rate = load * cap * instances
    rng = np.random.default_rng(s_len)
    i = rng.integers(0, len(P), n)
    arr = np.cumsum(np.random.default_rng(s_arr).exponential(1.0 / rate, n))
    return schema.make(arr, P[i], O[i], source="<benchmark>"), cap


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--requests", type=int, default=1_000_000)
    ap.add_argument("--instances", type=int, default=100)
    ap.add_argument("--mode", choices=("fast", "reference"), default="fast")
    ap.add_argument("--load", type=float, default=0.8, help="fraction of fleet capacity")
    ap.add_argument("--router", default="least_outstanding")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--profile", metavar="FILE", help="write cProfile stats of the run here")
    a = ap.parse_args(argv)
    w, cap = build_workload(a.requests, a.instances, a.load, a.seed)
    cl = Cluster.uniform(a.instances, instance_config(), LinearStepTime(), router=a.router,
                         mode=a.mode)
    t0 = time.perf_counter()
    c0 = time.process_time()
    if a.profile:
        import cProfile
        prof = cProfile.Profile(time.process_time)
        res = prof.runcall(cl.run, w, validate=False)
        prof.dump_stats(a.profile)
    else:
        res = cl.run(w, validate=False)
    wall = time.perf_counter() - t0
    cpu = time.process_time() - c0
    rq = res.requests
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    out = {
        "requests": a.requests,
        "instances": a.instances,
        "mode": a.mode,
        "wall_s": round(wall, 3),
        "requests_per_s": round(a.requests / wall, 1),
        "peak_rss_mb": round(rss_mb, 1),
        "cpu_s": round(cpu, 3),
        "requests_per_cpu_s": round(a.requests / cpu, 1),
        "load": a.load,
        "capacity_rps_per_instance": round(cap, 4),
        "sim_seconds": round(float(res.stats["sim_end_s"]), 1),
        "events": res.stats["events"],
        "iterations": res.stats["iterations"],
        "finished": int((rq["state"] == "finished").sum()),
        "mean_ttft_s": round(float(rq["ttft_s"].mean()), 4),
        "p99_tbt_s": round(float(rq["tbt_p99_s"].quantile(0.99)), 4),
        "preemptions": int(rq["preemptions"].sum()),
    }
    print(json.dumps(out))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
