"""Per-instance throughput (TPS) from SageServe's Splitwise profile table ``perf_model.csv``.

SageServe (journal §2.1, conference Fig 2) reports the tokens per second one 8-GPU instance
achieves: TPS = (prompt_size + token_size) / (e2e_time / 1000), with ``e2e_time`` in milliseconds,
over the batch-1, tensor-parallel-8 rows of each (model, hardware).
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pandas as pd

PERF_MODEL_COLUMNS = ("model", "hardware", "prompt_size", "batch_size", "token_size", "e2e_time", "tensor_parallel")

# The quantiles a boxplot with 5-95 whiskers draws.
QUANTILES = {"p5": 0.05, "q1": 0.25, "median": 0.5, "q3": 0.75, "p95": 0.95}


class PerfTableError(ValueError):
    """``perf_model.csv`` is malformed; the message names the file and the row or column."""


def load_perf_model(path: str | os.PathLike) -> pd.DataFrame:
    """Read ``perf_model.csv`` and check the columns TPS needs (missing, non-numeric, non-positive)."""
    path = Path(path)
    df = pd.read_csv(path)
    missing = [c for c in PERF_MODEL_COLUMNS if c not in df.columns]
    if missing:
        raise PerfTableError(f"{path}: missing column(s) {missing}; has {list(df.columns)}")
    for col in ("prompt_size", "batch_size", "token_size", "e2e_time", "tensor_parallel"):
        values = pd.to_numeric(df[col], errors="coerce")
        bad = ~(values > 0)  # catches NaN (unparsable) too
        if bad.any():
            i = int(np.flatnonzero(bad.to_numpy())[0])
            # +2: one header line, rows counted from 1
            raise PerfTableError(f"{path}: row {i + 2}: column {col!r} must be a positive number, got {df[col].iloc[i]!r}")
        df[col] = values
    return df


def instance_tps(df: pd.DataFrame, *, batch_size: int = 1, tensor_parallel: int = 8) -> pd.DataFrame:
    """The rows at one (batch size, TP) with a ``tps`` column: (prompt + output tokens) per second."""
    sel = df[(df["batch_size"] == batch_size) & (df["tensor_parallel"] == tensor_parallel)].copy()
    if sel.empty:
        raise PerfTableError(f"no rows with batch_size={batch_size} and tensor_parallel={tensor_parallel}")
    sel["tps"] = (sel["prompt_size"] + sel["token_size"]) / (sel["e2e_time"] / 1000.0)
    return sel.reset_index(drop=True)


def tps_summary(tps: pd.DataFrame) -> pd.DataFrame:
    """Per (model, hardware): row count and the boxplot quantiles of ``tps`` (numpy's linear rule)."""
    rows = []
    for (model, hw), g in tps.groupby(["model", "hardware"], sort=True):
        q = np.quantile(g["tps"].to_numpy(), list(QUANTILES.values()))
        rows.append({"model": model, "hardware": hw, "n": len(g), **dict(zip(QUANTILES, q))})
    return pd.DataFrame(rows)


def metric_key(model: str, hardware: str, stat: str) -> str:
    """``llama2-70b``, ``a100-80gb``, ``q1`` -> ``llama2_70b_a100_tps_q1`` (the GPU name without its memory)."""
    return f"{model.replace('-', '_').replace('.', '_')}_{hardware.split('-')[0]}_tps_{stat}"


def tps_metrics(summary: pd.DataFrame, stats: tuple[str, ...] = ("q1", "median", "q3")) -> dict[str, float]:
    """The summary as flat metrics, e.g. ``{"llama2_70b_a100_tps_q1": 68.9, ...}``."""
    out: dict[str, float] = {}
    for r in summary.itertuples(index=False):
        for s in stats:
            key = metric_key(r.model, r.hardware, s)
            if key in out:
                raise ValueError(f"two (model, hardware) pairs give the metric {key!r}; select one hardware per GPU")
            out[key] = float(getattr(r, s))
    return out
