"""Reading a table file (Parquet or CSV) with one clear error for a missing, unknown or corrupt file.

Every reader of user-given tables (workloads, measurements, replay inputs) goes through
:func:`read_table`, so a corrupt file gives one line naming it, never a pyarrow traceback.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from servesim.errors import InputError, not_found

SUFFIXES = (".parquet", ".csv", ".gz")


def read_table(path, error: type[Exception] = InputError, what: str = "table") -> pd.DataFrame:
    """The DataFrame in ``path`` (.parquet, else CSV); ``error(message naming the file)`` when it is
    missing, of an unknown format, or unreadable."""
    p = Path(path)
    if not p.exists():
        raise error(f"{p}: {not_found(p, what + ' file')}")
    if p.suffix not in SUFFIXES:
        raise error(f"{p}: unknown {what} format {p.suffix or '(none)'!r} (use .parquet or .csv)")
    try:
        df = pd.read_parquet(p) if p.suffix == ".parquet" else pd.read_csv(p)
    except Exception as exc:  # pyarrow and the CSV parser raise several types for a corrupt file
        raise error(f"{p}: not a readable {p.suffix.lstrip('.')} {what}: {type(exc).__name__}: "
                    f"{' '.join(str(exc).split())}") from None
    if p.suffix != ".parquet":
        names = _csv_header(p)
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:  # pandas renames the copy `x.1`: which one holds the data is ambiguous
            raise error(f"{p}: line 1: column(s) {twice} appear more than once")
    return df


def _csv_header(p: Path) -> list[str]:
    import csv
    import gzip

    opener = gzip.open if p.suffix == ".gz" else open
    try:
        with opener(p, "rt", encoding="utf-8-sig", newline="") as f:
            return [n.strip() for n in next(csv.reader(f), [])]
    except (OSError, UnicodeDecodeError, csv.Error):
        return []
