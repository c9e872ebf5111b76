"""An engine's costs on top of a kernel-level step time: t = k_regime * base(step) + overhead_s
+ seq_overhead_s * sequences.

``base`` is any step-time model of the GPU work alone (a `gpu_bench` table of PyTorch forwards,
a roofline). What it misses is the serving engine's own part: kernels faster or slower than the
reference forward (a factor per regime: ``k_prefill`` for steps with prefill tokens, ``k_decode``
for decode-only steps) and CPU work per step (scheduling, launch) and per sequence (sampling,
detokenisation, bookkeeping). The four numbers are fitted on one set of (model, GPU) measurements
and moved to another model on the same GPU and engine (`fit_engine_overhead`); they are engine
facts, not model facts, which is what the move tests.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from .base import StepTimeModel
from .measurements import AGGREGATES

PARAMS = ("k_prefill", "k_decode", "overhead_s", "seq_overhead_s")


def sequences(prefill_tokens, prefill_ctx, decode_seqs):
    """Sequences in a step: decodes plus prefill prompts, estimated as prefill_tokens^2 / prefill_ctx
    (exact for equal fresh prompts, as `roofline` counts them)."""
    pt, pc = np.asarray(prefill_tokens, float), np.asarray(prefill_ctx, float)
    with np.errstate(divide="ignore", invalid="ignore"):
        n_pre = np.where(pc > 0, pt * pt / np.where(pc > 0, pc, 1.0), 0.0)
    return n_pre + np.asarray(decode_seqs, float)


@dataclass
class EngineOverheadStepTime(StepTimeModel):
    base: StepTimeModel
    k_prefill: float = 1.0
    k_decode: float = 1.0
    overhead_s: float = 0.0
    seq_overhead_s: float = 0.0
    name: str = "engine-overhead"
    meta: dict = field(default_factory=dict)

    def step_time(self, prefill_tokens, prefill_ctx, decode_seqs, decode_ctx):
        scalar = np.ndim(prefill_tokens) == 0 and np.ndim(decode_seqs) == 0
        pt, pc, ds = (np.atleast_1d(np.asarray(v, float)) for v in (prefill_tokens, prefill_ctx, decode_seqs))
        dc = np.atleast_1d(np.asarray(decode_ctx, float))
        t = np.asarray(self.base.step_time(pt, pc, ds, dc), float)
        k = np.where(pt > 0, self.k_prefill, self.k_decode)
        out = k * t + self.overhead_s + self.seq_overhead_s * sequences(pt, pc, ds)
        out = np.where((pt == 0) & (ds == 0), 0.0, out)
        return float(out[0]) if scalar else out


def fit_engine_overhead(base: StepTimeModel, df: pd.DataFrame, base_for=None) -> EngineOverheadStepTime:
    """Least squares on relative error over one or more measurement tables.

    ``df`` may hold several (model, GPU) sets: ``base_for(sub_df)`` then returns each set's base
    model (``base`` is used where it is None), and one set of four numbers is fitted to all."""
    from scipy.optimize import least_squares

    groups = [(base, df)] if base_for is None else [(base_for(g), g) for _, g in df.groupby("model", sort=True)]
    cols = []
    for b, g in groups:
        X = [g[c].to_numpy(float) for c in AGGREGATES]
        cols.append((np.asarray(b.step_time(*X), float), X[0] > 0, sequences(X[0], X[1], X[2]), g.step_s.to_numpy(float)))
    t = np.concatenate([c[0] for c in cols])
    pre = np.concatenate([c[1] for c in cols])
    seqs = np.concatenate([c[2] for c in cols])
    y = np.concatenate([c[3] for c in cols])

    def resid(z):
        return (np.where(pre, z[0], z[1]) * t + z[2] + z[3] * seqs) / y - 1.0

    r = least_squares(resid, [1.0, 1.0, 1e-3, 1e-5], bounds=([0.1, 0.1, 0.0, 0.0], [10.0, 10.0, 0.2, 2e-3]), x_scale="jac")
    out = EngineOverheadStepTime(base, *map(float, r.x))
    out.meta = {"fitted_on_rows": int(len(y)), "fitted_on_models": sorted(set(df.model)) if "model" in df else []}
    return out
