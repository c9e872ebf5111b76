"""``servesim profile-gpu``: time whole decoder forwards of a catalog model on this machine's
accelerator (`gpu_bench`) and write a step-time measurement table that the ``table`` backend
reads and ``servesim calibrate`` fits -- or write a plan for a GPU node that has PyTorch but not
servesim (``--plan-out``), run there as ``python gpu_bench.py --plan plan.json --out DIR``.

Grids (which steps are timed):
- ``aegaeon``: the Aegaeon artifact's profile grid (B prompts of L tokens, then B decodes at
  context L), restricted to steps of at most 4,096 tokens as `sources.aegaeon` reads them, so a
  profiled table and the artifact's measured one can be compared point by point;
- ``splitwise``: the Splitwise database's prompt and batch sizes (SageServe's step times),
  prefill steps up to 16,384 tokens, decodes at contexts 256-8,192, and a few mixed steps;
- ``quick``: a handful of small steps (seconds on a CPU with ``--shrink``).

On CPU, ``--shrink`` divides the model's widths so a run takes seconds: a smoke test of the
pipeline, not a measurement of the real model.
"""

from __future__ import annotations

import argparse
import json
import re
from dataclasses import replace
from pathlib import Path

import pandas as pd

from ..catalog import get_model
from ..errors import InputError
from ..output_dir import atomic_file, check_output_file
from . import gpu_bench
from .measurements import write

# The Aegaeon artifact's profile grid: prompt length L -> batch sizes B of its i<L>b<B>.json files.
AEGAEON_GRID = {16: [1, 2, 4, 8, 16, *range(30, 201, 10)], 32: [1, 2, 4, 8, 16, *range(30, 201, 10)],
                64: [1, 2, 4, 8, 16, *range(30, 121, 10)], 128: [1, 2, 4, 8, 16, 30, 40, 50, 60],
                256: [1, 2, 4, 8, 16, 30], 512: [1, 2, 4, 8, 16], 1024: [1, 2, 4, 8], 2048: [1, 2, 4], 4096: [2]}
AEGAEON_STEP_TOKENS = 4096
GRAPHS = ("decode", "all", "none")  # which steps step_s times as CUDA-graph replays (gpu_bench.profile_model)
SPLITWISE_PROMPTS, SPLITWISE_BATCHES = (128, 256, 512, 1024, 2048, 4096, 8192), (1, 2, 4, 8, 16, 32, 64)


def grid(name: str) -> dict:
    """The shapes of a named grid: {"prefill": [[L, B]], "decode": [[C, B]], "mixed": [[P, B, C]]}."""
    if name == "aegaeon":
        pairs = [(L, B) for L, bs in AEGAEON_GRID.items() for B in bs if L * B <= AEGAEON_STEP_TOKENS]
        return {"prefill": [[L, B] for L, B in pairs], "decode": [[L, B] for L, B in pairs if L < AEGAEON_STEP_TOKENS]}
    if name == "splitwise":
        return {"prefill": [[p, b] for p in SPLITWISE_PROMPTS for b in SPLITWISE_BATCHES if p * b <= 16384],
                "decode": [[c, b] for c in (256, 1024, 4096, 8192) for b in SPLITWISE_BATCHES],
                "mixed": [[p, b, 1024] for p in (512, 2048) for b in (16, 64)]}
    if name == "quick":
        return {"prefill": [[16, 1], [64, 2]], "decode": [[16, 1], [64, 4]], "mixed": [[16, 2, 16]]}
    raise InputError(f"--grid / --models: unknown grid {name!r}: expected aegaeon, splitwise or quick")


def shrunk(model: str, shrink: int = 1):
    """The catalog model with widths divided by ``shrink`` (heads and KV heads too, kept >= 1)."""
    m = get_model(model)
    if shrink == 1:
        return m
    kv = max(1, m.kv_heads // shrink)
    heads = max(kv, (m.heads // shrink) // kv * kv)
    return replace(m, hidden=max(16, m.hidden // shrink), heads=heads, kv_heads=kv,
                   ffn=max(16, m.ffn // shrink), vocab=max(64, m.vocab // shrink))


def shape(model: str, shrink: int = 1, layers: int | None = None) -> dict:
    """The architecture facts `gpu_bench` needs, from the catalog."""
    m = shrunk(model, shrink)
    if m.is_moe:
        raise InputError(f"--model {m.key}: mixture-of-experts layers are not profiled (dense decoders only)")
    return {"key": m.key, "layers": layers or m.layers, "hidden": m.hidden, "heads": m.heads, "kv_heads": m.kv_heads,
            "head_dim": m.head_dim, "ffn": m.ffn, "vocab": m.vocab, "gated_mlp": bool(m.gated_mlp)}


def check_tp(shp: dict, tp: int) -> dict:
    """The shape, if its heads split over ``tp`` GPUs the way `gpu_bench.Shard` cuts them."""
    hq, hkv = shp["heads"] // max(tp, 1), max(1, shp["kv_heads"] // max(tp, 1))
    if tp < 1 or shp["heads"] % tp or hq % hkv:
        raise InputError(f"--tp {tp}: {shp['key']}'s {shp['heads']} heads ({shp['kv_heads']} KV heads) do not split over {tp} GPUs")
    return shp


def plan(specs: list[str], hardware: str | None = None, dtype: str = "bfloat16", reps: int = 5,
         bandwidth: bool = True, graphs: str = "decode") -> dict:
    """A run plan for `gpu_bench.run_plan` from "model:tp:grid" specs, in priority order."""
    models = []
    for s in specs:
        parts = s.split(":")
        if len(parts) != 3 or not parts[1].isdigit():
            raise InputError(f"--models entry {s!r}: expected model:tp:grid (e.g. llama-2-70b:8:splitwise)")
        models.append({"shape": check_tp(shape(parts[0]), int(parts[1])), "tp": int(parts[1]), "grid": grid(parts[2]),
                       "grid_name": parts[2]})
    if graphs not in GRAPHS:
        raise InputError(f"--graphs {graphs!r}: expected one of {', '.join(GRAPHS)}")
    return {"hardware": hardware, "dtype": dtype, "reps": reps, "warmup": 2, "bandwidth": bandwidth, "graphs": graphs,
            "models": models}


def profile(model: str, tp: int = 1, shrink: int = 1, device: str = "auto", dtype: str | None = None,
            grid_name: str = "splitwise", reps: int = 5, layers: int | None = None, graphs: str = "decode") -> pd.DataFrame:
    """Time ``grid_name``'s steps of one model on this machine; the step-time measurement table."""
    torch = gpu_bench._torch()
    dev = torch.device(("cuda" if torch.cuda.is_available() else "cpu") if device == "auto" else device)
    dt = getattr(torch, dtype) if dtype else (torch.bfloat16 if dev.type == "cuda" else torch.float32)
    hw = torch.cuda.get_device_name(dev) if dev.type == "cuda" else "cpu"
    rows = gpu_bench.profile_model(torch, check_tp(shape(model, shrink, layers), tp), tp, dev, dt, grid(grid_name),
                                   gpu_bench.Timer(torch, dev, reps=reps), hw, graphs=graphs, log=lambda s: None)
    df = pd.DataFrame(rows, columns=gpu_bench.STEP_COLUMNS)
    if shrink != 1:
        df["source"] = df.source + f":shrink{shrink}"
    return df


def add_parser(subparsers) -> None:
    p = subparsers.add_parser("profile-gpu", help="time a model's forward steps on this device -> step-time table",
                              description=__doc__.splitlines()[0])
    p.add_argument("--model", help="catalog model key (a local run)")
    p.add_argument("--tp", type=int, default=1, help="tensor-parallel width of the shapes (one GPU runs 1/tp of each)")
    p.add_argument("--grid", default="splitwise", choices=["aegaeon", "splitwise", "quick"])
    p.add_argument("--shrink", type=int, default=1, help="divide the model's widths by this (CPU smoke runs)")
    p.add_argument("--layers", type=int, help="run this many layers (default: the model's)")
    p.add_argument("--device", default="auto", help="cuda, cuda:1, cpu or auto")
    p.add_argument("--dtype", help="torch dtype name (default bfloat16 on GPU, float32 on CPU)")
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--graphs", default="decode", choices=GRAPHS,
                   help="steps timed as CUDA-graph replays: decode (default), all, none")
    p.add_argument("-o", "--output", help="step-time measurement table (.csv/.parquet)")
    p.add_argument("--plan-out", help="instead of profiling here, write a plan for gpu_bench.py on a GPU node")
    p.add_argument("--models", help="with --plan-out: comma-separated model:tp:grid, in priority order")
    p.set_defaults(func=run)


DTYPES = ("float32", "float16", "bfloat16", "float64")


def check_args(args) -> None:
    """Every option checked before a model is built (a bad one must not first allocate GBs)."""
    for opt, v in (("--tp", args.tp), ("--shrink", args.shrink), ("--reps", args.reps), ("--layers", args.layers)):
        if v is not None and v < 1:
            raise InputError(f"profile-gpu {opt} {v}: must be >= 1")
    if args.dtype is not None and args.dtype not in DTYPES:
        raise InputError(f"profile-gpu --dtype {args.dtype!r}: expected one of {', '.join(DTYPES)}")
    if not re.fullmatch(r"auto|cpu|cuda(:\d+)?", args.device):
        raise InputError(f"profile-gpu --device {args.device!r}: expected auto, cpu, cuda or cuda:N")
    if args.output and Path(args.output).suffix not in (".csv", ".parquet"):
        raise InputError(f"profile-gpu -o {args.output}: must end in .csv or .parquet")


def run(args) -> int:
    check_args(args)
    if args.plan_out:
        if not args.models:
            raise InputError("profile-gpu --plan-out needs --models model:tp:grid[,...]")
        check_output_file(args.plan_out, option="--plan-out")
        p = plan(args.models.split(","), reps=args.reps, graphs=args.graphs, **({"dtype": args.dtype} if args.dtype else {}))
        with atomic_file(args.plan_out) as tmp:
            Path(tmp).write_text(json.dumps(p, indent=1))
        n = sum(len(v) for m in p["models"] for v in m["grid"].values())
        print(f"plan: {len(p['models'])} model shards, {n} steps -> {args.plan_out}")
        return 0
    if not (args.model and args.output):
        raise InputError("profile-gpu needs --model and -o (or --plan-out and --models)")
    check_output_file(args.output)
    df = profile(args.model, tp=args.tp, shrink=args.shrink, device=args.device, dtype=args.dtype,
                 grid_name=args.grid, reps=args.reps, layers=args.layers, graphs=args.graphs)
    with atomic_file(args.output) as tmp:
        write(df, tmp)
    print(f"profiled {len(df)} steps on {df.source.iloc[0]} -> {args.output}")
    return 0


if __name__ == "__main__":  # pragma: no cover
    parser = argparse.ArgumentParser(prog="servesim")
    add_parser(parser.add_subparsers(dest="command", required=True))
    a = parser.parse_args()
    raise SystemExit(a.func(a))
