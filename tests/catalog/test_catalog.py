import pytest
import yaml

from servesim.catalog import (
    CatalogError, get_hardware, get_model, hardware_keys, load_hardware, load_models, model_keys,
)
from servesim.catalog.loader import HARDWARE_FILE, MODELS_FILE


REQUIRED_MODELS = [
    "llama-2-7b", "llama-2-13b", "llama-2-70b", "llama-3.1-8b", "llama-3.2-3b", "llama-3-70b",
    "bloom-176b", "opt-66b", "opt-30b", "qwen2.5-7b", "yi-1.5-9b", "yi-1.5-6b", "qwen2.5-72b",
    "llama-4-scout", "qwen-7b", "internlm2.5-7b-chat", "llama-13b", "qwen-72b",
]
AEGAEON_DIRS = [
    "baichuan2_13b_chat", "baichuan_7b", "internlm2_5_7b_chat", "llama2_13b_chat", "llama2_7b",
    "llava1_5_13b", "qwen1_5_14b_chat", "qwen1_5_moe_a2_7b_chat", "qwen2_5_7b", "qwen_14b_chat",
    "qwen_7b", "qwen_7b_chat", "yi1_5_6b_chat", "yi1_5_9b_chat",
]


def test_required_entries_present():
    keys = set(model_keys())
    assert set(REQUIRED_MODELS) <= keys
    for d in AEGAEON_DIRS:  # every Aegaeon profile folder resolves through an alias
        assert get_model(d).key in keys
    assert {"a100-80gb", "h100-80gb", "h800", "h200", "a40", "a10", "h20", "cpu"} <= set(hardware_keys())


@pytest.mark.parametrize("key", sorted(load_models()))
def test_param_count_matches_architecture(key):
    m = get_model(key)
    assert abs(m.arch_params() / m.params - 1) < 0.03, (key, m.arch_params(), m.params)


def test_aegaeon_table1_kv_sizes():
    # Aegaeon Table 1: KV cache per token, fp16
    kib = {k: get_model(k).kv_bytes_per_token() / 1024 for k in ["qwen-7b", "internlm2.5-7b-chat", "llama-13b", "qwen-72b"]}
    assert kib == {"qwen-7b": 512, "internlm2.5-7b-chat": 128, "llama-13b": 800, "qwen-72b": 2560}


def test_moe_active_params():
    scout = get_model("llama-4-scout")
    assert scout.is_moe and 15e9 < scout.active_params < 19e9  # "17B active"
    assert get_model("llama-2-7b").active_params == get_model("llama-2-7b").params


def test_hardware_and_price():
    h = get_hardware("H100")
    assert h.key == "h100-80gb" and h.price_per_hour * h.cluster_gpus == pytest.approx(98.32)
    assert get_hardware("a100-80gb").price_per_hour is None
    assert get_hardware("a100-80gb").mem_bytes * 8 / 1e9 == pytest.approx(687.19, abs=0.01)  # SageServe's instance memory


def test_unknown_key_names_it():
    with pytest.raises(CatalogError, match="gpt-5"):
        get_model("gpt-5")
    with pytest.raises(CatalogError, match="tpu"):
        get_hardware("tpu")


def _write(tmp_path, name, data):
    p = tmp_path / name
    p.write_text(yaml.safe_dump(data))
    return p


def test_missing_field_names_key_and_file(tmp_path):
    entry = yaml.safe_load(MODELS_FILE.read_text())["llama-2-7b"]
    del entry["kv_heads"]
    p = _write(tmp_path, "bad_models.yaml", {"llama-2-7b": entry})
    with pytest.raises(CatalogError) as e:
        load_models(p)
    assert "bad_models.yaml" in str(e.value) and "kv_heads" in str(e.value) and "llama-2-7b" in str(e.value)


def test_bad_value_and_unknown_field(tmp_path):
    hw = yaml.safe_load(HARDWARE_FILE.read_text())["a10"]
    p = _write(tmp_path, "hw1.yaml", {"a10": {**hw, "flops": "fast"}})
    with pytest.raises(CatalogError, match=r"hw1.yaml: a10.flops"):
        load_hardware(p)
    p = _write(tmp_path, "hw2.yaml", {"a10": {**hw, "tflops": 1}})
    with pytest.raises(CatalogError, match=r"hw2.yaml.*unknown field.*tflops"):
        load_hardware(p)
    m = yaml.safe_load(MODELS_FILE.read_text())["llama-2-7b"]
    p = _write(tmp_path, "m.yaml", {"llama-2-7b": {**m, "kv_heads": 5}})
    with pytest.raises(CatalogError, match="multiple of kv_heads"):
        load_models(p)
    with pytest.raises(CatalogError, match="not found"):
        load_models(tmp_path / "nope.yaml")
