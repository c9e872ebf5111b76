import numpy as np
import pandas as pd
import pytest

from servesim.workload import WorkloadError, make, read, validate, write
from servesim.workload.arrivals import categorical


def _table(n=5):
    return make(np.arange(n, dtype=float), np.full(n, 10), np.full(n, 3), model="m", tier="NIW")


def test_parquet_round_trip_string_and_categorical(tmp_path):
    a = _table()
    write(a, tmp_path / "a.parquet")
    pd.testing.assert_frame_equal(read(tmp_path / "a.parquet"), a)
    b = a.assign(model=categorical(np.array([0, 1, 0, 1, 0]), ["x", "y"]))
    b = validate(b)
    write(b, tmp_path / "b.parquet")
    got = read(tmp_path / "b.parquet")
    assert isinstance(got["model"].dtype, pd.CategoricalDtype)
    pd.testing.assert_frame_equal(got, b)
    assert list(got["model"]) == ["x", "y", "x", "y", "x"]


def test_read_errors_name_the_file(tmp_path):
    with pytest.raises(WorkloadError, match="nope.parquet: workload file does not exist"):
        read(tmp_path / "nope.parquet")
    bad = tmp_path / "bad.parquet"
    _table().drop(columns=["app"]).to_parquet(bad)
    with pytest.raises(WorkloadError, match=r"bad.parquet: missing column\(s\) \['app'\]"):
        read(bad)
    junk = tmp_path / "junk.parquet"
    junk.write_text("not parquet")
    with pytest.raises(WorkloadError, match="junk.parquet: not a readable parquet workload"):
        read(junk)


@pytest.mark.parametrize("change, msg", [
    (lambda d: d.assign(prompt_tokens=[1, 2, 0, 4, 5]), "row 2: prompt_tokens=0"),
    (lambda d: d.assign(output_tokens=[1, -2, 0, 4, 5]), "row 1: output_tokens=-2"),
    (lambda d: d.assign(arrival_s=[0.0, 2.0, 1.0, 3.0, 4.0]), "row 2: arrival_s goes back"),
    (lambda d: d.assign(tier=["IW-F", "IW-F", "IW-F", "BATCH", "NIW"]), "row 3: tier='BATCH'"),
    (lambda d: d.assign(request_id=[0, 1, 1, 3, 4]), "row 2: duplicate request_id 1"),
    (lambda d: d.assign(model=["a", None, "a", "a", "a"]), "row 1: model is missing"),
    (lambda d: d.assign(extra=1), r"unknown column\(s\) \['extra'\]"),
])
def test_validate_errors_name_source_and_row(change, msg):
    with pytest.raises(WorkloadError, match=f"src.csv: {msg}" if "column" not in msg else msg):
        validate(change(_table()), "src.csv")


def test_categorical_tier_checked():
    d = _table().assign(tier=categorical(np.array([0, 0, 1, 0, 0]), ["NIW", "LOW"]))
    with pytest.raises(WorkloadError, match="row 2: tier='LOW'"):
        validate(d, "x")
