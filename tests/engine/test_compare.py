"""Simulator-vs-engine comparison plumbing (the simulator side is the real servesim.sim)."""

import json
from pathlib import Path

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


def test_sent_times_of_an_in_process_replay_leave_the_engines_own_step_wait_to_the_simulator(tmp_path):
    """The driver adds a request only between steps: one that arrived mid-step enters the simulator
    at its arrival (the simulator waits for its own step boundary), one that arrived while the
    engine was idle at the driver's add time (its lateness is the harness's); an HTTP replay's send
    times are the client's, as recorded."""
    from servesim.engine.compare import sent_entry
    from servesim.errors import InputError

    d = tmp_path / "r"
    d.mkdir()
    pd.DataFrame({"start_s": [0.0, 1.0, 3.5], "end_s": [1.0, 3.0, 4.0]}).to_parquet(d / "steps.parquet")
    wl = pd.DataFrame({"request_id": [7, 8, 9, 10], "arrival_s": [0.5, 1.0, 3.2, 5.0]})
    pd.DataFrame({"request_id": [10, 9, 8, 7], "sent_s": [5.001, 3.25, 3.0, 1.0]}).to_parquet(d / "sends.parquet")
    np.testing.assert_array_equal(sent_entry(d, {"replay": "in-process"}, wl), [0.5, 1.0, 3.25, 5.001])
    np.testing.assert_array_equal(sent_entry(d, {"replay": "http"}, wl), [1.0, 3.0, 3.25, 5.001])
    (d / "steps.parquet").unlink()
    with pytest.raises(InputError, match="steps.parquet: missing"):
        sent_entry(d, {"replay": "in-process"}, wl)


def _replay_dir(d, engine, cfg, **summary):
    d.mkdir(parents=True)
    engine.to_parquet(d / "requests.parquet")
    (d / "summary.json").write_text(json.dumps({"engine": cfg.to_dict(), "kv_blocks": 100, **summary}))
    return d


def test_compare_repeats_reports_the_engine_spread_and_drops_lagged_replays(tmp_path):
    from servesim.engine.compare import compare_repeats
    from servesim.perf.fitted import FittedStepTime

    cfg = EngineConfig(max_num_seqs=8, max_num_batched_tokens=256, block_size=32)
    coefs = {"a_p": 0.01, "a_d": 0.005, "b_pt": 1e-5, "c_pc": 0.0, "b_ds": 1e-4, "c_dc": 1e-7}
    (tmp_path / "fit.json").write_text(json.dumps({"coefficients": coefs, "frontend_overhead_s": 0.0}))
    wl = _wl()
    base = simulate(wl, FittedStepTime(**coefs), cfg, kv_blocks=100)
    slow = base.copy()  # a second "engine run" 20 % slower in every latency
    for c in ("first_token_s", "finish_s"):
        slow[c] = slow.arrival_s + (base[c] - base.arrival_s) * 1.2
    slow["ttft_s"], slow["e2e_s"] = slow.first_token_s - slow.arrival_s, slow.finish_s - slow.arrival_s
    dirs = [_replay_dir(tmp_path / "r0", base, cfg, lag_clean=True),
            _replay_dir(tmp_path / "r1", slow, cfg, lag_clean=True)]
    t = compare_repeats(dirs, tmp_path / "fit.json").set_index("metric")
    e2e = t.loc["p50_e2el_s"]
    # engine = median of the two runs (1.1 x the sim's), spread = (1.2 - 1.0) / 1.1
    assert e2e.rel_err == pytest.approx(1 / 1.1 - 1, rel=1e-9)
    assert e2e.engine_spread == pytest.approx(0.2 / 1.1, rel=1e-9)
    # its two ends: the fast run (the sim's own value) and the slow one
    assert e2e.engine_min == pytest.approx(e2e.sim, rel=1e-9) and e2e.engine_max == pytest.approx(1.2 * e2e.sim, rel=1e-9)
    assert bool(e2e.within_spread) and e2e.n_repeats == 2 and bool(e2e.lag_clean)
    # the sampling interval: each repeat's every request is 1.0 and 1.2 x the simulator's, so every
    # bootstrap draw reads the same ratio; counts and throughput get none
    for key in ("p50_e2el_s", "p90_ttft_s"):
        r = t.loc[key]
        assert r.rel_err_lo == pytest.approx(r.rel_err, rel=1e-9) and r.rel_err_hi == pytest.approx(r.rel_err, rel=1e-9)
    assert np.isnan(t.loc["request_throughput_per_s"].rel_err_lo) and np.isnan(t.loc["completed"].rel_err_hi)
    # a lagged replay is left out while a clean one exists...
    dirs[1] = _replay_dir(tmp_path / "r2", slow, cfg, lag_clean=False)
    t = compare_repeats(dirs, tmp_path / "fit.json").set_index("metric")
    assert t.loc["p50_e2el_s"].rel_err == pytest.approx(0.0, abs=1e-12)
    assert t.loc["p50_e2el_s"].n_repeats == 1 and t.loc["p50_e2el_s"].n_replays == 2
    # ...and if none is clean all are used, marked
    lagged = [_replay_dir(tmp_path / "r3", base, cfg, lag_clean=False)]
    assert not compare_repeats(lagged, tmp_path / "fit.json").lag_clean.any()
    with pytest.raises(ValueError, match="no replay folders"):
        compare_repeats([], tmp_path / "fit.json")


def test_error_verdict_reads_a_miss_against_its_sampling_interval_and_the_engines_spread():
    from servesim.engine.compare import error_verdict

    assert error_verdict([0.05, -0.09], [0.0, -0.2], [0.1, 0.0]) == "yes"
    # the quick engine's TTFT P90 at load 0.9 (issue 33): +29 %, its interval -2..+37 %
    assert error_verdict([0.05, 0.29], [0.0, -0.02], [0.1, 0.37]) == "undecided"
    assert error_verdict([0.05, 0.29], [0.0, 0.15], [0.1, 0.37]) == "no"
    assert error_verdict([-0.2, 0.05], [-0.3, 0.0], [-0.12, 0.1]) == "no"
    assert error_verdict([0.2], [np.nan], [np.nan]) == "no"  # a miss without an interval is beyond it
    # a miss beyond its interval but inside the engine's own spread across repeats: undecided, never yes
    assert error_verdict([-0.28, 0.0], [-0.33, 0.0], [-0.25, 0.0], spreads=[0.37, 0.01]) == "undecided"
    assert error_verdict([-0.28], [-0.33], [-0.25], spreads=[0.2]) == "no"
    assert error_verdict([-0.28], [-0.33], [-0.25], spreads=[np.nan]) == "no"
    assert error_verdict([0.08], [0.0], [0.1], bound=0.05) == "undecided"  # the 5 % goal
    with pytest.raises(ValueError, match="a NaN error"):
        error_verdict([np.nan], [0.0], [0.0])
    with pytest.raises(ValueError, match="2 errors, 1 lows"):
        error_verdict([0.0, 0.0], [0.0], [0.0, 0.0])


def _steps(d, model, speed, n=50):
    """A steps.parquet of ``n`` decode steps that took ``speed`` x the model's prediction."""
    ds = np.arange(1, n + 1) % 8 + 1
    ctx = ds * 100
    pred = np.array([model.step_time(0, 0, int(a), int(b)) for a, b in zip(ds, ctx)])
    end = np.cumsum(pred * speed)
    pd.DataFrame({"prefill_tokens": 0, "prefill_ctx": 0, "decode_seqs": ds, "decode_ctx": ctx,
                  "scheduled_tokens": ds, "start_s": end - pred * speed, "end_s": end}).to_parquet(d / "steps.parquet")


def test_replay_speed_and_the_speed_adjusted_spread(tmp_path):
    from servesim.engine.compare import compare_repeats, replay_speed
    from servesim.perf.fitted import FittedStepTime

    cfg = EngineConfig(max_num_seqs=8, max_num_batched_tokens=256, block_size=32)
    coefs = {"a_p": 0.01, "a_d": 0.005, "b_pt": 1e-5, "c_pc": 0.0, "b_ds": 1e-4, "c_dc": 1e-7}
    fit = tmp_path / "fit.json"
    fit.write_text(json.dumps({"coefficients": coefs, "frontend_overhead_s": 0.0}))
    model = FittedStepTime(**coefs)
    wl = _wl()
    base = simulate(wl, model, cfg, kv_blocks=100)
    slow = base.copy()  # the same replay on an engine stepping 20 % slower: every latency 1.2 x
    for c in ("first_token_s", "finish_s"):
        slow[c] = slow.arrival_s + (base[c] - base.arrival_s) * 1.2
    slow["ttft_s"], slow["e2e_s"] = slow.first_token_s - slow.arrival_s, slow.finish_s - slow.arrival_s
    d0 = _replay_dir(tmp_path / "r0", base, cfg, lag_clean=True)
    d1 = _replay_dir(tmp_path / "r1", slow, cfg, lag_clean=True)
    assert np.isnan(replay_speed(d0, fit))  # no steps recorded (an HTTP replay)
    _steps(d0, model, 1.0)
    _steps(d1, model, 1.2)
    assert replay_speed(d0, fit) == pytest.approx(1.0, rel=1e-9) and replay_speed(d1, fit) == pytest.approx(1.2, rel=1e-9)
    t = compare_repeats([d0, d1], fit).set_index("metric")
    e2e = t.loc["p50_e2el_s"]
    assert e2e.engine_spread == pytest.approx(0.2 / 1.1, rel=1e-9)
    assert e2e.speed_spread == pytest.approx(0.2 / 1.1, rel=1e-9)
    # the whole spread was the engine's speed: none is left once each repeat is scaled by it
    assert e2e.engine_spread_speed_adj == pytest.approx(0.0, abs=1e-9)
    # throughput is arrival-bound below saturation: not adjusted
    thr = t.loc["request_throughput_per_s"]
    assert thr.engine_spread_speed_adj == pytest.approx(thr.engine_spread, rel=1e-12)


def test_speed_matched_reading_simulates_each_replay_at_its_own_speed(tmp_path):
    """A replay on an engine that stepped 1.3 x slower than its profile (its recorded steps say so):
    the profile's simulation misses it; the speed-matched one is the same simulation, error 0.
    The speed weighs the steps by their time: one long slow step among many quick exact ones moves
    it more than their median would."""
    from servesim.engine.compare import _Scaled, compare_repeats, regime_speeds, replay_speed
    from servesim.perf.fitted import FittedStepTime

    cfg = EngineConfig(max_num_seqs=8, max_num_batched_tokens=256, block_size=32)
    coefs = {"a_p": 0.01, "a_d": 0.005, "b_pt": 1e-5, "c_pc": 0.0, "b_ds": 1e-4, "c_dc": 1e-7}
    fit = tmp_path / "fit.json"
    fit.write_text(json.dumps({"coefficients": coefs, "frontend_overhead_s": 0.0}))
    model = FittedStepTime(**coefs)
    slow = simulate(_wl(), _Scaled(model, 1.0, 1.3), cfg, kv_blocks=100)  # prefill as profiled, decode 1.3 x
    d = _replay_dir(tmp_path / "r", slow, cfg, lag_clean=True)
    _steps(d, model, 1.3)  # decode steps at 1.3 x ...
    st = pd.read_parquet(d / "steps.parquet")
    pt = np.array([64, 128])  # ... and two prefill steps as profiled
    pred = np.array([model.step_time(int(a), int(a) ** 2, 0, 0) for a in pt])
    end = st.end_s.iloc[-1] + np.cumsum(pred)
    st = pd.concat([st, pd.DataFrame({"prefill_tokens": pt, "prefill_ctx": pt ** 2, "decode_seqs": 0, "decode_ctx": 0,
                                      "scheduled_tokens": pt, "start_s": end - pred, "end_s": end})], ignore_index=True)
    st.to_parquet(d / "steps.parquet")
    assert regime_speeds(d, fit) == pytest.approx((1.0, 1.3), rel=1e-9)
    plain = compare_repeats([d], fit).set_index("metric").loc["p50_e2el_s"]
    matched = compare_repeats([d], fit, speed_matched=True).set_index("metric")
    assert plain.rel_err < -0.15 and not plain.speed_matched
    assert matched.loc["p50_e2el_s"].rel_err == pytest.approx(0.0, abs=1e-9) and matched.speed_matched.all()
    assert matched.loc["p90_ttft_s"].rel_err == pytest.approx(0.0, abs=1e-9)
    # time-weighted: 9 one-sequence steps at 1.0 x and one 8-sequence step at 3.0 x
    ds = np.array([1] * 9 + [8])
    pred = np.array([model.step_time(0, 0, int(a), int(a) * 100) for a in ds])
    took = pred * np.array([1.0] * 9 + [3.0])
    end = np.cumsum(took)
    pd.DataFrame({"prefill_tokens": 0, "prefill_ctx": 0, "decode_seqs": ds, "decode_ctx": ds * 100,
                  "scheduled_tokens": ds, "start_s": end - took, "end_s": end}).to_parquet(d / "steps.parquet")
    assert replay_speed(d, fit) == pytest.approx(took.sum() / pred.sum(), rel=1e-9) and replay_speed(d, fit) > 1.1
    with pytest.raises(ValueError, match="finite number > 0"):
        _Scaled(model, 1.0, 0.0)
    assert np.isnan(regime_speeds(tmp_path, fit)).all()  # no steps recorded


def test_the_engine_spread_the_repeats_measured_speeds_explain(tmp_path):
    """Two repeats of one workload, the second on an engine stepping its decode steps 1.3 x slower
    (its recorded steps say so): as profiled the simulated repeats are the same (``sim_spread`` 0)
    and the whole engine spread is unexplained; speed-matched, the simulator reproduces it through
    its own queueing and nothing is left."""
    from servesim.engine.compare import _Scaled, compare_repeats
    from servesim.perf.fitted import FittedStepTime

    cfg = EngineConfig(max_num_seqs=8, max_num_batched_tokens=256, block_size=32)
    coefs = {"a_p": 0.01, "a_d": 0.005, "b_pt": 1e-5, "c_pc": 0.0, "b_ds": 1e-4, "c_dc": 1e-7}
    fit = tmp_path / "fit.json"
    fit.write_text(json.dumps({"coefficients": coefs, "frontend_overhead_s": 0.0}))
    model = FittedStepTime(**coefs)
    d0 = _replay_dir(tmp_path / "r0", simulate(_wl(), model, cfg, kv_blocks=100), cfg, lag_clean=True)
    d1 = _replay_dir(tmp_path / "r1", simulate(_wl(), _Scaled(model, 1.0, 1.3), cfg, kv_blocks=100), cfg, lag_clean=True)
    _steps(d0, model, 1.0)
    _steps(d1, model, 1.3)
    plain = compare_repeats([d0, d1], fit).set_index("metric").loc["p50_e2el_s"]
    matched = compare_repeats([d0, d1], fit, speed_matched=True).set_index("metric").loc["p50_e2el_s"]
    assert plain.engine_spread > 0.15 and plain.sim_spread == pytest.approx(0.0, abs=1e-12)
    assert plain.engine_spread_unexplained == pytest.approx(plain.engine_spread, rel=1e-9)
    assert matched.sim_spread == pytest.approx(plain.engine_spread, rel=1e-9)
    assert matched.engine_spread_unexplained == pytest.approx(0.0, abs=1e-9)
    one = compare_repeats([d0], fit).set_index("metric").loc["p50_e2el_s"]
    assert np.isnan(one.sim_spread) and np.isnan(one.engine_spread_unexplained)  # one repeat: no spread


def test_probe_matched_reading_simulates_each_replay_at_the_probed_host_speed(tmp_path):
    """A replay on a host running the engine 1.25 x slower than at the profile, which the speed probe
    around it measured (its bursts took 1.2 and 1.3 x the profile's): the probe-matched reading is the
    same simulation, error 0, reading nothing of the replay's steps; without both probes it is as profiled."""
    from servesim.engine.compare import _Scaled, compare_repeats, probe_speed
    from servesim.errors import InputError
    from servesim.perf.fitted import FittedStepTime

    cfg = EngineConfig(max_num_seqs=8, max_num_batched_tokens=256, block_size=32)
    coefs = {"a_p": 0.01, "a_d": 0.005, "b_pt": 1e-5, "c_pc": 0.0, "b_ds": 1e-4, "c_dc": 1e-7}
    fit = tmp_path / "fit.json"
    probe = {"requests": 8, "steps": 40}
    fit.write_text(json.dumps({"coefficients": coefs, "frontend_overhead_s": 0.0,
                               "speed_probe": {"before": {**probe, "busy_s": 0.9}, "after": {**probe, "busy_s": 1.1}}}))
    model = FittedStepTime(**coefs)
    slow = simulate(_wl(), _Scaled(model, 1.25), cfg, kv_blocks=100)
    d = _replay_dir(tmp_path / "r", slow, cfg, lag_clean=True,
                    speed_probe={"before": {**probe, "busy_s": 1.2}, "after": {**probe, "busy_s": 1.3}})
    assert probe_speed(d, fit) == pytest.approx(1.25, rel=1e-12)
    matched = compare_repeats([d], fit, probe_matched=True).set_index("metric")
    assert matched.loc["p50_e2el_s"].rel_err == pytest.approx(0.0, abs=1e-9) and matched.probe_matched.all()
    plain = compare_repeats([d], fit).set_index("metric").loc["p50_e2el_s"]
    assert plain.rel_err < -0.1 and not plain.probe_matched
    # a replay without the after probe (stopped), or a fit without a baseline: NaN, simulated as profiled
    d2 = _replay_dir(tmp_path / "r2", slow, cfg, lag_clean=True, speed_probe={"before": {**probe, "busy_s": 1.2}})
    assert np.isnan(probe_speed(d2, fit))
    assert compare_repeats([d2], fit, probe_matched=True).set_index("metric").loc["p50_e2el_s"].rel_err == \
        pytest.approx(plain.rel_err, rel=1e-12)
    bare = tmp_path / "bare.json"
    bare.write_text(json.dumps({"coefficients": coefs, "frontend_overhead_s": 0.0}))
    assert np.isnan(probe_speed(d, bare))
    with pytest.raises(ValueError, match="not both"):
        compare_repeats([d], fit, speed_matched=True, probe_matched=True)

    # a live profile in slices: the baseline weighs each slice's two probes by its busy time (probes
    # 0.9, 1.2, 1.3 around two slices, the second three times the first's busy time:
    # 0.25 x 1.05 + 0.75 x 1.25 = 1.2, where the outer two's mean is 1.1)
    sliced = {"before": {**probe, "busy_s": 0.9}, "between": [{**probe, "busy_s": 1.2}],
              "after": {**probe, "busy_s": 1.3}, "slice_busy_s": [1.0, 3.0]}
    fit.write_text(json.dumps({"coefficients": coefs, "frontend_overhead_s": 0.0, "speed_probe": sliced}))
    assert probe_speed(d, fit) == pytest.approx(1.25 / 1.2, rel=1e-12)
    sliced["slice_busy_s"] = [1.0]
    fit.write_text(json.dumps({"coefficients": coefs, "frontend_overhead_s": 0.0, "speed_probe": sliced}))
    with pytest.raises(InputError, match="fit.json: speed_probe has 3 probe runs around 1 slices"):
        probe_speed(d, fit)
    # slices apart (`SweepPlan.live_placement` spread: replays between them), each with its own two
    # probes: 0.25 x (0.9 + 1.0) / 2 + 0.75 x (1.3 + 1.5) / 2 = 1.2875
    spread = {"placement": "spread", "before": {**probe, "busy_s": 0.9}, "after": {**probe, "busy_s": 1.5},
              "slices": [{"before": {**probe, "busy_s": 0.9}, "after": {**probe, "busy_s": 1.0}, "busy_s": 1.0},
                         {"before": {**probe, "busy_s": 1.3}, "after": {**probe, "busy_s": 1.5}, "busy_s": 3.0}]}
    fit.write_text(json.dumps({"coefficients": coefs, "frontend_overhead_s": 0.0, "speed_probe": spread}))
    assert probe_speed(d, fit) == pytest.approx(1.25 / 1.2875, rel=1e-12)
    del spread["slices"][1]["after"]
    fit.write_text(json.dumps({"coefficients": coefs, "frontend_overhead_s": 0.0, "speed_probe": spread}))
    with pytest.raises(InputError, match="fit.json: speed_probe.slices needs a before and an after"):
        probe_speed(d, fit)


def test_form_fit_json_swaps_in_the_other_forms_coefficients(tmp_path):
    """The reading `linear`: the profile's fit.json with its linear-form coefficients, the rest kept;
    a profile written before the forms has none (None)."""
    from servesim.engine.compare import form_fit_json, step_form
    from servesim.engine.profile import load_fitted

    quad = {"a_p": 0.01, "a_d": 0.005, "b_pt": 1e-5, "c_pc": 0.0, "b_ds": 1e-4, "c_dc": 1e-7, "b_ds2": 2e-6}
    lin = dict(quad, b_ds=1.5e-4, b_ds2=0.0)
    fit = tmp_path / "fit.json"
    fit.write_text(json.dumps({"coefficients": quad, "frontend_overhead_s": 0.0, "step_form": "quadratic-seqs",
                               "capacity_req_s": 7.0, "coefficients_by_form": {"linear": lin, "quadratic-seqs": quad}}))
    out = form_fit_json(fit, "linear", tmp_path / "linear.json")
    d = json.loads(out.read_text())
    assert d["coefficients"] == lin and d["capacity_req_s"] == 7.0 and step_form(out) == "linear"
    assert step_form(fit) == "quadratic-seqs" and load_fitted(out)[0].b_ds2 == 0.0
    old = tmp_path / "old.json"
    old.write_text(json.dumps({"coefficients": lin, "frontend_overhead_s": 0.0}))
    assert form_fit_json(old, "linear", tmp_path / "x.json") is None and step_form(old) == "linear"


def test_weighting_fit_json_swaps_in_the_observed_weights_fit(tmp_path):
    """The reading `observed-weights`: the profile's fit.json with its fit weighed by each step's
    measured time, the rest kept; a profile written before the weightings has none, and reads as
    weighed so (`step_weighting`), which the steps reading's refit then follows."""
    from servesim.engine.compare import step_weighting, weighting_fit_json

    mean = {"a_p": 0.01, "a_d": 0.005, "b_pt": 1e-5, "c_pc": 0.0, "b_ds": 1e-4, "c_dc": 1e-7, "b_ds2": 2e-6}
    low = dict(mean, a_d=0.0048)
    fit = tmp_path / "fit.json"
    fit.write_text(json.dumps({"coefficients": mean, "frontend_overhead_s": 0.0, "step_weighting": "relative-to-fit",
                               "capacity_req_s": 7.0,
                               "coefficients_by_weighting": {"relative": low, "relative-to-fit": mean}}))
    out = weighting_fit_json(fit, "relative", tmp_path / "observed.json")
    d = json.loads(out.read_text())
    assert d["coefficients"] == low and d["capacity_req_s"] == 7.0 and step_weighting(out) == "relative"
    assert step_weighting(fit) == "relative-to-fit"
    old = tmp_path / "old.json"
    old.write_text(json.dumps({"coefficients": low, "frontend_overhead_s": 0.0}))
    assert weighting_fit_json(old, "relative", tmp_path / "x.json") is None and step_weighting(old) == "relative"


def test_the_fits_clock_times_the_replays_steps_and_clock_fit_json_swaps_in_the_other(tmp_path):
    """A replay's steps are timed as the profile's were (fit.json ``step_clock``; ``step`` before the
    clocks): against a model of the steps' own times, a replay with a gap before each step runs at
    speed 1 on the step clock and slower by the gaps on the cycle clock. The reading `no-gaps`
    swaps in the step clock's coefficients, the rest kept; a profile without clocks has none."""
    from servesim.engine.compare import clock_fit_json, replay_speed, step_clock
    from servesim.perf.fitted import FittedStepTime

    coefs = {"a_p": 0.01, "a_d": 0.004, "b_pt": 0.0, "c_pc": 0.0, "b_ds": 1e-4, "c_dc": 0.0, "b_ds2": 0.0}
    d = tmp_path / "r"
    d.mkdir()
    ds = np.arange(100) % 8 + 1
    took = np.array([FittedStepTime(**coefs).step_time(0, 0, int(b), int(b) * 10) for b in ds])
    end = np.cumsum(took + 5e-4)  # 0.5 ms between steps
    pd.DataFrame({"prefill_tokens": 0, "prefill_ctx": 0, "decode_seqs": ds, "decode_ctx": ds * 10, "new_requests": 0,
                  "scheduled_tokens": ds, "start_s": end - took, "end_s": end}).to_parquet(d / "steps.parquet")
    cycle = dict(coefs, a_d=0.0045)
    fit = tmp_path / "fit.json"
    fit.write_text(json.dumps({"coefficients": coefs, "frontend_overhead_s": 0.0, "step_clock": "cycle",
                               "coefficients_by_clock": {"step": coefs, "cycle": cycle}}))
    gaps = 5e-4 * 99 / took.sum()  # the first step has none before it
    assert step_clock(fit) == "cycle" and replay_speed(d, fit) == pytest.approx(1 + gaps, rel=1e-9)
    own = clock_fit_json(fit, "step", tmp_path / "own.json")
    assert step_clock(own) == "step" and replay_speed(d, own) == pytest.approx(1.0, rel=1e-9)
    assert json.loads(own.read_text())["coefficients"] == coefs
    old = tmp_path / "old.json"
    old.write_text(json.dumps({"coefficients": coefs, "frontend_overhead_s": 0.0}))
    assert step_clock(old) == "step" and clock_fit_json(old, "step", tmp_path / "x.json") is None


def test_send_lag_bound_and_replay_names(tmp_path):
    from servesim.engine.calibration import replay_name, send_lag_bound

    assert send_lag_bound(tmp_path) == 0.010  # no profile: the 10 ms floor
    pd.DataFrame({"ttft_s": [0.1, 0.4, 1.0]}).to_csv(tmp_path / "lone_ttft.csv", index=False)
    assert send_lag_bound(tmp_path) == pytest.approx(0.02)  # 5 % of the 0.4 s median
    assert send_lag_bound(tmp_path, 0.5) == 0.5
    with pytest.raises(ValueError, match="must be > 0"):
        send_lag_bound(tmp_path, 0.0)
    assert replay_name(0.3, 0) == "load0.3" and replay_name(0.3, 2) == "load0.3.rep2"
    assert replay_name("bursty", 0) == "bursty" and replay_name("bursty", 1) == "bursty.rep1"


def _shape_fit(tmp_path, max_model_len=2048):
    fit = {"capacity_req_s": 20.0, "prompt_range": [16, 512], "output_range": [8, 128],
           "engine": {"max_model_len": max_model_len}}
    (tmp_path / "fit.json").write_text(json.dumps(fit))
    return tmp_path / "fit.json"


def test_heldout_shapes_are_what_they_say(tmp_path):
    """Each held-out shape (`SHAPES`) is deterministic in its seed, a valid request table, and has
    the property its name promises; prompt + output always fits the engine's context."""
    from servesim.engine.calibration import RAMP_LOADS, SHAPES, heldout_shape, heldout_workload
    from servesim.workload import schema as S

    fit = _shape_fit(tmp_path)
    n, cap = 2000, 20.0
    base = heldout_workload(fit, 0.6, n)
    got = {}
    for name in SHAPES:
        a, b = heldout_shape(fit, name, n, seed=0), heldout_shape(fit, name, n, seed=0)
        pd.testing.assert_frame_equal(a, b)
        assert not a.equals(heldout_shape(fit, name, n, seed=1))
        S.validate(a, name)
        assert len(a) == n and a.arrival_s.iloc[0] == 0.0 and a.arrival_s.is_monotonic_increasing
        assert (a.prompt_tokens + a.output_tokens <= 2048).all()
        got[name] = a
    gaps = lambda w: np.diff(w.arrival_s.to_numpy())  # noqa: E731
    # bursty: inter-arrival CV about 2 (Poisson: 1), same mean rate as load 0.6
    cv = lambda g: g.std() / g.mean()  # noqa: E731
    assert cv(gaps(got["bursty"])) == pytest.approx(2.0, rel=0.15) and cv(gaps(base)) == pytest.approx(1.0, rel=0.1)
    assert 1 / gaps(got["bursty"]).mean() == pytest.approx(0.6 * cap, rel=0.15)
    # ramp: the rate in the last tenth of the run is about 1.2 x capacity, the first about 0.3 x
    t = got["ramp"].arrival_s.to_numpy()
    T = t[-1]
    first, last = (t < 0.1 * T).sum() / (0.1 * T), (t > 0.9 * T).sum() / (0.1 * T)
    lo, hi = (x * cap for x in RAMP_LOADS)
    assert first == pytest.approx(lo + 0.05 * (hi - lo), rel=0.2) and last == pytest.approx(hi - 0.05 * (hi - lo), rel=0.2)
    # long shapes: the lengths moved past the mix's longest; a fit without shape_load_basis (every
    # fit before 7 Dec) reads `tokens`: the token load kept at half of the mix capacity's
    lp, lo_ = got["long-prompt"], got["long-output"]
    assert lp.prompt_tokens.between(512, 1536).all() and lp.output_tokens.between(8, 128).all()
    assert lo_.output_tokens.between(128, 512).all() and lo_.prompt_tokens.between(16, 512).all()
    mix_tok_rate = cap * (264 + 68)  # the mix's mean prompt + output tokens at capacity
    for w in (lp, lo_):
        tok_rate = (w.prompt_tokens + w.output_tokens).mean() / gaps(w).mean()
        assert tok_rate == pytest.approx(0.5 * mix_tok_rate, rel=0.1)
    # a short context caps the long shapes
    (tmp_path / "short").mkdir()
    tight = heldout_shape(_shape_fit(tmp_path / "short", max_model_len=1024), "long-prompt", 200)
    assert (tight.prompt_tokens + tight.output_tokens <= 1024).all() and tight.prompt_tokens.max() > 512
    with pytest.raises(ValueError, match="unknown held-out shape 'spiky'"):
        heldout_shape(fit, "spiky", 10)


def test_long_shapes_load_a_fraction_of_their_own_measured_capacity(tmp_path):
    """On shape_load_basis `capacity` a long shape arrives at LONG_LOAD x its own capacity (fit.json's
    shape_capacity, measured by a burst of its lengths), its lengths as on `tokens`; the other shapes
    keep the mix's capacity. The fields are what `shape_load_fields` measures: one burst per long
    shape, of that shape's lengths. A fit naming the basis without the measurement is refused."""
    from servesim.engine.heldout import LONG_LOAD, LONG_SHAPES, heldout_shape, shape_load_fields, shape_ranges
    from servesim.errors import InputError

    mix = {"prompt_range": [16, 512], "output_range": [8, 128]}
    asked = []

    def measure(prompt_range, output_range):
        asked.append((prompt_range, output_range))
        return {"capacity_req_s": {(16, 512): 3.0, (512, 1536): 4.0}[tuple(prompt_range)], "capacity_requests": 9}

    fields = shape_load_fields(["bursty", "long-output", "long-prompt"], "capacity", mix, 2048, measure)
    assert asked == [((16, 512), (128, 512)), ((512, 1536), (8, 128))]  # only the long shapes, their own lengths
    assert asked == [shape_ranges(n, (16, 512), (8, 128), 2048) for n in ("long-output", "long-prompt")]
    assert fields == {"shape_load_basis": "capacity", "shape_capacity": {"long-output": measure(*asked[0]),
                                                                           "long-prompt": measure(*asked[1])}}
    assert shape_load_fields(["long-output"], "tokens", mix, 2048, None) == {"shape_load_basis": "tokens"}
    with pytest.raises(ValueError, match="shape_load_basis='work'"):
        shape_load_fields([], "work", mix, 2048, measure)
    assert LONG_SHAPES == ("long-prompt", "long-output")

    old, new = tmp_path / "old", tmp_path / "new"
    for d in (old, new):
        d.mkdir()
    fit_old = _shape_fit(old)
    fit_new = _shape_fit(new)
    fit = json.loads(fit_new.read_text())
    (new / "fit.json").write_text(json.dumps({**fit, **fields}))
    n = 3000
    for name, own in (("long-output", 3.0), ("long-prompt", 4.0)):
        a, b = heldout_shape(fit_new, name, n), heldout_shape(fit_old, name, n)
        pd.testing.assert_frame_equal(a.drop(columns="arrival_s"), b.drop(columns="arrival_s"))
        assert (n - 1) / a.arrival_s.iloc[-1] == pytest.approx(LONG_LOAD * own, rel=0.06)
        assert not np.isclose((n - 1) / b.arrival_s.iloc[-1], LONG_LOAD * own, rtol=0.2)
    for name in ("bursty", "ramp"):  # the mix's shapes: the mix's capacity on either basis
        pd.testing.assert_frame_equal(heldout_shape(fit_new, name, 50), heldout_shape(fit_old, name, 50))
    (new / "fit.json").write_text(json.dumps({**fit, "shape_load_basis": "capacity",
                                              "shape_capacity": {"long-prompt": {"capacity_req_s": 4.0}}}))
    with pytest.raises(InputError, match=r"shape_capacity\['long-output'\].capacity_req_s"):
        heldout_shape(fit_new, "long-output", 10)
    (new / "fit.json").write_text(json.dumps({**fit, "shape_load_basis": "work"}))
    with pytest.raises(InputError, match="shape_load_basis='work'"):
        heldout_shape(fit_new, "long-output", 10)


def test_shapes_take_their_own_request_count(tmp_path):
    """--shape-requests sizes the held-out shapes apart from the loads (the long shapes run at a
    fraction of the loads' request rate); without it both take -n. Each case's workload is written,
    and the replay folders follow the cases (what the in-process engine's child replays into)."""
    from servesim.engine.heldout import replay_runs, write_cases as _cases

    (tmp_path / "profile").mkdir()
    _shape_fit(tmp_path / "profile")
    got = {label: len(wl) for label, _, wl in _cases(tmp_path, [0.3, 0.9], ["bursty", "long-prompt"], 40, 0, 12)}
    assert got == {"load0.3": 40, "load0.9": 40, "bursty": 12, "long-prompt": 12}
    assert sorted(p.name for p in (tmp_path / "workloads").iterdir()) == \
        ["bursty.parquet", "load0.3.parquet", "load0.9.parquet", "long-prompt.parquet"]
    assert {label: len(wl) for label, _, wl in _cases(tmp_path, [0.3], ["ramp"], 40, 0)} == {"load0.3": 40, "ramp": 40}
    runs = replay_runs(tmp_path, [0.3], ["ramp"], 2)
    assert [(label, key, rep, d.relative_to(tmp_path).as_posix()) for label, key, rep, d in runs] == [
        ("load0.3", 0.3, 0, "replay/load0.3"), ("ramp", "ramp", 0, "replay/ramp"),
        ("load0.3", 0.3, 1, "replay/load0.3.rep1"), ("ramp", "ramp", 1, "replay/ramp.rep1")]


def test_an_unknown_shape_stops_run_calibration_before_a_server_starts(tmp_path):
    from servesim.engine.calibration import run_calibration

    with pytest.raises(ValueError, match="unknown held-out shape 'spiky'"):
        run_calibration(tmp_path / "no-model", tmp_path / "out", EngineConfig(), shapes=["bursty", "spiky"])
    assert not (tmp_path / "out").exists()


def test_coalesced_streams_are_flagged_and_can_be_left_out(tmp_path):
    """A request whose tokens all reached the client in one read (mean gap far below any decode
    step) has its first-token time at the stream's end: `coalesced="drop"` leaves it out."""
    from servesim.engine.compare import coalesced_streams
    from servesim.perf.fitted import FittedStepTime

    cfg = EngineConfig(max_num_seqs=8, max_num_batched_tokens=256, block_size=32)
    coefs = {"a_p": 0.01, "a_d": 0.005, "b_pt": 1e-5, "c_pc": 0.0, "b_ds": 1e-4, "c_dc": 1e-7}
    (tmp_path / "fit.json").write_text(json.dumps({"coefficients": coefs, "frontend_overhead_s": 0.0}))
    wl = _wl(rate=0.5)
    engine = simulate(wl, FittedStepTime(**coefs), cfg, kv_blocks=100)
    burst = engine.index[:10]  # their streams delivered at the end: first token = finish
    engine.loc[burst, "first_token_s"] = engine.loc[burst, "finish_s"]
    engine.loc[burst, "ttft_s"] = engine.loc[burst, "e2e_s"]
    engine.loc[burst, "tbt_mean_s"] = 0.0
    mask = coalesced_streams(engine, 0.25 * 0.005)
    assert mask[:10].all() and not mask[10:].any()
    d = tmp_path / "replay"
    d.mkdir()
    engine.to_parquet(d / "requests.parquet")
    (d / "summary.json").write_text(json.dumps({"engine": cfg.to_dict(), "kv_blocks": 100}))
    kept, _ = compare_run(d, tmp_path / "fit.json")
    dropped, _ = compare_run(d, tmp_path / "fit.json", coalesced="drop")
    k, dr = kept.set_index("metric"), dropped.set_index("metric")
    assert k.loc["p90_ttft_s", "rel_err"] < -0.05                 # the bursts inflate the engine's TTFT
    assert abs(dr.loc["p90_ttft_s", "rel_err"]) < 1e-9            # the rest match exactly
    assert dr.loc["completed", "engine"] == 30 and (dropped.coalesced_share == 0.25).all()
    with pytest.raises(ValueError, match="coalesced must be"):
        compare_run(d, tmp_path / "fit.json", coalesced="maybe")


class _FakeServer:
    """Stands in for VLLMServer in run_calibration: records starts and stops."""

    def __init__(self, model, config, log_path, start_timeout_s):
        self.log_path, self.events = Path(log_path), []
        self.url, self.kv_blocks, self.kv_tokens, self.startup_s = "http://127.0.0.1:1", 100, 3200, 1.0

    def start(self):
        self.events.append("start")
        self.log_path.write_text(f"start {self.events.count('start')}\n")
        return self

    def stop(self):
        self.events.append("stop")

    def loss_reason(self):
        return "SIGTERM from outside"

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()


@pytest.mark.parametrize("losses", [1, 2])
def test_run_calibration_restarts_a_server_lost_mid_profile_once(tmp_path, monkeypatch, losses):
    import servesim.engine.profile as P
    import servesim.engine.server as S
    from servesim.engine.calibration import run_calibration
    from servesim.engine.client import ReplayOptions

    servers, calls = [], []

    def fake_server(model, config, log_path, start_timeout_s):
        servers.append(_FakeServer(model, config, log_path, start_timeout_s))
        return servers[-1]

    def fake_profile(url, out_dir, **kw):
        calls.append(dict(kw["meta"]))
        if len(calls) <= losses:
            raise S.ServerLostError("profiling lost the server")
        return {"capacity_req_s": 10.0, **kw["meta"]}

    monkeypatch.setattr(S, "VLLMServer", fake_server)
    monkeypatch.setattr(P, "profile_engine", fake_profile)
    run = lambda: run_calibration("model", tmp_path, S.EngineConfig(), loads=(), opts=ReplayOptions())  # noqa: E731
    if losses == 2:  # lost again after the restart: the run fails
        with pytest.raises(S.ServerLostError):
            run()
        assert servers[0].events == ["start", "stop", "start", "stop"] and len(calls) == 2
        return
    fit = run()["fit"]
    assert servers[0].events == ["start", "stop", "start", "stop"] and len(calls) == 2
    assert fit["server_restarts"] == 1 and fit["server_restart_reason"] == "lost mid-profile: SIGTERM from outside"
    assert (tmp_path / "server.log.lost1").read_text() == "start 1\n"
    assert (tmp_path / "server.log").read_text() == "start 2\n"


def test_the_http_calibration_measures_the_long_shapes_own_capacity(tmp_path, monkeypatch):
    """Over HTTP (the GPU nodes' path) the long shapes' own capacities are measured on the profiled
    server after its profile, by a burst of each one's lengths, and written to fit.json before the
    shapes' workloads are drawn from it; `tokens` measures nothing and says so in fit.json."""
    import servesim.engine.profile as P
    import servesim.engine.replay as R
    import servesim.engine.server as S
    from servesim.engine.calibration import heldout_shape, run_calibration
    from servesim.engine.client import ReplayOptions

    bursts = []

    def fake_profile(url, out_dir, **kw):
        fit = {"capacity_req_s": 10.0, "prompt_range": [16, 512], "output_range": [8, 128],
               "engine": {"max_model_len": 2048}, **kw["meta"]}
        Path(out_dir).mkdir(parents=True, exist_ok=True)
        (Path(out_dir) / "fit.json").write_text(json.dumps(fit))
        return fit

    def fake_capacity(url, n, opts, seed, prompt_range=(16, 512), output_range=(8, 128)):
        bursts.append((n, seed, tuple(prompt_range), tuple(output_range)))
        return {"capacity_req_s": 2.5, "capacity_requests": n, "output_range": list(output_range)}

    def fake_replay(wl, d, **kw):
        Path(d).mkdir(parents=True, exist_ok=True)
        return {"client_send_lag_p99_s": 0.0}

    monkeypatch.setattr(S, "VLLMServer", lambda model, config, log_path, start_timeout_s: _FakeServer(
        model, config, log_path, start_timeout_s))
    monkeypatch.setattr(P, "profile_engine", fake_profile)
    monkeypatch.setattr(P, "measure_capacity", fake_capacity)
    monkeypatch.setattr(R, "replay", fake_replay)
    plan = P.SweepPlan(capacity_requests=12, seed=3)
    run_calibration("model", tmp_path / "cap", S.EngineConfig(), plan=plan, loads=(), shapes=("bursty", "long-output"),
                    n_requests=40, opts=ReplayOptions())
    fit_json = tmp_path / "cap" / "profile" / "fit.json"
    fit = json.loads(fit_json.read_text())
    assert bursts[0] == (12, 4, (16, 512), (128, 512))  # long-output's lengths; then one drift burst per replay
    assert fit["shape_load_basis"] == "capacity" and fit["shape_capacity"] == {
        "long-output": {"capacity_req_s": 2.5, "capacity_requests": 12, "output_range": [128, 512]}}
    wl = pd.read_parquet(tmp_path / "cap" / "workloads" / "long-output.parquet")
    pd.testing.assert_frame_equal(wl, heldout_shape(fit_json, "long-output", 40))  # its rate: LONG_LOAD x 2.5
    bursts.clear()
    run_calibration("model", tmp_path / "tok", S.EngineConfig(), plan=plan, loads=(), shapes=("long-output",),
                    n_requests=40, opts=ReplayOptions(), shape_load_basis="tokens")
    fit = json.loads((tmp_path / "tok" / "profile" / "fit.json").read_text())
    assert fit["shape_load_basis"] == "tokens" and "shape_capacity" not in fit
    assert bursts and all(b[3] == (8, 128) for b in bursts)  # the drift bursts only, on the mix
    with pytest.raises(ValueError, match="shape_load_basis='work'"):
        run_calibration("model", tmp_path / "bad", S.EngineConfig(), plan=plan, loads=(), shapes=("long-output",),
                        opts=ReplayOptions(), shape_load_basis="work")
    assert not (tmp_path / "bad").exists()


@pytest.mark.parametrize("status,body,lost", [
    (200, 'data: {"error": {"message": "EngineCore encountered an issue.", "type": "InternalServerError", "code": 500}}\n\n', True),
    (500, "Internal Server Error", True),
    (400, '{"error": "prompt too long"}', False),
    (200, 'data: {"error": {"message": "bad sampling params", "type": "BadRequestError", "code": 400}}\n\n', False),
    (200, 'data: {"error":{"message":"engine dead","type":"InternalServerError","code":503}}\n\n', True),
])
def test_profile_reads_an_engine_failure_in_the_answer_as_a_lost_server(monkeypatch, status, body, lost):
    """A group-wide SIGTERM can reach vLLM's engine core before its API process: the stream then
    carries the engine's error instead of the connection dropping. That is a lost server (the
    calibration restarts it); a client-side error (4xx, a bad-request event) is not."""

    import httpx

    import servesim.engine.profile as P
    from servesim.engine.client import ReplayOptions
    from servesim.engine.server import ServerLostError

    transport = httpx.MockTransport(lambda request: httpx.Response(status, text=body))

    async def sweep(url, *a):
        async with httpx.AsyncClient(transport=transport) as client:
            await P._complete(client, url, [3, 4], 1, ReplayOptions(), 0.0)

    monkeypatch.setattr(P, "sweep_async", sweep)
    with pytest.raises(ServerLostError if lost else RuntimeError) as err:
        P.profile_engine("http://engine", "unused")
    assert isinstance(err.value, ServerLostError) == lost
    assert "profiling" in str(err.value)


def test_an_http_replay_behind_the_front_end_queue(tmp_path):
    """compare_run(frontend=...): the HTTP replay's front end as servesim.sim.frontend's queue in place
    of the profile's constant; a free one changes nothing, a costly one adds its service to every
    TTFT; refused for an in-process replay (it has no front end)."""
    from servesim.errors import InputError
    from servesim.perf.fitted import FittedStepTime
    from servesim.sim.frontend import FrontEnd

    cfg = EngineConfig(max_num_seqs=8, max_num_batched_tokens=256, block_size=32)
    coefs = {"a_p": 0.01, "a_d": 0.005, "b_pt": 1e-5, "c_pc": 0.0, "b_ds": 1e-4, "c_dc": 1e-7}
    (tmp_path / "fit.json").write_text(json.dumps({"coefficients": coefs, "frontend_overhead_s": 0.02}))
    wl = _wl(rate=2.0)
    engine = simulate(wl, FittedStepTime(**coefs), cfg, kv_blocks=100)
    d = _replay_dir(tmp_path / "http", engine, cfg)
    _, const = compare_run(d, tmp_path / "fit.json")  # the profile's constant 20 ms
    _, free = compare_run(d, tmp_path / "fit.json", frontend=FrontEnd())
    np.testing.assert_allclose(free.ttft_s, engine.ttft_s, atol=1e-12)  # the queue replaced the constant
    np.testing.assert_allclose(const.ttft_s, engine.ttft_s + 0.02, atol=1e-9)
    fe = FrontEnd(request_s=0.004, output_token_s=0.001)
    (tmp_path / "fe.json").write_text(json.dumps({"fit": fe.as_dict()}))
    _, q = compare_run(d, tmp_path / "fit.json", frontend=tmp_path / "fe.json")
    assert (q.ttft_s >= 0.004 + 0.001 - 1e-12).all() and q.ttft_s.mean() > free.ttft_s.mean() + 0.004
    assert q.attrs["frontend"]["converged"]
    ip = _replay_dir(tmp_path / "inproc", engine, cfg, replay="in-process")
    with pytest.raises(InputError, match="in-process replay has no front end"):
        compare_run(ip, tmp_path / "fit.json", frontend=fe)


def test_frontend_scale_needs_an_http_server_started_here(tmp_path):
    from servesim.engine.calibration import run_calibration

    cfg = EngineConfig()
    with pytest.raises(ValueError, match="frontend_scale"):
        run_calibration(tmp_path / "m", tmp_path / "o", cfg, replay_mode="in-process", frontend_scale=0.5)
    with pytest.raises(ValueError, match="frontend_scale"):
        run_calibration(None, tmp_path / "o", cfg, url="http://127.0.0.1:1", frontend_scale=0.5)


def test_host_drift_reads_every_probe_run_of_the_job_once(tmp_path):
    """`host_drift`: the probe runs around the live profile's slices and around each replay, a run
    shared by two neighbours counted once; range = (max - min) / median. No probe: {}."""
    from servesim.engine.compare import host_drift

    probe = {"requests": 8, "steps": 40}
    p = [{**probe, "busy_s": b} for b in (1.0, 1.1, 1.2, 0.9, 1.3)]
    fit = tmp_path / "fit.json"
    fit.write_text(json.dumps({"coefficients": {}, "speed_probe": {
        "placement": "spread", "before": p[0], "after": p[4],
        "slices": [{"before": p[0], "after": p[1], "busy_s": 2.0}, {"before": p[3], "after": p[4], "busy_s": 2.0}]}}))
    dirs = []
    for k, (b, a) in enumerate(((p[1], p[2]), (p[2], p[3]))):  # two replays between the slices
        d = tmp_path / f"r{k}"
        d.mkdir()
        (d / "summary.json").write_text(json.dumps({"speed_probe": {"before": b, "after": a}}))
        dirs.append(d)
    drift = host_drift(fit, dirs)
    assert drift["probes"] == 5 and drift["probe_busy_s"] == [1.0, 1.1, 0.9, 1.3, 1.2]
    assert drift["probe_range_pct"] == pytest.approx((1.3 - 0.9) / 1.1 * 100, rel=1e-12)
    # the older fit.json (consecutive slices) reads alike; a job without probes has no drift to read
    fit.write_text(json.dumps({"coefficients": {}, "speed_probe": {"before": p[0], "between": [p[1]], "after": p[4]}}))
    assert host_drift(fit, dirs)["probes"] == 5
    fit.write_text(json.dumps({"coefficients": {}}))
    bare = tmp_path / "bare"
    bare.mkdir()
    (bare / "summary.json").write_text(json.dumps({}))
    assert host_drift(fit, [bare]) == {}
