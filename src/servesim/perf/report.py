"""Every backend against every measurement set it can be checked on (the calibration notebook's
engine). Errors are on held-out rows for anything fitted; priors are scored on every row."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd

from . import measurements as M
from . import sources
from .fitted import fit
from .roofline import RooflineStepTime, fit_roofline
from .table import TableStepTime

SPLITWISE_SETS = [  # (file, model, hardware, tp)
    ("perf_model.csv", "llama-2-70b", "a100-80gb", 2), ("perf_model.csv", "llama-2-70b", "a100-80gb", 4),
    ("perf_model.csv", "llama-2-70b", "a100-80gb", 8), ("perf_model.csv", "llama-2-70b", "h100-80gb", 2),
    ("perf_model.csv", "llama-2-70b", "h100-80gb", 4), ("perf_model.csv", "llama-2-70b", "h100-80gb", 8),
    ("perf_model.csv", "bloom-176b", "a100-80gb", 8), ("perf_model.csv", "bloom-176b", "h100-80gb", 8),
    ("Llama-3.1-8B-tp-2.csv", "llama-3.1-8b", "a100-80gb", 2), ("Llama-3.1-8B-tp-4.csv", "llama-3.1-8b", "a100-80gb", 4),
    ("Llama-3.2-3B-tp-2.csv", "llama-3.2-3b", "a100-80gb", 2), ("Llama-3.2-3B-tp-4.csv", "llama-3.2-3b", "a100-80gb", 4),
]
VIDUR_PROFILE = {"llama-3.1-8b": "llama-3-8b"}  # same architecture, profiled under the other name


def datasets(include_aegaeon: bool = True, include_splitwise: bool = True, aegaeon_sets=None) -> dict[str, pd.DataFrame]:
    """name -> measurement table with model/hardware/tp columns."""
    out = {}
    if include_splitwise:
        for f, m, h, tp in SPLITWISE_SETS:
            out[f"splitwise:{m}:{h}:tp{tp}"] = sources.splitwise(f, m, h, tp)
        out["sageserve-fig09-prefill:llama-3.1-8b:a100-80gb:tp4"] = sources.sageserve_prefill_test()
    if include_aegaeon:
        for md, gpu in (aegaeon_sets or sources.aegaeon_sets()):
            df = sources.aegaeon(md, gpu)
            out[f"aegaeon:{df.model[0]}:{df.hardware[0]}:tp1"] = df
    return out


def _rows(backend, name, df, model, kind, note=""):
    err = M.evaluate(model, df)
    rows = []
    for r in err.itertuples():
        rows.append({"dataset": name, "backend": backend, "scored_on": kind, "regime": r.regime, "n": r.n,
                     "mape_pct": r.mape_pct, "r2": r.r2, "out_of_grid_frac": np.nan, "note": note})
    if hasattr(model, "out_of_grid") and getattr(model, "calls", 0):
        for row in rows:
            row["out_of_grid_frac"] = model.out_of_grid / model.calls
    return rows


def grid_line_split(df: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Hold out whole interior grid lines (every other L value of the prefill grid and every other
    context value of the decode grid), so held-out rows lie between training lines: this scores a
    table's interpolation (a random split would leave holes exactly where the test points are)."""
    test = np.zeros(len(df), bool)
    for kind, (num, den) in (("pre", ("prefill_ctx", "prefill_tokens")), ("dec", ("decode_ctx", "decode_seqs"))):
        m = (df[den] > 0) & ((df.decode_seqs == 0) if kind == "pre" else (df.prefill_tokens == 0))
        u = (df[num] / df[den].where(df[den] > 0)).round(6)
        vals = np.sort(u[m].unique())
        held = set(vals[1:-1][::2].tolist())
        test |= (m & u.isin(held)).to_numpy()
    return df[~test].reset_index(drop=True), df[test].reset_index(drop=True)


def evaluate_all(sets: dict[str, pd.DataFrame], test_frac: float = 0.2, seed: int = 0) -> pd.DataFrame:
    """MAPE/R² per (dataset, backend, regime). Backends: fitted (held-out), roofline prior (all rows),
    roofline calibrated (held-out), the set's own table (held-out rows interpolated from the
    training rows; out-of-grid ones fall back and are counted), Vidur composition (all rows)."""
    from .vidur import VidurStepTime

    rows = []
    for name, df in sets.items():
        model, hw, tp = df.model.iloc[0], df.hardware.iloc[0], int(df.tp.iloc[0])
        train, test = M.split(df, test_frac, seed)
        rows += _rows("fitted", name, test, fit(train), "held-out")
        prior = RooflineStepTime(model, hw, tp=tp)
        rows += _rows("roofline-prior", name, df, prior, "all")
        rows += _rows("roofline-calibrated", name, test, fit_roofline(prior, train), "held-out")
        if name.startswith("splitwise"):  # 1-D axes; held-out rows are repeats of training shapes
            t = TableStepTime(train, prefill_axes="tokens", decode_axes="seqs", name="table")
            rows += _rows("table", name, test, t, "held-out", note="axes tokens/seqs; random split")
        elif name.startswith("aegaeon"):  # 2-D grid; held-out rows lie between training grid lines
            gtr, gte = grid_line_split(df)
            t = TableStepTime(gtr, name="table")
            rows += _rows("table", name, gte, t, "held-out grid lines", note="axes 2d; every other interior L held out")
        try:
            v = VidurStepTime(model, hw, tp=tp, profile_model=VIDUR_PROFILE.get(model))
        except ValueError:
            v = None
        if v is not None:
            rows += _rows("vidur", name, df, v, "all", note="uncalibrated overheads/attention (roofline prior)")
    return pd.DataFrame(rows)


TRANSFER_READINGS = {
    "zero-shot": "calibrated on the source set alone (efficiencies and host costs), moved to the target "
                 "GPU by the datasheet; nothing from the target GPU",
    "zero-shot-pooled-source": "efficiencies fitted on the source set with one per-step and per-sequence "
                               "cost shared by every model measured on the source machine; moved by the "
                               "datasheet; nothing from the target GPU",
    "host-from-other-models": "efficiencies as zero-shot-pooled-source; per-step and per-sequence costs "
                              "fitted on the target machine's OTHER models (the scored model left out): "
                              "uses the target host's measurements, so NOT zero-shot",
}


def _check_reading(reading: str) -> None:
    if reading not in TRANSFER_READINGS:
        raise ValueError(f"unknown transfer reading {reading!r}; choose one of {', '.join(TRANSFER_READINGS)}")


def _machine_sets(sets: dict[str, pd.DataFrame], name: str) -> list[str]:
    """The sets measured on the same machine as ``name``: same source (the name's prefix: one
    host and engine build), hardware and TP."""
    df = sets[name]
    fam, hw, tp = name.split(":", 1)[0], df.hardware.iloc[0], int(df.tp.iloc[0])
    return [n for n, d in sets.items()
            if n.split(":", 1)[0] == fam and d.hardware.iloc[0] == hw and int(d.tp.iloc[0]) == tp]


def _pooled_fit(sets, names, cache):
    """`fit_roofline_shared` over ``names`` (host costs shared, efficiencies per set), cached."""
    from .roofline import GPU_PARAMS, fit_roofline_shared

    key = tuple(sorted(names))
    if key not in cache:
        dfs = [sets[n] for n in key]
        priors = [RooflineStepTime(d.model.iloc[0], d.hardware.iloc[0], tp=int(d.tp.iloc[0])) for d in dfs]
        per = GPU_PARAMS + (("eff_net", "ar_latency_s") if int(dfs[0].tp.iloc[0]) > 1 else ())
        cache[key] = dict(zip(key, fit_roofline_shared(priors, dfs, per_set=per)))
    return cache[key]


def transfer_model(sets: dict[str, pd.DataFrame], a: str, b: str, reading: str = "zero-shot",
                   cache: dict | None = None) -> tuple[RooflineStepTime, str]:
    """A roofline for set ``b``'s model, GPU and TP built from set ``a`` under one of the
    `TRANSFER_READINGS`; returns (model, note saying what it was fitted on).

    - ``zero-shot`` (default; the issue's definition): `fit_roofline` on ``a`` alone, every
      parameter moved unchanged; the datasheet ratios carry it to ``b``'s GPU.
    - ``zero-shot-pooled-source``: the source side fitted on every set of ``a``'s machine (same
      source, hardware, TP) with one per-step and one per-sequence cost for all of them and
      efficiencies per model (`fit_roofline_shared`); ``a``'s efficiencies and the source host's
      costs are moved. One set cannot tell a per-step cost from the efficiencies (the Aegaeon
      Yi-1.5-6B H800 set alone fits 0 ms/step and eff_mem 0.42); a machine's several models can.
      Still nothing from the target GPU.
    - ``host-from-other-models``: ``a``'s efficiencies as in ``zero-shot-pooled-source``, and the
      per-step and per-sequence costs of ``b``'s machine fitted (shared, with per-model
      efficiencies as nuisance) on that machine's *other* models: ``b``'s model is never seen,
      but the target host's measurements are used, so this is **not** zero-shot. It separates
      what a GPU datasheet can carry (achieved FLOP/s and bandwidth fractions) from what it
      cannot (the host CPU and engine build: the Aegaeon A10 machine spends ~9 ms per step and
      ~0.18 ms per sequence, its H800 ~4.5 ms and ~0.11 ms).
    """
    from .roofline import HOST_PARAMS

    _check_reading(reading)
    cache = {} if cache is None else cache
    A, B = sets[a], sets[b]
    to_b = {"model": B.model.iloc[0], "hardware": B.hardware.iloc[0], "tp": int(B.tp.iloc[0])}
    if reading == "zero-shot":
        fa = fit_roofline(RooflineStepTime(A.model.iloc[0], A.hardware.iloc[0], tp=int(A.tp.iloc[0])), A)
        return replace(fa, **to_b), f"calibrated on {a}"
    src = _machine_sets(sets, a)
    fa = _pooled_fit(sets, src, cache)[a]
    moved = replace(fa, **to_b)
    note = f"calibrated on {a}, host costs shared with {len(src) - 1} other model(s) of its machine"
    if reading == "zero-shot-pooled-source":
        return moved, note
    others = [n for n in _machine_sets(sets, b) if sets[n].model.iloc[0] != B.model.iloc[0]]
    if not others:
        raise ValueError(f"transfer reading 'host-from-other-models': no other model measured on {b}'s machine")
    host = next(iter(_pooled_fit(sets, others, cache).values()))
    hp = {p: float(getattr(host, p)) for p in HOST_PARAMS}
    note += (f"; target host costs {hp['overhead_s'] * 1e3:.2f} ms/step, {hp['seq_overhead_s'] * 1e6:.0f} us/seq "
             f"fitted on {len(others)} other model(s) of {b}'s machine (not zero-shot)")
    return replace(moved, **hp), note


def cross_hardware(sets: dict[str, pd.DataFrame], pairs: list[tuple[str, str]], reading: str = "zero-shot") -> pd.DataFrame:
    """Roofline calibrated on set A, moved to set B's hardware (and TP) under a transfer
    ``reading`` (`TRANSFER_READINGS`, `transfer_model`), scored on all of B: does the datasheet
    scaling carry over to a GPU it was not fitted on?"""
    _check_reading(reading)
    rows, cache = [], {}
    for a, b in pairs:
        B = sets[b]
        moved, note = transfer_model(sets, a, b, reading, cache)
        backend = "roofline-transfer" if reading == "zero-shot" else f"roofline-transfer:{reading}"
        rows += _rows(backend, b, B, moved, "all", note=note)
        prior = RooflineStepTime(B.model.iloc[0], B.hardware.iloc[0], tp=int(B.tp.iloc[0]))
        rows += _rows("roofline-prior", b, B, prior, "all", note="reference")
    return pd.DataFrame(rows)


def same_model_pairs(sets: dict[str, pd.DataFrame]) -> list[tuple[str, str]]:
    """Every ordered (source, target) pair of sets from one source with the same model and TP on
    different GPUs (e.g. all GPU pairs of the Aegaeon profiles)."""
    key = {n: (n.split(":", 1)[0], d.model.iloc[0], int(d.tp.iloc[0])) for n, d in sets.items()}
    return [(a, b) for a in sets for b in sets
            if a != b and key[a] == key[b] and sets[a].hardware.iloc[0] != sets[b].hardware.iloc[0]]


def transfer_by_gpu_pair(sets: dict[str, pd.DataFrame], readings=tuple(TRANSFER_READINGS),
                         pairs: list[tuple[str, str]] | None = None) -> pd.DataFrame:
    """MAPE (all rows of the target set) per reading and (source, target) set pair; columns
    reading, source_gpu, target_gpu, gpu_pair ("a -> b"), model, source, target, mape_pct, r2, note.
    Summarise with ``.groupby(["reading", "gpu_pair"]).mape_pct.median()``."""
    pairs = same_model_pairs(sets) if pairs is None else pairs
    rows = []
    for reading in readings:
        xr = cross_hardware(sets, pairs, reading)
        xr = xr[(xr.regime == "all") & (xr.backend != "roofline-prior")].reset_index(drop=True)
        for (a, b), r in zip(pairs, xr.itertuples()):
            ga, gb = sets[a].hardware.iloc[0], sets[b].hardware.iloc[0]
            rows.append({"reading": reading, "source_gpu": ga, "target_gpu": gb, "gpu_pair": f"{ga} -> {gb}",
                         "model": sets[b].model.iloc[0], "source": a, "target": b, "mape_pct": r.mape_pct,
                         "r2": r.r2, "note": r.note})
    return pd.DataFrame(rows)


# measured engine set -> the gpu_bench profile of the same (model, hardware, tp)
GPU_BENCH_VS = {  # dataset name (as in `datasets`) -> (aegaeon model folder or splitwise file, gpu_bench key)
    "aegaeon:qwen2.5-7b:h100-80gb:tp1": ("qwen2.5-7b", "h100-80gb", 1),
    "aegaeon:llama-2-13b:h100-80gb:tp1": ("llama-2-13b", "h100-80gb", 1),
    "aegaeon:yi-1.5-9b:h100-80gb:tp1": ("yi-1.5-9b", "h100-80gb", 1),
    # the H800 is the H100's silicon (compute, HBM) with NVLink cut: the H100 profile, moved to
    # another host and its engine build, against the artifact's H800 measurements
    "aegaeon:qwen2.5-7b:h800:tp1": ("qwen2.5-7b", "h100-80gb", 1),
    "aegaeon:llama-2-13b:h800:tp1": ("llama-2-13b", "h100-80gb", 1),
    "aegaeon:yi-1.5-9b:h800:tp1": ("yi-1.5-9b", "h100-80gb", 1),
    "aegaeon:llama-2-7b:h800:tp1": ("llama-2-7b", "h100-80gb", 1),
    "aegaeon:qwen1.5-14b-chat:h800:tp1": ("qwen1.5-14b-chat", "h100-80gb", 1),
    "aegaeon:internlm2.5-7b-chat:h800:tp1": ("internlm2.5-7b-chat", "h100-80gb", 1),
    "aegaeon:baichuan2-13b-chat:h800:tp1": ("baichuan2-13b-chat", "h100-80gb", 1),
    "splitwise:llama-2-70b:h100-80gb:tp8": ("llama-2-70b", "h100-80gb", 8),
    "splitwise:llama-2-70b:h100-80gb:tp4": ("llama-2-70b", "h100-80gb", 4),
    "splitwise:llama-2-70b:h100-80gb:tp2": ("llama-2-70b", "h100-80gb", 2),
    "splitwise:bloom-176b:h100-80gb:tp8": ("bloom-176b", "h100-80gb", 8),
}


def gpu_bench_vs_engine(sets: dict[str, pd.DataFrame], timing: str = "step") -> pd.DataFrame:
    """Our GPU profiles (`sources.gpu_bench`: PyTorch forwards, kernels only) against an engine's
    measured step times of the same model on the same GPU, scored on the measured rows inside the
    profile's grid:

    - ``gpu-bench``: the profile table as it is (no engine cost, no all-reduce for tp > 1);
    - ``gpu-bench+engine``: plus `engine_overhead` fitted on the *other* models' Aegaeon H100
      measurements (leave one model out: for an H800 set too, so its model is never seen), or,
      for the Splitwise sets, on all of Aegaeon's H100 sets (another engine: a move across engines);
      its rows also carry the fit (``fit_on``, ``k_prefill``, ``k_decode``, ``overhead_ms``,
      ``seq_overhead_us``);
    - ``gpu-bench-fit``: the roofline fitted to the profile (`shard_fit`) with the datasheet TP
      all-reduce put back, the step model OServe's replicas use (tp > 1 sets test the all-reduce).
    """
    from functools import cache

    from .engine_overhead import fit_engine_overhead
    from .shard_fit import shard_roofline

    @cache  # each profile's table is built once, however many fits it takes part in
    def base(key):
        m, hw, tp = key
        return TableStepTime(sources.gpu_bench(m, hw, tp, timing=timing, mixed=False), name="gpu-bench")

    have = {(h, m, t) for h, m, t in sources.gpu_bench_sets()}
    todo = {n: k for n, k in GPU_BENCH_VS.items() if n in sets and (k[1], k[0], k[2]) in have}
    aeg = [n for n in todo if n.startswith("aegaeon") and ":h100-80gb:" in n]  # the fit's sources
    rows = []
    for name, key in todo.items():
        b = base(key)
        df = sets[name]
        inside = b.inside(*(df[c].to_numpy(float) for c in M.AGGREGATES))
        df = df[inside].reset_index(drop=True)
        if df.empty:
            continue
        note = f"{int(inside.sum())} of {len(inside)} measured rows inside the profile's grid; timing={timing}"
        rows += _rows("gpu-bench", name, df, b, "all", note=note)
        sr = shard_roofline(*key[:2], tp=key[2], timing=timing)
        rows += _rows("gpu-bench-fit", name, df, sr, "all",
                      note=f"roofline fitted to the tp{key[2]} profile ({sr.meta['mape_pct']:.1f} % on it), "
                           f"datasheet all-reduce added; {note}")
        others = [n for n in aeg if sets[n].model.iloc[0] != sets[name].model.iloc[0]]
        if not others:
            continue
        train = pd.concat([sets[n] for n in others], ignore_index=True)
        by_model = {sets[n].model.iloc[0]: base(todo[n]) for n in others}
        fitted = fit_engine_overhead(None, train, base_for=lambda g: by_model[g.model.iloc[0]])
        moved = replace(fitted, base=b)
        src = ", ".join(sorted(by_model))
        params = {"fit_on": src, "k_prefill": fitted.k_prefill, "k_decode": fitted.k_decode,
                  "overhead_ms": fitted.overhead_s * 1e3, "seq_overhead_us": fitted.seq_overhead_s * 1e6}
        rows += [{**r, **params} for r in _rows(
            "gpu-bench+engine", name, df, moved, "all",
            note=f"engine overhead fitted on {src} (k_prefill {fitted.k_prefill:.3f}, k_decode "
                 f"{fitted.k_decode:.3f}, {fitted.overhead_s * 1e3:.2f} ms/step, "
                 f"{fitted.seq_overhead_s * 1e6:.0f} us/seq); {note}")]
    return pd.DataFrame(rows)
