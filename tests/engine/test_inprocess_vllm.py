"""The in-process replay on the real engine: vLLM's LLMEngine over a locally built tiny model.

Skipped only when vLLM (servesim[engine-cpu] / [engine-gpu]) is not importable."""

import importlib.util

import numpy as np
import pandas as pd
import pytest

pytestmark = [
    pytest.mark.engine,
    pytest.mark.skipif(importlib.util.find_spec("vllm") is None,
                       reason="vLLM is not installed (pip install servesim[engine-cpu])"),
]


@pytest.mark.parametrize("clock", ["wall", "engine"])
def test_in_process_replay_records_every_step_and_token(tmp_path, clock):
    """On either clock (`inprocess.CLOCKS`; the engine's own needs one pinned core)."""
    import os

    from servesim.engine.client import ReplayOptions
    from servesim.engine.inprocess import replay_in_process
    from servesim.engine.records import check_request_table
    from servesim.engine.server import EngineConfig
    from servesim.engine.tiny_model import make_tiny_model
    from servesim.workload import schema

    model = tmp_path / "tiny"
    make_tiny_model(model, "tiny", seed=0, max_model_len=1024)
    rng = np.random.default_rng(3)
    n = 24
    wl = schema.make(np.cumsum(rng.exponential(0.02, n)), rng.integers(8, 300, n), rng.integers(2, 24, n))
    cfg = EngineConfig(max_num_seqs=16, max_num_batched_tokens=256, block_size=32, kv_blocks=256,
                       max_model_len=1024, enforce_eager=True)
    cpus = [max(os.sched_getaffinity(0))] if clock == "engine" else None
    summary = replay_in_process(wl, tmp_path / "run", model=model, config=cfg,
                                opts=ReplayOptions(vocab_size=512, first_token_id=3), cpus=cpus, clock=clock)
    assert summary["replay"] == "in-process" and summary["all"]["states"] == {"finished": n}
    assert summary["clock"] == clock
    if cpus:
        assert summary["cpus"] == cpus
    assert summary["steps_observed"] and summary["preemptions_total"] == 0
    df = pd.read_parquet(tmp_path / "run" / "requests.parquet")
    check_request_table(df, wl)
    assert (df.scheduled_s >= df.arrival_s - 1e-9).all() and (df.first_token_s >= df.scheduled_s).all()
    assert (df.preemptions == 0).all()
    tok = pd.read_parquet(tmp_path / "run" / "tokens.parquet")
    assert (tok.groupby("request_id").size().reindex(wl.request_id).to_numpy() == wl.output_tokens.to_numpy()).all()
    steps = pd.read_parquet(tmp_path / "run" / "steps.parquet")
    assert (steps.end_s > steps.start_s).all() and (np.diff(steps.start_s) > 0).all()
    # the batches account for every prompt token once, and for every output token after the first
    # (the first comes out of the prompt's last prefill step)
    assert steps.prefill_tokens.sum() == wl.prompt_tokens.sum()
    assert steps.decode_seqs.sum() == (wl.output_tokens - 1).sum()
    assert (steps.scheduled_tokens == steps.prefill_tokens + steps.decode_seqs).all()
    assert (steps.scheduled_tokens <= cfg.max_num_batched_tokens).all()
    # the simulator's scheduler, on the engine's own clock, takes the engine's batch at every step
    # (chunked prompts over the 256-token budget included)
    import json

    from servesim.engine.compare import step_agreement

    fit = tmp_path / "fit.json"
    fit.write_text(json.dumps({"coefficients": {"a_p": 0.01, "a_d": 0.01}, "frontend_overhead_s": 0.0}))
    table, res = step_agreement(tmp_path / "run", fit)
    assert res["steps_engine"] == len(steps) and (wl.prompt_tokens > cfg.max_num_batched_tokens).any()
    assert res["same_share"] == 1.0, table[~table.same].head()
    assert res["e2e_s_max_abs_diff_s"] < 0.05  # then the latencies follow, up to the driver's gaps


def test_in_process_profile_fits_measured_steps_of_every_regime(tmp_path):
    import json

    from servesim.engine.client import ReplayOptions
    from servesim.engine.inprocess import profile_in_process
    from servesim.engine.profile import SweepPlan, load_fitted
    from servesim.engine.server import EngineConfig
    from servesim.engine.tiny_model import make_tiny_model
    from servesim.perf import measurements

    model = tmp_path / "tiny"
    make_tiny_model(model, "tiny", seed=0, max_model_len=1024)
    cfg = EngineConfig(max_num_seqs=16, max_num_batched_tokens=256, block_size=32, kv_blocks=256,
                       max_model_len=1024, enforce_eager=True)
    plan = SweepPlan(decode_batches=(1, 4, 16), decode_contexts=(32, 128), decode_tokens=8, prefill_lengths=(32, 128, 256),
                     mixed_batches=(4,), repeats=1, capacity_requests=16, live_requests=24, probe_requests=4,
                     live_slices=2, live_placement="spread")  # no replay to spread among: the second right after
    fit = profile_in_process(model, tmp_path / "profile", plan=plan, config=cfg,
                             opts=ReplayOptions(vocab_size=512, first_token_id=3), meta={"hardware": "cpu"})
    assert fit["harness"] == "in-process" and fit["frontend_overhead_s"] == 0.0
    assert fit["kv_blocks"] == 256 and fit["capacity_finished"] == 16 and fit["capacity_req_s"] > 0
    steps = measurements.read(tmp_path / "profile" / "steps.csv")
    assert set(steps.regime) == {"prefill-heavy", "decode-heavy", "mixed"} and (steps.step_s > 0).all()
    # every shape the plan allows was measured as a clean step (a probe of 256 beside 4 decodes is over the budget)
    assert len(steps[steps.regime == "prefill-heavy"]) == 3 and len(steps[steps.regime == "mixed"]) == 2
    assert json.loads((tmp_path / "profile" / "fit.json").read_text())["n_rows"] == len(steps)
    model_fit, fe = load_fitted(tmp_path / "profile" / "fit.json")
    assert fe == 0.0 and model_fit.step_time(128, 128 * 128, 0, 0) > 0
    # the live profile replay: its 24 requests' steps recorded, the simulator's fit made on them
    live = pd.read_parquet(tmp_path / "profile" / "live" / "steps.parquet")
    wl = pd.read_parquet(tmp_path / "profile" / "live" / "workload.parquet")
    assert len(wl) == 24 and live.prefill_tokens.sum() == wl.prompt_tokens.sum()
    assert fit["fit_source"] == "live" and fit["coefficients"] == fit["coefficients_live"] != fit["coefficients_sweep"]
    # timed on the cycle clock: each busy step with the gap the loop spent before it, which the real
    # engine's loop has (the steps' own wall times are the other clock's fit)
    from servesim.engine.records import step_table

    assert fit["step_clock"] == "cycle" and fit["coefficients_by_clock"]["cycle"] == fit["coefficients"]
    cycle, own = step_table(tmp_path / "profile" / "live", clock="cycle"), step_table(tmp_path / "profile" / "live")
    assert (cycle.step_s >= own.step_s).all() and cycle.step_s.sum() > own.step_s.sum()
    # the speed probe around the live replay's two slices: the same burst three times, the same batches
    sp = fit["speed_probe"]
    first, second = sp["slices"]
    pb, pm, pa = first["before"], first["after"], second["after"]
    assert sp["placement"] == "spread" and second["before"] == pm and (sp["before"], sp["after"]) == (pb, pa)
    assert pb["requests"] == pa["requests"] == pm["requests"] == 4 and pb["steps"] == pa["steps"] == pm["steps"] > 0
    assert pb["busy_s"] > 0 < pa["busy_s"] and pm["busy_s"] > 0
    assert first["busy_s"] + second["busy_s"] == pytest.approx((live.end_s - live.start_s).sum())
    assert first["steps"] + second["steps"] == len(live)
    assert fit["live_profile"] == {"placement": "spread", "slicing": "ramps", "slices": 2, "slices_run": 2, "partial": False}


def test_in_process_calibration_profiles_and_replays_on_one_engine_start(tmp_path):
    """`run_calibration(replay_mode="in-process")`: the engine started once profiles, then replays
    every held-out case (drawn from the fit it has just written) into its folder; the summaries are
    completed by the parent, and no case's scratch workload is left behind."""
    import json

    from servesim.engine.calibration import heldout_shape, run_calibration
    from servesim.engine.client import ReplayOptions
    from servesim.engine.profile import SweepPlan
    from servesim.engine.server import EngineConfig
    from servesim.engine.tiny_model import make_tiny_model

    model = tmp_path / "tiny"
    make_tiny_model(model, "tiny", seed=0, max_model_len=1024)
    cfg = EngineConfig(max_num_seqs=16, max_num_batched_tokens=256, block_size=32, kv_blocks=128,
                       max_model_len=1024, enforce_eager=True)
    plan = SweepPlan(decode_batches=(1, 4), decode_contexts=(32,), decode_tokens=4, prefill_lengths=(32, 128),
                     mixed_batches=(4,), repeats=1, capacity_requests=8, probe_requests=3, live_requests=9,
                     live_slices=3, live_placement="spread")
    out = tmp_path / "cal"
    res = run_calibration(model, out, cfg, plan=plan, loads=(0.5,), shapes=("long-output",), n_requests=5,
                          shape_requests=4, replay_repeats=2, replay_mode="in-process",
                          opts=ReplayOptions(vocab_size=512, first_token_id=3))
    log = (out / "engine_profile.log").read_text(errors="replace")
    assert log.count("Initializing a V1 LLM engine") == 1  # one start for the profile and the replays
    fit = json.loads((out / "profile" / "fit.json").read_text())
    assert sorted(res["replays"], key=str) == [0.5, "long-output"]
    # long-output's own capacity, measured after the mix's by a burst of its lengths, sets its rate
    own = fit["shape_capacity"]["long-output"]
    assert fit["shape_load_basis"] == "capacity" and list(fit["shape_capacity"]) == ["long-output"]
    assert own["capacity_finished"] == own["capacity_requests"] == 8 and own["output_range"] == [128, 511]
    assert 0 < own["capacity_req_s"] < fit["capacity_req_s"]
    pd.testing.assert_frame_equal(pd.read_parquet(out / "workloads" / "long-output.parquet"),
                                  heldout_shape(out / "profile" / "fit.json", "long-output", 4))
    for key, label, n in ((0.5, "load0.5", 5), ("long-output", "long-output", 4)):
        assert [s["repeat"] for s in res["replays"][key]] == [0, 1]
        assert len(pd.read_parquet(out / "workloads" / f"{label}.parquet")) == n
        for d in (out / "replay" / label, out / "replay" / f"{label}.rep1"):
            s = json.loads((d / "summary.json").read_text())
            assert s["capacity_req_s"] == fit["capacity_req_s"] and s["replay"] == "in-process"
            assert len(pd.read_parquet(d / "requests.parquet")) == n and not (d / "workload.parquet").exists()
    # a speed probe before and after every replay, the one between two replays shared by both; the
    # replays ran in rounds (every case once, then again)
    probes = [json.loads((out / "replay" / d / "summary.json").read_text())["speed_probe"]
              for d in ("load0.5", "long-output", "load0.5.rep1", "long-output.rep1")]
    assert all(p["before"]["steps"] == p["after"]["steps"] > 0 for p in probes)
    # the live profile spread (`slice_positions`: 3 slices among 4 replays at 0, 2, 4): the first
    # before the replays, the second between the two rounds, the third after the last replay, each
    # between two probes it shares with its neighbours; fit.json is the fit on all three
    sp = fit["speed_probe"]
    assert sp["placement"] == "spread" and len(sp["slices"]) == 3
    assert fit["live_profile"] == {"placement": "spread", "slicing": "ramps", "slices": 3, "slices_run": 3, "partial": False}
    assert [a["after"] == b["before"] for a, b in zip(probes, probes[1:])] == [True, False, True]
    assert probes[1]["after"] == sp["slices"][1]["before"] and sp["slices"][1]["after"] == probes[2]["before"]
    assert sp["slices"][2]["before"] == probes[3]["after"]
    live = pd.read_parquet(out / "profile" / "live" / "steps.parquet")
    assert sum(x["steps"] for x in sp["slices"]) == len(live)
    assert live.prefill_tokens.sum() == pd.read_parquet(out / "profile" / "live" / "workload.parquet").prompt_tokens.sum()
