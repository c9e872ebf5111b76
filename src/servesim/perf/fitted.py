"""Few-coefficient step-time models fitted by least squares from a measurement table.

    prefill-containing step:  a_p + b_pt*prefill_tokens + c_pc*prefill_ctx + b_ds*decode_seqs + c_dc*decode_ctx
    decode-only step:         a_d + b_ds*decode_seqs + c_dc*decode_ctx

(the decode terms of a mixed batch add to the prefill terms; one intercept per step because a
step is one forward pass). The form ``quadratic-seqs`` (`FORMS`) adds b_ds2*decode_seqs^2 to both:
a serving engine's per-sequence work that grows with the batch (issue 33: vLLM 0.32 on a CPU core
ran decode steps of 24-32 sequences 17 % over the linear fit made on its own steps, and those of
1 sequence 5 % over, 4-8 sequences 3 % under; with the term every batch size was within 5 %). The
form ``quadratic-ctx`` adds c_dc2*decode_ctx^2 as well: attention whose cost per context token grows
with the KV the batch holds (issue 33: on the paper-scale engine of 7 Dec a fit over contexts to
max_model_len ran 5 % under small batches and 9 % over full ones without it).
Communication terms for tensor parallelism (ring all-reduce volume
factor f_tp = 2(tp-1)/tp) and pipeline parallelism (f_pp = pp-1) scale per-token and per-step
costs; they are fitted only when the table spans several tp / pp values, and folded into the
six coefficients above for the replica's (tp, pp) at construction.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from .base import StepTimeModel
from .measurements import AGGREGATES, MeasurementError

BASE_COEFS = ("a_p", "a_d", "b_pt", "c_pc", "b_ds", "c_dc", "b_ds2", "c_dc2")
COMM_COEFS = ("k_tp_tok", "k_tp_step", "k_pp_tok", "k_pp_step")
COEFS = BASE_COEFS + COMM_COEFS
#: the fitted forms: ``linear`` (the six terms above), ``quadratic-seqs`` (with b_ds2) or
#: ``quadratic-ctx`` (with b_ds2 and c_dc2)
FORMS = ("linear", "quadratic-seqs", "quadratic-ctx")
#: how `fit` weighs the rows: ``relative`` (each row's error over its measured time: squared
#: relative error, the MAPE we report), ``relative-to-fit`` (each row's error over the fit's own
#: prediction, iterated to a fixed point: relative weights that do not favour the rows whose noise
#: ran low, so the fit is the batch's mean step time; dividing by the measured time pulls the
#: fit below that mean wherever the noise is skewed to slow steps, as a host's is: on the
#: paper-scale engine's live profile of 7 Dec the ``relative`` fit under-predicted its own steps'
#: total time by 2.3 %, which queueing at load 0.9 made -10 % in E2E), ``absolute`` (squared
#: seconds, R²) or ``median`` (each row's absolute log error, by iteratively reweighted least
#: squares: the batch's median step time, the fit that a median APE scores; below the mean where
#: slow steps scatter further, so it is the step-time check's measure of the form, not a model for
#: latencies, which sum the steps)
WEIGHTINGS = ("relative", "relative-to-fit", "absolute", "median")
#: `fit`'s ``relative-to-fit`` iterations at most, and the relative change of every prediction
#: under which it stops
_REFIT_ITERATIONS, _REFIT_TOL = 100, 1e-10
#: ``median``'s reweighting: a row's absolute log error counts as at least this (the usual
#: guard of IRLS for least absolute deviations against rows the fit already passes through)
_L1_FLOOR = 1e-4


def tp_factor(tp) -> float:
    return 2.0 * (tp - 1) / tp


@dataclass
class FittedStepTime(StepTimeModel):
    """The fitted few-coefficient model (coefficients in seconds per unit)."""

    a_p: float = 0.0
    a_d: float = 0.0
    b_pt: float = 0.0
    c_pc: float = 0.0
    b_ds: float = 0.0
    c_dc: float = 0.0
    b_ds2: float = 0.0
    c_dc2: float = 0.0
    k_tp_tok: float = 0.0
    k_tp_step: float = 0.0
    k_pp_tok: float = 0.0
    k_pp_step: float = 0.0
    tp: int = 1
    pp: int = 1
    name: str = "fitted"
    meta: dict = field(default_factory=dict)

    def __post_init__(self):
        ft, fp = tp_factor(self.tp), float(self.pp - 1)
        step = self.k_tp_step * ft + self.k_pp_step * fp
        tok = self.k_tp_tok * ft + self.k_pp_tok * fp
        # effective coefficients for this replica; the hot path reads only these
        self._e = (self.a_p + step, self.a_d + step, self.b_pt + tok, self.c_pc, self.b_ds + tok, self.c_dc, self.b_ds2,
                   self.c_dc2)
        ap, ad, bpt, cpc, bds, cdc, bds2, cdc2 = self._e
        vector = FittedStepTime.step_time.__get__(self)
        ndarray = np.ndarray

        def step_time(prefill_tokens, prefill_ctx, decode_seqs, decode_ctx):
            # scalar fast path as a closure (installed on the instance); the method's vector arithmetic
            if type(prefill_tokens) is ndarray or type(decode_seqs) is ndarray:
                return vector(prefill_tokens, prefill_ctx, decode_seqs, decode_ctx)
            if prefill_tokens > 0:
                a = ap
            elif decode_seqs > 0:
                a = ad
            else:
                return 0.0
            ds, dc = float(decode_seqs), float(decode_ctx)
            return float(a + bpt * float(prefill_tokens) + cpc * float(prefill_ctx) + bds * ds + cdc * dc
                         + bds2 * (ds * ds) + cdc2 * (dc * dc))

        def step_time_no_ctx2(prefill_tokens, prefill_ctx, decode_seqs, decode_ctx):
            # the same without the c_dc2 term (0 in every form but quadratic-ctx): adding 0.0 changes
            # no value, and leaving it out keeps the simulator's hottest call 8 % faster
            if type(prefill_tokens) is ndarray or type(decode_seqs) is ndarray:
                return vector(prefill_tokens, prefill_ctx, decode_seqs, decode_ctx)
            if prefill_tokens > 0:
                a = ap
            elif decode_seqs > 0:
                a = ad
            else:
                return 0.0
            ds = float(decode_seqs)
            return float(a + bpt * float(prefill_tokens) + cpc * float(prefill_ctx) + bds * ds
                         + cdc * float(decode_ctx) + bds2 * (ds * ds))

        self._scalar = step_time  # every term: the method's scalar path too
        self.step_time = step_time if cdc2 else step_time_no_ctx2

    def coefficients(self) -> dict:
        return {k: float(getattr(self, k)) for k in COEFS}

    def with_parallelism(self, tp: int = 1, pp: int = 1) -> "FittedStepTime":
        return FittedStepTime(**self.coefficients(), tp=tp, pp=pp, name=self.name, meta=dict(self.meta))

    def step_time(self, prefill_tokens, prefill_ctx, decode_seqs, decode_ctx):
        ap, ad, bpt, cpc, bds, cdc, bds2, cdc2 = self._e
        if type(prefill_tokens) is np.ndarray or type(decode_seqs) is np.ndarray:
            pt = np.asarray(prefill_tokens, dtype=float)
            ds = np.asarray(decode_seqs, dtype=float)
            dc = np.asarray(decode_ctx, float)
            a = np.where(pt > 0, ap, np.where(ds > 0, ad, 0.0))
            t = a + bpt * pt + cpc * np.asarray(prefill_ctx, float) + bds * ds + cdc * dc \
                + bds2 * (ds * ds) + cdc2 * (dc * dc)
            return np.where((pt > 0) | (ds > 0), t, 0.0)
        # scalars: the closure of __post_init__, the same operations in the same order (bit-identical)
        return self._scalar(prefill_tokens, prefill_ctx, decode_seqs, decode_ctx)


def design(df: pd.DataFrame, form: str = "linear") -> tuple[np.ndarray, list[str]]:
    """Feature matrix of a measurement table and the coefficient names of its columns."""
    if form not in FORMS:
        raise ValueError(f"form must be one of {FORMS}, got {form!r}")
    pt, pc, ds, dc = (df[c].to_numpy(float) for c in AGGREGATES)
    P = (pt > 0).astype(float)
    D = ((pt == 0) & (ds > 0)).astype(float)
    cols = {"a_p": P, "a_d": D, "b_pt": pt, "c_pc": pc, "b_ds": ds, "c_dc": dc}
    if form in ("quadratic-seqs", "quadratic-ctx"):
        cols["b_ds2"] = ds * ds
    if form == "quadratic-ctx":
        cols["c_dc2"] = dc * dc
    tok, step = pt + ds, np.ones(len(df))
    for col, fn, pre in (("tp", tp_factor, "k_tp"), ("pp", lambda v: v - 1.0, "k_pp")):
        if col in df.columns and df[col].nunique() > 1:
            f = fn(df[col].to_numpy(float))
            cols[f"{pre}_tok"] = f * tok
            cols[f"{pre}_step"] = f * step
    # drop features that are identically zero (e.g. no decode rows): they cannot be identified
    names = [k for k, v in cols.items() if np.any(v != 0)]
    return np.column_stack([cols[k] for k in names]), names


def fit(df: pd.DataFrame, weighting: str = "relative", tp: int | None = None, pp: int | None = None,
        name: str = "fitted", form: str = "linear") -> FittedStepTime:
    """Least-squares fit (non-negative coefficients) of `FittedStepTime` to a measurement table.

    ``weighting`` (`WEIGHTINGS`): ``"relative"`` minimises squared relative error (each row divided
    by its measured time, which matches the MAPE we report); ``"relative-to-fit"`` divides each
    row by the fit's prediction instead, refitting until the predictions hold (the batch's mean
    step time under noise proportional to it); ``"absolute"`` minimises squared seconds (matches R²);
    ``"median"`` minimises the sum of absolute log errors (the median step time, reweighted
    from the relative fit until the predictions hold or the iterations run out).
    The returned model is for ``tp``/``pp`` (default: the table's value when it has a single one).
    ``form``: `FORMS` (``quadratic-seqs`` adds the b_ds2 term, ``quadratic-ctx`` b_ds2 and c_dc2).
    """
    if len(df) == 0:
        raise MeasurementError("cannot fit a step-time model to an empty table")
    if weighting not in WEIGHTINGS:
        raise ValueError(f"weighting must be one of {WEIGHTINGS}, got {weighting!r}")
    X, names = design(df, form)
    y = df["step_s"].to_numpy(float)
    scale = np.abs(X).max(axis=0)  # column scaling keeps NNLS well conditioned
    from scipy.optimize import nnls  # here, not at import: every simulation job imports this module, few fit

    def solve(w, target=y):
        c, _ = nnls(X * w[:, None] / scale, target * w, maxiter=50 * X.shape[1])
        return c / scale

    coef = solve(np.ones_like(y) if weighting == "absolute" else 1.0 / y)
    if weighting in ("relative-to-fit", "median"):  # from the relative fit, reweigh to a fixed point
        # a row the fit gives (next to) no time weighs as one of a thousandth of the median step
        floor = 1e-3 * float(np.median(y))
        pred = X @ coef
        for _ in range(_REFIT_ITERATIONS):
            if weighting == "median":  # the L1 norm of r = log(y / pred), linearised at pred: (z - Xc) / pred
                p = np.maximum(pred, floor)
                r = np.log(y / p)
                coef = solve(1.0 / (p * np.sqrt(np.maximum(np.abs(r), _L1_FLOOR))), p * (1.0 + r))
            else:
                coef = solve(1.0 / np.maximum(pred, floor))
            new = X @ coef
            done = np.max(np.abs(new - pred) / np.maximum(pred, floor)) < _REFIT_TOL
            pred = new
            if done:
                break
    vals = dict(zip(names, coef.tolist()))

    def single(col, default):
        if col in df.columns and df[col].nunique() == 1:
            return int(df[col].iloc[0])
        return default

    tp = tp if tp is not None else single("tp", 1)
    pp = pp if pp is not None else single("pp", 1)
    if "tp" in df.columns and df["tp"].nunique() == 1 and tp != int(df["tp"].iloc[0]):
        raise MeasurementError(f"the table holds only tp={int(df['tp'].iloc[0])}; it cannot predict tp={tp}")
    if "pp" in df.columns and df["pp"].nunique() == 1 and pp != int(df["pp"].iloc[0]):
        raise MeasurementError(f"the table holds only pp={int(df['pp'].iloc[0])}; it cannot predict pp={pp}")
    # a single-tp table has no comm features (k_* = 0): its comm cost is inside the base terms
    return FittedStepTime(**vals, tp=int(tp), pp=int(pp), name=name,
                          meta={"fitted_on_rows": int(len(df)), "weighting": weighting, "form": form, "features": names,
                                # a regime absent from the table has unidentified terms (left 0):
                                # do not use the model for it
                                "regimes": sorted(set(df["regime"])) if "regime" in df.columns else None})
