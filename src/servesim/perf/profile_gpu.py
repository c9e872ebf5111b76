"""``servesim profile-gpu``: PyTorch micro-benchmarks of one model's operators on this machine's
device, composed into a step-time measurement table that the ``table`` backend reads and
``servesim calibrate`` fits.

Measured per shape: the GEMM of every projection (QKV, O, MLP up/gate, MLP down, LM head) at the
replica's TP width, attention prefill (causal SDPA over L-token prompts) and decode (one query
over a C-token context) at several lengths, and -- when several GPUs are visible and
torch.distributed can start -- nothing more: multi-GPU all-reduce needs one process per GPU and
is measured by the engine path instead; the composed table then holds TP=1 steps only (said in
the output's ``source`` column). Element-wise operators (norms, activations, residuals) are not
timed: they are a few percent of a step and calibration absorbs them.

Composition: step = layers * (sum of GEMMs at T tokens + attention) + LM head, T = tokens in the
step. On CPU, ``--shrink`` divides the model's widths so the run takes seconds (a smoke test of
the pipeline, not a measurement of the real model).
"""

from __future__ import annotations

import argparse
import statistics
import time
from dataclasses import replace
from pathlib import Path

import pandas as pd

from ..catalog import get_model
from .measurements import write


def _torch():
    try:
        import torch
    except ImportError as e:  # the profiler is optional: say what to install
        raise SystemExit("servesim profile-gpu needs PyTorch (pip install torch, or servesim[engine-gpu])") from e
    return torch


def _timer(torch, device):
    """Median seconds of fn() over reps, after warm-up; CUDA events on GPU, perf_counter on CPU."""
    cuda = device.type == "cuda"

    def run(fn, reps=5, warmup=2):
        for _ in range(warmup):
            fn()
        ts = []
        for _ in range(reps):
            if cuda:
                a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                a.record()
                fn()
                b.record()
                torch.cuda.synchronize()
                ts.append(a.elapsed_time(b) / 1e3)
            else:
                t0 = time.perf_counter()
                fn()
                ts.append(time.perf_counter() - t0)
        return statistics.median(ts)

    return run


def shrunk(model: str, shrink: int = 1):
    """The catalog model with widths divided by ``shrink`` (heads and KV heads too, kept >= 1)."""
    m = get_model(model)
    if shrink == 1:
        return m
    kv = max(1, m.kv_heads // shrink)
    heads = max(kv, (m.heads // shrink) // kv * kv)
    return replace(m, hidden=max(16, m.hidden // shrink), heads=heads, kv_heads=kv,
                   ffn=max(16, m.ffn // shrink), vocab=max(64, m.vocab // shrink))


def profile(model: str, tp: int = 1, shrink: int = 1, device: str = "auto", dtype: str | None = None,
            token_counts=(1, 16, 64, 256, 1024, 4096), prefill_lens=(128, 512, 2048), prefill_batches=(1, 2, 4),
            decode_ctxs=(128, 512, 2048), decode_batches=(1, 8, 32, 128), reps: int = 5, layers: int | None = None):
    """Run the micro-benchmarks; return (operator table, step-time measurement table)."""
    torch = _torch()
    dev = torch.device(("cuda" if torch.cuda.is_available() else "cpu") if device == "auto" else device)
    dt = getattr(torch, dtype) if dtype else (torch.float16 if dev.type == "cuda" else torch.float32)
    m = shrunk(model, shrink)
    if m.heads % tp or m.kv_heads % tp and m.kv_heads >= tp:
        raise ValueError(f"{m.key}: heads ({m.heads}) / kv_heads ({m.kv_heads}) do not split over tp={tp}")
    n_layers = layers or m.layers
    q, kvd = m.q_dim // tp, max(1, m.kv_heads // tp) * m.head_dim
    up = (2 if m.gated_mlp else 1) * m.ffn // tp
    gemms = {"qkv": (m.hidden, q + 2 * kvd), "o": (q, m.hidden), "mlp_up": (m.hidden, up), "mlp_down": (m.ffn // tp, m.hidden)}
    timeit = _timer(torch, dev)
    ops = []
    for T in sorted(set(token_counts) | {L * B for L in prefill_lens for B in prefill_batches} | set(decode_batches)):
        for name, (k, n) in gemms.items():
            x = torch.randn(T, k, device=dev, dtype=dt)
            w = torch.randn(k, n, device=dev, dtype=dt)
            ops.append({"op": name, "tokens": T, "ctx": 0, "batch": 0, "s": timeit(lambda: x @ w, reps)})
    for B in sorted(set(decode_batches) | set(prefill_batches)):
        x = torch.randn(B, m.hidden, device=dev, dtype=dt)
        w = torch.randn(m.hidden, m.vocab // tp, device=dev, dtype=dt)
        ops.append({"op": "lm_head", "tokens": B, "ctx": 0, "batch": B, "s": timeit(lambda: x @ w, reps)})
    sdpa = torch.nn.functional.scaled_dot_product_attention
    hq = m.heads // tp  # KV heads are expanded to the query heads below (GQA repeat)
    for L in prefill_lens:
        for B in prefill_batches:
            qt = torch.randn(B, hq, L, m.head_dim, device=dev, dtype=dt)
            kt = torch.randn(B, hq, L, m.head_dim, device=dev, dtype=dt)  # KV expanded to query heads (GQA repeat)
            ops.append({"op": "attn_prefill", "tokens": L * B, "ctx": L, "batch": B,
                        "s": timeit(lambda: sdpa(qt, kt, kt, is_causal=True), reps)})
    for C in decode_ctxs:
        for B in decode_batches:
            qt = torch.randn(B, hq, 1, m.head_dim, device=dev, dtype=dt)
            kt = torch.randn(B, hq, C, m.head_dim, device=dev, dtype=dt)
            ops.append({"op": "attn_decode", "tokens": B, "ctx": C, "batch": B, "s": timeit(lambda: sdpa(qt, kt, kt), reps)})
    ops = pd.DataFrame(ops)
    hw = torch.cuda.get_device_name(dev) if dev.type == "cuda" else "cpu"
    ops["model"], ops["device"], ops["tp"], ops["shrink"] = m.key, hw, tp, shrink

    g = {(r.op, r.tokens): r.s for r in ops[ops.op.isin(list(gemms))].itertuples()}
    head = {r.batch: r.s for r in ops[ops.op == "lm_head"].itertuples()}
    per_tok = lambda T: sum(g[(n, T)] for n in gemms)  # noqa: E731
    rows = []
    for r in ops[ops.op == "attn_prefill"].itertuples():
        L, B = r.ctx, r.batch
        rows.append((L * B, L * L * B, 0, 0, n_layers * (per_tok(L * B) + r.s) + head[B]))
    for r in ops[ops.op == "attn_decode"].itertuples():
        C, B = r.ctx, r.batch
        rows.append((0, 0, B, B * C, n_layers * (per_tok(B) + r.s) + head[B]))
    steps = pd.DataFrame(rows, columns=["prefill_tokens", "prefill_ctx", "decode_seqs", "decode_ctx", "step_s"])
    steps["model"], steps["tp"], steps["pp"] = m.key, tp, 1
    steps["hardware"] = "cpu" if dev.type == "cpu" else hw
    steps["source"] = f"profile-gpu:{hw}:shrink{shrink}:layers{n_layers}:no-allreduce"
    return ops, steps


def add_parser(subparsers) -> None:
    p = subparsers.add_parser("profile-gpu", help="micro-benchmark a model's operators on this device -> step-time table",
                              description=__doc__.splitlines()[0])
    p.add_argument("--model", required=True, help="catalog model key")
    p.add_argument("--tp", type=int, default=1, help="tensor-parallel width of the shapes (one GPU runs 1/tp of each)")
    p.add_argument("--shrink", type=int, default=1, help="divide the model's widths by this (CPU smoke runs)")
    p.add_argument("--layers", type=int, help="compose with this many layers (default: the model's)")
    p.add_argument("--device", default="auto", help="cuda, cuda:1, cpu or auto")
    p.add_argument("--dtype", help="torch dtype name (default float16 on GPU, float32 on CPU)")
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--quick", action="store_true", help="few, small shapes (seconds on CPU)")
    p.add_argument("-o", "--output", required=True, help="step-time measurement table (.csv/.parquet)")
    p.add_argument("--ops-output", help="also write the per-operator timings here (.csv)")
    p.set_defaults(func=run)


def run(args) -> int:
    kw = {}
    if args.quick:
        kw = dict(token_counts=(1, 16, 64), prefill_lens=(16, 64), prefill_batches=(1, 2), decode_ctxs=(16, 64),
                  decode_batches=(1, 4), reps=2)
    ops, steps = profile(args.model, tp=args.tp, shrink=args.shrink, device=args.device, dtype=args.dtype,
                         layers=args.layers, **({"reps": args.reps} | kw))
    write(steps, args.output)
    if args.ops_output:
        Path(args.ops_output).parent.mkdir(parents=True, exist_ok=True)
        ops.to_csv(args.ops_output, index=False, float_format="%.6g")
    print(f"profiled {len(ops)} operator shapes on {steps.source.iloc[0]} -> {args.output} ({len(steps)} steps)")
    return 0


if __name__ == "__main__":  # pragma: no cover
    parser = argparse.ArgumentParser(prog="servesim")
    add_parser(parser.add_subparsers(dest="command", required=True))
    a = parser.parse_args()
    raise SystemExit(a.func(a))
