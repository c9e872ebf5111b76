"""NIW chunking (journal §6.2): splitting long NIW requests into fixed-size jobs and accounting
each request as finished when its last chunk is."""

import numpy as np
import pandas as pd
import pytest

from servesim.systems.sageserve.config import ConfigError, SageServeConfig
from servesim.systems.sageserve.niw_chunks import chunk_niw, collapse_chunks
from servesim.systems.sageserve.strategies import run_strategy


def _wl(rows):
    df = pd.DataFrame(rows, columns=["arrival_s", "prompt_tokens", "output_tokens", "tier"])
    n = len(df)
    return df.assign(request_id=np.arange(n), model="llama-3.1-8b", region="centralus", app="Others",
                     deadline_s=df["arrival_s"] + np.where(df["tier"] == "NIW", 86_400.0, 60.0))


def test_chunk_niw_splits_only_long_niw_prompts():
    wl = _wl([(0.0, 10_000, 10, "IW-F"), (1.0, 10_000, 5, "NIW"), (2.0, 100, 7, "NIW"), (3.0, 8192, 2, "NIW")])
    out, parent = chunk_niw(wl, 4096)
    # IW never chunked; 10 000 -> 3 near-equal parts <= 4096; 100 stays whole; 8192 -> 2 x 4096
    assert parent.tolist() == [0, 1, 1, 1, 2, 3, 3]
    assert out["prompt_tokens"].tolist() == [10_000, 3334, 3333, 3333, 100, 4096, 4096]
    # outputs shared by the prompt parts (largest remainder): 5 over equal thirds -> 2, 2, 1
    assert out["output_tokens"].tolist() == [10, 2, 2, 1, 7, 1, 1]
    assert (out["arrival_s"].to_numpy() == wl["arrival_s"].to_numpy()[parent]).all()
    assert (out["deadline_s"].to_numpy() == wl["deadline_s"].to_numpy()[parent]).all()
    # no size, or nothing long enough: the table as it was
    assert chunk_niw(wl, None)[1] is None and chunk_niw(wl, 20_000)[1] is None


def test_collapse_finishes_with_the_last_chunk():
    parent = np.array([0, 1, 1, 1, 2, 2])
    req = pd.DataFrame({
        "request_id": np.arange(6), "tier": ["IW-F"] + ["NIW"] * 5,
        "instance": ["a", "b", "c", "d", "e", "f"], "arrival_s": [0.0, 1.0, 1.0, 1.0, 2.0, 2.0],
        "prompt_tokens": [10, 3, 3, 3, 5, 5], "output_tokens": [1, 2, 2, 1, 1, 1],
        "state": ["finished", "finished", "finished", "finished", "finished", "unfinished"],
        "reason": ["", "", "", "", "", "run ended"],
        "scheduled_s": [0.0, 4.0, 2.0, 3.0, 2.5, np.nan], "first_token_s": [0.5, 4.5, 2.5, 3.5, 3.0, np.nan],
        "finish_s": [1.0, 5.0, 9.0, 7.0, 4.0, np.nan], "preemptions": [0, 1, 0, 2, 0, 0],
        "partial": [False, False, False, False, False, True], "niw_release_s": [np.nan, 3.0, 1.5, 2.0, 2.0, np.nan]})
    req["ttft_s"] = req["first_token_s"] - req["arrival_s"]
    req["e2e_s"] = req["finish_s"] - req["arrival_s"]
    out = collapse_chunks(req, parent)
    assert out["request_id"].tolist() == [0, 1, 2] and out["niw_chunks"].tolist() == [1, 3, 2]
    r0, r1, r2 = (out.iloc[i] for i in range(3))
    assert r0["finish_s"] == 1.0 and r0["instance"] == "a"  # a request served whole is unchanged
    # finishes with its last chunk (the one on instance c); first token and release: the earliest
    assert r1["finish_s"] == 9.0 and r1["e2e_s"] == 8.0 and r1["instance"] == "c"
    assert r1["first_token_s"] == 2.5 and r1["ttft_s"] == 1.5 and r1["scheduled_s"] == 2.0
    assert r1["niw_release_s"] == 1.5
    assert r1["prompt_tokens"] == 9 and r1["output_tokens"] == 5 and r1["preemptions"] == 3
    assert r1["state"] == "finished"
    # a chunk that did not finish: the request did not finish either, with that chunk's state
    assert r2["state"] == "unfinished" and r2["reason"] == "run ended" and np.isnan(r2["finish_s"])
    assert np.isnan(r2["e2e_s"]) and bool(r2["partial"]) and r2["first_token_s"] == 3.0


def test_config_chunk_size_and_code_reading():
    assert SageServeConfig().niw_chunk_tokens == 4096
    assert SageServeConfig.code().niw_chunk_tokens is None  # the authors' simulator: whole prompts
    with pytest.raises(ConfigError, match="niw_chunk_tokens"):
        SageServeConfig(niw_chunk_tokens=0)
    with pytest.raises(ConfigError, match="lt_ua_window_s"):
        SageServeConfig(lt_ua_window_s=0.0)


def test_run_serves_chunks_and_reports_one_row_per_request():
    # an 11k-token NIW prompt (the Model-C batch app's size) among IW requests on one instance
    rows = [(float(t), 2000, 50, "IW-F") for t in range(0, 60, 2)] + [(5.0, 11_000, 90, "NIW")]
    wl = _wl(sorted(rows))
    runs = {}
    for size in (None, 4096):
        cfg = SageServeConfig(start_instances=1, min_per_endpoint=1, niw_chunk_tokens=size)
        runs[size], _ = run_strategy("reactive", wl, config=cfg, seed=0, max_instances=1, drain_s=300.0)
    whole, chunked = runs[None].requests, runs[4096].requests
    assert len(whole) == len(chunked) == len(wl)
    assert (chunked["request_id"].to_numpy() == np.arange(len(wl))).all()
    niw = chunked[chunked["tier"] == "NIW"].iloc[0]
    assert niw["niw_chunks"] == 3 and niw["prompt_tokens"] == 11_000 and niw["output_tokens"] == 90
    assert niw["state"] == "finished" and niw["finish_s"] >= niw["first_token_s"] >= niw["niw_release_s"]
    assert niw["e2e_s"] == pytest.approx(niw["finish_s"] - niw["arrival_s"])
    assert runs[4096].summary["niw_chunked_requests"] == 1 and runs[None].summary["niw_chunked_requests"] == 0
    assert (whole["tier"] == chunked["tier"]).all() and (whole["prompt_tokens"] == chunked["prompt_tokens"]).all()


def test_declared_test_runs_record_the_readings(tmp_path):
    """The declared test-scale runs of the whole-prompt and ungated-LT-UA readings run and record them."""
    import json

    from servesim.analysis.runs import run as declared_run
    from servesim.systems.sageserve.runs import main

    out = tmp_path / "nogate"
    main(list(declared_run("sageserve", "runs_burst/lt_ua_nogate", "test").args) + ["-o", str(out)])
    s = json.loads((out / "summary.json").read_text())
    assert s["lt_ua_window_s"] is None and s["niw_chunk_tokens"] == 4096 and s["strategy"] == "lt_ua"
    out = tmp_path / "whole"
    main(list(declared_run("sageserve", "runs_models_whole/reactive", "test").args) + ["-o", str(out)])
    s = json.loads((out / "summary.json").read_text())
    assert s["niw_chunk_tokens"] is None and s["niw_chunked_requests"] == 0 and s["lt_ua_window_s"] == 1200.0
    r = pd.read_parquet(out / "requests.parquet")
    assert (r["niw_chunks"] == 1).all()


def test_cli_rejects_negative_chunk_size_and_long_gate(tmp_path, capsys):
    from servesim.cli_errors import EXIT_INPUT
    from servesim.systems.sageserve.runs import main

    base = ["--strategy", "reactive", "--models", "llama-2-70b", "--regions", "eastus", "--window-h", "36", "37",
            "--days", "2", "-o", str(tmp_path / "x")]
    assert main(base + ["--niw-chunk-tokens", "-5"]) == EXIT_INPUT
    assert "--niw-chunk-tokens -5" in capsys.readouterr().err
    assert main(base + ["--lt-ua-window-s", "4000"]) == EXIT_INPUT
    assert not (tmp_path / "x").exists()


def test_runs_cli_refuses_zero_days(tmp_path, capsys):
    from servesim.systems.sageserve.runs import main

    rc = main(["--strategy", "lt_ua", "--preset", "quick", "--days", "0", "--models", "llama-2-70b",
               "--regions", "eastus", "--window-h", "0", "1", "-o", str(tmp_path / "o")])
    assert rc == 2 and "--days 0" in capsys.readouterr().err
