"""How much KV cache fits beside a model's weights: the one rule, with each paper's reading named.

Why here: the rule relates a catalog model (weights, KV bytes per token) to a catalog accelerator
(memory), and `catalog` is the lowest layer every user may import (docs/architecture.md:
`workload`/`catalog` sit just above the foundation, below `perf`, `sim`, `fleet` and every
`systems.<paper>`); `sim.kvcache` keeps a running instance's block bookkeeping, a layer that
`perf` and `catalog` users below `sim` could not import. The function is plain arithmetic on
numbers, so callers that size memory their own way (the authors' weight sizes, no-GQA KV bytes,
a replica's pooled memory) pass their numbers in.

Readings (``fraction_of``), as the callers use them:

* ``"total"`` — vLLM's ``gpu_memory_utilization``: the engine may use ``fraction`` of the GPU's
  whole memory, and the KV pool is what is left of it after the weights and a reserve:
  ``gpu_bytes * fraction - weight_bytes * (1 + weight_overhead) - reserve_bytes``.
  (``fraction=1.0``: all memory, as SageServe's authors' simulator sizes an instance.)
* ``"free"`` — ServerlessLLM's (Aegaeon's artifact baseline): ``fraction`` of the memory the
  weights leave free: ``(gpu_bytes - weight_bytes * (1 + weight_overhead) - reserve_bytes) * fraction``.

Then ``free * gpus // kv_bytes_per_token`` tokens, or, with ``block_tokens``,
``free * gpus // (kv_bytes_per_token * block_tokens)`` whole blocks (the bytes floored once, at
block granularity). ``gpus``: the memory, weights and reserve are one GPU's (a TP shard) and the
instance has ``gpus`` of them (PreServe's per-GPU rule); pass the replica's pooled memory with
``gpus=1`` for a rule written on the whole replica (OServe's). The floating-point operations are
exactly the ones written above, in that order, so every caller's numbers are unchanged.

Bad input (non-positive memory, KV bytes, ``gpus`` or ``block_tokens``; negative weights or
reserve; a fraction outside (0, 1]; non-finite numbers; an unknown reading) raises ValueError.
Weights (plus reserve) that leave no room give 0: callers decide what 0 means (PreServe raises
"no memory left for the KV cache", OServe drops the shape).
"""

from __future__ import annotations

import math

#: the readings of ``fraction``: of the GPU's total memory (vLLM) or of what the weights leave (ServerlessLLM)
FRACTION_OF = ("total", "free")


def kv_capacity(gpu_bytes: float, weight_bytes: float, kv_bytes_per_token: float, *, fraction: float,
                fraction_of: str = "total", weight_overhead: float = 0.0, reserve_bytes: float = 0.0,
                gpus: int = 1, block_tokens: int | None = None) -> int:
    """KV tokens (or, with ``block_tokens``, KV blocks) that fit; see the module docstring.

    gpu_bytes: memory of one GPU (or of the pooled replica, with ``gpus=1``).
    weight_bytes: the weights held in that memory (one GPU's shard under TP).
    kv_bytes_per_token: KV bytes of one token, as the instance counts tokens.
    fraction: of ``gpu_bytes`` ("total") or of the memory the weights leave ("free"), in (0, 1].
    weight_overhead: extra memory as a fraction of the weights (activations, CUDA graphs).
    reserve_bytes: fixed bytes kept out of the KV pool (activations), per GPU.
    gpus: the GPUs whose per-GPU free memory adds up to the instance's pool.
    block_tokens: count whole KV blocks of this many tokens instead of tokens.
    """
    if fraction_of not in FRACTION_OF:
        raise ValueError(f"kv_capacity: fraction_of={fraction_of!r}; expected one of {FRACTION_OF}")
    for name, v in (("gpu_bytes", gpu_bytes), ("weight_bytes", weight_bytes), ("kv_bytes_per_token", kv_bytes_per_token),
                    ("fraction", fraction), ("weight_overhead", weight_overhead), ("reserve_bytes", reserve_bytes)):
        if not math.isfinite(v):
            raise ValueError(f"kv_capacity: {name}={v!r} must be finite")
    if not gpu_bytes > 0:
        raise ValueError(f"kv_capacity: gpu_bytes={gpu_bytes!r} must be > 0")
    if not kv_bytes_per_token > 0:
        raise ValueError(f"kv_capacity: kv_bytes_per_token={kv_bytes_per_token!r} must be > 0")
    if not 0 < fraction <= 1:
        raise ValueError(f"kv_capacity: fraction={fraction!r} must be in (0, 1]")
    for name, v in (("weight_bytes", weight_bytes), ("weight_overhead", weight_overhead), ("reserve_bytes", reserve_bytes)):
        if v < 0:
            raise ValueError(f"kv_capacity: {name}={v!r} must be >= 0")
    if int(gpus) != gpus or gpus < 1:
        raise ValueError(f"kv_capacity: gpus={gpus!r} must be an integer >= 1")
    if block_tokens is not None and (int(block_tokens) != block_tokens or block_tokens < 1):
        raise ValueError(f"kv_capacity: block_tokens={block_tokens!r} must be an integer >= 1")
    if fraction_of == "total":
        free = gpu_bytes * fraction - weight_bytes * (1 + weight_overhead) - reserve_bytes
    else:
        free = (gpu_bytes - weight_bytes * (1 + weight_overhead) - reserve_bytes) * fraction
    per = kv_bytes_per_token if block_tokens is None else kv_bytes_per_token * block_tokens
    return max(0, int(free * gpus // per))
