"""servesim.catalog: models and accelerators as validated data files (``data/*.yaml``).

>>> from servesim.catalog import get_model, get_hardware
>>> get_model("qwen-7b").kv_bytes_per_token() // 1024      # KiB per token, Aegaeon Table 1
512
>>> get_hardware("h100-80gb").price_per_hour                # SageServe: $98.32/h per 8 GPUs
12.29
"""

from .kv_capacity import FRACTION_OF, kv_capacity
from .loader import (
    CatalogError,
    get_hardware,
    get_model,
    hardware_key,
    hardware_keys,
    load_hardware,
    load_models,
    model_key,
    model_keys,
)
from .specs import HardwareSpec, ModelSpec

__all__ = [
    "CatalogError", "ModelSpec", "HardwareSpec", "get_model", "get_hardware", "model_keys",
    "hardware_keys", "model_key", "hardware_key", "load_models", "load_hardware", "kv_capacity", "FRACTION_OF",
]
