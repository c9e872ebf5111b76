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


def cross_hardware(sets: dict[str, pd.DataFrame], pairs: list[tuple[str, str]]) -> pd.DataFrame:
    """Roofline calibrated on set A, its efficiencies moved to set B's hardware (and TP), scored
    on all of B: does the datasheet scaling carry over to a GPU it was not fitted on?"""
    rows = []
    for a, b in pairs:
        A, B = sets[a], sets[b]
        fa = fit_roofline(RooflineStepTime(A.model.iloc[0], A.hardware.iloc[0], tp=int(A.tp.iloc[0])), A)
        moved = replace(fa, model=B.model.iloc[0], hardware=B.hardware.iloc[0], tp=int(B.tp.iloc[0]))
        rows += _rows("roofline-transfer", b, B, moved, "all", note=f"calibrated on {a}")
        prior = RooflineStepTime(B.model.iloc[0], B.hardware.iloc[0], tp=int(B.tp.iloc[0]))
        rows += _rows("roofline-prior", b, B, prior, "all", note="reference")
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
      for the Splitwise sets, on all of Aegaeon's H100 sets (another engine: a move across engines).
    """
    from functools import cache

    from .engine_overhead import fit_engine_overhead

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
        others = [n for n in aeg if sets[n].model.iloc[0] != sets[name].model.iloc[0]]
        if not others:
            continue
        train = pd.concat([sets[n] for n in others], ignore_index=True)
        by_model = {sets[n].model.iloc[0]: base(todo[n]) for n in others}
        fitted = fit_engine_overhead(None, train, base_for=lambda g: by_model[g.model.iloc[0]])
        moved = replace(fitted, base=b)
        src = ", ".join(sorted(by_model))
        rows += _rows("gpu-bench+engine", name, df, moved, "all",
                      note=f"engine overhead fitted on {src} (k_prefill {fitted.k_prefill:.3f}, k_decode "
                           f"{fitted.k_decode:.3f}, {fitted.overhead_s * 1e3:.2f} ms/step, "
                           f"{fitted.seq_overhead_s * 1e6:.0f} us/seq); {note}")
    return pd.DataFrame(rows)
