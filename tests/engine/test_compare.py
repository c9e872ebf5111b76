"""Simulator-vs-engine comparison plumbing (the simulator side is the real servesim.sim)."""

import json

import numpy as np
import pandas as pd
import pytest

from servesim.engine.calibration import heldout_workload
from servesim.engine.compare import COMPARED, compare_run, compare_tables, simulate
from servesim.engine.server import EngineConfig
from servesim.perf.base import LinearStepTime
from servesim.workload import schema


def _wl(n=40, rate=5.0, seed=0):
    rng = np.random.default_rng(seed)
    return schema.make(np.cumsum(rng.exponential(1 / rate, n)), rng.integers(16, 200, n), rng.integers(2, 40, n))


def test_simulate_with_overhead_shifts_latency_by_the_overhead_at_low_load():
    wl = _wl(rate=0.5)  # far apart: no queueing
    cfg = EngineConfig(max_num_seqs=8, max_num_batched_tokens=256, block_size=32)
    m = LinearStepTime()
    a = simulate(wl, m, cfg, kv_blocks=256)
    b = simulate(wl, m, cfg, kv_blocks=256, overhead_s=0.05)
    assert (a.state == "finished").all() and (b.state == "finished").all()
    np.testing.assert_allclose(b.ttft_s - a.ttft_s, 0.05, atol=1e-9)
    np.testing.assert_allclose(b.arrival_s, wl.arrival_s)


def test_compare_tables_zero_error_on_identical_tables():
    cfg = EngineConfig(max_num_seqs=8, max_num_batched_tokens=256, block_size=32)
    df = simulate(_wl(), LinearStepTime(), cfg, kv_blocks=256)
    t = compare_tables(df, df, "same")
    assert np.allclose(t.rel_err.to_numpy(float), 0.0)
    assert t.metric.tolist() == list(COMPARED)
    e = t.set_index("metric")["engine"]
    assert e["p50_ttft_s"] <= e["p90_ttft_s"] <= e["p99_ttft_s"] and e["completed"] == 40


def test_compare_run_from_a_replay_directory(tmp_path):
    cfg = EngineConfig(max_num_seqs=8, max_num_batched_tokens=256, block_size=32)
    coefs = {"a_p": 0.01, "a_d": 0.005, "b_pt": 1e-5, "c_pc": 0.0, "b_ds": 1e-4, "c_dc": 1e-7}
    fit = {"coefficients": coefs, "frontend_overhead_s": 0.0, "capacity_req_s": 10.0,
           "prompt_range": [16, 64], "output_range": [4, 8]}
    (tmp_path / "fit.json").write_text(json.dumps(fit))
    from servesim.perf.fitted import FittedStepTime

    wl = _wl()
    engine = simulate(wl, FittedStepTime(**coefs), cfg, kv_blocks=100)  # stands in for a replay table
    d = tmp_path / "replay"
    d.mkdir()
    engine.to_parquet(d / "requests.parquet")
    (d / "summary.json").write_text(json.dumps({"engine": cfg.to_dict(), "kv_blocks": 100}))
    table, sim = compare_run(d, tmp_path / "fit.json")
    assert np.allclose(table.rel_err.to_numpy(float), 0.0)
    # requests the client sent late: fed to the simulator, their lateness becomes latency
    pd.DataFrame({"request_id": wl.request_id, "sent_s": wl.arrival_s + 0.25}).to_parquet(d / "sends.parquet")
    _, late = compare_run(d, tmp_path / "fit.json", arrivals="sent")
    assert late.request_id.tolist() == wl.request_id.tolist()
    np.testing.assert_allclose(late.arrival_s, wl.arrival_s)
    assert (late.first_token_s >= sim.first_token_s + 0.25 - 1e-9).all()
    with pytest.raises(ValueError, match="arrivals must be"):
        compare_run(d, tmp_path / "fit.json", arrivals="bogus")
    # held-out workloads: deterministic, at the requested rate, within the profile's mix
    h1 = heldout_workload(tmp_path / "fit.json", 0.6, 500, seed=0)
    h2 = heldout_workload(tmp_path / "fit.json", 0.6, 500, seed=0)
    pd.testing.assert_frame_equal(h1, h2)
    rate = (len(h1) - 1) / h1.arrival_s.iloc[-1]
    assert rate == pytest.approx(6.0, rel=0.15)
    assert h1.prompt_tokens.between(16, 64).all() and h1.output_tokens.between(4, 8).all()
    (d / "summary.json").write_text(json.dumps({"engine": cfg.to_dict(), "kv_blocks": None}))
    with pytest.raises(ValueError, match="no kv_blocks"):
        compare_run(d, tmp_path / "fit.json")
