"""Aegaeon's KV capacity (the pool's blocks, the ServerlessLLM baseline's tokens) through
`catalog.kv_capacity` equals the former inline formulas, exactly."""

import pytest

from servesim.catalog import get_hardware
from servesim.systems.aegaeon import models
from servesim.systems.aegaeon.settings import Settings
from servesim.systems.aegaeon.sllm import SllmSim

SETTINGS = [
    Settings(), Settings(weights="ae"), Settings(kv_size="ae"), Settings(vram_fraction=0.75),
    Settings(gpu="h100-80gb"), Settings(gpu="a100-80gb", weights="ae", kv_size="ae", vram_fraction=0.8),
    Settings(step_model="roofline", tp=2), Settings(sllm_kv_fraction=0.5), Settings(sllm_kv_fraction=0.9, tp=4,
                                                                                    step_model="roofline"),
]


@pytest.fixture
def costs(monkeypatch):
    """models.costs without step-time profiles (capacity does not use them)."""
    monkeypatch.setattr(models, "_step_model", lambda *a, **k: None)
    return models.costs


@pytest.mark.parametrize("key", ["qwen2.5-7b", "yi-1.5-9b", "llama-2-13b"])
@pytest.mark.parametrize("s", SETTINGS)
@pytest.mark.parametrize("block_tokens", [1, 16, 32])
def test_pool_blocks_unchanged(costs, key, s, block_tokens):
    c = costs(key, s)
    assert c.usable_bytes == get_hardware(s.gpu).mem_bytes * s.vram_fraction
    old = max(0, int((c.usable_bytes - c.weight_bytes) // (c.kv_bytes_per_token * block_tokens)))
    assert old > 0
    assert c.kv_blocks_capacity(block_tokens) == old


@pytest.mark.parametrize("key", ["qwen2.5-7b", "yi-1.5-9b", "llama-2-13b"])
@pytest.mark.parametrize("s", SETTINGS)
def test_sllm_tokens_unchanged(costs, key, s):
    c = costs(key, s)
    x = SllmSim(s)
    x._costs["m_00"] = c
    old = int((c.gpu_bytes - c.weight_bytes) * s.sllm_kv_fraction // c.kv_bytes_per_token)
    assert old > 0
    assert x.kv_tokens("m_00") == old
