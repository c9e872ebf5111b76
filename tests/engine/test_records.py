"""Per-request/per-token tables built from client observations."""

import numpy as np
import pandas as pd
import pytest

from servesim.engine.records import (NOT_OBSERVED, REQUEST_COLUMNS, RequestRecord, check_request_table,
                                     request_table, token_table)
from servesim.workload import schema


def _wl(n=3):
    return schema.make(np.arange(n) * 1.0, np.full(n, 10), np.full(n, 4))


def test_finished_request_times_and_tbt():
    wl = _wl(1)
    rec = RequestRecord(0, 0.0, sent_s=0.0, token_times=[0.5, 0.6, 0.8, 1.1], state="finished", finish_s=1.1)
    df = request_table(wl, {0: rec})
    row = df.iloc[0]
    assert list(df.columns) == list(REQUEST_COLUMNS)
    assert row.ttft_s == pytest.approx(0.5) and row.e2e_s == pytest.approx(1.1)
    gaps = np.diff([0.5, 0.6, 0.8, 1.1])
    assert row.tbt_mean_s == pytest.approx(gaps.mean())
    assert row.tbt_max_s == pytest.approx(0.3)
    assert row.tbt_p99_s == pytest.approx(np.percentile(gaps, 99))
    assert row.preemptions == NOT_OBSERVED and np.isnan(row.scheduled_s) and not row.partial
    check_request_table(df, wl)


def test_unsent_and_partial_requests_are_accounted_for():
    wl = _wl(3)
    recs = {0: RequestRecord(0, 0.0, token_times=[0.2], state="finished", finish_s=0.2),
            1: RequestRecord(1, 1.0, token_times=[1.5, 1.6], state="timeout", partial=True, reason="t")}
    df = request_table(wl, recs)
    assert df.state.tolist() == ["finished", "timeout", "unfinished"]
    assert df.partial.tolist() == [False, True, True]
    assert np.isnan(df.e2e_s.iloc[1]) and df.ttft_s.iloc[1] == pytest.approx(0.5)
    assert df.reason.iloc[2] == "never sent"
    for col, dtype in REQUEST_COLUMNS.items():
        assert str(df[col].dtype) == dtype or (dtype == "string" and df[col].dtype == "string"), col


def test_token_table_and_schema_check():
    recs = {2: RequestRecord(2, 0.0, token_times=[0.1, 0.2]), 1: RequestRecord(1, 0.0, token_times=[0.3])}
    tt = token_table(recs)
    assert tt.request_id.tolist() == [1, 2, 2] and tt.token_index.tolist() == [0, 0, 1]
    with pytest.raises(ValueError, match="missing column"):
        check_request_table(pd.DataFrame({"request_id": [0]}))
    df = request_table(_wl(1), {0: RequestRecord(0, 0.0, token_times=[0.1], state="finished", finish_s=0.1)})
    with pytest.raises(ValueError, match="request ids differ"):
        check_request_table(df, _wl(2))


def test_write_outputs_summary_marks_partial_and_client_lag(tmp_path):
    import json

    from servesim.engine.replay import write_outputs

    wl = _wl(2)
    recs = {0: RequestRecord(0, 0.0, sent_s=0.01, token_times=[0.1, 0.2, 0.3, 0.4], state="finished", finish_s=0.4),
            1: RequestRecord(1, 1.0, sent_s=1.03, token_times=[1.2], state="error", partial=True, reason="x")}
    s = write_outputs(tmp_path, wl, recs, {"kv_blocks": 10}, wall_s=1.5)
    assert s["partial"] is True and s["all"]["states"] == {"error": 1, "finished": 1}
    assert s["client_send_lag_mean_s"] == pytest.approx(0.02)
    on_disk = json.loads((tmp_path / "summary.json").read_text())
    assert on_disk["partial"] is True and on_disk["kv_blocks"] == 10
    assert len(pd.read_parquet(tmp_path / "tokens.parquet")) == 5
    assert pd.read_parquet(tmp_path / "requests.parquet").partial.tolist() == [False, True]
