"""PreServe's KV capacity through `catalog.kv_capacity` equals its former inline formula, exactly."""

import pytest

from servesim.catalog import get_hardware, get_model
from servesim.systems.preserve import autoscaling, serving

GIB = 1024 ** 3


def old_kv_tokens(model, gpu, tp=1, mem_bytes=None, utilisation=0.9, reserve_bytes=0.0):
    """serving.kv_tokens before the shared function (vLLM's rule per GPU, times tp)."""
    m, hw = get_model(model), get_hardware(gpu)
    mem = hw.mem_bytes if mem_bytes is None else mem_bytes
    free = mem * utilisation - m.params * m.dtype_bytes / tp - reserve_bytes
    return int(free * tp // m.kv_bytes_per_token())


@pytest.mark.parametrize("model", ["llama-2-7b", "llama-2-13b", "llama-3-8b"])
@pytest.mark.parametrize("gpu", ["a40", "a100-80gb", "h100-80gb"])
@pytest.mark.parametrize("tp", [1, 2])
@pytest.mark.parametrize("mem", [None, 40 * GIB])
@pytest.mark.parametrize("reserve", [0.0, 1.5e9, 1.5 * 2**30])
def test_kv_tokens_unchanged(model, gpu, tp, mem, reserve):
    old = old_kv_tokens(model, gpu, tp=tp, mem_bytes=mem, reserve_bytes=reserve)
    assert old > 0
    assert serving.kv_tokens(model, gpu, tp=tp, mem_bytes=mem, reserve_bytes=reserve) == old


@pytest.mark.parametrize("key", ["7b", "13b"])
@pytest.mark.parametrize("gpu_mem_gb", [None, 40])
def test_instance_capacity_unchanged(key, gpu_mem_gb):
    s = serving.ServingSettings(gpu_mem_gb=gpu_mem_gb)
    mem = s.gpu_mem_gb * GIB if s.gpu_mem_gb is not None else get_hardware(s.gpu).mem_bytes
    old = old_kv_tokens(serving.MODELS[key], s.gpu, tp=serving.TP[key], mem_bytes=mem,
                        utilisation=s.gpu_memory_utilization, reserve_bytes=s.activation_reserve_gb * 1e9)
    assert serving.kv_capacity_tokens(key, s) == old // s.block_size * s.block_size
    assert serving.instance_config(key, s).num_blocks == old // s.block_size


def test_fig8_replica_unchanged():
    assert autoscaling.kv_capacity_tokens("llama-2-7b", "a40") == old_kv_tokens("llama-2-7b", "a40", reserve_bytes=1.5 * 2**30)


def test_weights_past_memory_still_refused():
    """The old formula went negative and kv_capacity_tokens raised; the shared one gives 0, which still raises."""
    assert old_kv_tokens("llama-2-70b", "a40") < 0 and serving.kv_tokens("llama-2-70b", "a40") == 0
    s = serving.ServingSettings(gpu_mem_gb=10)
    with pytest.raises(ValueError, match="no memory left"):
        serving.kv_capacity_tokens("13b", s)
