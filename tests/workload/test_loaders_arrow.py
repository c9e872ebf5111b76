"""Arrow CSV reads of the trace loaders go through Arrow's own file reader, never a Python file
object: with one, a read-ahead still pending at interpreter exit aborted ~1 in 25 CLI runs after a
bad-input error ("terminate called without an active exception")."""

import pandas as pd
import pytest

from servesim.workload import loaders


def test_arrow_reads_take_the_path_not_a_python_file(tmp_path, monkeypatch):
    f = tmp_path / "t.csv"
    f.write_text("TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.6805900,374,44\n,NA,\n")
    real = pd.read_csv

    def guarded(src, *a, **kw):
        if kw.get("engine") == "pyarrow":
            raise AssertionError("pandas' pyarrow engine hands Arrow a Python file object")
        return real(src, *a, **kw)

    monkeypatch.setattr(loaders.pd, "read_csv", guarded)
    df = loaders._read_csv(f, usecols=["TIMESTAMP", "ContextTokens"], dtype=str, keep_default_na=False, engine="pyarrow")
    assert list(df.columns) == ["TIMESTAMP", "ContextTokens"]
    assert df.iloc[1].tolist() == ["", "NA"]  # no NA parsing: empty and "NA" stay strings
    with pytest.raises(ValueError, match="strings only"):
        loaders._read_csv(f, engine="pyarrow")


def test_ragged_rows_name_the_file(tmp_path):
    f = tmp_path / "bad.csv"
    f.write_text("a,b\n1,2\n3,4,5\n")
    with pytest.raises(loaders.WorkloadError, match="bad.csv: not a readable CSV table"):
        loaders._read_csv(f, dtype=str, keep_default_na=False, engine="pyarrow")
