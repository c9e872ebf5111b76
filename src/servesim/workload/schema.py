"""The one request schema every loader and generator produces and the simulator consumes.

A workload is a pandas DataFrame (stored as Parquet) with exactly these columns, sorted by
``arrival_s``; ``request_id`` is unique. Times are seconds from the start of the trace.

String columns (``model, region, tier, app``) are pandas ``string`` or, for large tables, a
``category`` of strings (one byte per row instead of ~15: a 10 M-request week stays < 0.5 GB).
Both compare by value (``df.model == "llama-2-70b"``); ``validate`` keeps a categorical column
categorical and casts anything else to ``string``.

``deadline_s`` is an absolute time (seconds from the trace start): the TTFT deadline of an
interactive request (IW-F: arrival + 1 s, IW-N: arrival + 60 s in the SageServe generator) or the
completion deadline of a non-interactive one (NIW: arrival + 24 h); NaN where none applies.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pandas as pd

from servesim.errors import InputError, writing

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
#: plausibility bound on prompt_tokens and output_tokens: the longest context of any model in the
#: catalog (Llama-4-Scout, 10 M tokens). Per-model contexts are not enforced here: the SageServe
#: trace's prompt lengths (up to 100 K) exceed some of its models' nominal contexts; a real engine's
#: limit is checked where it applies (`servesim replay` against --max-model-len).
MAX_TOKENS = 10_485_760
STRING_COLUMNS = tuple(c for c, d in COLUMNS.items() if d == "string")
#: most requests a generator may be asked for (about 5 GB as a table): a typo in a scale or an
#: option cannot allocate without bound
MAX_REQUESTS = 100_000_000
#: longest span (days) of a generated workload; the week generators hold per-minute arrays
MAX_DAYS = 366


class WorkloadError(InputError):
    """Bad workload input; the message names the source (file) and the row or column."""


def check_volume(what: str, requests: float, days: float | None = None) -> None:
    """WorkloadError unless a generator's expected request count is finite, >= 0 and at most
    MAX_REQUESTS, and its span (``days``) a whole number in [1, MAX_DAYS]; called before any array
    is sized by them."""
    if days is not None and not (float(days) == int(days) and 1 <= days <= MAX_DAYS):
        raise WorkloadError(f"{what}: days={days!r} must be a whole number in [1, {MAX_DAYS}]")
    if not (0 <= requests <= MAX_REQUESTS):
        raise WorkloadError(f"{what}: this volume is about {requests:.3g} requests (must be finite, >= 0 and at "
                            f"most {MAX_REQUESTS:,}); lower the scale or volume options")


def _first(mask: np.ndarray) -> int:
    return int(np.flatnonzero(mask)[0])


def validate(df: pd.DataFrame, source: str = "<workload>", *, unsorted_ok: bool = False) -> pd.DataFrame:
    """Check a request table against the schema; return it with canonical dtypes.

    Raises WorkloadError naming ``source`` and the first offending row or column. Memory-light:
    no deep copy of a column that already has its canonical dtype (pandas copy-on-write).
    ``unsorted_ok``: rows out of arrival order pass (a file's rows; :func:`read` sorts them).
    """
    missing = [c for c in COLUMNS if c not in df.columns]
    if missing:
        raise WorkloadError(f"{source}: missing column(s) {missing}; expected {list(COLUMNS)}")
    extra = [c for c in df.columns if c not in COLUMNS]
    if extra:
        raise WorkloadError(f"{source}: unknown column(s) {extra}; expected {list(COLUMNS)}")
    out = df[list(COLUMNS)]
    for col, dtype in COLUMNS.items():
        s = out[col]
        if dtype == "string" and isinstance(s.dtype, pd.CategoricalDtype):
            cats = s.cat.categories
            if len(cats) and not all(isinstance(c, str) for c in cats):
                raise WorkloadError(f"{source}: column {col!r} is categorical with non-string categories")
            continue
        if str(s.dtype) == dtype:
            continue
        if dtype == "int64" and pd.api.types.is_float_dtype(s.dtype):  # 1.5 tokens must not become 1
            v = s.to_numpy(dtype="float64")
            frac = ~np.isfinite(v) | (v != np.round(v))
            if frac.any():
                i = _first(frac)
                raise WorkloadError(f"{source}: row {i}: {col}={float(v[i]):g} is not a whole number")
        try:
            out[col] = s.astype(dtype)
        except (TypeError, ValueError) as exc:
            raise WorkloadError(f"{source}: column {col!r} is not {dtype}: {exc}") from None
    for col in STRING_COLUMNS:
        na = out[col].isna().to_numpy()
        if na.any():
            raise WorkloadError(f"{source}: row {_first(na)}: {col} is missing")
    for col in ("prompt_tokens", "output_tokens"):
        v = out[col].to_numpy()
        bad = (v < (1 if col == "prompt_tokens" else 0)) | (v > MAX_TOKENS)
        if bad.any():
            i = _first(bad)
            raise WorkloadError(f"{source}: row {i}: {col}={out[col].iloc[i]} is out of range "
                                f"[{1 if col == 'prompt_tokens' else 0}, {MAX_TOKENS}]")
    arr = out["arrival_s"].to_numpy()
    bad = ~np.isfinite(arr) | (arr < 0)
    if bad.any():
        i = _first(bad)
        raise WorkloadError(f"{source}: row {i}: arrival_s={arr[i]} is not a finite time >= 0")
    dl = out["deadline_s"].to_numpy()
    bad = np.isinf(dl)
    if bad.any():
        i = _first(bad)
        raise WorkloadError(f"{source}: row {i}: deadline_s={dl[i]} is infinite (NaN means no deadline)")
    bad = dl < arr  # NaN compares False: no deadline
    if bad.any():  # deadlines are absolute times; an offset written as a deadline would always be missed
        i = _first(bad)
        raise WorkloadError(f"{source}: row {i}: deadline_s={dl[i]:g} is before arrival_s={arr[i]:g} "
                            "(deadline_s is an absolute time, not an offset)")
    back = np.diff(arr) < 0
    if back.any() and not unsorted_ok:
        raise WorkloadError(f"{source}: row {_first(back) + 1}: arrival_s goes back in time (not sorted)")
    tier = out["tier"]
    if isinstance(tier.dtype, pd.CategoricalDtype):
        unknown = [c for c in tier.cat.categories if c not in TIERS]
        bad_tier = tier.isin(unknown).to_numpy() if unknown else None
    else:
        bad_tier = (~tier.isin(TIERS)).to_numpy()
    if bad_tier is not None and bad_tier.any():
        i = _first(bad_tier)
        raise WorkloadError(f"{source}: row {i}: tier={tier.iloc[i]!r} not in {TIERS}")
    ids = out["request_id"].to_numpy()
    if ids.size > 1 and not (np.diff(ids) > 0).all():  # fast path: strictly increasing ids are unique
        dup = out["request_id"].duplicated().to_numpy()
        if dup.any():
            i = _first(dup)
            raise WorkloadError(f"{source}: row {i}: duplicate request_id {ids[i]}")
    return out.reset_index(drop=True)


def make(arrival_s, prompt_tokens, output_tokens, *, model="default", region="default",
         tier="IW-F", app="default", deadline_s=np.nan, request_id=None,
         source: str = "<generated>") -> pd.DataFrame:
    """Build a validated request table from arrays (scalars broadcast; a pandas Categorical stays one)."""
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


def write(df: pd.DataFrame, path: str | os.PathLike) -> Path:
    """Validate and store a request table as Parquet (categorical columns stay dictionary-encoded)."""
    path = Path(path)
    df = validate(df, str(path))
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".part")
    try:
        with writing(path):  # a full disk's error names the file
            df.to_parquet(tmp, index=False, compression="zstd")
    except BaseException as exc:
        tmp.unlink(missing_ok=True)
        if isinstance(exc, OSError):
            exc.add_note(f"{path} not written (its partial file removed)")
        raise
    os.replace(tmp, path)
    return path


def read(path: str | os.PathLike) -> pd.DataFrame:
    """Read a request table written by :func:`write` (or any Parquet with the schema's columns)
    and validate it; errors name the file and its row. Rows out of arrival order (a hand-edited
    file) are put in order, stably: a row's place carries nothing but its arrival."""
    path = Path(path)
    from servesim.tables import read_table

    df = validate(read_table(path, WorkloadError, "workload"), str(path), unsorted_ok=True)
    if (np.diff(df["arrival_s"].to_numpy()) < 0).any():
        df = df.sort_values("arrival_s", kind="stable").reset_index(drop=True)
    return df
