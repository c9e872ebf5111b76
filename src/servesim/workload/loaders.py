"""Loaders for the public trace formats, each returning a validated request table.

* Azure LLM inference traces 2023 (one hour, ``AzureLLMInferenceTrace_{code,conv}.csv``) and 2024
  (one week, ``..._{code,conv}_1week.csv``): ``TIMESTAMP, ContextTokens, GeneratedTokens``. The
  2023 stamps are naive with 7 fractional digits, the 2024 ones carry ``+00:00`` and 0-6 digits.
* Aegaeon artifact workloads (``synth-<models>-<rate>-<in>-<out>.csv``): ``Request Time``
  (``HH:MM:SS.fff``), ``Model Name``, ``Input Length``, ``Output Length``.
* SageServe's trace CSV (spec sageserve §2 "Trace schema"), for users who have one.

Bad rows raise :class:`WorkloadError` naming the file and the CSV line (header = line 1); with
``lenient=True`` they are dropped instead and counted in ``df.attrs["dropped_rows"]`` (with the
first few line numbers in ``df.attrs["dropped_lines"]``); a lenient load in which every row is bad
is an error, not an empty workload. Token counts must be integers up to ``schema.MAX_TOKENS``; a
CSV the parser cannot read (ragged rows, bad quoting) is a WorkloadError naming the file. Every loader sorts by arrival time
(stable), keeps the file's row order as ``request_id`` and records the source in ``df.attrs``.
"""

from __future__ import annotations

import os
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

from servesim.errors import not_found

from .arrivals import categorical
from .schema import MAX_TOKENS, TIERS, WorkloadError, validate

AZURE_COLUMNS = ("TIMESTAMP", "ContextTokens", "GeneratedTokens")
AEGAEON_COLUMNS = ("Request Time", "Model Name", "Input Length", "Output Length")
SAGESERVE_COLUMNS = ("request_id", "batch_id", "client_tenant", "request_type", "scenario", "sla", "utility",
                     "regions", "model_type", "workload_type", "application_id", "arrival_timestamp",
                     "batch_size", "prompt_size", "token_size")
#: SageServe's model letters -> catalog keys (spec sageserve §2: A Llama2-70B, B Bloom-176B, C/D Llama 3.x)
SAGESERVE_MODELS = {"A": "llama-2-70b", "B": "bloom-176b", "C": "llama-3.1-8b", "D": "llama-3.2-3b"}
#: SageServe's region digits (first digit of ``regions`` = the client region)
SAGESERVE_REGIONS = {"0": "westus", "1": "centralus", "2": "eastus"}


def _header_names(path: Path) -> list[str]:
    """The header line's names as written (pandas renames a repeated ``X`` to ``X.1``)."""
    import csv

    try:
        with open(path, encoding="utf-8-sig", newline="") as f:
            return next(csv.reader(f), [])
    except (UnicodeDecodeError, csv.Error):
        return []  # the table reader names the problem


def _check_header(path: Path, got, want) -> None:
    missing = [c for c in want if c not in got]
    if missing:
        raise WorkloadError(f"{path}: line 1: missing column(s) {missing}; expected {list(want)}, got {list(got)}")
    names = [n.strip() for n in _header_names(path)]
    twice = sorted({n for n in names if n in want and names.count(n) > 1})
    if twice:  # which copy holds the data is ambiguous: refuse rather than read the first
        raise WorkloadError(f"{path}: line 1: column(s) {twice} appear more than once")


def _bad_rows(path: Path, bad: np.ndarray, reasons: dict[str, np.ndarray], lenient: bool) -> np.ndarray:
    """Raise on the first bad row (strict) or return the keep-mask (lenient)."""
    if not bad.any():
        return ~bad
    i = int(np.flatnonzero(bad)[0])
    why = ", ".join(k for k, m in reasons.items() if m[i])
    if not lenient:
        raise WorkloadError(f"{path}: line {i + 2}: bad row ({why}); --lenient (lenient=True) drops bad rows instead")
    warnings.warn(f"{path}: dropped {int(bad.sum())} bad row(s), first at line {i + 2} ({why})", stacklevel=3)
    return ~bad


def _read_csv(path: Path, **kw) -> pd.DataFrame:
    """``pd.read_csv`` whose parser errors (ragged rows, bad quoting, encoding) name the file.
    ``engine="pyarrow"`` (all columns as strings, no NA parsing: dtype=str, keep_default_na=False)
    reads through Arrow's own file reader (`_read_csv_arrow`)."""
    if kw.get("engine") == "pyarrow":
        if kw.get("dtype") is not str or kw.get("keep_default_na", True) or set(kw) - {"engine", "dtype", "keep_default_na", "usecols", "nrows"} \
                or kw.get("nrows") is not None:
            raise ValueError(f"_read_csv(engine='pyarrow'): strings only, no NA parsing, no nrows (got {sorted(kw)})")
        return _read_csv_arrow(path, kw.get("usecols"))
    try:
        return pd.read_csv(path, **kw)
    except pd.errors.EmptyDataError:
        raise WorkloadError(f"{path}: line 1: empty file (no header)") from None
    except (pd.errors.ParserError, UnicodeDecodeError, ValueError) as exc:
        msg = " ".join(str(exc).split())
        raise WorkloadError(f"{path}: not a readable CSV table: {msg}") from None


def _finish(df: pd.DataFrame, path: Path, dropped: np.ndarray, **attrs) -> pd.DataFrame:
    if len(df) == 0 and dropped.size:  # lenient, and every row was bad: an error, not an empty workload
        raise WorkloadError(f"{path}: no valid rows ({dropped.size} bad, first at line {int(dropped[0]) + 2})")
    order = np.argsort(df["arrival_s"].to_numpy(), kind="stable")
    if (np.diff(order) != 1).any():
        df = df.iloc[order]
    out = validate(df, str(path))
    out.attrs.update(source=str(path), dropped_rows=int(dropped.size),
                     dropped_lines=[int(x) + 2 for x in dropped[:20]], **attrs)
    return out


def _as_int(s: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """Integer values and a mask of unparseable/non-integer entries."""
    v = pd.to_numeric(s, errors="coerce").to_numpy(dtype="float64", na_value=np.nan)
    bad = ~np.isfinite(v) | (v != np.round(v)) | (np.abs(v) > 2.0**62)  # beyond int64: not a count
    return np.where(bad, 0, v).astype(np.int64), bad


def _has_hex(path: Path) -> bool:
    """Whether an ``x``/``X`` follows the header line (no valid Azure row has one: digits and stamps)."""
    import mmap

    with open(path, "rb") as f:
        if os.fstat(f.fileno()).st_size == 0:
            return False
        with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
            start = m.find(b"\n") + 1
            return start > 0 and (m.find(b"x", start) >= 0 or m.find(b"X", start) >= 0)


def _read_csv_arrow(path: Path, usecols=None) -> pd.DataFrame:
    """Every column as strings (empty fields stay ""), read by Arrow from the path itself. Through
    pandas, Arrow reads a Python file object, and a read-ahead still pending at interpreter exit then
    needs the GIL from a dying thread: about 1 in 25 runs aborted ("terminate called without an active
    exception") after a CSV error was reported."""
    import pyarrow as pa
    import pyarrow.csv as pacsv

    header = _read_csv(path, nrows=0).columns
    cols = list(header if usecols is None else usecols)
    try:
        tb = pacsv.read_csv(str(path), convert_options=pacsv.ConvertOptions(
            column_types={c: pa.string() for c in header}, include_columns=cols, strings_can_be_null=False,
            quoted_strings_can_be_null=False))
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
        msg = " ".join(str(exc).split())
        raise WorkloadError(f"{path}: not a readable CSV table: {msg}") from None
    return tb.to_pandas()


def _azure_fast(path: Path):
    """Typed Arrow read (~20x faster than parsing strings): (timestamps UTC, ctx, gen), or None when
    any row needs the robust path (mixed zones, unparseable or out-of-range values)."""
    import pyarrow as pa
    import pyarrow.csv as pacsv

    if _has_hex(path):  # Arrow reads "0x10" as the integer 16; the robust path calls it a bad row
        return None
    for tz in ("UTC", None):  # 2024 stamps carry +00:00; 2023 stamps are naive UTC
        types = {"TIMESTAMP": pa.timestamp("ns", tz=tz), "ContextTokens": pa.int64(), "GeneratedTokens": pa.int64()}
        try:
            tb = pacsv.read_csv(str(path), convert_options=pacsv.ConvertOptions(
                column_types=types, include_columns=list(AZURE_COLUMNS)))
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            continue
        if any(tb.column(c).null_count for c in AZURE_COLUMNS):
            return None
        ctx = tb.column("ContextTokens").to_numpy()
        gen = tb.column("GeneratedTokens").to_numpy()
        if (ctx < 1).any() or (gen < 0).any() or (ctx > MAX_TOKENS).any() or (gen > MAX_TOKENS).any():
            return None
        ts = pd.Series(pd.DatetimeIndex(tb.column("TIMESTAMP").to_pandas()))
        if tz is None:
            ts = ts.dt.tz_localize("UTC")
        return ts, ctx, gen
    return None


def load_azure(path: str | os.PathLike, *, app: str | None = None, model: str = "default",
               region: str = "default", tier: str = "IW-F", origin: str = "first",
               lenient: bool = False, nrows: int | None = None) -> pd.DataFrame:
    """Load an Azure LLM inference trace (2023 one-hour or 2024 one-week format).

    ``origin``: ``"first"`` puts t=0 at the first request; ``"midnight"`` at 00:00 UTC of its day
    (keeps the time of day, as the week-long analyses need). ``app`` defaults to ``code`` / ``conv``
    from the file name. ``df.attrs["t0"]`` is the UTC time of t=0 (ISO 8601).
    Bad rows: unparseable time, non-integer tokens, ContextTokens < 1 or GeneratedTokens < 0.
    """
    path = Path(path)
    if not path.exists():
        raise WorkloadError(f"{path}: " + ("no such trace file" if not path.is_symlink() else not_found(path, "trace file")))
    header = _read_csv(path, nrows=0).columns
    _check_header(path, header, AZURE_COLUMNS)
    fast = _azure_fast(path) if nrows is None else None
    if fast is not None:
        ts, ctx, gen = fast
        keep = np.ones(len(ts), dtype=bool)
    else:  # robust path: finds and names bad rows (or drops them with lenient=True)
        raw = _read_csv(path, usecols=list(AZURE_COLUMNS), dtype=str, nrows=nrows, keep_default_na=False,
                        engine="pyarrow" if nrows is None else "c")
        ts = pd.to_datetime(raw["TIMESTAMP"], format="ISO8601", utc=True, errors="coerce")
        ctx, bad_ctx = _as_int(raw["ContextTokens"])
        gen, bad_gen = _as_int(raw["GeneratedTokens"])
        del raw
        reasons = {"TIMESTAMP unparseable": ts.isna().to_numpy(),
                   f"ContextTokens not an integer in [1, {MAX_TOKENS}]": bad_ctx | (ctx < 1) | (ctx > MAX_TOKENS),
                   f"GeneratedTokens not an integer in [0, {MAX_TOKENS}]": bad_gen | (gen < 0) | (gen > MAX_TOKENS)}
        bad = np.logical_or.reduce(list(reasons.values()))
        keep = _bad_rows(path, bad, reasons, lenient)
    dropped = np.flatnonzero(~keep)
    ts = ts[keep]
    if len(ts) == 0:
        raise WorkloadError(f"{path}: no valid rows" + (f" ({dropped.size} bad, first at line {int(dropped[0]) + 2})"
                                                          if dropped.size else " (no data rows after the header)"))
    t0 = ts.min()
    if origin == "midnight":
        t0 = t0.normalize()
    elif origin != "first":
        raise WorkloadError(f"{path}: origin={origin!r}; expected 'first' or 'midnight'")
    arrival = (ts - t0).dt.total_seconds().to_numpy()
    if app is None:
        name = path.name.lower()
        app = "code" if "code" in name else "conv" if "conv" in name else "azure"
    one = np.zeros(arrival.size, dtype=np.int8)  # constant string columns as one-category categoricals
    df = pd.DataFrame({"request_id": np.flatnonzero(keep).astype(np.int64), "arrival_s": arrival,
                       "prompt_tokens": ctx[keep], "output_tokens": gen[keep],
                       "model": categorical(one, [model]), "region": categorical(one, [region]),
                       "tier": categorical(one, [tier]), "app": categorical(one, [app]), "deadline_s": np.nan})
    return _finish(df, path, dropped, t0=t0.isoformat(), format="azure-llm")


def load_azure_2023(kind: str = "code", **kw) -> pd.DataFrame:
    """The 2023 one-hour trace from the data mirror: ``kind`` = ``code`` or ``conv``."""
    from servesim.data import locate

    if kind not in ("code", "conv"):
        raise WorkloadError(f"azure-llm-2023: kind={kind!r}; expected 'code' or 'conv'")
    return load_azure(locate(f"azure-llm-2023/AzureLLMInferenceTrace_{kind}.csv"), **kw)


def load_azure_2024(kind: str = "code", **kw) -> pd.DataFrame:
    """The 2024 one-week trace (``kind`` = ``code`` or ``conv``), for users who have fetched it into
    ``traces/data/azure-llm-2024/`` (or a mirror): it is public (GitHub release ``dataset-llm-2024`` of
    Azure/AzurePublicDataset) but not reachable from this project's machines. t = 0 at midnight UTC
    of the first day. Missing file -> a DataError naming where it was looked for."""
    from servesim.data import locate

    if kind not in ("code", "conv"):
        raise WorkloadError(f"azure-llm-2024: kind={kind!r}; expected 'code' or 'conv'")
    kw.setdefault("origin", "midnight")
    return load_azure(locate(f"azure-llm-2024/AzureLLMInferenceTrace_{kind}_1week.csv"), **kw)


def _parse_clock(s: pd.Series) -> np.ndarray:
    """``HH:MM:SS.fff`` (hours may exceed 24) -> seconds; NaN where unparseable."""
    # per row, so one malformed stamp is NaN on its own line only (not every row)
    parts = s.str.extract(r"^\s*(\d+):(\d{1,2}):(\d{1,2}(?:\.\d*)?)\s*$")
    h, m, sec = (pd.to_numeric(parts[i], errors="coerce").to_numpy(dtype="float64", na_value=np.nan) for i in range(3))
    out = h * 3600.0 + m * 60.0 + sec
    out[(m >= 60) | (sec >= 60)] = np.nan
    return out


def load_aegaeon(path: str | os.PathLike, *, region: str = "default", tier: str = "IW-F",
                 app: str = "sharegpt", lenient: bool = False) -> pd.DataFrame:
    """Load an Aegaeon artifact workload CSV (already tokenised ShareGPT lengths per model)."""
    path = Path(path)
    if not path.exists():
        raise WorkloadError(f"{path}: no such workload file")
    raw = _read_csv(path, dtype=str, keep_default_na=False)  # small files: the C engine starts faster
    _check_header(path, raw.columns, AEGAEON_COLUMNS)
    t = _parse_clock(raw["Request Time"])
    inp, bad_in = _as_int(raw["Input Length"])
    out, bad_out = _as_int(raw["Output Length"])
    name = raw["Model Name"].str.strip()
    reasons = {"Request Time unparseable": ~np.isfinite(t), "Model Name empty": (name == "").to_numpy(),
               f"Input Length not an integer in [1, {MAX_TOKENS}]": bad_in | (inp < 1) | (inp > MAX_TOKENS),
               f"Output Length not an integer in [0, {MAX_TOKENS}]": bad_out | (out < 0) | (out > MAX_TOKENS)}
    bad = np.logical_or.reduce(list(reasons.values()))
    keep = _bad_rows(path, bad, reasons, lenient)
    df = pd.DataFrame({"request_id": np.flatnonzero(keep).astype(np.int64), "arrival_s": t[keep],
                       "prompt_tokens": inp[keep], "output_tokens": out[keep],
                       "model": pd.Categorical(name[keep].to_numpy()), "region": region, "tier": tier,
                       "app": app, "deadline_s": np.nan})
    return _finish(df, path, np.flatnonzero(~keep), format="aegaeon")


def aegaeon_workload_files() -> list[Path]:
    """All Aegaeon artifact workload CSVs in the data folder (mirror or fetched copy)."""
    from servesim.data import locate

    return sorted(Path(locate("aegaeon/workloads")).glob("synth-*.csv"))


def load_sageserve(path: str | os.PathLike, *, models: dict[str, str] | None = None,
                   regions: dict[str, str] | None = None, iw_tier: str = "IW-F",
                   niw_deadline_s: float = 86_400.0, iw_deadline_s: dict[str, float] | None = None,
                   lenient: bool = False) -> pd.DataFrame:
    """Load a SageServe trace CSV (the authors' simulator format; spec sageserve §2).

    NIW = ``workload_type == 'dev'`` or a production row with ``batch_id != -1`` (as the authors'
    simulator decides); other rows get ``iw_tier`` (their trace does not split IW-F / IW-N).
    ``region`` is the client region, the first digit of ``regions``; ``app`` is ``application_id``.
    """
    path = Path(path)
    if not path.exists():
        raise WorkloadError(f"{path}: " + ("no such trace file" if not path.is_symlink() else not_found(path, "trace file")))
    if iw_tier not in TIERS[:2]:
        raise WorkloadError(f"{path}: iw_tier={iw_tier!r}; expected one of {TIERS[:2]}")
    models = models or SAGESERVE_MODELS
    regions = regions or SAGESERVE_REGIONS
    iw_deadline_s = iw_deadline_s or {"IW-F": 1.0, "IW-N": 60.0}
    for key, v in (("niw_deadline_s", niw_deadline_s), (f"iw_deadline_s[{iw_tier!r}]", iw_deadline_s.get(iw_tier))):
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not (np.isfinite(v) and v > 0):
            raise WorkloadError(f"{path}: {key}={v!r} must be a finite number of seconds > 0")
    raw = _read_csv(path, dtype=str, keep_default_na=False, engine="pyarrow")
    _check_header(path, raw.columns, SAGESERVE_COLUMNS)
    t = pd.to_numeric(raw["arrival_timestamp"], errors="coerce").to_numpy(dtype="float64", na_value=np.nan)
    p, bad_p = _as_int(raw["prompt_size"])
    o, bad_o = _as_int(raw["token_size"])
    b, bad_b = _as_int(raw["batch_id"].replace("", "-1"))
    first = raw["regions"].str.strip().str[:1]
    wt = raw["workload_type"].str.strip()
    reasons = {"arrival_timestamp not a finite number >= 0": ~np.isfinite(t) | (t < 0),
               f"prompt_size not an integer in [1, {MAX_TOKENS}]": bad_p | (p < 1) | (p > MAX_TOKENS),
               f"token_size not an integer in [0, {MAX_TOKENS}]": bad_o | (o < 0) | (o > MAX_TOKENS),
               "batch_id not an integer": bad_b,
               f"model_type not in {sorted(models)}": ~raw["model_type"].str.strip().isin(list(models)).to_numpy(),
               f"regions does not start with one of {sorted(regions)}": ~first.isin(list(regions)).to_numpy(),
               "workload_type not prod|dev": ~wt.isin(["prod", "dev"]).to_numpy()}
    bad = np.logical_or.reduce(list(reasons.values()))
    keep = _bad_rows(path, bad, reasons, lenient)
    niw = ((wt == "dev").to_numpy() | (b != -1))[keep]
    tier = np.where(niw, "NIW", iw_tier)
    t = t[keep]
    deadline = t + np.where(niw, niw_deadline_s, iw_deadline_s[iw_tier])
    rid, bad_id = _as_int(raw["request_id"])
    ids = rid[keep] if not bad_id[keep].any() and not pd.Series(rid[keep]).duplicated().any() \
        else np.flatnonzero(keep).astype(np.int64)
    df = pd.DataFrame({"request_id": ids, "arrival_s": t, "prompt_tokens": p[keep], "output_tokens": o[keep],
                       "model": pd.Categorical(raw["model_type"].str.strip()[keep].map(models).to_numpy()),
                       "region": pd.Categorical(first[keep].map(regions).to_numpy()),
                       "tier": pd.Categorical(tier, categories=list(TIERS)),
                       "app": pd.Categorical(raw["application_id"][keep].to_numpy()), "deadline_s": deadline})
    return _finish(df, path, np.flatnonzero(~keep), format="sageserve")
