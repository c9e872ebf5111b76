"""Profile-table backend: interpolate measured step times inside the measured grid, fall back to
a fitted model outside it, and count every fallback (``out_of_grid``) -- never extrapolate silently.

A table holds measured prefill-only and decode-only steps. Each regime gets a grid:

- prefill, ``axes="2d"``: (L, B) = (prefill_ctx / prefill_tokens, prefill_tokens / L), i.e. B fresh
  prompts of L tokens; ``axes="tokens"``: prefill_tokens only (SageServe's Splitwise reading).
- decode, ``axes="2d"``: (C, B) = (decode_ctx / decode_seqs, decode_seqs); ``axes="seqs"``: decode_seqs.

Interpolation is bilinear between the measured grid points surrounding the query (exact at the
points); a query is inside the grid only if every grid point it needs was measured. A mixed step
is the prefill interpolation plus the decode interpolation minus the per-step overhead (the
fallback model's decode intercept), since both share one forward pass. Several measurements of
one grid point are combined by their median.
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass

import numpy as np
import pandas as pd

from .base import StepTimeModel
from .fitted import fit
from .measurements import AGGREGATES, MeasurementError


@dataclass
class Grid:
    """Values on a rectangular grid xs x ys with holes (NaN = not measured)."""

    xs: np.ndarray
    ys: np.ndarray
    v: np.ndarray  # shape (len(xs), len(ys))

    def __post_init__(self):
        self._xs, self._ys = self.xs.tolist(), self.ys.tolist()
        self._v = self.v.tolist()
        self._nx, self._ny = len(self._xs), len(self._ys)

    @classmethod
    def from_points(cls, x, y, t) -> "Grid":
        df = pd.DataFrame({"x": x, "y": y, "t": t}).groupby(["x", "y"]).t.median()
        xs = np.array(sorted(df.index.get_level_values(0).unique()), float)
        ys = np.array(sorted(df.index.get_level_values(1).unique()), float)
        v = np.full((len(xs), len(ys)), np.nan)
        ix = {x: i for i, x in enumerate(xs)}
        iy = {y: j for j, y in enumerate(ys)}
        for (x_, y_), t_ in df.items():
            v[ix[x_], iy[y_]] = t_
        return cls(xs, ys, v)

    # The scalar and vector versions below run the same arithmetic in the same order.
    def scalar(self, x: float, y: float) -> float:
        """Interpolated value, or NaN outside the measured grid."""
        xs, ys, v = self._xs, self._ys, self._v
        if not (xs[0] <= x <= xs[-1] and ys[0] <= y <= ys[-1]):
            return float("nan")
        i = min(bisect_right(xs, x) - 1, self._nx - 2) if self._nx > 1 else 0
        j = min(bisect_right(ys, y) - 1, self._ny - 2) if self._ny > 1 else 0
        wx = (x - xs[i]) / (xs[i + 1] - xs[i]) if self._nx > 1 else 0.0
        wy = (y - ys[j]) / (ys[j + 1] - ys[j]) if self._ny > 1 else 0.0
        lo = (1.0 - wx) * v[i][j] + (wx * v[i + 1][j] if wx > 0 else 0.0)
        if wy > 0:
            hi = (1.0 - wx) * v[i][j + 1] + (wx * v[i + 1][j + 1] if wx > 0 else 0.0)
            return (1.0 - wy) * lo + wy * hi
        return (1.0 - wy) * lo + 0.0

    def vector(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        xs, ys, v = self.xs, self.ys, self.v
        nx, ny = len(xs), len(ys)
        inside = (x >= xs[0]) & (x <= xs[-1]) & (y >= ys[0]) & (y <= ys[-1])
        xc = np.where(inside, x, xs[0])
        yc = np.where(inside, y, ys[0])
        i = np.minimum(np.searchsorted(xs, xc, side="right") - 1, nx - 2) if nx > 1 else np.zeros(len(x), int)
        j = np.minimum(np.searchsorted(ys, yc, side="right") - 1, ny - 2) if ny > 1 else np.zeros(len(x), int)
        i1 = i + 1 if nx > 1 else i
        j1 = j + 1 if ny > 1 else j
        wx = (xc - xs[i]) / (xs[i1] - xs[i]) if nx > 1 else np.zeros(len(x))
        wy = (yc - ys[j]) / (ys[j1] - ys[j]) if ny > 1 else np.zeros(len(x))
        with np.errstate(invalid="ignore"):
            lo = (1.0 - wx) * v[i, j] + np.where(wx > 0, wx * v[i1, j], 0.0)
            hi = (1.0 - wx) * v[i, j1] + np.where(wx > 0, wx * v[i1, j1], 0.0)
            out = np.where(wy > 0, (1.0 - wy) * lo + wy * hi, (1.0 - wy) * lo + 0.0)
        return np.where(inside, out, np.nan)


class TableStepTime(StepTimeModel):
    """Interpolated profile table with a counted fallback (see module docstring)."""

    def __init__(self, table: pd.DataFrame, prefill_axes: str = "2d", decode_axes: str = "2d",
                 fallback: StepTimeModel | None = None, name: str = "table", tp: int = 1, pp: int = 1):
        if prefill_axes not in ("2d", "tokens") or decode_axes not in ("2d", "seqs"):
            raise ValueError(f"axes must be prefill '2d'|'tokens' and decode '2d'|'seqs', got {prefill_axes!r}, {decode_axes!r}")
        self.name, self.tp, self.pp = name, tp, pp
        self.prefill_axes, self.decode_axes = prefill_axes, decode_axes
        pre = table[(table.prefill_tokens > 0) & (table.decode_seqs == 0)]
        dec = table[(table.prefill_tokens == 0) & (table.decode_seqs > 0)]
        if pre.empty and dec.empty:
            raise MeasurementError(f"{name}: the table has no prefill-only or decode-only rows to interpolate")
        self.fallback = fallback if fallback is not None else fit(table, name=f"{name}-fallback")
        self._overhead = float(getattr(self.fallback, "a_d", 0.0))
        self.pre_grid = Grid.from_points(*self._pre_xy(pre.prefill_tokens.to_numpy(float), pre.prefill_ctx.to_numpy(float)), pre.step_s) if len(pre) else None
        self.dec_grid = Grid.from_points(*self._dec_xy(dec.decode_seqs.to_numpy(float), dec.decode_ctx.to_numpy(float)), dec.step_s) if len(dec) else None
        self.out_of_grid = 0  # how many step_time evaluations fell back to the fitted model
        self.calls = 0

    # grid coordinates of the aggregates
    def _pre_xy(self, pt, pc):
        if self.prefill_axes == "tokens":
            return pt, pt * 0.0
        L = pc / pt
        return L, pt / L

    def _dec_xy(self, ds, dc):
        if self.decode_axes == "seqs":
            return ds, ds * 0.0
        return dc / ds, ds

    def reset_counters(self) -> None:
        self.out_of_grid = 0
        self.calls = 0

    def step_time(self, prefill_tokens, prefill_ctx, decode_seqs, decode_ctx):
        if type(prefill_tokens) is np.ndarray or type(decode_seqs) is np.ndarray:
            return self._vector(prefill_tokens, prefill_ctx, decode_seqs, decode_ctx)
        self.calls += 1
        pt, pc, ds, dc = float(prefill_tokens), float(prefill_ctx), float(decode_seqs), float(decode_ctx)
        if pt <= 0 and ds <= 0:
            return 0.0
        t = 0.0
        if pt > 0:
            if self.pre_grid is None:
                t = float("nan")
            else:
                if self.prefill_axes == "tokens":
                    t = self.pre_grid.scalar(pt, 0.0)
                else:
                    L = pc / pt
                    t = self.pre_grid.scalar(L, pt / L)
        if ds > 0 and t == t:
            d = float("nan") if self.dec_grid is None else (
                self.dec_grid.scalar(ds, 0.0) if self.decode_axes == "seqs" else self.dec_grid.scalar(dc / ds, ds))
            t = d if pt <= 0 else t + (d - self._overhead)
        if t != t:  # NaN: outside the measured grid
            self.out_of_grid += 1
            return self.fallback.step_time(pt, pc, ds, dc)
        return t

    def _vector(self, prefill_tokens, prefill_ctx, decode_seqs, decode_ctx):
        pt = np.asarray(prefill_tokens, float)
        pc = np.asarray(prefill_ctx, float)
        ds = np.asarray(decode_seqs, float)
        dc = np.asarray(decode_ctx, float)
        n = len(pt)
        self.calls += n
        hp, hd = pt > 0, ds > 0
        with np.errstate(divide="ignore", invalid="ignore"):
            if self.pre_grid is None:
                tp_ = np.full(n, np.nan)
            elif self.prefill_axes == "tokens":
                tp_ = self.pre_grid.vector(pt, np.zeros(n))
            else:
                L = pc / pt
                tp_ = self.pre_grid.vector(L, pt / L)
            if self.dec_grid is None:
                td = np.full(n, np.nan)
            elif self.decode_axes == "seqs":
                td = self.dec_grid.vector(ds, np.zeros(n))
            else:
                td = self.dec_grid.vector(dc / ds, ds)
        t = np.where(hp, np.where(hd, tp_ + (td - self._overhead), tp_), td)
        t = np.where(hp | hd, t, 0.0)
        bad = np.isnan(t)
        if bad.any():
            self.out_of_grid += int(bad.sum())
            t[bad] = self.fallback.step_time(pt[bad], pc[bad], ds[bad], dc[bad])
        return t

    def inside(self, prefill_tokens, prefill_ctx, decode_seqs, decode_ctx) -> np.ndarray:
        """Which of these steps the table covers (without counting them)."""
        calls, oog = self.calls, self.out_of_grid
        fb = self.fallback
        self.fallback = _NaN()
        try:
            t = self._vector(*(np.atleast_1d(np.asarray(a, float)) for a in (prefill_tokens, prefill_ctx, decode_seqs, decode_ctx)))
        finally:
            self.fallback, self.calls, self.out_of_grid = fb, calls, oog
        return ~np.isnan(t)


class _NaN(StepTimeModel):
    def step_time(self, *a):
        return np.full(len(np.atleast_1d(a[0])), np.nan)


def from_points(df: pd.DataFrame, **kw) -> TableStepTime:
    """A table backend from a measurement table."""
    missing = [c for c in AGGREGATES if c not in df.columns]
    if missing:
        raise MeasurementError(f"table lacks {missing}")
    return TableStepTime(df, **kw)
