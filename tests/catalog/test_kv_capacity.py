"""`catalog.kv_capacity`: the one KV-capacity rule, each reading on hand-checked numbers."""

import math

import pytest

from servesim.catalog import FRACTION_OF, kv_capacity

GB = 1e9


def test_total_reading_is_vllms_gpu_memory_utilization():
    # 80 GB x 0.9 = 72 GB; - 14 GB weights - 2 GB reserve = 56 GB; / 1 MB per token
    assert kv_capacity(80 * GB, 14 * GB, 1e6, fraction=0.9, reserve_bytes=2 * GB) == 56_000
    assert kv_capacity(80 * GB, 14 * GB, 1e6, fraction=0.9, fraction_of="total", reserve_bytes=2 * GB) == 56_000
    # the weights' overhead: 14 GB x 1.5 = 21 GB -> 72 - 21 - 2 = 49 GB
    assert kv_capacity(80 * GB, 14 * GB, 1e6, fraction=0.9, weight_overhead=0.5, reserve_bytes=2 * GB) == 49_000
    # fraction 1.0: all memory (SageServe's authors' simulator): 80 - 14 = 66 GB
    assert kv_capacity(80 * GB, 14 * GB, 1e6, fraction=1.0) == 66_000
    # floored: 56 GB / 3 MB = 18666.67 tokens
    assert kv_capacity(80 * GB, 14 * GB, 3e6, fraction=0.9, reserve_bytes=2 * GB) == 18_666


def test_free_reading_is_serverlessllms():
    # (80 GB - 16 GB) x 0.5 = 32 GB; / 1 MB per token
    assert kv_capacity(80 * GB, 16 * GB, 1e6, fraction=0.5, fraction_of="free") == 32_000
    # the same numbers under the total reading: 40 GB - 16 GB = 24 GB
    assert kv_capacity(80 * GB, 16 * GB, 1e6, fraction=0.5, fraction_of="total") == 24_000
    # the reserve and the weights' overhead come off before the fraction: (80 - 16 x 1.25 - 4) x 0.5 = 28 GB
    assert kv_capacity(80 * GB, 16 * GB, 1e6, fraction=0.5, fraction_of="free", weight_overhead=0.25,
                       reserve_bytes=4 * GB) == 28_000


def test_gpus_multiply_the_per_gpu_pool():
    # per GPU (memory, its weight shard, its reserve): 50 x 0.8 - 7 - 1 = 32 GB; two GPUs hold 64 GB
    assert kv_capacity(50 * GB, 7 * GB, 1e6, fraction=0.8, reserve_bytes=1 * GB, gpus=2) == 64_000
    assert kv_capacity(50 * GB, 7 * GB, 1e6, fraction=0.8, reserve_bytes=1 * GB, gpus=1) == 32_000


def test_block_tokens_count_whole_blocks_of_the_bytes():
    # 56 GB / (1 MB x 16) = 3500 blocks; 56 GB / (3 MB x 16) = 1166.67 -> 1166
    assert kv_capacity(80 * GB, 14 * GB, 1e6, fraction=0.9, reserve_bytes=2 * GB, block_tokens=16) == 3_500
    assert kv_capacity(80 * GB, 14 * GB, 3e6, fraction=0.9, reserve_bytes=2 * GB, block_tokens=16) == 1_166
    assert kv_capacity(80 * GB, 14 * GB, 1e6, fraction=0.9, reserve_bytes=2 * GB, block_tokens=1) == 56_000


@pytest.mark.parametrize("fraction_of", FRACTION_OF)
def test_no_room_is_zero(fraction_of):
    """Weights larger than the memory (or than the fraction of it) give 0, never a negative count:
    OServe drops such a shape, PreServe raises 'no memory left for the KV cache'."""
    assert kv_capacity(80 * GB, 100 * GB, 1e6, fraction=0.9, fraction_of=fraction_of) == 0
    assert kv_capacity(80 * GB, 79 * GB, 1e6, fraction=0.9, fraction_of=fraction_of, reserve_bytes=5 * GB) == 0
    assert kv_capacity(80 * GB, 40 * GB, 1e6, fraction=0.9, fraction_of=fraction_of, weight_overhead=1.0) == 0
    assert kv_capacity(80 * GB, 40 * GB, 1e6, fraction=0.9, fraction_of=fraction_of, block_tokens=10**9) == 0
    # total: 80 x 0.5 = 40 GB < 50 GB of weights, though the GPU holds them
    assert kv_capacity(80 * GB, 50 * GB, 1e6, fraction=0.5) == 0


@pytest.mark.parametrize("kw, what", [
    (dict(fraction=0.0), "fraction"), (dict(fraction=1.5), "fraction"), (dict(fraction=-0.1), "fraction"),
    (dict(fraction=math.nan), "fraction"), (dict(gpu_bytes=0.0), "gpu_bytes"), (dict(gpu_bytes=-1.0), "gpu_bytes"),
    (dict(gpu_bytes=math.inf), "gpu_bytes"), (dict(weight_bytes=-1.0), "weight_bytes"),
    (dict(kv_bytes_per_token=0.0), "kv_bytes_per_token"), (dict(kv_bytes_per_token=-5.0), "kv_bytes_per_token"),
    (dict(reserve_bytes=-1.0), "reserve_bytes"), (dict(weight_overhead=-0.1), "weight_overhead"),
    (dict(gpus=0), "gpus"), (dict(gpus=1.5), "gpus"), (dict(block_tokens=0), "block_tokens"),
    (dict(block_tokens=2.5), "block_tokens"), (dict(fraction_of="used"), "fraction_of"),
])
def test_bad_input_raises_naming_the_argument(kw, what):
    args = dict(gpu_bytes=80 * GB, weight_bytes=14 * GB, kv_bytes_per_token=1e6, fraction=0.9) | kw
    with pytest.raises(ValueError, match=what):
        kv_capacity(args.pop("gpu_bytes"), args.pop("weight_bytes"), args.pop("kv_bytes_per_token"), **args)
