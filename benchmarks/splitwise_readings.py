"""One Splitwise database, two readings: how many requests/s one Llama-2-70B instance on 8 x A100
sustains when servesim reads the database its own way and when it reads it as the public
SplitwiseSim does (`servesim.perf.splitwise_sim`), everything else equal.

Workload: request lengths of the Azure LLM inference trace 2023 (conversation), resampled with a
seed, all arriving at t=0 (a saturation run); throughput = completions per second over the
middle half of completions. Instance: ``orca`` scheduling (whole prompts, no token cap, as
SplitwiseSim's ORCA instances) with SplitwiseSim's ``max_batch_size`` of 512, or vLLM-v1 chunked
prefill (8,192 tokens); KV capacity from the catalog: 8 x 80 GiB x 0.9 minus the fp16 weights,
in 16-token blocks. Prints one JSON line per (reading, scheduler)::

    PYTHONPATH=src python benchmarks/splitwise_readings.py --requests 3000
"""

from __future__ import annotations

import argparse
import json

import numpy as np
import pandas as pd

from servesim.catalog import get_hardware, get_model
from servesim.data import locate
from servesim.perf import build
from servesim.sim import Cluster, InstanceConfig
from servesim.workload import schema

CONV = "azure-llm-2023/AzureLLMInferenceTrace_conv.csv"
MODEL, HW, TP = "llama-2-70b", "a100-80gb", 8


def kv_blocks(block: int = 16, mem_frac: float = 0.9) -> int:
    m, h = get_model(MODEL), get_hardware(HW)
    free = TP * h.mem_bytes * mem_frac - m.param_bytes
    return int(free // (m.kv_bytes_per_token() * block))


def saturation_rps(reading: str, policy: str, n: int, seed: int) -> dict:
    df = pd.read_csv(locate(CONV), usecols=["ContextTokens", "GeneratedTokens"])
    i = np.random.default_rng(seed).integers(0, len(df), n)
    w = schema.make(np.zeros(n), df.ContextTokens.to_numpy()[i], np.maximum(df.GeneratedTokens.to_numpy()[i], 1))
    cfg = InstanceConfig(num_blocks=kv_blocks(), block_size=16, max_num_seqs=512,
                         max_num_batched_tokens=None if policy == "orca" else 8192, policy=policy)
    perf = build({"backend": "splitwise", "reading": reading}, model=MODEL, hardware=HW, tp=TP)
    res = Cluster.uniform(1, cfg, perf).run(w)
    f = np.sort(res.requests["finish_s"].dropna().to_numpy())
    a, b = len(f) // 4, 3 * len(f) // 4
    return {"reading": reading, "policy": policy, "requests": n, "kv_blocks": cfg.num_blocks,
            "finished": int(len(f)), "requests_per_s": round(float((b - a) / (f[b] - f[a])), 4)}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--requests", type=int, default=3000)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args(argv)
    for reading in ("servesim", "splitwise-sim"):
        for policy in ("orca", "vllm-v1"):
            print(json.dumps(saturation_rps(reading, policy, a.requests, a.seed)), flush=True)


if __name__ == "__main__":
    main()
