"""Roofline prior: step time from the catalog's model shape and hardware datasheet.

Per step, for a replica of ``tp`` x ``pp`` GPUs (every GPU holds layers/pp layers at 1/tp width;
one step passes all stages, so its latency covers all layers):

- GEMMs (QKV/O projections, MLP or the touched MoE experts, LM head): FLOPs 2*tokens*weights,
  bytes = the weights read once per step; time = max(FLOPs / (F*eff_compute), bytes / (BW*eff_mem)).
- attention: prefill pairs prefill_ctx/2 (causal), decode pairs decode_ctx; FLOPs 4*q_dim*pairs
  per layer; bytes = KV read (decode: decode_ctx tokens; prefill: once per 128-query block) and
  written; its own compute efficiency ``eff_attn``.
- activations: ~12 reads/writes of tokens*hidden per layer (norms, residuals, activations).
- TP: 2 ring all-reduces per layer of tokens*hidden*dtype bytes: latency + 2(tp-1)/tp * bytes /
  (interconnect_bw*eff_net); left out with ``tp_comm=False`` (one shard, as `gpu_bench` times it).
  PP: (pp-1) activation sends over ``pp_link_bw`` (default the intra-node interconnect; pass the
  inter-node link for a replica whose stages span nodes).
- PP schedule (``pp_schedule``). "pipelined" (default, vLLM's virtual engines): the batch is cut
  into m = min(pp, sequences in it) micro-batches in flight; every sequence advances one token per
  period max(m * I(b/m), T(b/m)), where T is one micro-batch's latency through all stages
  (sum of stages + hand-offs) and I the stage-bottleneck interval (one stage + one hand-off). The
  prefill sequences of a step are estimated as prefill_tokens^2 / prefill_ctx (exact for equal
  fresh prompts). "sequential": one batch through the stages, no overlap (T(b)).
- a fixed per-step overhead (launch, scheduling) and a per-sequence one (CPU-side scheduling,
  sampling, detokenisation of each running sequence: large in vLLM 0.5-era engines).

The efficiencies and overheads are the parameters `fit_roofline` calibrates; defaults are a
prior (typical dense-GEMM and HBM efficiencies of vLLM-class engines), not measurements.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd

from ..catalog import HardwareSpec, ModelSpec, get_hardware, get_model
from .base import StepTimeModel
from .measurements import AGGREGATES

PARAMS = ("eff_compute", "eff_mem", "eff_attn", "eff_net", "overhead_s", "seq_overhead_s", "ar_latency_s")
BOUNDS = {"eff_compute": (0.02, 1.0), "eff_mem": (0.05, 1.0), "eff_attn": (0.01, 1.0), "eff_net": (0.02, 1.0),
          "overhead_s": (0.0, 0.2), "seq_overhead_s": (0.0, 2e-3), "ar_latency_s": (0.0, 2e-3)}
Q_BLOCK = 128  # flash-attention query block: KV of the context is re-read once per block
PP_SCHEDULES = ("pipelined", "sequential")


@dataclass
class RooflineStepTime(StepTimeModel):
    model: ModelSpec | str
    hardware: HardwareSpec | str
    tp: int = 1
    pp: int = 1
    eff_compute: float = 0.6
    eff_mem: float = 0.75
    eff_attn: float = 0.4
    eff_net: float = 0.7
    overhead_s: float = 3e-3
    seq_overhead_s: float = 2e-5
    ar_latency_s: float = 1e-5
    pp_schedule: str = "pipelined"
    pp_link_bw: float | None = None
    tp_comm: bool = True  # False: one shard's compute only, as a no-all-reduce profile measures it
    name: str = "roofline"
    meta: dict = field(default_factory=dict)

    def __post_init__(self):
        self.model = get_model(self.model)
        self.hardware = get_hardware(self.hardware)
        m, h, tp, pp = self.model, self.hardware, self.tp, self.pp
        if tp < 1 or pp < 1:
            raise ValueError("tp and pp must be >= 1")
        if self.pp_schedule not in PP_SCHEDULES:
            raise ValueError(f"pp_schedule={self.pp_schedule!r}: must be one of {PP_SCHEDULES}")
        if self.pp_link_bw is not None and not self.pp_link_bw > 0:
            raise ValueError(f"pp_link_bw={self.pp_link_bw!r}: must be > 0 (bytes/s) or None")
        db, L = m.dtype_bytes, m.layers
        F, BW, NET = h.flops, h.mem_bw, h.interconnect_bw
        expert = m.mlp_matrices() * m.hidden * m.ffn
        dense_layer = m.layer_params(active=False) - m.n_experts * expert  # attention + shared expert + router
        # Per-unit seconds on one GPU (everything divided by tp), folded into a handful of constants.
        c = {}
        c["gemm_flop_tok"] = 2.0 * L * m.layer_params(active=True) / tp / (F * self.eff_compute)
        c["head_flop_seq"] = 2.0 * m.vocab * m.hidden / tp / (F * self.eff_compute)
        c["w_dense_s"] = (L * dense_layer + m.vocab * m.hidden) * db / tp / (BW * self.eff_mem)
        c["w_expert_s"] = L * expert * db / tp / (BW * self.eff_mem)  # per distinct expert touched
        c["n_experts"] = float(m.n_experts)
        c["k_experts"] = float(m.experts_per_token)
        c["moe"] = m.is_moe
        c["attn_flop_pair"] = 4.0 * m.q_dim * L / tp / (F * self.eff_attn)
        kvb = m.kv_bytes_per_token(db) / tp / (BW * self.eff_mem)  # seconds per token of KV moved
        c["kv_tok"] = kvb
        c["act_tok"] = 12.0 * m.hidden * db * L / tp / (BW * self.eff_mem)
        tok_bytes = m.hidden * db
        ar = tp > 1 and self.tp_comm
        c["ar_tok"] = (2.0 * L * 2.0 * (tp - 1) / tp * tok_bytes / (NET * self.eff_net)) if ar else 0.0
        c["ar_step"] = 2.0 * L * self.ar_latency_s if ar else 0.0
        link = NET if self.pp_link_bw is None else float(self.pp_link_bw)
        c["pp_tok"] = (pp - 1) * tok_bytes / (link * self.eff_net)
        c["pp_step"] = (pp - 1) * self.ar_latency_s
        c["overhead"] = self.overhead_s
        c["seq_overhead"] = self.seq_overhead_s
        self._c = c
        self._make_fast()

    def latency(self, prefill_tokens, prefill_ctx, decode_seqs, decode_ctx):
        """Seconds for one batch to pass every stage once (sum of stages + pp-1 hand-offs)."""
        if type(prefill_tokens) is np.ndarray or type(decode_seqs) is np.ndarray:
            pt = np.asarray(prefill_tokens, float)
            ds = np.asarray(decode_seqs, float)
            t = self._core(pt, np.asarray(prefill_ctx, float), ds, np.asarray(decode_ctx, float),
                           (pt > 0).astype(float), np.maximum, np.minimum)
            return np.where((pt > 0) | (ds > 0), t, 0.0)
        pt, ds = float(prefill_tokens), float(decode_seqs)
        if pt <= 0 and ds <= 0:
            return 0.0
        return self._core(pt, float(prefill_ctx), ds, float(decode_ctx), 1.0 if pt > 0 else 0.0, max, min)

    def pipeline_interval(self, prefill_tokens, prefill_ctx, decode_seqs, decode_ctx):
        """Seconds between successive micro-batches a pp > 1 replica can start: one stage's share
        of the compute (all stages are equal here) plus one hand-off; = `latency` when pp == 1."""
        c = self._c
        t = self.latency(prefill_tokens, prefill_ctx, decode_seqs, decode_ctx)
        if self.pp == 1:
            return t
        tok = np.asarray(prefill_tokens, float) + np.asarray(decode_seqs, float)
        handoffs = c["pp_tok"] * tok + c["pp_step"]
        r = (t - handoffs - c["overhead"]) / self.pp + c["overhead"] + handoffs / (self.pp - 1)
        return np.where(t > 0, r, 0.0) if np.ndim(r) else (float(r) if t > 0 else 0.0)

    def micro_batches(self, prefill_tokens, prefill_ctx, decode_seqs):
        """m = min(pp, sequences in the step) micro-batches in flight (prefill sequences estimated
        as prefill_tokens^2 / prefill_ctx)."""
        if type(prefill_tokens) is np.ndarray or type(decode_seqs) is np.ndarray:
            pt, pc, ds = (np.asarray(a, float) for a in (prefill_tokens, prefill_ctx, decode_seqs))
            return self._micro(pt, pc, ds, np.maximum, np.minimum, np.floor)
        return self._micro(float(prefill_tokens), float(prefill_ctx), float(decode_seqs), max, min, _floor)

    def _micro(self, pt, pc, ds, mx, mn, fl):
        return mn(float(self.pp), mx(1.0, fl(ds + pt * pt / mx(pc, 1.0))))

    def _period(self, pt, pc, ds, dc, P, mx, mn, fl):
        """Pipelined seconds per token of every sequence (see the module docstring); the same
        expression tree for scalars (mx=max) and arrays (mx=np.maximum), so both agree bit for bit."""
        c = self._c
        m = self._micro(pt, pc, ds, mx, mn, fl)
        pt, pc, ds, dc = pt / m, pc / m, ds / m, dc / m
        T = self._core(pt, pc, ds, dc, P, mx, mn)
        hand = c["pp_tok"] * (pt + ds) + c["pp_step"]
        interval = (T - hand - c["overhead"]) / self.pp + c["overhead"] + hand / (self.pp - 1)
        return mx(m * interval, T)

    def params(self) -> dict:
        return {k: float(getattr(self, k)) for k in PARAMS}

    def with_params(self, **kw) -> "RooflineStepTime":
        return replace(self, **kw)

    def _core(self, pt, pc, ds, dc, P, mx, mn):
        """Seconds of a non-empty step; ``P`` = 1.0 if the step has prefill tokens else 0.0.
        Only + - * / and mx/mn (exact) so the scalar and array paths agree bit for bit."""
        c = self._c
        tok = pt + ds
        seqs = ds + P  # logits computed: every decode + about one per prefill step
        if c["moe"]:
            touched = mn(tok * c["k_experts"], c["n_experts"])
            w = c["w_dense_s"] + c["w_expert_s"] * touched
        else:
            w = c["w_dense_s"] + c["w_expert_s"]  # same sum as the scalar path's `wdense`
        gemm = mx(c["gemm_flop_tok"] * tok + c["head_flop_seq"] * seqs, w)
        attn_p = mx(c["attn_flop_pair"] * (pc * 0.5), c["kv_tok"] * (pt + pc / Q_BLOCK))
        attn_d = mx(c["attn_flop_pair"] * dc, c["kv_tok"] * (dc + ds))
        comm = c["ar_tok"] * tok + c["ar_step"] + c["pp_tok"] * tok + c["pp_step"]
        return c["overhead"] + c["seq_overhead"] * seqs + gemm + attn_p + attn_d + c["act_tok"] * tok + comm

    def step_time(self, prefill_tokens, prefill_ctx, decode_seqs, decode_ctx):
        if type(prefill_tokens) is np.ndarray or type(decode_seqs) is np.ndarray:
            pt = np.asarray(prefill_tokens, float)
            ds = np.asarray(decode_seqs, float)
            P = (pt > 0).astype(float)
            pc, dc = np.asarray(prefill_ctx, float), np.asarray(decode_ctx, float)
            if self._pipelined:
                t = self._period(pt, pc, ds, dc, P, np.maximum, np.minimum, np.floor)
            else:
                t = self._core(pt, pc, ds, dc, P, np.maximum, np.minimum)
            return np.where((pt > 0) | (ds > 0), t, 0.0)
        return self._fast(prefill_tokens, prefill_ctx, decode_seqs, decode_ctx)

    def _make_fast(self):
        """`step_time` as a closure over local constants (no attribute or dict lookups in the hot
        loop), installed on the instance; the scalar branch has the same expression tree as
        `_core`, so results are bit-identical to the array path."""
        c = self._c
        vector = RooflineStepTime.step_time.__get__(self)
        self._pipelined = self.pp > 1 and self.pp_schedule == "pipelined"
        if self._pipelined:
            period = self._period
            ndarray = np.ndarray

            def step_time(prefill_tokens, prefill_ctx, decode_seqs, decode_ctx):
                if type(prefill_tokens) is ndarray or type(decode_seqs) is ndarray:
                    return vector(prefill_tokens, prefill_ctx, decode_seqs, decode_ctx)
                pt, ds = float(prefill_tokens), float(decode_seqs)
                if pt > 0:
                    P = 1.0
                elif ds > 0:
                    P = 0.0
                else:
                    return 0.0
                return period(pt, float(prefill_ctx), ds, float(decode_ctx), P, max, min, _floor)

            self._fast = step_time
            self.step_time = step_time
            return
        gft, hfs, wd, we = c["gemm_flop_tok"], c["head_flop_seq"], c["w_dense_s"], c["w_expert_s"]
        nexp, kexp, moe = c["n_experts"], c["k_experts"], c["moe"]
        afp, kvt, act = c["attn_flop_pair"], c["kv_tok"], c["act_tok"]
        art, ars, ppt, pps = c["ar_tok"], c["ar_step"], c["pp_tok"], c["pp_step"]
        ov, sov = c["overhead"], c["seq_overhead"]
        wdense = wd + we

        ndarray = np.ndarray

        def step_time(prefill_tokens, prefill_ctx, decode_seqs, decode_ctx):
            if type(prefill_tokens) is ndarray or type(decode_seqs) is ndarray:
                return vector(prefill_tokens, prefill_ctx, decode_seqs, decode_ctx)
            pt, pc, ds, dc = float(prefill_tokens), float(prefill_ctx), float(decode_seqs), float(decode_ctx)
            if pt > 0:
                P = 1.0
            elif ds > 0:
                P = 0.0
            else:
                return 0.0
            tok = pt + ds
            seqs = ds + P
            w = wd + we * min(tok * kexp, nexp) if moe else wdense
            gemm = max(gft * tok + hfs * seqs, w)
            attn_p = max(afp * (pc * 0.5), kvt * (pt + pc / Q_BLOCK))
            attn_d = max(afp * dc, kvt * (dc + ds))
            comm = art * tok + ars + ppt * tok + pps
            return ov + sov * seqs + gemm + attn_p + attn_d + act * tok + comm

        self._fast = step_time
        self.step_time = step_time  # instance attribute: shadows the method for direct calls


def _floor(x: float) -> float:
    return float(math.floor(x))


def fit_roofline(prior: RooflineStepTime, df: pd.DataFrame, params: tuple[str, ...] = PARAMS) -> RooflineStepTime:
    """Calibrate the roofline's efficiencies/overheads on a measurement table (least squares on
    relative error, parameters within `BOUNDS`)."""
    from scipy.optimize import least_squares

    X = [df[c].to_numpy(float) for c in AGGREGATES]
    y = df.step_s.to_numpy(float)
    params = tuple(p for p in params if not (p in ("eff_net", "ar_latency_s") and prior.tp == 1 and prior.pp == 1))
    x0 = np.array([getattr(prior, p) for p in params], float)
    lo = np.array([BOUNDS[p][0] for p in params])
    hi = np.array([BOUNDS[p][1] for p in params])
    x0 = np.clip(x0, lo + 1e-12, hi)
    span = hi - lo

    def resid(z):
        m = prior.with_params(**dict(zip(params, (lo + span * z).tolist())))
        return m.step_time(*X) / y - 1.0

    # the max() terms make the surface piecewise smooth: start from the prior and from a few
    # spread-out points, keep the best
    best = None
    for z0 in ((x0 - lo) / span, np.full(len(params), 0.5), np.full(len(params), 0.15)):
        r = least_squares(resid, z0, bounds=(0.0, 1.0), x_scale="jac", max_nfev=300)
        if best is None or r.cost < best.cost:
            best = r
    r = best
    out = prior.with_params(**dict(zip(params, (lo + span * r.x).tolist())))
    out.meta = {"fitted_on_rows": int(len(df)), "fitted_params": list(params), "cost": float(r.cost)}
    return out


HOST_PARAMS = ("overhead_s", "seq_overhead_s")  # the host's and engine build's costs, not the GPU's
GPU_PARAMS = ("eff_compute", "eff_mem", "eff_attn")  # the GPU's achieved fractions of its datasheet


def fit_roofline_shared(priors: list[RooflineStepTime], dfs: list[pd.DataFrame],
                        shared: tuple[str, ...] = HOST_PARAMS,
                        per_set: tuple[str, ...] = GPU_PARAMS) -> list[RooflineStepTime]:
    """Calibrate several rooflines at once (one per measurement table, e.g. several models on one
    machine): the ``shared`` parameters take one value for all of them, the ``per_set`` ones one
    value per table. The default shares the per-step and per-sequence costs (CPU scheduling,
    launch, sampling: a property of the host and engine build) and fits the efficiencies per
    model (they depend on the model's shapes). One table cannot separate a fixed per-step cost
    from the efficiencies (both shift small steps); several models on the same host can.

    Least squares on relative error within `BOUNDS`, as `fit_roofline` (same starting points);
    the Jacobian's sparsity (a table's residuals depend on the shared and its own parameters
    only) keeps the cost of a finite-difference Jacobian at len(shared) + len(per_set) calls."""
    from scipy.optimize import least_squares
    from scipy.sparse import lil_matrix

    if len(priors) != len(dfs) or not priors:
        raise ValueError("fit_roofline_shared: need one prior per table and at least one table")
    bad = [p for p in (*shared, *per_set) if p not in BOUNDS]
    if bad or set(shared) & set(per_set):
        raise ValueError(f"fit_roofline_shared: unknown or repeated parameter(s) {bad or sorted(set(shared) & set(per_set))}; "
                         f"choose from {PARAMS}")
    X = [[d[c].to_numpy(float) for c in AGGREGATES] for d in dfs]
    Y = [d.step_s.to_numpy(float) for d in dfs]
    ns, nk, n = len(shared), len(per_set), len(dfs)
    names = list(shared) + [p for _ in range(n) for p in per_set]
    lo = np.array([BOUNDS[p][0] for p in names])
    hi = np.array([BOUNDS[p][1] for p in names])
    span = hi - lo
    x0 = np.array([getattr(priors[0], p) for p in shared] + [getattr(pr, p) for pr in priors for p in per_set], float)
    x0 = np.clip(x0, lo + 1e-12, hi)
    off = np.cumsum([0] + [len(y) for y in Y])
    S = lil_matrix((int(off[-1]), len(names)), dtype=np.int8)
    S[:, :ns] = 1
    for i in range(n):
        S[off[i]:off[i + 1], ns + i * nk: ns + (i + 1) * nk] = 1

    def models(z):
        v = (lo + span * z).tolist()
        common = dict(zip(shared, v[:ns]))
        return [pr.with_params(**common, **dict(zip(per_set, v[ns + i * nk: ns + (i + 1) * nk])))
                for i, pr in enumerate(priors)]

    def resid(z):
        return np.concatenate([m.step_time(*x) / y - 1.0 for m, x, y in zip(models(z), X, Y)])

    best = None
    for z0 in ((x0 - lo) / span, np.full(len(names), 0.5), np.full(len(names), 0.15)):
        r = least_squares(resid, z0, bounds=(0.0, 1.0), x_scale="jac", max_nfev=300, jac_sparsity=S)
        if best is None or r.cost < best.cost:
            best = r
    out = models(best.x)
    for m, d in zip(out, dfs):
        m.meta = {"fitted_on_rows": int(len(d)), "fitted_params": list(per_set), "shared_params": list(shared),
                  "shared_over_rows": int(off[-1]), "shared_over_sets": n, "cost": float(best.cost)}
    return out
