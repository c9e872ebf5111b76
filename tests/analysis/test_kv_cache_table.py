import pytest

from servesim.analysis.kv_cache import kv_cache_table, metric_name


def test_aegaeon_table1_rows_by_hand():
    t = kv_cache_table(["qwen-7b", "internlm2.5-7b-chat", "llama-13b", "qwen-72b"]).set_index("model")
    # 2 (K, V) x layers x kv_heads x head_dim x 2 bytes, in KiB: 2*32*32*128*2/1024 = 512, ...
    assert t["kib_per_token"].to_dict() == {"qwen-7b": 512, "internlm2.5-7b-chat": 128, "llama-13b": 800, "qwen-72b": 2560}
    assert t.loc["internlm2.5-7b-chat", "shape"] == "(32,2,8,128)"
    assert t.loc["qwen-72b", "bytes_per_token"] == 80 * 2 * 64 * 128 * 2


def test_blocks_slabs_and_tp_shards():
    t = kv_cache_table(["qwen2.5-7b", "qwen2.5-72b"], tp={"qwen2.5-72b": 4}).set_index("model")
    # Qwen2.5-7B: 28 layers x 4 KV heads -> 56 KiB/token; a 16-token block is 0.875 MiB; 1 GiB holds 1170 of them.
    assert t.loc["qwen2.5-7b", "kib_per_token"] == 56
    assert t.loc["qwen2.5-7b", "block_mib_per_gpu"] == 0.875
    assert t.loc["qwen2.5-7b", "blocks_per_slab_per_gpu"] == 1170
    # Qwen2.5-72B: 320 KiB/token, 80 KiB per TP-4 shard.
    assert t.loc["qwen2.5-72b", "kib_per_token"] == 320
    assert t.loc["qwen2.5-72b", "kib_per_token_per_gpu"] == 80
    with pytest.raises(ValueError, match="tp=3"):
        kv_cache_table(["qwen2.5-72b"], tp={"qwen2.5-72b": 3})


def test_metric_name():
    assert metric_name("internlm2.5-7b-chat") == "kv_kib_per_token_internlm2_5_7b_chat"
