"""Reading KV capacity and engine-side histograms from vLLM's log and /metrics."""

import pytest

from servesim.engine.profile import histogram_totals
from servesim.engine.server import (EngineConfig, EngineStartError, VLLMServer, kv_blocks_from_metrics,
                                    kv_tokens_from_log, log_tail)

METRICS = '''# HELP vllm:cache_config_info Information of the LLMEngine CacheConfig
vllm:cache_config_info{block_size="32",engine="0",num_gpu_blocks="256",num_gpu_blocks_override="256"} 1.0
vllm:request_prefill_time_seconds_sum{engine="0",model_name="servesim"} 0.25
vllm:request_prefill_time_seconds_count{engine="0",model_name="servesim"} 5.0
vllm:request_prefill_time_seconds_bucket{engine="0",le="0.3",model_name="servesim"} 5.0
vllm:request_decode_time_seconds_sum{engine="0",model_name="servesim"} 1.5
vllm:request_decode_time_seconds_count{engine="0",model_name="servesim"} 5.0
'''


def test_kv_blocks_from_metrics_and_log():
    assert kv_blocks_from_metrics(METRICS) == 256
    assert kv_blocks_from_metrics("nothing here") is None
    log = "INFO [kv_cache_utils.py:2327] CPU KV cache size: 8,192 tokens, Maximum concurrency ...\n"
    assert kv_tokens_from_log(log) == 8192
    assert kv_tokens_from_log("GPU KV cache size: 1,234,560 tokens") == 1234560
    assert kv_tokens_from_log("no kv line") is None


def test_histogram_totals_sum_and_count_only():
    h = histogram_totals(METRICS)
    assert h["vllm:request_prefill_time_seconds"] == (0.25, 5.0)
    assert h["vllm:request_decode_time_seconds"] == (1.5, 5.0)
    assert h["vllm:request_queue_time_seconds"] == (0.0, 0.0)


def test_engine_cli_args_mirror_instance_config():
    args = EngineConfig(max_num_seqs=8, max_num_batched_tokens=256, block_size=32, kv_blocks=100,
                        chunked_prefill=False).cli_args()
    s = " ".join(args)
    for part in ("--max-num-seqs 8", "--max-num-batched-tokens 256", "--block-size 32",
                 "--num-gpu-blocks-override 100", "--no-enable-chunked-prefill", "--no-enable-prefix-caching"):
        assert part in s


def test_missing_model_dir_is_a_clear_error(tmp_path):
    with pytest.raises(EngineStartError, match="does not exist"):
        VLLMServer(tmp_path / "nope", log_path=tmp_path / "log").start()


def test_log_tail(tmp_path):
    p = tmp_path / "log"
    p.write_text("\n".join(f"line {i}" for i in range(100)))
    assert log_tail(p, 3) == "line 97\nline 98\nline 99"
    assert log_tail(tmp_path / "missing") == "<no log>"


def test_engine_config_round_trips_the_simulated_instance():
    from servesim.sim import InstanceConfig

    inst = InstanceConfig(num_blocks=300, block_size=32, max_num_seqs=24, max_num_batched_tokens=1024,
                          max_model_len=4096)
    eng = EngineConfig.from_instance(inst, dtype="bfloat16")
    assert (eng.kv_blocks, eng.block_size, eng.max_num_seqs, eng.max_num_batched_tokens, eng.max_model_len,
            eng.dtype) == (300, 32, 24, 1024, 4096, "bfloat16")
    back = eng.to_instance()
    assert (back.num_blocks, back.block_size, back.max_num_seqs, back.max_num_batched_tokens,
            back.max_model_len) == (300, 32, 24, 1024, 4096)
    assert eng.to_instance(kv_blocks=77).num_blocks == 77
    with pytest.raises(ValueError, match="policy='orca'"):
        EngineConfig.from_instance(InstanceConfig(num_blocks=10, policy="orca", max_num_batched_tokens=None))
    with pytest.raises(ValueError, match="no KV block count"):
        EngineConfig().to_instance()


def test_missing_vllm_is_a_clear_error(tmp_path, monkeypatch):
    import servesim.engine.server as server

    monkeypatch.setattr(server, "vllm_version", lambda: None)
    with pytest.raises(EngineStartError, match="vLLM is not installed"):
        VLLMServer(tmp_path, log_path=tmp_path / "log").start()


def test_server_does_not_inherit_thread_counts(tmp_path):
    """Snakemake exports MKL_NUM_THREADS & co. = the job's threads; vLLM must size its own pools."""
    from servesim.engine.server import THREAD_ENV_VARS

    srv = VLLMServer(tmp_path, log_path=tmp_path / "log")
    env = srv.environment({**{v: "2" for v in THREAD_ENV_VARS}, "PATH": "/bin", "VLLM_CPU_KVCACHE_SPACE": "3"})
    assert not set(THREAD_ENV_VARS) & set(env)
    assert env["PATH"] == "/bin" and env["VLLM_CPU_KVCACHE_SPACE"] == "3" and env["HF_HUB_OFFLINE"] == "1"
