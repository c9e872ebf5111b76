"""The six-way request latency breakdown (Aegaeon Fig 14) and the Fig 15 distribution helpers, on
hand-sized tables."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from servesim.metrics import time_breakdown as tb


def table(**over) -> pd.DataFrame:
    # arrival 0; prefill picked at 2 s, 0.5 s model load, prefill runs 0.5 s (first token at 3 s);
    # 5 s of decode steps, 1 s waiting on KV, 0.8 s of decode-side model loads, last token at 10 s
    row = dict(arrival_s=0.0, prefill_start_s=2.0, prefill_switch_s=0.5, first_token_s=3.0, finish_s=10.0,
               exec_s=5.5, switch_wait_s=0.8, kv_wait_s=1.0, failed=False)
    row.update(over)
    return pd.DataFrame([row])


def test_one_request_splits_into_the_six_parts():
    b = tb.request_breakdown(table()).iloc[0]
    assert b.prefill_waiting == pytest.approx(2.5)       # queue 2 s + the load before its prefill
    assert b.prefill_execution == pytest.approx(0.5)
    assert b.decoding_execution == pytest.approx(5.0)
    assert b.data_overhead == pytest.approx(1.0)
    assert b.control_overhead == 0.0                      # no control-plane latency column
    assert b.decoding_waiting == pytest.approx(10 - 2.5 - 0.5 - 5.0 - 1.0)
    assert b.total == pytest.approx(10.0) and b.autoscaling_wait == pytest.approx(1.3)
    assert sum(b[c] for c in tb.CATEGORIES) == pytest.approx(b.total)


def test_control_column_failed_and_unfinished_requests():
    t = pd.concat([table(control_s=0.25), table(failed=True), table(finish_s=np.nan)], ignore_index=True)
    t["control_s"] = t.control_s.fillna(0.0)
    b = tb.request_breakdown(t)
    assert len(b) == 1 and b.control_overhead.iloc[0] == 0.25
    assert b.decoding_waiting.iloc[0] == pytest.approx(1.0 - 0.25)


def test_shares_are_of_the_summed_time_and_add_up():
    t = pd.concat([table(), table(finish_s=30.0)], ignore_index=True)   # the second waits 20 s more to decode
    sh = tb.shares_pct(tb.request_breakdown(t))
    assert sum(sh[c] for c in tb.CATEGORIES) == pytest.approx(100.0)
    assert sh["decoding_waiting"] == pytest.approx(100 * (1.0 + 21.0) / 40.0)
    assert sh["autoscaling_wait"] == pytest.approx(100 * 2.6 / 40.0)


def test_inconsistent_accounting_and_missing_columns_are_errors():
    with pytest.raises(ValueError, match="negative time"):
        tb.request_breakdown(table(kv_wait_s=4.0))   # more KV waiting than the decode phase leaves
    with pytest.raises(ValueError, match="missing column"):
        tb.request_breakdown(table().drop(columns="kv_wait_s"))


def test_ecdf_and_near_instant_fraction():
    v, f = tb.ecdf([0.3, 0.01, 0.9, 0.01])
    assert list(v) == [0.01, 0.01, 0.3, 0.9] and list(f) == [0.25, 0.5, 0.75, 1.0]
    assert tb.near_instant_fraction([0.01, 0.01, 0.3, 0.9], 0.01) == 0.5
    assert np.isnan(tb.near_instant_fraction([], 0.01))
