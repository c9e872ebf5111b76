import pandas as pd
import pytest

from servesim.analysis.tps import (PerfTableError, instance_tps, load_perf_model, metric_key, tps_metrics,
                                   tps_summary)

HEADER = "model,hardware,prompt_size,batch_size,token_size,peak_power,average_power,prompt_time,token_time,e2e_time,tensor_parallel\n"


def _table(rows):
    return pd.DataFrame(rows, columns=["model", "hardware", "prompt_size", "batch_size", "token_size", "e2e_time", "tensor_parallel"])


def test_tps_of_a_known_row():
    # 512 prompt + 128 output tokens in 6400 ms -> 640 / 6.4 = 100 tokens per second.
    df = _table([["llama2-70b", "a100-80gb", 512, 1, 128, 6400.0, 8]])
    assert instance_tps(df)["tps"].tolist() == [100.0]


def test_filters_batch_and_tp():
    df = _table([["m", "a100-80gb", 100, 1, 100, 1000.0, 8],
                 ["m", "a100-80gb", 100, 2, 100, 1000.0, 8],
                 ["m", "a100-80gb", 100, 1, 100, 1000.0, 4]])
    assert len(instance_tps(df)) == 1
    with pytest.raises(PerfTableError, match="batch_size=3"):
        instance_tps(df, batch_size=3)


def test_summary_quantiles_and_metric_names():
    # TPS 100, 200, 300, 400, 500 (e2e 1000 ms): linear quantiles Q1 = 200, median 300, Q3 = 400, p5 = 120.
    df = _table([["bloom-176b", "h100-80gb", t, 1, 0, 1000.0, 8] for t in (500, 100, 300, 200, 400)])
    s = tps_summary(instance_tps(df))
    assert s.loc[0, ["q1", "median", "q3", "p5", "p95"]].tolist() == pytest.approx([200, 300, 400, 120, 480])
    m = tps_metrics(s)
    assert m == pytest.approx({"bloom_176b_h100_tps_q1": 200, "bloom_176b_h100_tps_median": 300, "bloom_176b_h100_tps_q3": 400})


def test_metric_key_collision_is_an_error():
    df = _table([["m", "h100-80gb", 100, 1, 0, 1000.0, 8], ["m", "h100-80gb-pcap", 100, 1, 0, 1000.0, 8]])
    with pytest.raises(ValueError, match="m_h100_tps_q1"):
        tps_metrics(tps_summary(instance_tps(df)))
    assert metric_key("llama2-70b", "a100-80gb", "q3") == "llama2_70b_a100_tps_q3"


def test_load_rejects_bad_rows(tmp_path):
    p = tmp_path / "perf.csv"
    p.write_text(HEADER + "m,a100-80gb,512,1,128,1,1,1,1,7000,8\nm,a100-80gb,512,1,128,1,1,1,1,-5,8\n")
    with pytest.raises(PerfTableError, match=r"perf.csv: row 3: column 'e2e_time'"):
        load_perf_model(p)
    p.write_text("model,hardware\nm,a\n")
    with pytest.raises(PerfTableError, match="missing column"):
        load_perf_model(p)
    p.write_text(HEADER + "m,a100-80gb,512,1,128,1,1,1,1,7000,8\n")
    assert len(load_perf_model(p)) == 1
