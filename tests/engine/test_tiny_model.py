"""The locally built random-weight model: deterministic, loadable, no network."""

import hashlib

import pytest

pytest.importorskip("torch", reason="torch not installed (pip install servesim[engine-cpu])")
pytest.importorskip("transformers", reason="transformers not installed (pip install servesim[engine-cpu])")


def _digest(d):
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(d.iterdir())}


def test_same_seed_same_files_and_tokenizer_loads(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    from transformers import AutoConfig, AutoTokenizer

    from servesim.engine.tiny_model import make_tiny_model

    a = make_tiny_model(tmp_path / "a", "tiny", seed=3)
    make_tiny_model(tmp_path / "b", "tiny", seed=3)
    c = make_tiny_model(tmp_path / "c", "tiny", seed=4)
    da, db, dc = _digest(tmp_path / "a"), _digest(tmp_path / "b"), _digest(tmp_path / "c")
    assert da["model.safetensors"] == db["model.safetensors"]
    assert da["model.safetensors"] != dc["model.safetensors"]
    tok = AutoTokenizer.from_pretrained(tmp_path / "a")
    ids = tok("t0 t5 t7")["input_ids"]
    assert ids == [a.first_word_id, a.first_word_id + 5, a.first_word_id + 7]
    assert tok.decode(ids) == "t0 t5 t7"
    cfg = AutoConfig.from_pretrained(tmp_path / "a")
    assert cfg.model_type == "llama" and cfg.vocab_size == a.vocab_size == len(tok)
    assert cfg.hidden_size // cfg.num_attention_heads in (32, 64, 80, 96, 112, 128)  # vLLM CPU attention
    assert c.n_params == a.n_params > 0


def test_unknown_size_is_an_error(tmp_path):
    from servesim.engine.tiny_model import make_tiny_model

    with pytest.raises(ValueError, match="unknown tiny-model size 'huge'"):
        make_tiny_model(tmp_path, "huge")
