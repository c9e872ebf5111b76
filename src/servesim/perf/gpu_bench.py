"""Step-time and copy-bandwidth micro-benchmarks on one accelerator, in PyTorch and the standard
library only: this file runs as a script on a GPU node that has PyTorch and nothing else of
servesim's (``python gpu_bench.py --plan plan.json --out DIR``), and as the engine of
``servesim profile-gpu`` here.

What a step is. One forward of a decoder-only transformer shard (1/tp of every projection, no
all-reduce: one process, one GPU) through all its layers: RMSNorm, fused QKV, rotary embedding,
causal attention, O projection, RMSNorm, (gated) MLP, residuals; then the final norm and the LM
head on one row per sequence (an engine samples only the last token of each). Weights are random
(bf16/fp16): timings do not depend on values. When a shard's layers do not fit in ``max_weight_gb``
the built layers are cycled through to the model's depth (each layer's weights exceed L2, so a
reused layer is read from HBM again).

Shapes (the aggregates of a step-time measurement table):
- prefill: B prompts of L tokens (causal attention over each);
- decode: B sequences of context C, one new token each (attention reads B*C cached tokens; GQA
  queries of one KV head are grouped so each KV head is read once);
- mixed: one prefill chunk of P tokens and B decodes at context C in the same step.

Timings per shape: ``step_s`` is the median of CUDA-event spans over ``reps`` runs after warm-up,
of a CUDA graph of the whole forward for decode steps (engines capture decode steps in graphs, so
no CPU launch gaps) and of the eager forward for prefill and mixed steps; ``eager_s`` is the eager
forward's span for every shape (launch gaps included). On CPU both are wall-clock medians.

Bandwidths: host-to-device and device-to-host over pinned and pageable memory, device-to-device,
at several sizes; block-granular copies (many small copies, as a KV-cache swap or a per-tensor
weight load issues them); one large GEMM's achieved FLOP/s.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import time

STEP_COLUMNS = ["prefill_tokens", "prefill_ctx", "decode_seqs", "decode_ctx", "step_s", "eager_s", "graph",
                "L", "B", "C", "P", "layers_built", "model", "tp", "pp", "hardware", "source"]
SHAPE_KEYS = ("key", "layers", "hidden", "heads", "kv_heads", "head_dim", "ffn", "vocab", "gated_mlp")


def _torch():
    try:
        import torch
    except ImportError as e:  # the profiler is optional: say what to install
        raise SystemExit("GPU profiling needs PyTorch (pip install torch, or servesim[engine-gpu])") from e
    return torch


class Timer:
    """Median seconds of fn() over reps after warm-up: CUDA events on a GPU, perf_counter on CPU."""

    def __init__(self, torch, device, reps: int = 7, warmup: int = 2):
        self.torch, self.cuda, self.reps, self.warmup = torch, device.type == "cuda", reps, warmup

    def __call__(self, fn, reps: int | None = None) -> float:
        torch, reps = self.torch, reps or self.reps
        for _ in range(self.warmup):
            fn()
        if self.cuda:
            torch.cuda.synchronize()
        ts = []
        for _ in range(reps):
            if self.cuda:
                a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                a.record()
                fn()
                b.record()
                b.synchronize()
                ts.append(a.elapsed_time(b) / 1e3)
            else:
                t0 = time.perf_counter()
                fn()
                ts.append(time.perf_counter() - t0)
        return statistics.median(ts)


# ------------------------------------------------------------------------------------ the model
class Shard:
    """One GPU's share (1/tp) of a decoder-only model's weights, and its forward passes."""

    def __init__(self, torch, shape: dict, tp: int, device, dtype, max_weight_gb: float = 40.0, seed: int = 0):
        self.t, self.dev, self.dt = torch, device, dtype
        s = shape
        if s["heads"] % tp:
            raise ValueError(f"{s['key']}: {s['heads']} heads do not split over tp={tp}")
        self.hd = s["head_dim"]
        self.hq = s["heads"] // tp
        self.hkv = max(1, s["kv_heads"] // tp)
        if self.hq % self.hkv:
            raise ValueError(f"{s['key']}: {self.hq} query heads per GPU are not a multiple of {self.hkv} KV heads")
        self.h, self.gated, self.depth = s["hidden"], bool(s["gated_mlp"]), int(s["layers"])
        q, kv = self.hq * self.hd, self.hkv * self.hd
        up = (2 if self.gated else 1) * (s["ffn"] // tp)
        per_layer = (self.h * (q + 2 * kv) + q * self.h + self.h * up + (s["ffn"] // tp) * self.h) * _itemsize(torch, dtype)
        self.built = max(1, min(self.depth, int(max_weight_gb * 2**30 // per_layer)))
        g = torch.Generator(device=device).manual_seed(seed)
        rnd = lambda *sz: (torch.randn(*sz, device=device, dtype=dtype, generator=g) * 0.02)  # noqa: E731
        self.layers = [dict(qkv=rnd(self.h, q + 2 * kv), o=rnd(q, self.h), up=rnd(self.h, up),
                            down=rnd(s["ffn"] // tp, self.h), n1=torch.ones(self.h, device=device, dtype=dtype),
                            n2=torch.ones(self.h, device=device, dtype=dtype)) for _ in range(self.built)]
        self.norm = torch.ones(self.h, device=device, dtype=dtype)
        self.head = rnd(self.h, max(1, s["vocab"] // tp))
        self.q, self.kv = q, kv
        try:  # enable_gqa arrived in torch 2.5; without it prefill repeats KV heads
            z = lambda h: torch.zeros(1, h, 1, 8, device=device, dtype=dtype)  # noqa: E731
            torch.nn.functional.scaled_dot_product_attention(z(2), z(1), z(1), enable_gqa=True)
            self.gqa_kw = {"enable_gqa": True}
        except (TypeError, RuntimeError):
            self.gqa_kw = None

    # building blocks -----------------------------------------------------------------------
    def _rms(self, x, w):
        t = self.t
        return (x.float() * t.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + 1e-6)).to(x.dtype) * w

    def _rope(self, x, cos, sin):  # x: (T, heads, hd); rotate-half form
        x1, x2 = x[..., : self.hd // 2], x[..., self.hd // 2:]
        return self.t.cat((x1 * cos - x2 * sin, x2 * cos + x1 * sin), -1)

    def _prefill_attn(self, q, k, v, B, L):
        F = self.t.nn.functional
        q = q.view(B, L, self.hq, self.hd).transpose(1, 2)
        k = k.view(B, L, self.hkv, self.hd).transpose(1, 2)
        v = v.view(B, L, self.hkv, self.hd).transpose(1, 2)
        if self.gqa_kw is None and self.hq != self.hkv:
            r = self.hq // self.hkv
            k, v = k.repeat_interleave(r, 1), v.repeat_interleave(r, 1)
        o = F.scaled_dot_product_attention(q, k, v, is_causal=True, **(self.gqa_kw or {}))
        return o.transpose(1, 2).reshape(B * L, self.q)

    def _decode_attn(self, q, kc, vc, B):
        # GQA decode: the query heads of one KV head form that head's "query length", so each
        # cached KV head is read once (as a paged-attention decode kernel does)
        F = self.t.nn.functional
        r = self.hq // self.hkv
        q = q.view(B, self.hkv, r, self.hd)
        o = F.scaled_dot_product_attention(q, kc, vc)
        return o.reshape(B, self.q)

    def forward(self, x, cos, sin, attn, rows):
        """x: (T, hidden) tokens of the step; attn(q, k, v) -> (T, q_dim); rows: the LM-head rows."""
        for i in range(self.depth):
            w = self.layers[i % self.built]
            h = self._rms(x, w["n1"]) @ w["qkv"]
            q, k, v = h.split((self.q, self.kv, self.kv), -1)
            T = x.shape[0]
            q = self._rope(q.reshape(T, self.hq, self.hd), cos, sin).reshape(T, self.q)
            k = self._rope(k.reshape(T, self.hkv, self.hd), cos, sin).reshape(T, self.kv)
            x = x + attn(q, k, v) @ w["o"]
            h = self._rms(x, w["n2"]) @ w["up"]
            if self.gated:
                g_, u = h.chunk(2, -1)
                h = self.t.nn.functional.silu(g_) * u
            else:
                h = self.t.nn.functional.gelu(h)
            x = x + h @ w["down"]
        return self._rms(x[rows], self.norm) @ self.head

    # steps ---------------------------------------------------------------------------------
    def _inputs(self, T):
        t = self.t
        x = t.randn(T, self.h, device=self.dev, dtype=self.dt)
        ang = t.rand(T, 1, self.hd // 2, device=self.dev, dtype=self.dt)
        return x, ang.cos(), ang.sin()

    def prefill_fn(self, B, L):
        x, cos, sin = self._inputs(B * L)
        rows = self.t.arange(L - 1, B * L, L, device=self.dev)
        return lambda: self.forward(x, cos, sin, lambda q, k, v: self._prefill_attn(q, k, v, B, L), rows)

    def _cache(self, B, C):
        t = self.t
        return (t.randn(B, self.hkv, C, self.hd, device=self.dev, dtype=self.dt),
                t.randn(B, self.hkv, C, self.hd, device=self.dev, dtype=self.dt))

    def decode_fn(self, B, C):
        x, cos, sin = self._inputs(B)
        kc, vc = self._cache(B, C)
        rows = self.t.arange(B, device=self.dev)
        return lambda: self.forward(x, cos, sin, lambda q, k, v: self._decode_attn(q, kc, vc, B), rows)

    def mixed_fn(self, P, B, C):
        x, cos, sin = self._inputs(P + B)
        kc, vc = self._cache(B, C)
        rows = self.t.cat((self.t.tensor([P - 1], device=self.dev), P + self.t.arange(B, device=self.dev)))

        def attn(q, k, v):
            a = self._prefill_attn(q[:P], k[:P], v[:P], 1, P)
            return self.t.cat((a, self._decode_attn(q[P:], kc, vc, B)))

        return lambda: self.forward(x, cos, sin, attn, rows)


def _itemsize(torch, dtype) -> int:
    return torch.tensor([], dtype=dtype).element_size()


def _graphed(torch, fn):
    """fn captured in a CUDA graph (warm-up on a side stream first, as CUDA graphs require)."""
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(2):
            fn()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        fn()
    return g


# ------------------------------------------------------------------------------------ profiling
def profile_model(torch, shape: dict, tp: int, device, dtype, grid: dict, timer: Timer, hardware: str,
                  max_weight_gb: float = 40.0, graphs: str = "decode", deadline: float = math.inf, log=print):
    """Time every shape of ``grid`` ({"prefill": [[L, B]], "decode": [[C, B]], "mixed": [[P, B, C]]}).
    ``graphs``: which steps ``step_s`` times as CUDA-graph replays: "decode" (vLLM v0-style engines:
    decode steps graphed, prefills eager), "all" (engines that graph every step, as vLLM v1's
    piecewise graphs roughly do) or "none". Returns rows with STEP_COLUMNS; stops early (rows so
    far) past ``deadline`` (time.monotonic())."""
    if graphs not in ("decode", "all", "none"):
        raise ValueError(f"graphs={graphs!r}: expected decode, all or none")
    sh = Shard(torch, shape, tp, device, dtype, max_weight_gb)
    cuda = device.type == "cuda"
    src = (f"servesim-gpu-bench:{hardware}:torch{torch.__version__}:{str(dtype).replace('torch.', '')}"
           f":layers{sh.depth}(built{sh.built}):no-allreduce" + ("" if graphs == "decode" else f":graphs-{graphs}"))
    rows = []
    jobs = ([("prefill", tuple(x)) for x in grid.get("prefill", [])] + [("decode", tuple(x)) for x in grid.get("decode", [])]
            + [("mixed", tuple(x)) for x in grid.get("mixed", [])])
    for kind, dims in jobs:
        if time.monotonic() > deadline:
            log(f"  {shape['key']} tp{tp}: deadline reached after {len(rows)} of {len(jobs)} shapes")
            break
        try:
            with torch.inference_mode():
                if kind == "prefill":
                    L, B = dims
                    fn, agg, extra = sh.prefill_fn(B, L), (L * B, L * L * B, 0, 0), dict(L=L, B=B, C=0, P=0)
                elif kind == "decode":
                    C, B = dims
                    fn, agg, extra = sh.decode_fn(B, C), (0, 0, B, B * C), dict(L=0, B=B, C=C, P=0)
                else:
                    P, B, C = dims
                    fn, agg, extra = sh.mixed_fn(P, B, C), (P, P * P, B, B * C), dict(L=0, B=B, C=C, P=P)
                eager = timer(fn)
                step, graph = eager, False
                if cuda and (graphs == "all" or (graphs == "decode" and kind == "decode")):
                    g = _graphed(torch, fn)
                    step, graph = timer(g.replay), True
                    del g
        except (torch.cuda.OutOfMemoryError, MemoryError) as e:  # a shape too large for this GPU: skip it
            log(f"  {shape['key']} tp{tp} {kind} {dims}: out of memory ({str(e).splitlines()[0][:80]})")
            if cuda:
                torch.cuda.empty_cache()
            continue
        rows.append(dict(zip(STEP_COLUMNS[:4], agg), step_s=step, eager_s=eager, graph=graph, layers_built=sh.built,
                         model=shape["key"], tp=tp, pp=1, hardware=hardware, source=src, **extra))
        if cuda:
            torch.cuda.empty_cache()
    del sh
    if cuda:
        torch.cuda.empty_cache()
    return rows


def bandwidths(torch, device, sizes_mb=(1, 16, 256, 2048), block_kb=(64, 256, 1024, 4096), n_blocks=256,
               timer: Timer | None = None) -> list[dict]:
    """Copy bandwidths (bytes/s) by direction, memory kind and size; one GEMM's FLOP/s."""
    timer = timer or Timer(torch, device, reps=5, warmup=1)
    rows, cuda = [], device.type == "cuda"
    if cuda:
        for mb in sizes_mb:
            n = mb * 2**20
            d = torch.empty(n, dtype=torch.uint8, device=device)
            d2 = torch.empty(n, dtype=torch.uint8, device=device)
            hp = torch.empty(n, dtype=torch.uint8, pin_memory=True)
            hq = torch.empty(n, dtype=torch.uint8)
            for what, fn in (("h2d-pinned", lambda: d.copy_(hp, non_blocking=True)),
                             ("d2h-pinned", lambda: hp.copy_(d, non_blocking=True)),
                             ("h2d-pageable", lambda: d.copy_(hq)),
                             ("d2h-pageable", lambda: hq.copy_(d)),
                             ("d2d", lambda: d2.copy_(d))):
                s = timer(fn)
                rows.append(dict(kind=what, bytes=n, copies=1, seconds=s, bytes_per_s=n / s))
            del d, d2, hp, hq
        for kb in block_kb:  # many separate copies of one block each: a block-wise KV swap
            n = kb * 2**10
            d = torch.empty(n_blocks, n, dtype=torch.uint8, device=device)
            hp = torch.empty(n_blocks, n, dtype=torch.uint8, pin_memory=True)

            def h2d():
                for i in range(n_blocks):
                    d[i].copy_(hp[i], non_blocking=True)

            def d2h():
                for i in range(n_blocks):
                    hp[i].copy_(d[i], non_blocking=True)

            for what, fn in (("h2d-pinned-blocks", h2d), ("d2h-pinned-blocks", d2h)):
                s = timer(fn)
                rows.append(dict(kind=what, bytes=n * n_blocks, copies=n_blocks, seconds=s, bytes_per_s=n * n_blocks / s))
            del d, hp
        torch.cuda.empty_cache()
    for dt_name in ("bfloat16", "float16") if cuda else ("float32",):
        dt = getattr(torch, dt_name)
        n = 8192 if cuda else 512
        a, b = torch.randn(n, n, device=device, dtype=dt), torch.randn(n, n, device=device, dtype=dt)
        s = timer(lambda: a @ b)
        rows.append(dict(kind=f"gemm-{dt_name}-{n}", bytes=0, copies=1, seconds=s, bytes_per_s=2 * n**3 / s))
    return rows


def environment(torch, device) -> dict:
    env = {"python": sys.version.split()[0], "torch": torch.__version__, "platform": platform.platform(),
           "cpu": platform.processor() or platform.machine(), "device_type": device.type}
    if device.type == "cuda":
        p = torch.cuda.get_device_properties(device)
        env.update(device_name=p.name, capability=f"{p.major}.{p.minor}", total_memory=p.total_memory,
                   multiprocessors=p.multi_processor_count, cuda=torch.version.cuda,
                   cudnn=torch.backends.cudnn.version())
        try:
            env["nvidia_smi"] = subprocess.run(
                ["nvidia-smi", "--query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem,power.limit,pcie.link.gen.max,"
                 "pcie.link.width.max", "--format=csv"], capture_output=True, text=True, timeout=20).stdout.strip()
        except (OSError, subprocess.SubprocessError) as e:
            env["nvidia_smi"] = f"unavailable: {e}"
    return env


def _write_csv(rows, path, columns):
    tmp = f"{path}.part"
    with open(tmp, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=columns, extrasaction="ignore")
        w.writeheader()
        for r in rows:
            w.writerow({k: (f"{v:.6g}" if isinstance(v, float) else v) for k, v in r.items()})
    os.replace(tmp, path)


def check_plan(plan, source: str = "plan") -> dict:
    """A plan's structure, checked before any GPU work; ValueError naming the key otherwise."""
    if not isinstance(plan, dict) or not isinstance(plan.get("models"), list):
        raise ValueError(f"{source}: expected an object with a 'models' list")
    if plan.get("graphs", "decode") not in ("decode", "all", "none"):
        raise ValueError(f"{source}: graphs={plan['graphs']!r}; expected decode, all or none")
    for i, m in enumerate(plan["models"]):
        where = f"{source}: models[{i}]"
        if not isinstance(m, dict):
            raise ValueError(f"{where}: expected an object with shape, tp, grid")
        missing = [k for k in SHAPE_KEYS if k not in (m.get("shape") or {})]
        if missing:
            raise ValueError(f"{where}.shape: missing {', '.join(missing)}")
        if not isinstance(m.get("tp"), int) or m["tp"] < 1:
            raise ValueError(f"{where}.tp: expected an integer >= 1, got {m.get('tp')!r}")
        g = m.get("grid")
        if not isinstance(g, dict) or set(g) - {"prefill", "decode", "mixed"}:
            raise ValueError(f"{where}.grid: expected an object with prefill/decode/mixed lists")
        for kind, dims in g.items():
            n = 3 if kind == "mixed" else 2
            for d in dims:
                if not (isinstance(d, list) and len(d) == n and all(isinstance(v, int) and v >= 1 for v in d)):
                    raise ValueError(f"{where}.grid.{kind}: {d!r} is not {n} integers >= 1")
    return plan


def run_plan(plan: dict, out: str, budget_s: float = math.inf, device: str = "auto", log=print) -> dict:
    """Run a plan ({"hardware", "dtype", "reps", "models": [{"shape", "tp", "grid"}], "bandwidth"});
    each model's table is written as soon as it is done, so a run cut short keeps what it measured."""
    check_plan(plan)
    torch = _torch()
    t0 = time.monotonic()
    deadline = t0 + budget_s
    dev = torch.device(("cuda" if torch.cuda.is_available() else "cpu") if device == "auto" else device)
    dt = getattr(torch, plan.get("dtype", "bfloat16" if dev.type == "cuda" else "float32"))
    torch.manual_seed(0)
    os.makedirs(out, exist_ok=True)
    env = environment(torch, dev)
    hw = plan.get("hardware") or env.get("device_name", "cpu")
    timer = Timer(torch, dev, reps=int(plan.get("reps", 7)), warmup=int(plan.get("warmup", 2)))
    done = {"environment": env, "hardware": hw, "tables": {}, "skipped": [], "complete": False}
    if plan.get("bandwidth", True):
        bw = bandwidths(torch, dev)
        _write_csv(bw, os.path.join(out, "bandwidth.csv"), ["kind", "bytes", "copies", "seconds", "bytes_per_s"])
        done["tables"]["bandwidth"] = "bandwidth.csv"
        log(f"bandwidths: {len(bw)} rows ({time.monotonic() - t0:.0f} s)")
    for m in plan["models"]:
        name = f"{m['shape']['key']}-tp{m['tp']}.csv"
        if time.monotonic() > deadline:
            done["skipped"].append(name)
            continue
        try:
            rows = profile_model(torch, m["shape"], int(m["tp"]), dev, dt, m["grid"], timer, hw,
                                 max_weight_gb=float(plan.get("max_weight_gb", 40)), graphs=plan.get("graphs", "decode"),
                                 deadline=deadline, log=log)
        except Exception as e:  # one model failing must not lose the others: record it and go on
            log(f"{name}: failed: {type(e).__name__}: {e}")
            done["skipped"].append(f"{name} ({type(e).__name__}: {e})")
            continue
        n_grid = sum(len(v) for v in m["grid"].values())
        _write_csv(rows, os.path.join(out, name), STEP_COLUMNS)
        done["tables"][name] = {"rows": len(rows), "planned": n_grid}
        log(f"{name}: {len(rows)}/{n_grid} shapes ({time.monotonic() - t0:.0f} s)")
    done["complete"] = not done["skipped"] and all(
        v["rows"] == v["planned"] for k, v in done["tables"].items() if k != "bandwidth")
    done["wall_s"] = round(time.monotonic() - t0, 1)
    with open(os.path.join(out, "provenance.json"), "w") as f:
        json.dump(done, f, indent=1, sort_keys=True)
    return done


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--plan", required=True, help="JSON plan (see run_plan)")
    p.add_argument("--out", required=True, help="output folder")
    p.add_argument("--budget-s", type=float, default=math.inf, help="start no new shape after this many seconds")
    p.add_argument("--device", default="auto")
    a = p.parse_args(argv)
    try:
        with open(a.plan) as f:
            plan = check_plan(json.load(f), a.plan)
    except (OSError, ValueError) as e:  # bad input: one line, status 2 (json errors are ValueErrors)
        print(f"gpu_bench: error: {a.plan}: {e}" if isinstance(e, json.JSONDecodeError) else f"gpu_bench: error: {e}",
              file=sys.stderr)
        return 2
    done = run_plan(plan, a.out, a.budget_s, a.device, log=lambda s: print(s, flush=True))
    print(json.dumps({k: v for k, v in done.items() if k != "environment"}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
