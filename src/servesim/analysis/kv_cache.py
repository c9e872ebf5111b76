"""KV-cache shape and size per token of catalog models (Aegaeon Table 1 and its eval models)."""

from __future__ import annotations

import pandas as pd

from servesim.catalog import get_model


def metric_name(key: str) -> str:
    """``internlm2.5-7b-chat`` -> ``kv_kib_per_token_internlm2_5_7b_chat``."""
    return "kv_kib_per_token_" + key.replace("-", "_").replace(".", "_")


def kv_cache_table(keys: list[str], *, dtype_bytes: int = 2, block_tokens: int = 16, slab_bytes: int = 1 << 30,
                   tp: dict[str, int] | None = None) -> pd.DataFrame:
    """One row per model: the vLLM KV shape (layers, 2, kv_heads, head_dim) of one token, its size,
    and, per GPU under tensor parallelism ``tp[key]`` (KV heads split across the GPUs; default 1),
    its share per token, the size of one ``block_tokens``-token block and how many blocks fit in
    one ``slab_bytes`` slab."""
    tp = tp or {}
    rows = []
    for key in keys:
        m = get_model(key)
        per_token = m.kv_bytes_per_token(dtype_bytes)
        t = int(tp.get(key, 1))
        if t < 1 or m.kv_heads % t:
            raise ValueError(f"{key}: tp={t} must be >= 1 and divide kv_heads={m.kv_heads}")
        block = per_token // t * block_tokens
        rows.append({
            "model": key,
            "hf_id": m.hf_id,
            "layers": m.layers,
            "kv_heads": m.kv_heads,
            "head_dim": m.head_dim,
            "shape": f"({m.layers},2,{m.kv_heads},{m.head_dim})",
            "bytes_per_token": per_token,
            "kib_per_token": per_token / 1024,
            "tp": t,
            "kib_per_token_per_gpu": per_token / t / 1024,
            "block_mib_per_gpu": block / 2**20,
            "blocks_per_slab_per_gpu": slab_bytes // block,
        })
    return pd.DataFrame(rows)
