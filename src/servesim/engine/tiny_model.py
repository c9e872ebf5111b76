"""A small random-weight Llama-architecture model built locally, for replays without downloads.

The weights are random (seeded), so the text is gibberish, but the compute per token is real:
vLLM loads it like any Hugging Face checkpoint and runs real continuous batching on it. The
tokenizer is a word-level vocabulary ``t0 .. t{V-1}`` plus special tokens, so any token id in
range is a valid prompt token.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path

#: size name -> Llama config knobs. head_dim (hidden/heads) must be one vLLM's CPU attention
#: supports (32, 64, 80, 96, 112, 128, ...).
SIZES: dict[str, dict[str, int]] = {
    # ~0.15M params: starts fast, step times dominated by engine overhead
    "tiny": dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=2,
                 num_key_value_heads=1, intermediate_size=176, vocab_size=512),
    # ~5M params: compute grows visibly with batch shape on a CPU
    "small": dict(hidden_size=256, num_hidden_layers=6, num_attention_heads=4,
                  num_key_value_heads=2, intermediate_size=704, vocab_size=2048),
    # ~40M params
    "base": dict(hidden_size=512, num_hidden_layers=8, num_attention_heads=8,
                 num_key_value_heads=4, intermediate_size=1408, vocab_size=4096),
}

SPECIAL_TOKENS = ("<unk>", "<s>", "</s>")


@dataclass(frozen=True)
class TinyModelInfo:
    """What was built (also written as ``servesim_tiny_model.json`` next to the weights)."""

    path: str
    size: str
    seed: int
    vocab_size: int
    max_model_len: int
    n_params: int
    #: first token id that is an ordinary word (the specials come first)
    first_word_id: int = len(SPECIAL_TOKENS)


def _build_tokenizer(vocab_size: int, max_len: int):
    from tokenizers import Tokenizer, models, pre_tokenizers, decoders
    from transformers import PreTrainedTokenizerFast

    n_words = vocab_size - len(SPECIAL_TOKENS)
    vocab = {tok: i for i, tok in enumerate(SPECIAL_TOKENS)}
    vocab.update({f"t{i}": len(SPECIAL_TOKENS) + i for i in range(n_words)})
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    # words are joined with spaces when decoding (vLLM detokenizes incrementally)
    tok.decoder = decoders.WordPiece(prefix="##", cleanup=False)
    return PreTrainedTokenizerFast(
        tokenizer_object=tok, unk_token="<unk>", bos_token="<s>", eos_token="</s>",
        model_max_length=max_len, clean_up_tokenization_spaces=False)


def make_tiny_model(out_dir: str | Path, size: str = "tiny", seed: int = 0,
                    max_model_len: int = 4096) -> TinyModelInfo:
    """Write a random-weight Llama model + tokenizer to ``out_dir`` (deterministic in ``seed``).

    No network access: the config, weights and tokenizer are all built in-process.
    """
    if size not in SIZES:
        raise ValueError(f"unknown tiny-model size {size!r}; choose one of {sorted(SIZES)}")
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    knobs = SIZES[size]
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    config = LlamaConfig(
        **knobs, max_position_embeddings=max_model_len, rms_norm_eps=1e-5,
        bos_token_id=1, eos_token_id=2, pad_token_id=0, tie_word_embeddings=False,
        dtype="float32", initializer_range=0.02)
    gen_state = torch.random.get_rng_state()
    torch.manual_seed(seed)
    try:
        model = LlamaForCausalLM(config)
    finally:
        torch.random.set_rng_state(gen_state)
    model.save_pretrained(out, safe_serialization=True)
    _build_tokenizer(knobs["vocab_size"], max_model_len).save_pretrained(out)
    info = TinyModelInfo(path=str(out), size=size, seed=seed, vocab_size=knobs["vocab_size"],
                         max_model_len=max_model_len,
                         n_params=int(sum(p.numel() for p in model.parameters())))
    (out / "servesim_tiny_model.json").write_text(json.dumps(asdict(info), indent=1) + "\n")
    return info
