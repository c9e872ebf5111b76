"""Vidur operator profiles composed into a step time.

Vidur's public profiles (``vidur-profiling/compute/<gpu>/<org>/<model>/mlp.csv``, median ms per
operator by ``num_tokens`` and TP degree) cover every per-token operator of a layer: norms, QKV
and output projections, RoPE, MLP up/act/down, residual adds, and the embedding.
``network/<gpu>_dgx/all_reduce.csv`` gives all-reduce time by message size (bytes) and GPU count.
The public copy has no attention profiles, so attention comes from first principles (the roofline
terms, with their calibratable efficiency), as do the LM head and the CPU-side per-step and
per-sequence overheads, which Vidur models separately from its operator profiles.

    step = emb(T) + layers * sum(per-layer ops)(T) + 2 * layers * all_reduce(T*hidden*2 bytes)   [profiles]
         + attention + LM head + overheads                                                  [roofline]

with T = prefill_tokens + decode_seqs. The profile part is one 1-D table over T; T outside the
profiled range (1..4096 tokens) falls back to a fitted model and is counted, as in `table`.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..catalog import get_hardware, get_model
from .base import StepTimeModel
from .fitted import fit
from .measurements import AGGREGATES
from .roofline import RooflineStepTime
from .table import Grid

LAYER_OPS = ("input_layernorm", "attn_pre_proj", "attn_rope", "attn_post_proj", "post_attention_layernorm",
             "mlp_up_proj", "mlp_act", "mlp_down_proj", "add", "add")  # two residual adds per layer
GPU_DIRS = {"a100-80gb": "a100", "h100-80gb": "h100", "a40": "a40"}


def _locate(key):
    from ..data import locate

    return locate(key)


def profile_dir(model: str, hardware: str):
    """The Vidur compute-profile folder of a catalog model on a catalog GPU."""
    m, h = get_model(model), get_hardware(hardware)
    if h.key not in GPU_DIRS:
        raise ValueError(f"Vidur profiles exist for {sorted(GPU_DIRS)}, not {h.key}")
    base = _locate(f"vidur-profiling/compute/{GPU_DIRS[h.key]}")
    names = {m.hf_id.split("/")[-1].lower(), *(a.split("/")[-1].lower() for a in m.aliases)}
    for org in sorted(base.iterdir()):
        for d in sorted(org.iterdir()):
            if d.name.lower() in names:
                return d
    raise ValueError(f"no Vidur profile of {m.key} on {h.key} under {base}")


def available() -> list[tuple[str, str]]:
    """(catalog model, catalog hardware) pairs that have Vidur profiles."""
    from ..catalog import model_keys

    out = []
    for hw in GPU_DIRS:
        for mk in model_keys():
            try:
                profile_dir(mk, hw)
                out.append((mk, hw))
            except ValueError:
                pass
    return out


class VidurStepTime(StepTimeModel):
    """Vidur operator profiles + first-principles attention (see module docstring)."""

    def __init__(self, model, hardware, tp: int = 1, pp: int = 1, profile_model: str | None = None,
                 roofline: RooflineStepTime | None = None, name: str = "vidur"):
        self.model, self.hardware = get_model(model), get_hardware(hardware)
        self.tp, self.pp, self.name = tp, pp, name
        pm = get_model(profile_model or model)
        for f in ("hidden", "heads", "kv_heads", "ffn"):  # the profile must be of the same shape
            if getattr(pm, f) != getattr(self.model, f):
                raise ValueError(f"profile model {pm.key} differs from {self.model.key} in {f}")
        d = profile_dir(pm.key, self.hardware.key)
        self.source = str(d)
        ops = pd.read_csv(d / "mlp.csv")
        ops = ops[ops.num_tensor_parallel_workers == tp]
        if ops.empty:
            raise ValueError(f"{d / 'mlp.csv'}: no rows for TP {tp}")
        g = ops.groupby("num_tokens")
        T = np.array(sorted(ops.num_tokens.unique()), float)
        med = lambda op: g[f"time_stats.{op}.median"].median().reindex(T).to_numpy(float)  # noqa: E731
        layer_ms = sum(med(op) for op in LAYER_OPS)
        total_ms = med("emb") + self.model.layers * layer_ms
        if tp > 1:
            ar_ms = self._all_reduce_ms(T * self.model.hidden * self.model.dtype_bytes)
            keep = ~np.isnan(ar_ms)  # the grid ends where either profile ends
            T, total_ms = T[keep], (total_ms + 2 * self.model.layers * ar_ms)[keep]
        if pp > 1:
            raise ValueError("VidurStepTime: pipeline parallelism is not profiled in the public Vidur copy (send_recv is, "
                             "but not per stage); use the roofline or fitted backend for pp > 1")
        self.grid = Grid(T, np.array([0.0]), (total_ms * 1e-3)[:, None])
        rf = roofline or RooflineStepTime(self.model, self.hardware, tp=tp, pp=pp)
        # attention, LM head and overheads: the roofline's terms minus its GEMM/activation/comm terms
        self._rf = rf
        c = rf._c
        self._c = (c["overhead"], c["seq_overhead"], c["head_flop_seq"], c["attn_flop_pair"], c["kv_tok"])
        self.out_of_grid = 0
        self.calls = 0
        self.fallback = fit(self._synthetic(), name=f"{name}-fallback")

    def _all_reduce_ms(self, nbytes: np.ndarray) -> np.ndarray:
        gpu = GPU_DIRS[self.hardware.key]
        try:
            p = _locate(f"vidur-profiling/network/{gpu}_dgx/all_reduce.csv")
        except Exception as e:
            raise ValueError(f"no all-reduce profile for {self.hardware.key}: {e}") from None
        ar = pd.read_csv(p)
        ar = ar[(ar.num_workers == self.tp) & (ar.devices_per_node == self.tp)]
        if ar.empty:
            raise ValueError(f"{p}: no intra-node all-reduce rows for {self.tp} GPUs")
        s = ar.groupby("size")["time_stats.all_reduce.median"].median()
        x = s.index.to_numpy(float)
        return np.where((nbytes >= x[0]) & (nbytes <= x[-1]), np.interp(nbytes, x, s.to_numpy(float)), np.nan)

    def _rest(self, pt, pc, ds, dc, P, mx):
        ov, sov, head, attn, kv = self._c
        seqs = ds + P
        attn_p = mx(attn * (pc * 0.5), kv * (pt + pc / 128.0))
        attn_d = mx(attn * dc, kv * (dc + ds))
        return ov + sov * seqs + head * seqs + attn_p + attn_d

    def _synthetic(self) -> pd.DataFrame:
        """In-range steps the fallback model is fitted on (prefill L x B and decode C x B shapes)."""
        rows = []
        for L in (16, 64, 256, 512, 1024, 2048, 4096):
            for B in (1, 2, 4, 8):
                if L * B <= self.grid.xs[-1]:
                    rows.append((L * B, L * L * B, 0, 0))
        for C in (128, 512, 1024, 2048, 4096):
            for B in (1, 4, 16, 64, 128, 256):
                rows.append((0, 0, B, B * C))
        df = pd.DataFrame(rows, columns=list(AGGREGATES)).astype(float)
        df["step_s"] = self._vector(*(df[c].to_numpy() for c in AGGREGATES), count=False)
        return df

    def step_time(self, prefill_tokens, prefill_ctx, decode_seqs, decode_ctx):
        if type(prefill_tokens) is np.ndarray or type(decode_seqs) is np.ndarray:
            return self._vector(prefill_tokens, prefill_ctx, decode_seqs, decode_ctx)
        self.calls += 1
        pt, pc, ds, dc = float(prefill_tokens), float(prefill_ctx), float(decode_seqs), float(decode_ctx)
        if pt <= 0 and ds <= 0:
            return 0.0
        ops = self.grid.scalar(pt + ds, 0.0)
        if ops != ops:
            self.out_of_grid += 1
            return self.fallback.step_time(pt, pc, ds, dc)
        return ops + self._rest(pt, pc, ds, dc, 1.0 if pt > 0 else 0.0, max)

    def _vector(self, prefill_tokens, prefill_ctx, decode_seqs, decode_ctx, count=True):
        pt, pc, ds, dc = (np.asarray(a, float) for a in (prefill_tokens, prefill_ctx, decode_seqs, decode_ctx))
        ops = self.grid.vector(pt + ds, np.zeros(len(pt)))
        t = ops + self._rest(pt, pc, ds, dc, (pt > 0).astype(float), np.maximum)
        t = np.where((pt > 0) | (ds > 0), t, 0.0)
        bad = np.isnan(t)
        if count:
            self.calls += len(pt)
            if bad.any():
                self.out_of_grid += int(bad.sum())
                t[bad] = self.fallback.step_time(pt[bad], pc[bad], ds[bad], dc[bad])
        return t
