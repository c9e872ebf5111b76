import numpy as np
import pandas as pd
import pytest

from servesim.workload import WorkloadError, load_aegaeon, load_azure, load_azure_2023, load_sageserve
from servesim.workload.loaders import aegaeon_workload_files


@pytest.mark.parametrize("kind, rows, p50, o50", [("code", 8819, 1469, 13), ("conv", 19366, 1020, 129)])
def test_azure_2023_real_files(azure_mirror, kind, rows, p50, o50):
    d = load_azure_2023(kind)
    assert len(d) == rows and d.attrs["dropped_rows"] == 0
    assert d["prompt_tokens"].median() == p50 and d["output_tokens"].median() == o50
    assert d["arrival_s"].iloc[0] == 0.0 and 3400 < d["arrival_s"].iloc[-1] < 3600
    assert d.attrs["t0"].startswith("2023-11-16T18:1") and set(d["app"]) == {kind}


def _azure_2024(path, rows):
    path.write_text("TIMESTAMP,ContextTokens,GeneratedTokens\n" + "".join(r + "\n" for r in rows))
    return path


def test_azure_2024_format_mixed_fractions(tmp_path):
    p = _azure_2024(tmp_path / "AzureLLMInferenceTrace_code_1week.csv", [
        "2024-05-10 00:00:00.009930+00:00,100,5",
        "2024-05-10 00:00:01+00:00,200,0",
        "2024-05-10 23:59:59.5+00:00,300,7",
        "2024-05-11 00:00:00.250000+00:00,400,8",
    ])
    d = load_azure(p, origin="midnight")
    np.testing.assert_allclose(d["arrival_s"], [0.00993, 1.0, 86399.5, 86400.25])
    assert d.attrs["t0"] == "2024-05-10T00:00:00+00:00" and set(d["app"]) == {"code"}
    assert load_azure(p)["arrival_s"].iloc[0] == 0.0


def test_azure_bad_rows_strict_and_lenient(tmp_path):
    p = _azure_2024(tmp_path / "t_conv.csv", [
        "2024-05-12 00:00:00+00:00,100,5",
        "2024-05-12 00:00:01+00:00,abc,5",
        "not a time,100,5",
        "2024-05-12 00:00:03+00:00,100,-1",
        "2024-05-12 00:00:04+00:00,0,1",
        "2024-05-12 00:00:05+00:00,7,1",
    ])
    with pytest.raises(WorkloadError, match=r"t_conv.csv: line 3: bad row \(ContextTokens"):
        load_azure(p)
    with pytest.warns(UserWarning, match="dropped 4 bad row"):
        d = load_azure(p, lenient=True)
    assert len(d) == 2 and d.attrs["dropped_rows"] == 4 and d.attrs["dropped_lines"] == [3, 4, 5, 6]
    assert list(d["request_id"]) == [0, 5]


def test_azure_header_and_sorting(tmp_path):
    p = tmp_path / "x.csv"
    p.write_text("TIME,ContextTokens,GeneratedTokens\n")
    with pytest.raises(WorkloadError, match=r"x.csv: line 1: missing column\(s\) \['TIMESTAMP'\]"):
        load_azure(p)
    p = _azure_2024(tmp_path / "y.csv", ["2024-05-10 00:00:02+00:00,1,1", "2024-05-10 00:00:01+00:00,2,2"])
    d = load_azure(p)
    assert list(d["prompt_tokens"]) == [2, 1] and list(d["request_id"]) == [1, 0]


def test_aegaeon_real_file(aegaeon_mirror):
    f = [x for x in aegaeon_workload_files() if x.name == "synth-16-0.1-1.0-2.0.csv"][0]
    d = load_aegaeon(f)
    assert len(d) == sum(1 for _ in open(f)) - 1
    assert d["model"].nunique() <= 16 and d["arrival_s"].is_monotonic_increasing
    assert set(d["model"].astype(str)) <= {f"synth_model_{i:02d}" for i in range(16)}


def test_aegaeon_bad_row(tmp_path):
    p = tmp_path / "synth.csv"
    p.write_text("Request Time,Model Name,Input Length,Output Length\n00:00:00.418,m1,168,832\n"
                 "00:00:61.0,m2,10,1\n00:01:02.5,m2,10,1\n")
    with pytest.raises(WorkloadError, match=r"synth.csv: line 3: bad row \(Request Time"):
        load_aegaeon(p)
    with pytest.warns(UserWarning):
        d = load_aegaeon(p, lenient=True)
    assert list(d["arrival_s"]) == [0.418, 62.5] and d.attrs["dropped_rows"] == 1


SAGE_HEADER = ("request_id,batch_id,client_tenant,request_type,scenario,sla,utility,regions,model_type,"
               "workload_type,application_id,arrival_timestamp,batch_size,prompt_size,token_size\n")


def test_sageserve_format(tmp_path):
    p = tmp_path / "week.csv"
    p.write_text(SAGE_HEADER + "7,-1,eastusT,2,s,10,1,201,A,prod,app1,0.5,1,1000,20\n"
                 "8,-1,westT,2,s,10,1,012,B,dev,app2,1.5,1,2000,30\n"
                 "9,4,cT,2,s,10,1,102,C,prod,app3,2.5,1,300,3\n")
    d = load_sageserve(p)
    assert list(d["tier"]) == ["IW-F", "NIW", "NIW"]
    assert list(d["region"]) == ["eastus", "westus", "centralus"]
    assert list(d["model"]) == ["llama-2-70b", "bloom-176b", "llama-3.1-8b"]
    assert list(d["request_id"]) == [7, 8, 9]
    np.testing.assert_allclose(d["deadline_s"], [1.5, 86401.5, 86402.5])
    q = tmp_path / "bad.csv"
    q.write_text(SAGE_HEADER + "1,-1,t,2,s,10,1,201,Z,prod,a,0.5,1,1000,20\n")
    with pytest.raises(WorkloadError, match=r"bad.csv: line 2: bad row \(model_type not in"):
        load_sageserve(q)
