"""The one request schema every loader and generator produces and the simulator consumes.

A workload is a pandas DataFrame (stored as Parquet) with exactly these columns, sorted by
``arrival_s``; ``request_id`` is unique. Times are seconds from the start of the trace.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

TIERS = ("IW-F", "IW-N", "NIW")

#: column -> dtype (strings are stored as pandas "string"; deadline_s is NaN where none applies)
COLUMNS: dict[str, str] = {
    "request_id": "int64",
    "arrival_s": "float64",
    "prompt_tokens": "int64",
    "output_tokens": "int64",
    "model": "string",
    "region": "string",
    "tier": "string",
    "app": "string",
    "deadline_s": "float64",
}


class WorkloadError(ValueError):
    """Bad workload input; the message names the source (file) and the row or column."""


def validate(df: pd.DataFrame, source: str = "<workload>") -> pd.DataFrame:
    """Check a request table against the schema; return it with canonical dtypes.

    Raises WorkloadError naming ``source`` and the first offending row or column.
    """
    missing = [c for c in COLUMNS if c not in df.columns]
    if missing:
        raise WorkloadError(f"{source}: missing column(s) {missing}; expected {list(COLUMNS)}")
    extra = [c for c in df.columns if c not in COLUMNS]
    if extra:
        raise WorkloadError(f"{source}: unknown column(s) {extra}; expected {list(COLUMNS)}")
    out = df[list(COLUMNS)].copy()
    for col, dtype in COLUMNS.items():
        try:
            out[col] = out[col].astype(dtype)
        except (TypeError, ValueError) as exc:
            raise WorkloadError(f"{source}: column {col!r} is not {dtype}: {exc}") from None
    for col in ("prompt_tokens", "output_tokens"):
        bad = np.flatnonzero(out[col].to_numpy() < (1 if col == "prompt_tokens" else 0))
        if bad.size:
            raise WorkloadError(f"{source}: row {int(bad[0])}: {col}={out[col].iloc[bad[0]]} is out of range")
    arr = out["arrival_s"].to_numpy()
    if np.isnan(arr).any():
        raise WorkloadError(f"{source}: row {int(np.flatnonzero(np.isnan(arr))[0])}: arrival_s is NaN")
    back = np.flatnonzero(np.diff(arr) < 0)
    if back.size:
        raise WorkloadError(f"{source}: row {int(back[0]) + 1}: arrival_s goes back in time (not sorted)")
    bad_tier = ~out["tier"].isin(TIERS)
    if bad_tier.any():
        i = int(np.flatnonzero(bad_tier.to_numpy())[0])
        raise WorkloadError(f"{source}: row {i}: tier={out['tier'].iloc[i]!r} not in {TIERS}")
    if out["request_id"].duplicated().any():
        i = int(np.flatnonzero(out["request_id"].duplicated().to_numpy())[0])
        raise WorkloadError(f"{source}: row {i}: duplicate request_id {out['request_id'].iloc[i]}")
    return out.reset_index(drop=True)


def make(arrival_s, prompt_tokens, output_tokens, *, model="default", region="default",
         tier="IW-F", app="default", deadline_s=np.nan, request_id=None,
         source: str = "<generated>") -> pd.DataFrame:
    """Build a validated request table from arrays (scalars broadcast)."""
    n = len(arrival_s)
    df = pd.DataFrame({
        "request_id": np.arange(n, dtype=np.int64) if request_id is None else request_id,
        "arrival_s": arrival_s,
        "prompt_tokens": prompt_tokens,
        "output_tokens": output_tokens,
        "model": model,
        "region": region,
        "tier": tier,
        "app": app,
        "deadline_s": deadline_s,
    })
    return validate(df, source)
