import json

import numpy as np
import pandas as pd
import pytest

from servesim.workload import WorkloadError, lengths_to_poisson, read
from servesim.workload.cli import main


def test_generate_and_convert(tmp_path, capsys, aegaeon_mirror):
    out = tmp_path / "m.parquet"
    assert main(["workload", "generate", "aegaeon_market", "--scale", "1", "--options",
                 "{n_models: 3, rate: 2.0, lengths: aegaeon}", "-o", str(out)]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["requests"] == len(read(out)) > 0
    csv = tmp_path / "AzureLLMInferenceTrace_conv_1week.csv"
    csv.write_text("TIMESTAMP,ContextTokens,GeneratedTokens\n2024-05-12 00:00:00+00:00,5,1\nbad,1,1\n")
    capsys.readouterr()
    # an input error: one line naming the file and line, exit status 2, no output file
    assert main(["workload", "convert", "azure", str(csv), "-o", str(tmp_path / "c.parquet")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and str(csv) in err and "line 3" in err and "Traceback" not in err
    assert not (tmp_path / "c.parquet").exists()
    with pytest.raises(WorkloadError, match="line 3"):  # --debug: the exception itself
        main(["workload", "convert", "azure", str(csv), "-o", str(tmp_path / "c.parquet"), "--debug"])
    with pytest.warns(UserWarning):
        main(["workload", "convert", "azure", str(csv), "--lenient", "-o", str(tmp_path / "c.parquet")])
    assert json.loads(capsys.readouterr().out)["dropped_rows"] == 1
    assert list(read(tmp_path / "c.parquet")["app"]) == ["conv"]


def test_generate_that_makes_no_requests_is_an_error(tmp_path, capsys, aegaeon_mirror):
    # issue 34: wrote 0 rows and exited 0
    out = tmp_path / "a.parquet"
    capsys.readouterr()
    assert main(["workload", "generate", "aegaeon_market", "--scale", "0.1", "-o", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "aegaeon_market: scale 0.1 (seed 0) leaves no requests" in err[0], err
    assert "scale >= 0.167 gives some" in err[0] and not out.exists()
    assert main(["workload", "generate", "aegaeon_market", "--scale", "0.167", "-o", str(out)]) == 0
    assert len(read(out)) > 0


@pytest.mark.parametrize("opts, needle", [
    ({}, "scale >= 0.167 gives some"),
    ({"duration_s": 5.0}, "duration_s >= 10 s gives some"),
    ({"rate": 0.0}, "every model's rate is 0"),
    ({"rates": [0.0, 0.05]}, "scale >= 0.334 gives some"),
])
def test_generate_names_the_scale_that_gives_requests(opts, needle):
    from servesim.workload import generate

    lengths = pd.DataFrame({"prompt_tokens": [10, 20], "output_tokens": [5, 6]})
    n = {"n_models": 2} if "rates" in opts else {}
    with pytest.raises(WorkloadError, match="leaves no requests") as e:
        generate("aegaeon_market", scale=0.1, seed=0, lengths=lengths, **n, **opts)
    assert needle in str(e.value), str(e.value)


def test_lengths_to_poisson_deterministic():
    lengths = pd.DataFrame({"prompt_tokens": [10, 20, 30], "output_tokens": [1, 2, 3]})
    a = lengths_to_poisson(lengths, 5.0, 600.0, seed=7)
    pd.testing.assert_frame_equal(a, lengths_to_poisson(lengths, 5.0, 600.0, seed=7))
    assert abs(len(a) / 3000 - 1) < 0.1 and set(a["prompt_tokens"]) <= {10, 20, 30}
    assert np.all(np.diff(a["arrival_s"].to_numpy()) >= 0)
