"""Readers that turn the public profile data sets into step-time measurement tables.

Each returns a validated table (see `measurements`) with a ``source`` column. What each file's
numbers mean (units, what a row's batch is) is documented per reader; where a file leaves the
batch composition open, the reader states the reading it takes.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from ..catalog import get_hardware, get_model
from ..errors import InputError
from .measurements import validate


def _locate(key: str) -> Path:
    from ..data import locate

    return locate(key)


def _rows(pt, pc, ds, dc, t, **meta) -> pd.DataFrame:
    df = pd.DataFrame({"prefill_tokens": pt, "prefill_ctx": pc, "decode_seqs": ds, "decode_ctx": dc, "step_s": t})
    for k, v in meta.items():
        df[k] = v
    return df


# ----------------------------------------------------------------- SageServe / Splitwise DB
SPLITWISE_FILES = {
    # file -> (time unit, token_time is per iteration (True) or the whole decode (False))
    "perf_model.csv": ("ms", True),
    "perf_model_4_models.csv": ("ms", True),
    "perf_model_ab.csv": ("ms", True),
    "Llama-3.1-8B-tp-2.csv": ("s", False),
    "Llama-3.1-8B-tp-4.csv": ("s", False),
    "Llama-3.2-3B-tp-2.csv": ("s", False),
    "Llama-3.2-3B-tp-4.csv": ("s", False),
}


def splitwise(file: str = "perf_model.csv", model: str | None = None, hardware: str | None = None,
              tp: int | None = None) -> pd.DataFrame:
    """SageServe's Splitwise performance database (``sageserve/<file>``) as a measurement table.

    A row (prompt_size p, batch_size b, token_size k) gives one prefill step of b prompts of p
    tokens (``prompt_time``) and decode steps of b sequences; their mean context over the
    generation is p + k/2. ``perf_model*.csv`` store ms and per-iteration ``token_time``; the
    ``Llama-3.*`` files store seconds and the whole decode's time (divided here by k); their
    batched prefill rows are dropped (see the comment in the code).
    Rows are filtered to the given model (catalog key or the file's name), hardware and TP.
    """
    raw = splitwise_rows(file, model, hardware, tp)
    path, per_iter = raw.attrs["path"], raw.attrs["per_iteration"]
    p, b, k = (raw[c].to_numpy(float) for c in ("prompt_size", "batch_size", "token_size"))
    tok = raw.token_time.to_numpy(float)
    meta = dict(model=raw.model.to_numpy(), hardware=raw.hardware.to_numpy(), tp=raw.tensor_parallel.to_numpy(),
                source=f"sageserve/{file}")
    pre = _rows(p * b, p * p * b, 0.0, 0.0, raw.prompt_time.to_numpy(float), **meta)
    if not per_iter:
        # In the vLLM-measured Llama-3 files prompt_time is flat (~0.048 s) for batch 2..32 of
        # 512-token prompts while one 8192-token prompt takes 0.54 s: it is not the batch's
        # prefill step time, so only batch-1 prefill rows are kept.
        pre = pre[b == 1]
    dec = _rows(0.0, 0.0, b, b * (p + k / 2), tok, **meta)
    return validate(pd.concat([pre, dec], ignore_index=True), str(path))


def splitwise_rows(file: str = "perf_model.csv", model: str | None = None, hardware: str | None = None,
                   tp: int | None = None) -> pd.DataFrame:
    """The database's rows for one model/hardware/TP, times in seconds and ``token_time`` per
    iteration (the raw rows `splitwise` turns into steps and `splitwise_sim` reads its own way)."""
    unit, per_iter = SPLITWISE_FILES.get(file, ("ms", True))
    path = _locate(f"sageserve/{file}")
    raw = pd.read_csv(path)
    if model is not None:
        key = get_model(model).key
        raw = raw[[get_model(m).key == key if _known_model(m) else False for m in raw.model]]
    if hardware is not None:
        raw = raw[raw.hardware.str.lower() == hardware.lower()] if hardware.lower() in set(raw.hardware.str.lower()) \
            else raw[[_hw_key(h) == get_hardware(hardware).key for h in raw.hardware]]
    if tp is not None and not raw.empty:
        raw = raw[raw.tensor_parallel == tp]
    if raw.empty:
        raise ValueError(f"{path}: no rows for model={model} hardware={hardware} tp={tp}")
    raw = raw.reset_index(drop=True)
    s = 1e-3 if unit == "ms" else 1.0
    raw["prompt_time"] = raw.prompt_time.to_numpy(float) * s
    raw["token_time"] = raw.token_time.to_numpy(float) * s / (1.0 if per_iter else raw.token_size.to_numpy(float))
    raw.attrs.update(path=path, per_iteration=per_iter)
    return raw


def _known_model(name: str) -> bool:
    try:
        get_model(name)
        return True
    except ValueError:
        return False


def _hw_key(name: str) -> str | None:
    try:
        return get_hardware(name).key
    except ValueError:
        return None


def sageserve_prefill_test() -> pd.DataFrame:
    """``sageserve/llama-3.1-8B-tp-4-test.csv``: measured prefill time of one prompt of
    ``PromptLength`` tokens (Llama-3.1-8B, TP 4, vLLM on A100): the left panel of SageServe Fig 9."""
    path = _locate("sageserve/llama-3.1-8B-tp-4-test.csv")
    raw = pd.read_csv(path)
    L = raw.PromptLength.to_numpy(float)
    df = _rows(L, L * L, 0.0, 0.0, raw.ExecTime.to_numpy(float), model="llama-3.1-8b", hardware="a100-80gb", tp=4,
               source="sageserve/llama-3.1-8B-tp-4-test.csv")
    return validate(df, str(path))


def sageserve_decode(drop_warmup: int = 16) -> pd.DataFrame:
    """``sageserve/decode_data.csv``: 100,000 consecutive decode iteration times (``times``, s) by
    iteration index (``iters``): the right panel of SageServe Fig 9.

    The file records no batch composition. Reading taken: one sequence decoding, so iteration i
    has context c0 + i (c0 unknown, absorbed by the intercept): decode_ctx = i + 1. The first
    ``drop_warmup`` iterations are engine warm-up (0.1 s, then 17-300 us: no GPU work) and are
    dropped by default.
    """
    path = _locate("sageserve/decode_data.csv")
    raw = pd.read_csv(path)
    raw = raw[raw.iters >= drop_warmup]
    i = raw.iters.to_numpy(float)
    df = _rows(0.0, 0.0, 1.0, i + 1.0, raw.times.to_numpy(float), model="llama-3.1-8b", source="sageserve/decode_data.csv")
    return validate(df, str(path))


# ----------------------------------------------------------------- Aegaeon iteration profiles
def aegaeon_models() -> list[str]:
    return sorted(p.name for p in _locate("aegaeon/profiles").iterdir() if p.is_dir())


AEGAEON_MAX_LEN = 4096


def aegaeon(model_dir: str, gpu: str, trim: bool = True, max_len: int | None = AEGAEON_MAX_LEN,
            filter_invalid: bool = True, long_decode: str = "drop") -> pd.DataFrame:
    """Aegaeon's ``profiles/<model>/<GPU>/i<L>b<B>.json`` as a measurement table.

    Each file holds 12 timings of a prefill step of B prompts of L tokens and of a decode step of
    B sequences (context L: the profiler decodes right after that prefill). Like the artifact, we
    drop the min and max timing and average the rest (``trim=False``: plain mean).

    Validity (``filter_invalid``), following the artifact's own fit rule (L*B <= max_len and
    (L+10)*B < 10240): prefill rows need L*B <= max_len and decode rows L < max_len, with max_len
    = min(model context, ``max_len``). The data show why: with a 4096-token engine limit the
    prefill time stops growing above 4096 tokens (the step was capped) and decode at L = 4096
    takes under 1 ms (no token was generated) -- both not step times of the stated batch.

    Decode rows whose batch held more than max_len prompt tokens (L*B > max_len) are not decode
    steps either: the engine caps a step at max_len tokens, so the prompt of such a batch spills
    into the step the profiler times as the first "decode" (its time jumps exactly there).
    ``long_decode="drop"`` (default) removes them; ``"flag"`` keeps them with
    ``capped_prefill = True`` (every row gets that column) for a reader who wants to see them.
    """
    if long_decode not in ("drop", "flag"):
        raise ValueError(f"aegaeon profiles: long_decode={long_decode!r}; expected drop|flag")
    d = _locate(f"aegaeon/profiles/{model_dir}/{gpu}")
    spec = get_model(model_dir)
    limit = min(spec.max_context or max_len or 10**9, max_len or 10**9)
    rows = []
    for f in sorted(d.glob("i*b*.json")):
        L, B = (float(x) for x in f.stem[1:].split("b"))
        if filter_invalid and (L + 10) * B >= 10240:
            continue
        rec = json.loads(f.read_text())
        for kind in ("prefill", "decode"):
            xs = np.sort(np.asarray(rec[f"{kind}_latencies"], float))
            if len(xs) == 0:
                raise ValueError(f"{f}: no {kind}_latencies")
            t = xs[1:-1].mean() if trim and len(xs) > 2 else xs.mean()
            if filter_invalid and ((kind == "prefill" and L * B > limit) or (kind == "decode" and L >= limit)):
                continue
            capped = kind == "decode" and L * B > limit
            if capped and filter_invalid and long_decode == "drop":
                continue
            rows.append((L * B, L * L * B, 0.0, 0.0, t, False) if kind == "prefill" else (0.0, 0.0, B, B * L, t, capped))
    if not rows:
        raise ValueError(f"{d}: no i<L>b<B>.json profiles")
    df = pd.DataFrame(rows, columns=["prefill_tokens", "prefill_ctx", "decode_seqs", "decode_ctx", "step_s",
                                     "capped_prefill"])
    df["model"] = get_model(model_dir).key
    df["hardware"] = get_hardware(gpu).key
    df["tp"] = 1
    df["source"] = f"aegaeon/profiles/{model_dir}/{gpu}"
    return validate(df, str(d))


def aegaeon_sets() -> list[tuple[str, str]]:
    """Every (model folder, GPU folder) with profiles."""
    root = _locate("aegaeon/profiles")
    return sorted((m.name, g.name) for m in root.iterdir() if m.is_dir() for g in m.iterdir() if g.is_dir())


# ----------------------------------------------------------------- servesim's own GPU profiles
GPU_BENCH_TIMINGS = ("step", "eager")


def gpu_bench_root() -> Path:
    """Committed `gpu_bench` tables: ``perf/data/gpu_bench/<hardware key>/<model>-tp<k>.csv``."""
    return Path(__file__).parent / "data" / "gpu_bench"


def gpu_bench_sets() -> list[tuple[str, str, int]]:
    """Every committed (hardware key, model key, tp) profile."""
    out = []
    for hw in sorted(p for p in gpu_bench_root().iterdir() if p.is_dir()):
        for f in sorted(hw.glob("*-tp*.csv")):
            model, tp = f.stem.rsplit("-tp", 1)
            out.append((hw.name, model, int(tp)))
    return out


def gpu_bench(model: str, hardware: str = "h100-80gb", tp: int = 1, timing: str = "step", mixed: bool = True) -> pd.DataFrame:
    """A step-time table measured here by `gpu_bench` (whole PyTorch decoder forwards on one GPU,
    1/tp shard, no all-reduce; see the folder's ``provenance.json``).

    ``timing="step"``: what an engine runs -- CUDA-graph replays where the table's ``graph`` column
    says so (decode steps in the committed tables; a plan's ``graphs`` option chooses) and eager
    forwards elsewhere; ``"eager"``: the eager forward for every step (CPU launch gaps included). ``mixed=False`` drops the prefill+decode steps (a 2-D table backend reads pure steps).
    """
    if timing not in GPU_BENCH_TIMINGS:
        raise InputError(f"gpu_bench: timing={timing!r}; expected one of {GPU_BENCH_TIMINGS}")
    hw, key = get_hardware(hardware).key, get_model(model).key
    path = gpu_bench_root() / hw / f"{key}-tp{int(tp)}.csv"
    if not path.exists():
        have = ", ".join(f"{m}:tp{t}@{h}" for h, m, t in gpu_bench_sets()) or "none"
        raise InputError(f"{path}: no gpu_bench profile for {key} tp={tp} on {hw} (committed: {have})")
    raw = pd.read_csv(path)
    if timing == "eager":
        raw["step_s"] = raw["eager_s"]
    df = validate(raw, str(path))
    if not mixed:
        df = df[df.regime != "mixed"].reset_index(drop=True)
    df["hardware"] = hw
    return df
