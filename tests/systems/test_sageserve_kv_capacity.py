"""SageServe's instance KV capacity through `catalog.kv_capacity` equals its former inline formula, exactly."""

import pytest

from servesim.catalog import get_model
from servesim.systems.sageserve import instance_models


@pytest.mark.parametrize("model", ["llama-4-scout", "llama-2-70b", "bloom-176b", "llama-3.1-8b", "llama-3.2-3b",
                                   "opt-66b", "qwen2.5-72b"])
def test_kv_capacity_unchanged(model):
    m = get_model(model)
    old = int((instance_models.INSTANCE_MEM_BYTES - m.param_bytes) // (2 * m.hidden * m.layers * 2))
    assert old > 0
    assert instance_models.kv_capacity_tokens(model) == old


def test_scout_is_the_docstrings_477k():
    assert round(instance_models.kv_capacity_tokens("llama-4-scout"), -3) == 477_000
