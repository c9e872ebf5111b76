"""MuxServe as the artifact models it: a capacity rule, not a simulation (spec aegaeon §2).

Its placement optimiser puts at most ``models_per_gpu`` (2) models on a GPU, so 16 GPUs serve at
most 32 models; at or below that the load is light and the artifact's plot hard-codes 100 %
attainment; above it MuxServe has no placement (no point is drawn: NaN here).
"""

from __future__ import annotations


def max_models(n_gpus: int = 16, models_per_gpu: int = 2) -> int:
    return n_gpus * models_per_gpu


def attainment(n_models: int, n_gpus: int = 16, models_per_gpu: int = 2) -> float:
    """1.0 when MuxServe can place every model, NaN when it cannot place them."""
    if n_models < 1:
        raise ValueError(f"muxserve: n_models must be >= 1, got {n_models}")
    return 1.0 if n_models <= max_models(n_gpus, models_per_gpu) else float("nan")
