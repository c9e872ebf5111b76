import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from servesim.sim import REQUEST_COLUMNS, empty_request_frame
from servesim.sim.request_log import p99


@settings(max_examples=300, deadline=None)
@given(st.lists(st.floats(0, 1e3, allow_nan=False), min_size=1, max_size=300), st.booleans())
def test_p99_is_numpy_percentile_bit_for_bit(xs, dup):
    g = np.asarray(xs + (xs[:5] if dup else []), dtype=np.float64)
    expect = np.percentile(g, 99)
    assert p99(g) == expect
    h = g.copy()
    assert p99(h, inplace=True) == expect


def test_empty_frame_has_the_contract_columns():
    df = empty_request_frame()
    assert list(df.columns) == list(REQUEST_COLUMNS)
    assert {c: str(t) for c, t in df.dtypes.items()} == {
        c: ("string" if t == "string" else t) for c, t in REQUEST_COLUMNS.items()}
