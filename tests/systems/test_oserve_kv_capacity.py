"""OServe's replica KV capacity through `catalog.kv_capacity` equals its former inline formula, exactly."""

import pytest

from servesim.catalog import get_hardware, get_model
from servesim.systems.oserve import replica
from servesim.systems.oserve.replica import Shape


def old_kv_tokens(model, shape, hardware):
    """replica.kv_tokens before the shared function (the replica's pooled memory)."""
    m, h = get_model(model), get_hardware(hardware)
    free = shape.gpus * h.mem_bytes * replica.GPU_MEM_UTIL - m.param_bytes * (1 + replica.ACT_RESERVE_FRAC)
    return max(0, int(free // m.kv_bytes_per_token(m.dtype_bytes)))


SHAPES = [Shape(1), Shape(2), Shape(4), Shape(8), Shape(2, 2), Shape(4, 2), Shape(1, 4), Shape(8, 2, True)]


@pytest.mark.parametrize("model", ["opt-30b", "opt-66b", "llama-2-70b", "codellama-34b", "llama-2-13b"])
@pytest.mark.parametrize("hardware", ["h100-80gb", "a100-80gb", "a40"])
@pytest.mark.parametrize("shape", SHAPES, ids=Shape.label)
def test_kv_tokens_unchanged(model, hardware, shape):
    assert replica.kv_tokens(model, shape, hardware) == old_kv_tokens(model, shape, hardware)


def test_cases_cover_both_sides_of_fitting():
    values = [old_kv_tokens("opt-66b", s, "h100-80gb") for s in SHAPES]
    assert 0 in values and max(values) > replica.MIN_KV_TOKENS


@pytest.mark.parametrize("model", ["opt-30b", "llama-2-70b"])
def test_instance_blocks_unchanged(model):
    for shape in replica.strategies(model, 8):
        assert replica.instance_config(model, shape).num_blocks == old_kv_tokens(model, shape, replica.GPU) // replica.BLOCK
