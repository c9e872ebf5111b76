"""The step-time measurement table (engine profiling -> calibration) and error metrics.

Columns: ``prefill_tokens, prefill_ctx, decode_seqs, decode_ctx, step_s`` (the four aggregates
of `StepTimeModel.step_time` and the measured seconds), plus optional metadata
(``model, hardware, tp, pp, source, regime``). CSV or Parquet.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pandas as pd

from servesim.tables import read_table
from servesim.errors import InputError

AGGREGATES = ("prefill_tokens", "prefill_ctx", "decode_seqs", "decode_ctx")
COLUMNS = (*AGGREGATES, "step_s")
OPTIONAL = ("model", "hardware", "tp", "pp", "source", "regime")
REGIMES = ("prefill-heavy", "decode-heavy", "mixed")
#: the longest plausible step_s, in seconds. One engine iteration (a forward pass of one batch) takes
#: milliseconds on a GPU and at most seconds to minutes for the largest prefill batches on a CPU; an
#: hour per step is beyond any real one, so a longer value is a unit error (microseconds written as
#: seconds) or a corrupt row, and one such row would dominate the fit (a 1e12 s step was fitted silently).
MAX_STEP_S = 3600.0


class MeasurementError(InputError):
    """A measurement table is malformed; the message names the file, column or row."""


def regime(prefill_tokens, decode_seqs) -> np.ndarray:
    """Classify iterations: prefill-only -> 'prefill-heavy', decode-only -> 'decode-heavy', else
    'mixed' (a batch with both; chunked-prefill iterations carrying decodes fall here)."""
    pt = np.asarray(prefill_tokens)
    ds = np.asarray(decode_seqs)
    return np.where(ds == 0, "prefill-heavy", np.where(pt == 0, "decode-heavy", "mixed"))


def validate(df: pd.DataFrame, source: str = "<table>") -> pd.DataFrame:
    """Check columns, types and values; add ``regime`` if absent. Errors name source, column, row."""
    missing = [c for c in COLUMNS if c not in df.columns]
    if missing:
        raise MeasurementError(f"{source}: missing column(s) {', '.join(missing)} (need {', '.join(COLUMNS)})")
    df = df.copy()
    for c in COLUMNS:
        v = pd.to_numeric(df[c], errors="coerce")
        bad = v.isna() | ~np.isfinite(v) | (v < 0)
        if bad.any():
            i = int(np.flatnonzero(bad.to_numpy())[0])
            raise MeasurementError(f"{source}: row {i}: column {c} must be a finite number >= 0, got {df[c].iloc[i]!r}")
        df[c] = v.astype(float)
    empty = (df.prefill_tokens == 0) & (df.decode_seqs == 0)
    if empty.any():
        raise MeasurementError(f"{source}: row {int(np.flatnonzero(empty.to_numpy())[0])}: an iteration with no prefill tokens and no decodes")
    if (df.step_s <= 0).any():
        raise MeasurementError(f"{source}: row {int(np.flatnonzero((df.step_s <= 0).to_numpy())[0])}: step_s must be > 0")
    if (df.step_s > MAX_STEP_S).any():
        i = int(np.flatnonzero((df.step_s > MAX_STEP_S).to_numpy())[0])
        raise MeasurementError(f"{source}: row {i}: step_s={df.step_s.iloc[i]:g} is not a plausible step time (at most "
                               f"{MAX_STEP_S:g} s, an hour per step); check its unit (seconds) or drop the row")
    for c in ("tp", "pp"):
        if c in df.columns:
            v = pd.to_numeric(df[c], errors="coerce").to_numpy(float)
            bad = ~(np.isfinite(v) & (v >= 1) & (v == np.round(v)))  # 1.5 must not become 1
            if bad.any():
                i = int(np.flatnonzero(bad)[0])
                raise MeasurementError(f"{source}: row {i}: column {c} must be a whole number >= 1, got {df[c].iloc[i]!r}")
            df[c] = v.astype(int)
    if "regime" not in df.columns:
        df["regime"] = regime(df.prefill_tokens, df.decode_seqs)
    elif not df["regime"].isin(REGIMES).all():
        bad = df.loc[~df["regime"].isin(REGIMES), "regime"].iloc[0]
        raise MeasurementError(f"{source}: regime {bad!r} is not one of {REGIMES}")
    return df.reset_index(drop=True)


def read(path: str | os.PathLike) -> pd.DataFrame:
    """Read and validate a measurement table (.csv or .parquet)."""
    path = Path(path)
    return validate(read_table(path, MeasurementError, "measurement"), str(path))


def write(df: pd.DataFrame, path: str | os.PathLike) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    df = validate(df, str(path))
    if path.suffix == ".parquet":
        df.to_parquet(path, index=False)
    else:
        df.to_csv(path, index=False, float_format="%.10g")
    return path


# ---------------------------------------------------------------- error metrics
def mape(y_true, y_pred) -> float:
    """Mean absolute percentage error, in percent."""
    y, p = np.asarray(y_true, float), np.asarray(y_pred, float)
    return float(np.mean(np.abs(p - y) / y) * 100)


def r2(y_true, y_pred) -> float:
    """Coefficient of determination (1 - SS_res / SS_tot)."""
    y, p = np.asarray(y_true, float), np.asarray(y_pred, float)
    ss_tot = float(np.sum((y - y.mean()) ** 2))
    return float("nan") if ss_tot == 0 else 1.0 - float(np.sum((y - p) ** 2)) / ss_tot


def evaluate(model, df: pd.DataFrame) -> pd.DataFrame:
    """MAPE (%) and R² of ``model`` on a measurement table, overall and per regime."""
    pred = model.step_time(*(df[c].to_numpy(float) for c in AGGREGATES))
    rows = []
    reg = df["regime"] if "regime" in df else pd.Series(regime(df.prefill_tokens, df.decode_seqs))
    for name in ("all", *REGIMES):
        m = np.ones(len(df), bool) if name == "all" else (reg == name).to_numpy()
        if m.sum() == 0:
            continue
        y = df.step_s.to_numpy(float)[m]
        rows.append({"regime": name, "n": int(m.sum()), "mape_pct": mape(y, pred[m]), "r2": r2(y, pred[m])})
    return pd.DataFrame(rows)


def split(df: pd.DataFrame, test_frac: float = 0.2, seed: int = 0) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Random train/test split (deterministic for a seed), stratified by regime."""
    rng = np.random.default_rng(seed)
    test = np.zeros(len(df), bool)
    reg = df["regime"].to_numpy() if "regime" in df else regime(df.prefill_tokens, df.decode_seqs)
    for name in REGIMES:
        idx = np.flatnonzero(reg == name)
        if len(idx) < 2:
            continue
        k = max(1, int(round(test_frac * len(idx))))
        test[rng.choice(idx, size=k, replace=False)] = True
    return df[~test].reset_index(drop=True), df[test].reset_index(drop=True)
